// Package functions_test runs the Lambda functions as Lambda runs them: each
// bootstrap binary under the runtime interface emulator (aws-lambda-rie,
// built from the module proxy), with moto_server (SQS live depth; DynamoDB
// ledger when the build has it), replayed provider quotes and the loopback
// provider fakes (cmd/fakeproviders) on 127.0.0.1.
package functions_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/motoserver"
	"github.com/sluicehq/sluice/ledger"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}

const root = "../"

// binaries are built once per test binary into a temporary directory.
type binaries struct{ rie, fakes, burst, drain, reconcile string }

func build(t *testing.T, dir string) binaries {
	t.Helper()
	b := binaries{
		rie: filepath.Join(dir, "aws-lambda-rie"), fakes: filepath.Join(dir, "fakeproviders"),
		burst: filepath.Join(dir, "burst", "bootstrap"), drain: filepath.Join(dir, "drain", "bootstrap"),
		reconcile: filepath.Join(dir, "reconcile", "bootstrap"),
	}
	run := func(env []string, args ...string) {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The functions exactly as `make package` builds them, for this machine's arch.
	for fn, out := range map[string]string{"burst": b.burst, "drain": b.drain, "reconcile": b.reconcile} {
		run([]string{"CGO_ENABLED=0", "GOOS=linux"}, "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", out, "./functions/"+fn)
	}
	run(nil, "build", "-o", b.rie, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")
	run(nil, "build", "-o", b.fakes, "./cmd/fakeproviders")
	return b
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logBuffer collects a process's output for the test to read while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rie is one aws-lambda-rie process serving one function.
type rie struct {
	url string
	log *logBuffer
}

func startRIE(t *testing.T, bin, bootstrap string, env []string) *rie {
	t.Helper()
	port, api := freePort(t), freePort(t)
	cmd := exec.Command(bin, "--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", api), bootstrap)
	cmd.Env = env
	r := &rie{url: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", port), log: &logBuffer{}}
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the RIE ends its bootstrap child too
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(filepath.Dir(bootstrap)), r.log.String())
		}
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return r
		}
		if i > 100 {
			t.Fatalf("aws-lambda-rie not listening: %v\n%s", err, r.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// post posts an event and returns the HTTP status, the body and the round trip.
func (r *rie) post(t *testing.T, event []byte) (int, []byte, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(r.url, "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body, time.Since(start)
}

// invoke posts an event and returns the body (a function error is HTTP 200
// too, with errorType in the body) and the round-trip time.
func (r *rie) invoke(t *testing.T, event []byte) ([]byte, time.Duration) {
	t.Helper()
	status, body, took := r.post(t, event)
	if status != http.StatusOK {
		t.Fatalf("invoke: HTTP %d: %s", status, body)
	}
	return body, took
}

// waitLog reports whether the log shows s within 5 s (the RIE writes its
// log lines as the runtime's state changes, after the HTTP answer).
func (r *rie) waitLog(s string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(r.log.String(), s) {
			return true
		}
	}
	return false
}

var (
	// reportRE matches the Duration of each REPORT line of the RIE log.
	reportRE = regexp.MustCompile(`REPORT RequestId: \S+\s+(?:Init Duration: [0-9.]+ ms\s+)?Duration: ([0-9.]+) ms`)
	// initRE matches the init phase's report: the RIE runs the bootstrap's
	// init (process start, config, policy compile, ledger, clients) before the
	// first invocation and logs "INIT REPORT(durationMs: …)" for it. (The
	// REPORT line's "Init Duration" is the RIE's second, empty init phase.)
	initRE = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	// initMSRE matches the function's own "init done" log (time from main to lambda.Start).
	initMSRE = regexp.MustCompile(`"msg":"init done".*?"init_ms":([0-9]+)`)
)

// durations returns the REPORT Durations in ms, in invocation order.
func (r *rie) durations() []float64 {
	var out []float64
	for _, m := range reportRE.FindAllStringSubmatch(r.log.String(), -1) {
		d, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, d)
	}
	return out
}

// initDuration returns the cold start (the init phase's durationMs) and the
// function's own init_ms.
func (r *rie) initDuration() (phase float64, own int) {
	if m := initRE.FindStringSubmatch(r.log.String()); m != nil {
		phase, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := initMSRE.FindStringSubmatch(r.log.String()); m != nil {
		own, _ = strconv.Atoi(m[1])
	}
	return phase, own
}

// fakes is a running cmd/fakeproviders.
type fakes struct {
	urls map[string]string
}

func startFakes(t *testing.T, bin, dir string) *fakes {
	t.Helper()
	f := &fakes{urls: map[string]string{}}
	cmd := exec.Command(bin, "-state", filepath.Join(dir, "providers.json"), "-hang", "1s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "ready" {
			break
		}
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			f.urls[k] = v
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if f.urls["aws"] == "" {
		t.Fatal("fakeproviders reported no aws endpoint")
	}
	// The recorded quotes bid 5.8394 USD and up for p4de spot: the market is
	// set below that so the bids are filled.
	resp, err := http.Post(f.urls["aws"]+"/_fake/prices", "application/json", strings.NewReader(`{"sku":"p4de.24xlarge","price":"5.5"}`))
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("setting the p4de price: %v %v", resp, err)
	}
	resp.Body.Close()
	return f
}

type fakeInstance struct {
	Provider string            `json:"provider"`
	ID       string            `json:"id"`
	Token    string            `json:"token"`
	Group    string            `json:"group"`
	Tags     map[string]string `json:"tags"`
	State    string            `json:"state"`
}

// instances lists every instance the fake providers hold (all five).
func (f *fakes) instances(t *testing.T) []fakeInstance {
	t.Helper()
	var all []fakeInstance
	for _, p := range []string{"aws", "aliyun", "runpod", "vast", "autodl"} {
		u := strings.TrimSuffix(f.urls[p], "/graphql")
		resp, err := http.Get(u + "/_fake/instances")
		if err != nil {
			t.Fatal(err)
		}
		var in []fakeInstance
		err = json.NewDecoder(resp.Body).Decode(&in)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s instances: %v", p, err)
		}
		all = append(all, in...)
	}
	return all
}

// rename copies a testdata file with every "train-overseas" replaced by q
// (queue, alarm name and ARN alike), so this run's queue is its own on the
// shared moto_server.
func rename(t *testing.T, name, q string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte("train-overseas"), []byte(q))
}

