// Package motoserver gives tests a real DynamoDB/SQS/SNS-compatible endpoint on
// loopback: moto_server (moto 5.2.1, on the machine image; see
// ../shared/reference/local-emulators.md). .ci/run starts one server and
// exports SLUICE_MOTO_ENDPOINT; a test run without it (go test on a developer
// machine) starts its own moto_server once per test binary. Tests share the
// server, so each test must use its own table and queue names (Unique).
package motoserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// EnvEndpoint names the environment variable .ci/run sets to the running server's base URL.
const EnvEndpoint = "SLUICE_MOTO_ENDPOINT"

var (
	once     sync.Once
	endpoint string
	startErr error
	seq      atomic.Int64
)

// Endpoint returns the base URL of a running moto_server, e.g.
// "http://127.0.0.1:15000". It uses SLUICE_MOTO_ENDPOINT when set; otherwise
// it starts moto_server on a free loopback port, which the package's TestMain
// stops with Stop. When neither works the test fails with the reason: a
// missing emulator is an error, not a skip.
func Endpoint(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if e := os.Getenv(EnvEndpoint); e != "" {
			endpoint = strings.TrimRight(e, "/")
			startErr = waitReady(endpoint, 10*time.Second)
			return
		}
		endpoint, startErr = start()
	})
	if startErr != nil {
		t.Fatalf("moto_server: %v (install moto 5.2.1 — `python3 -c 'import moto'` — or set %s)", startErr, EnvEndpoint)
	}
	return endpoint
}

// Config returns an aws.Config for the emulator: static credentials test/test,
// region us-east-1, BaseEndpoint = Endpoint(t).
func Config(t testing.TB) aws.Config {
	e := Endpoint(t)
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(e),
	}
}

// Unique returns a name unique to this test binary run, safe for DynamoDB
// tables and SQS queues: prefix + "-" + pid + "-" + a counter.
func Unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
}

func start() (string, error) {
	if _, err := exec.LookPath("moto_server"); err != nil {
		return "", fmt.Errorf("moto_server not on PATH and %s not set", EnvEndpoint)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("moto_server", "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go func() { _ = cmd.Wait() }()
	registerStop(cmd)
	e := fmt.Sprintf("http://127.0.0.1:%d", port)
	return e, waitReady(e, 20*time.Second)
}

var (
	stopMu sync.Mutex
	stops  []*exec.Cmd
)

func registerStop(c *exec.Cmd) {
	stopMu.Lock()
	stops = append(stops, c)
	stopMu.Unlock()
}

// Stop kills any moto_server this process started; call it from TestMain
// after m.Run (servers started by .ci/run are left alone).
func Stop() {
	stopMu.Lock()
	defer stopMu.Unlock()
	for _, c := range stops {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	stops = nil
}

func waitReady(e string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e+"/moto-api/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s: %v", e, within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
