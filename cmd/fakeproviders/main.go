// Command fakeproviders serves the five loopback provider fakes of
// brokers/fake (EC2 Query, Alibaba ECS RPC, RunPod GraphQL, Vast REST, AutoDL
// JSON), each on its own loopback port, with the state in a JSON file that
// survives restarts. It prints one "provider=URL" line per provider (the URL
// to put in config's providers.<name>.endpoint; RunPod's ends in /graphql),
// then "ready", and serves until SIGINT/SIGTERM.
//
//	fakeproviders -state /tmp/fp.json [-ports aws=9001,vast=9002] [-hang 30s]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/brokers/fake"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakeproviders:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakeproviders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "JSON state file (loaded at start, saved after every change); empty = memory only")
	ports := fs.String("ports", "", "fixed ports, e.g. aws=9001,runpod=9002 (others pick a free port)")
	hang := fs.Duration("hang", 30*time.Second, "how long a timeout fault holds a response")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fixed := map[string]int{}
	if *ports != "" {
		for _, kv := range strings.Split(*ports, ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n <= 0 || n > 65535 {
				return fmt.Errorf("-ports: %q: want provider=port", kv)
			}
			fixed[k] = n
		}
	}
	srv, err := fake.Open(*state)
	if err != nil {
		return err
	}
	srv.Hang = *hang
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var servers []*http.Server
	for _, p := range fake.Providers {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", fixed[p]))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hs := &http.Server{Handler: srv.Handler(p), ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		go func() {
			if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
				log.Error("serve", "provider", p, "err", err)
			}
		}()
		u := "http://" + ln.Addr().String()
		if p == "runpod" {
			u += "/graphql"
		}
		fmt.Fprintf(stdout, "%s=%s\n", p, u)
	}
	fmt.Fprintln(stdout, "ready")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, hs := range servers {
		_ = hs.Shutdown(sctx)
	}
	srv.Save()
	return nil
}