type result struct {
	Decisions []struct {
		DecisionID  string `json:"decision_id"`
		Queue       string `json:"queue"`
		Status      string `json:"status"`
		Outcome     string `json:"outcome"`
		Replayed    bool   `json:"replayed"`
		Depth       int    `json:"depth"`
		DepthSource string `json:"depth_source"`
		Slots       int    `json:"slots_covered"`
	} `json:"decisions"`
	Drains            []sluice.DrainReport `json:"drains"`
	Refusals          []string             `json:"refusals"`
	BatchItemFailures []struct {
		ItemIdentifier string `json:"itemIdentifier"`
	} `json:"batchItemFailures"`
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

func decode(t *testing.T, body []byte) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return r
}

// sqsBatch wraps bodies as an SQS event.
func sqsBatch(bodies ...string) []byte {
	var recs []map[string]any
	for i, b := range bodies {
		recs = append(recs, map[string]any{"messageId": fmt.Sprintf("m-%d", i), "receiptHandle": "rh", "body": b,
			"attributes": map[string]string{"ApproximateReceiveCount": "1"}, "messageAttributes": map[string]any{},
			"md5OfBody": "", "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:deliveries", "awsRegion": "us-east-1"})
	}
	out, _ := json.Marshal(map[string]any{"Records": recs})
	return out
}

// snsMessage returns the Sns.Message (the alarm payload) and the SQS body an
// SNS subscription delivers for a testdata SNS event.
func snsMessage(t *testing.T, event []byte) (payload, envelope string) {
	t.Helper()
	var ev struct {
		Records []struct {
			Sns struct {
				MessageID string `json:"MessageId"`
				TopicArn  string `json:"TopicArn"`
				Message   string `json:"Message"`
				Timestamp string `json:"Timestamp"`
			} `json:"Sns"`
		} `json:"Records"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	s := ev.Records[0].Sns
	env, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": s.MessageID, "TopicArn": s.TopicArn,
		"Message": s.Message, "Timestamp": s.Timestamp, "SignatureVersion": "1", "Signature": "EXAMPLE"})
	return s.Message, string(env)
}

func TestFunctionsUnderRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under aws-lambda-rie")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bins := build(t, dir)
	moto := motoserver.Endpoint(t)
	q := motoserver.Unique("train-overseas")

	// The training queue on moto_server: 7 jobs waiting, 2 running (in flight).
	sq := sqs.NewFromConfig(motoserver.Config(t))
	qu, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: qu.QueueUrl, MessageBody: aws.String(fmt.Sprint("job ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < 2; {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qu.QueueUrl, MaxNumberOfMessages: int32(2 - got), VisibilityTimeout: 3600})
		if err != nil {
			t.Fatal(err)
		}
		got += len(out.Messages)
	}

	// The DynamoDB ledger table on moto_server, as the stack's LedgerTable.
	mcfg := motoserver.Config(t)
	table := motoserver.Unique("sluice-ledger")
	if err := ledger.CreateDynamoTable(ctx, mcfg, table); err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, rename(t, "sluice.yaml", q), 0o644); err != nil {
		t.Fatal(err)
	}
	fk := startFakes(t, bins.fakes, dir)
	var endpoints []string
	for _, p := range []string{"aws", "aliyun", "runpod", "vast", "autodl"} {
		endpoints = append(endpoints, p+"="+fk.urls[p])
	}
	replay, _ := filepath.Abs(filepath.Join(root, "testdata", "replay"))
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_LAMBDA_FUNCTION_TIMEOUT=60",
		"AWS_ENDPOINT_URL_SQS=" + moto, "AWS_ENDPOINT_URL_DYNAMODB=" + moto, "AWS_ENDPOINT_URL_SSM=" + moto, "AWS_ENDPOINT_URL_SECRETS_MANAGER=" + moto,
		"SLUICE_CONFIG=" + cfg, "SLUICE_REPLAY=" + replay, "SLUICE_FX_URL=off", "SLUICE_LEDGER_TABLE=" + table,
		"SLUICE_PLACEMENT=providers", "SLUICE_PLACEMENT_ENDPOINTS=" + strings.Join(endpoints, ","),
		// Placement credentials, as the functions read them (variables first, then
		// Secrets Manager); the fakes only check that one is sent.
		"RUNPOD_API_KEY=fake-runpod", "VAST_API_KEY=fake-vast", "AUTODL_TOKEN=fake-autodl",
		"ALIBABA_CLOUD_ACCESS_KEY_ID=fake-id", "ALIBABA_CLOUD_ACCESS_KEY_SECRET=fake-secret",
	}
	burst := startRIE(t, bins.rie, bins.burst, env)

	// 1. The same ALARM through the three deliveries: one decision, sized on
	// the live depth (7 visible), placed once.
	var id string
	var warm []time.Duration
	for i, f := range []string{"events/alarm-sns-burst.json", "events/alarm-eventbridge-burst.json", "events/alarm-lambda-burst.json"} {
		body, took := burst.invoke(t, rename(t, f, q))
		r := decode(t, body)
		if r.ErrorType != "" || len(r.Decisions) != 1 {
			t.Fatalf("%s: %s", f, body)
		}
		d := r.Decisions[0]
		if d.Replayed != (i > 0) || d.Queue != q || d.Depth != 7 || d.DepthSource != "sqs-live" || d.Outcome != "placed" {
			t.Errorf("%s: %+v", f, d)
		}
		if i == 0 {
			id = d.DecisionID
		} else {
			warm = append(warm, took)
			if d.DecisionID != id {
				t.Errorf("%s: decision %s, want %s", f, d.DecisionID, id)
			}
		}
	}

	// 2. An SQS batch: the burst alarm again (SNS envelope), a message that is
	// not an alarm, and the Beijing alarm (raw payload).
	_, burstEnv := snsMessage(t, rename(t, "events/alarm-sns-burst.json", q))
	beijing, _ := snsMessage(t, rename(t, "events/alarm-sns-beijing.json", q))
	body, took := burst.invoke(t, sqsBatch(burstEnv, "hello, not an alarm", beijing))
	warm = append(warm, took)
	r := decode(t, body)
	if len(r.BatchItemFailures) != 0 || len(r.Refusals) != 1 || !strings.HasPrefix(r.Refusals[0], `sqs message 1: body "hello, not an alarm": not JSON`) ||
		len(r.Decisions) != 2 || !r.Decisions[0].Replayed || r.Decisions[0].DecisionID != id ||
		r.Decisions[1].Queue != "train-beijing" || r.Decisions[1].Replayed || r.Decisions[1].DepthSource != "alarm-datapoint" ||
		r.Decisions[1].Outcome != "placed" {
		t.Fatalf("batch: %s", body)
	}
	beijingID := r.Decisions[1].DecisionID

	// 3. A bad event and an unknown queue: answered, not retried (no errorType).
	for _, ev := range [][]byte{[]byte(`{"hello":"world"}`), bytes.ReplaceAll(rename(t, "events/alarm-sns-burst.json", q), []byte(q), []byte("train-nowhere"))} {
		body, _ := burst.invoke(t, ev)
		if r := decode(t, body); r.ErrorType != "" || len(r.Refusals) != 1 || len(r.Decisions) != 0 {
			t.Errorf("refusal: %s", body)
		}
	}

	// The ledger and the providers hold exactly the two decisions' placements.
	l, err := ledger.OpenDynamoDB(ctx, mcfg, table)
	if err != nil {
		t.Fatal(err)
	}
	check := func(stage string, wantOpen map[string]bool) {
		t.Helper()
		if _, err := l.Verify(ctx); err != nil {
			t.Fatalf("%s: ledger chain: %v", stage, err)
		}
		open, err := l.OpenPlacements(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		// An open placement's external ids are exactly the provider's running
		// instances for it (EC2 "i-…", AutoDL "dep-…/ctr-…", …); nothing else runs.
		byExternal := map[string]sluice.OpenPlacement{}
		for _, op := range open {
			if !wantOpen[op.DecisionID] {
				t.Errorf("%s: open placement of %s line %d, want none", stage, op.DecisionID, op.Line)
			}
			if len(op.ExternalIDs) != op.Units {
				t.Errorf("%s: %s line %d: %d external ids for %d units", stage, op.DecisionID, op.Line, len(op.ExternalIDs), op.Units)
			}
			for _, x := range op.ExternalIDs {
				byExternal[op.Provider+"/"+x] = op
			}
		}
		held := map[string]bool{}
		running := 0
		for _, in := range fk.instances(t) {
			key := in.Provider + "/" + in.ID
			if in.Group != "" {
				if _, ok := byExternal[in.Provider+"/"+in.Group+"/"+in.ID]; ok {
					key = in.Provider + "/" + in.Group + "/" + in.ID
				}
			}
			op, isOpen := byExternal[key]
			if in.State == "terminated" {
				if isOpen {
					t.Errorf("%s: %s terminated but its placement (%s line %d) is open", stage, key, op.DecisionID, op.Line)
				}
				continue
			}
			running++
			if !isOpen {
				t.Errorf("%s: %s running (token %q) with no open placement", stage, key, in.Token)
				continue
			}
			if in.Tags["sluice:decision"] != "" && in.Tags["sluice:decision"] != op.DecisionID {
				t.Errorf("%s: %s tagged %s, placement of %s", stage, key, in.Tags["sluice:decision"], op.DecisionID)
			}
			held[key] = true
		}
		for x, op := range byExternal {
			if !held[x] {
				t.Errorf("%s: %s of %s line %d is not running at the provider", stage, x, op.DecisionID, op.Line)
			}
		}
		for d := range wantOpen {
			if !slices.ContainsFunc(open, func(op sluice.OpenPlacement) bool { return op.DecisionID == d }) {
				t.Errorf("%s: decision %s has no open placement", stage, d)
			}
		}
		t.Logf("%s: %d open placements holding %d instances; %d running at the providers", stage, len(open), len(byExternal), running)
	}
	rec, ok, err := l.Decision(ctx, id)
	if err != nil || !ok || rec.Trigger.Depth != 7 || rec.Trigger.DepthSource != "sqs-live" || rec.Demand.Slots != 7 || rec.Status != "planned" {
		t.Fatalf("recorded decision %s: ok=%v err=%v trigger %+v demand %+v status %s", id, ok, err, rec.Trigger, rec.Demand, rec.Status)
	}
	for _, d := range []string{id, beijingID} {
		rec, _, _ := l.Decision(ctx, d)
		for _, p := range rec.Placements {
			t.Logf("%s (%s) line %d: %s %d units %v %s", d, rec.Trigger.Queue, p.Line, p.Provider, p.Units, p.ExternalIDs, p.Error)
		}
	}
	check("after burst", map[string]bool{id: true, beijingID: true})

	// 4. The OK alarm through drain releases the overseas placements only.
	drain := startRIE(t, bins.rie, bins.drain, env)
	body, _ = drain.invoke(t, rename(t, "events/alarm-eventbridge-ok.json", q))
	r = decode(t, body)
	if r.ErrorType != "" || len(r.Drains) != 1 || len(r.Drains[0].Released) == 0 || len(r.Drains[0].Pending) != 0 {
		t.Fatalf("drain: %s", body)
	}
	for _, rel := range r.Drains[0].Released {
		if rel.DecisionID != id || rel.State != sluice.ReleaseReleased {
			t.Errorf("released %+v", rel)
		}
	}
	check("after drain", map[string]bool{beijingID: true})
	// The same OK again (Lambda redelivery): nothing left to release.
	body, _ = drain.invoke(t, rename(t, "events/alarm-sns-ok.json", q))
	if r := decode(t, body); r.ErrorType != "" || len(r.Drains) != 1 || len(r.Drains[0].Released) != 0 {
		t.Errorf("second drain: %s", body)
	}

	// The reconcile schedule (an EventBridge Scheduled Event): the providers
	// hold exactly what the ledger says, so nothing is orphaned, lost or adopted.
	rc := startRIE(t, bins.rie, bins.reconcile, env)
	body, _ = rc.invoke(t, []byte(`{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event",`+
		`"source":"aws.events","account":"123456789012","time":"2026-11-29T12:00:00Z","region":"us-east-1",`+
		`"resources":["arn:aws:events:us-east-1:123456789012:rule/sluice-reconcile"],"detail":{}}`))
	var rep sluice.ReconcileReport
	if err := json.Unmarshal(body, &rep); err != nil || strings.Contains(string(body), "errorType") ||
		len(rep.Orphans)+len(rep.Lost)+len(rep.Adopted)+len(rep.Pending) != 0 || rep.Listed["autodl"]+rep.Listed["aliyun"] != 4 {
		t.Errorf("reconcile: %s (%v)", body, err)
	}
	check("after reconcile", map[string]bool{beijingID: true})

	// 5. A function error is HTTP 200 with errorType in the body: the ledger
	// table disappears after the function's init, so the decision cannot be
	// read — a transient error, returned for Lambda to retry.
	gone := motoserver.Unique("sluice-ledger-gone")
	if err := ledger.CreateDynamoTable(ctx, mcfg, gone); err != nil {
		t.Fatal(err)
	}
	failing := startRIE(t, bins.rie, bins.burst, append(slices.Clone(env), "SLUICE_LEDGER_TABLE="+gone))
	if body, _ := failing.invoke(t, []byte(`{"warm":"up"}`)); decode(t, body).ErrorType != "" {
		t.Fatalf("warm-up: %s", body)
	}
	if _, err := dynamodb.NewFromConfig(mcfg).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(gone)}); err != nil {
		t.Fatal(err)
	}
	body, _ = failing.invoke(t, rename(t, "events/alarm-sns-burst.json", q))
	if r := decode(t, body); r.ErrorType == "" || !strings.Contains(r.ErrorMessage, "ResourceNotFoundException") || len(r.Decisions) != 0 {
		t.Errorf("ledger gone: body %s; want errorType and the DynamoDB error", body)
	} else {
		t.Logf("ledger gone: HTTP 200, body %s", body)
	}
	// A function whose init fails (a config that does not parse) answers
	// HTTP 502 from this RIE build, with the reason in its log.
	badCfg := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(badCfg, []byte("billing_currency: USD\nno_such_key: 1\n"), 0o644)
	broken := startRIE(t, bins.rie, bins.burst, append(slices.Clone(env), "SLUICE_CONFIG="+badCfg))
	if status, body, _ := broken.post(t, rename(t, "events/alarm-sns-burst.json", q)); status == http.StatusOK ||
		!broken.waitLog("Runtime.ExitError") || !broken.waitLog("field no_such_key not found") {
		t.Errorf("broken init: HTTP %d %s\n%s", status, body, broken.log.String())
	} else {
		t.Logf("broken init: HTTP %d, log: Runtime.ExitError, bad config named", status)
	}

	// Figures: cold start (the init phase, policy compile included) and invocations.
	for _, fn := range []struct {
		name string
		r    *rie
	}{{"burst", burst}, {"drain", drain}, {"reconcile", rc}} {
		phase, own := fn.r.initDuration()
		if phase == 0 {
			t.Fatalf("%s: no INIT REPORT in the RIE log:\n%s", fn.name, fn.r.log.String())
		}
		t.Logf("%s under RIE: init phase %.1f ms (function's own init_ms %d); REPORT Durations %v ms", fn.name, phase, own, fn.r.durations())
	}
	t.Logf("burst warm round trips (replays and the batch): %v", warm)
	for _, f := range []string{bins.burst, bins.drain, bins.reconcile} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes (host arch, -s -w)", filepath.Base(filepath.Dir(f)), st.Size())
	}
}
