package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// The crash tests run the real binaries: `sluice burst` placing through the
// provider adapters (EC2; AutoDL and Alibaba for the Beijing queue) against
// cmd/fakeproviders (the providers' wire formats on loopback, state in a
// JSON file), killed by SLUICE_CRASH_AT at each step, then run again.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds sluice and fakeproviders once per test binary.
func binaries(t *testing.T) (sluiceBin, fakeBin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "sluice-crash-")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{".", "../fakeproviders"} {
			name := filepath.Base(filepath.Clean(pkg))
			if pkg == "." {
				name = "sluice"
			}
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "sluice"), filepath.Join(binDir, "fakeproviders")
}

// fakeProviders is a running cmd/fakeproviders process.
type fakeProviders struct {
	state string
	urls  map[string]string
	cmd   *exec.Cmd
}

func startFakes(t *testing.T, bin, dir string) *fakeProviders {
	t.Helper()
	f := &fakeProviders{state: filepath.Join(dir, "providers.json"), urls: map[string]string{}}
	f.cmd = exec.Command(bin, "-state", f.state, "-hang", "1s")
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.cmd.Process.Kill(); _ = f.cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			break
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			f.urls[k] = v
		}
	}
	go func() { // keep draining
		for sc.Scan() {
		}
	}()
	if f.urls["aws"] == "" {
		t.Fatal("fakeproviders did not report an aws endpoint")
	}
	// The recorded quotes bid 5.8394–7.8074 USD for p4de spot: the market is
	// set below that so the bids are filled.
	f.post(t, "/_fake/prices", `{"sku":"p4de.24xlarge","price":"5.5"}`)
	return f
}

// env is the environment of a sluice process placing through the fakes:
// every provider's placement endpoint and dummy credentials.
func (f *fakeProviders) env(crashAt string) []string {
	var eps []string
	for _, p := range []string{"aws", "aliyun", "runpod", "vast", "autodl"} {
		if u := f.urls[p]; u != "" {
			eps = append(eps, p+"="+u)
		}
	}
	return append(os.Environ(), "SLUICE_PLACEMENT=providers", "SLUICE_PLACEMENT_ENDPOINTS="+strings.Join(eps, ","),
		"SLUICE_CRASH_AT="+crashAt, "SLUICE_FX_URL=off",
		"AWS_ACCESS_KEY_ID=fake", "AWS_SECRET_ACCESS_KEY=fake", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
		"RUNPOD_API_KEY=fake", "VAST_API_KEY=fake", "ALIBABA_CLOUD_ACCESS_KEY_ID=fake", "ALIBABA_CLOUD_ACCESS_KEY_SECRET=fake", "AUTODL_TOKEN=fake")
}

func (f *fakeProviders) post(t *testing.T, path, body string) {
	t.Helper()
	resp, err := http.Post(f.urls["aws"]+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s %s: %s", path, body, resp.Status)
	}
}

// fakeInstance is the part of brokers/fake's Instance the test reads from
// the state file.
type fakeInstance struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	// Token is the client token (EC2, Alibaba) or the name the adapter
	// chose ("sluice-" + client token: RunPod, Vast, AutoDL).
	Token string `json:"token"`
	State string `json:"state"`
}

// line is the decision id and line number an instance's token names
// (sluice.ClientToken: "<decision id>-l<line>").
func (i fakeInstance) line() (decision string, line int, token string) {
	token = strings.TrimPrefix(i.Token, "sluice-")
	k := strings.LastIndex(token, "-l")
	if k < 0 {
		return "", -1, token
	}
	n, err := strconv.Atoi(token[k+2:])
	if err != nil {
		return "", -1, token
	}
	return token[:k], n, token
}

func (f *fakeProviders) instances(t *testing.T) []fakeInstance {
	t.Helper()
	raw, err := os.ReadFile(f.state)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Instances []fakeInstance `json:"instances"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st.Instances
}

// burstProcess runs `sluice burst` on the overseas alarm, placing through
// the fakes, and returns its exit status.
func burstProcess(t *testing.T, bin string, f *fakeProviders, ledgerPath, crashAt string) (int, string) {
	return burstEvent(t, bin, f, "alarm-sns-burst.json", ledgerPath, crashAt)
}

// burstEvent runs `sluice burst` on testdata/events/event.
func burstEvent(t *testing.T, bin string, f *fakeProviders, event, ledgerPath, crashAt string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "burst", "--event", "../../testdata/events/"+event,
		"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay", "--ledger", ledgerPath)
	cmd.Env = f.env(crashAt)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("sluice burst: %v\n%s", err, out.String())
	return -1, ""
}

// tally compares the provider's instances with the ledger.
type tally struct {
	running, duplicates, orphans, unrecorded, missing int
}

func (c tally) String() string {
	return fmt.Sprintf("running %d, duplicates %d, orphans %d, unrecorded %d, missing %d",
		c.running, c.duplicates, c.orphans, c.unrecorded, c.missing)
}

// compare counts, over the provider's running instances: duplicates (more
// instances for one decision line than its placement's units, or a second
// client token), orphans (the tagged decision is not in the ledger),
// unrecorded (the decision is, but the line has no open placement); and
// missing (open placements whose instances the provider does not hold).
func compare(t *testing.T, f *fakeProviders, ledgerPath string) tally {
	t.Helper()
	l, err := ledger.OpenSQLite(t.Context(), ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Verify(t.Context()); err != nil {
		t.Fatalf("ledger chain: %v", err)
	}
	open, err := l.OpenPlacements(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	byLine := map[string]sluice.OpenPlacement{}
	held := map[string]bool{}
	for _, op := range open {
		byLine[op.DecisionID+"/"+strconv.Itoa(op.Line)] = op
	}
	var c tally
	perLine := map[string]int{}
	for _, in := range f.instances(t) {
		if in.State == "terminated" {
			continue
		}
		c.running++
		dec, line, token := in.line()
		key := dec + "/" + strconv.Itoa(line)
		perLine[key]++
		if _, ok, err := l.Decision(t.Context(), dec); err != nil {
			t.Fatal(err)
		} else if !ok {
			c.orphans++
			continue
		}
		op, ok := byLine[key]
		if !ok {
			c.unrecorded++
			continue
		}
		held[key] = true
		if perLine[key] > op.Units || token != op.ClientToken {
			c.duplicates++
		}
	}
	for key := range byLine {
		if !held[key] {
			c.missing++
		}
	}
	return c
}

// TestCrashMatrix kills `sluice burst` at every step and reruns it; the
// provider and the ledger must agree afterwards. Scenario "plain": two AWS
// spot lines. Scenario "fall-through": the first RunInstances is refused for
// capacity, so a follow-up record re-plans that line.
func TestCrashMatrix(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	type cell struct {
		scenario, step string
	}
	var matrix []cell
	for _, s := range []string{sluice.StepAfterIntent, sluice.StepAfterPlace(1), sluice.StepAfterPlace(2), sluice.StepBeforeOutcome} {
		matrix = append(matrix, cell{"plain", s})
	}
	for _, s := range []string{sluice.StepAfterIntent, sluice.StepAfterPlace(1), sluice.StepAfterPlace(2),
		sluice.StepAfterFollowUpIntent, sluice.StepAfterPlace(3), sluice.StepBeforeOutcome} {
		matrix = append(matrix, cell{"fall-through", s})
	}
	// Scenario "beijing": the Beijing-only queue, AutoDL (3 containers of one
	// deployment, found by deployment name) and Alibaba (ClientToken).
	for _, s := range []string{sluice.StepAfterIntent, sluice.StepAfterPlace(1), sluice.StepAfterPlace(2), sluice.StepBeforeOutcome} {
		matrix = append(matrix, cell{"beijing", s})
	}
	var report []string
	for _, m := range matrix {
		t.Run(m.scenario+"/"+m.step, func(t *testing.T) {
			dir := t.TempDir()
			f := startFakes(t, fakeBin, dir)
			if m.scenario == "fall-through" {
				f.post(t, "/_fake/faults", `{"kind":"capacity","times":1}`)
			}
			event := "alarm-sns-burst.json"
			if m.scenario == "beijing" {
				event = "alarm-sns-beijing.json"
			}
			lp := filepath.Join(dir, "ledger.db")
			code, out := burstEvent(t, sluiceBin, f, event, lp, m.step)
			if code != 137 {
				t.Fatalf("crash run exited %d, want 137 at %s\n%s", code, m.step, out)
			}
			before := compare(t, f, lp)
			code, out = burstEvent(t, sluiceBin, f, event, lp, "")
			if code != 0 || !strings.Contains(out, "PLACED") {
				t.Fatalf("rerun exited %d\n%s", code, out)
			}
			after := compare(t, f, lp)
			ever := len(f.instances(t))
			report = append(report, fmt.Sprintf("%-12s %-22s killed: %s | rerun: %s | ever created %d", m.scenario, m.step, before, after, ever))
			if after.running != 4 || ever != 4 || after.duplicates+after.orphans+after.unrecorded+after.missing != 0 {
				t.Fatalf("after the rerun: %s, %d instances ever created; want 4 running, 4 ever, nothing else", after, ever)
			}
		})
	}
	t.Logf("crash matrix (running instances at the fake providers vs the ledger):\n%s", strings.Join(report, "\n"))
}

// TestFiveConcurrentProcesses delivers the same alarm to five `sluice burst`
// processes at once: exactly one set of instances.
func TestFiveConcurrentProcesses(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	dir := t.TempDir()
	f := startFakes(t, fakeBin, dir)
	lp := filepath.Join(dir, "ledger.db")
	codes := make([]int, 5)
	outs := make([]string, 5)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i], outs[i] = burstProcess(t, sluiceBin, f, lp, "") })
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("process %d exited %d\n%s", i, c, outs[i])
		}
	}
	c := compare(t, f, lp)
	t.Logf("5 concurrent deliveries: %s; instances ever created %d", c, len(f.instances(t)))
	if c.running != 4 || len(f.instances(t)) != 4 || c.duplicates+c.orphans+c.unrecorded+c.missing != 0 {
		t.Fatalf("%s; %d instances ever created, want 4 (2 lines × 2 units)", c, len(f.instances(t)))
	}
}

// TestTimeoutAfterCreateProcess: EC2 creates the instances, then the answer
// never comes (the fake holds it, then 504). The rerun adopts what exists
// (client token) and buys nothing again.
func TestTimeoutAfterCreateProcess(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	dir := t.TempDir()
	f := startFakes(t, fakeBin, dir)
	f.post(t, "/_fake/faults", `{"kind":"timeout-after-create","times":1}`)
	lp := filepath.Join(dir, "ledger.db")
	code, out := burstProcess(t, sluiceBin, f, lp, "")
	first := compare(t, f, lp)
	if code != 0 {
		code, out = burstProcess(t, sluiceBin, f, lp, "")
	}
	if code != 0 || !strings.Contains(out, "PLACED") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	c := compare(t, f, lp)
	t.Logf("timeout after create: first run %s; end %s; instances ever created %d", first, c, len(f.instances(t)))
	if c.running != 4 || len(f.instances(t)) != 4 || c.duplicates+c.orphans+c.unrecorded+c.missing != 0 {
		t.Fatalf("%s; %d instances ever created, want 4", c, len(f.instances(t)))
	}
}

// sluiceProcess runs the sluice binary with args against the fakes.
func sluiceProcess(t *testing.T, bin string, f *fakeProviders, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = f.env("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String() + errb.String()
	}
	t.Fatalf("sluice %s: %v\n%s%s", args[0], err, out.String(), errb.String())
	return -1, ""
}

func (f *fakeProviders) delete(t *testing.T, path string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, f.urls["aws"]+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestDrainAndReconcileProcesses: burst, then drain on the OK alarm while
// every EC2 terminate times out (both placements stay release-pending, cost
// accruing); reconcile after the provider recovers releases them with the
// accrued cost at AWS's billing rule (per second, 60 s minimum); a burst
// recorded in another ledger leaves instances that are orphans to this one,
// and reconcile terminates and records them.
func TestDrainAndReconcileProcesses(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	dir := t.TempDir()
	f := startFakes(t, fakeBin, dir)
	lp := filepath.Join(dir, "ledger.db")
	common := []string{"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay", "--ledger", lp}
	if code, out := burstProcess(t, sluiceBin, f, lp, ""); code != 0 {
		t.Fatalf("burst: %d\n%s", code, out)
	}
	f.post(t, "/_fake/faults", `{"kind":"terminate-timeout"}`)
	code, out := sluiceProcess(t, sluiceBin, f, append([]string{"drain", "--event", "../../testdata/events/alarm-sns-ok.json", "--json"}, common...)...)
	if code != 1 {
		t.Fatalf("drain with terminate timeouts exited %d, want 1\n%s", code, out)
	}
	var drains []sluice.DrainReport
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "]")+1]), &drains); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(drains) != 1 || len(drains[0].Pending) != 2 || len(drains[0].Released) != 0 {
		t.Fatalf("drain: %+v", drains)
	}
	if c := compare(t, f, lp); c.running != 4 {
		t.Fatalf("after timed-out terminates: %s; want 4 still running (and billing)", c)
	}
	time.Sleep(1100 * time.Millisecond) // cost accrues while pending
	f.delete(t, "/_fake/faults")

	// Another ledger's burst (a later alarm): its instances are orphans here.
	raw, err := os.ReadFile("../../testdata/events/alarm-sns-burst.json")
	if err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(dir, "later.json")
	if err := os.WriteFile(later, bytes.ReplaceAll(raw, []byte("2026-11-29T10:05:00.000+0000"), []byte("2026-11-29T10:15:00.000+0000")), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	if code, out := sluiceProcess(t, sluiceBin, f, "burst", "--event", later, "--config", "../../testdata/sluice.yaml",
		"--replay", "../../testdata/replay", "--ledger", other); code != 0 {
		t.Fatalf("other burst: %d\n%s", code, out)
	}
	code, out = sluiceProcess(t, sluiceBin, f, append([]string{"reconcile", "--json"}, common...)...)
	if code != 0 {
		t.Fatalf("reconcile exited %d\n%s", code, out)
	}
	var rep sluice.ReconcileReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Released) != 2 || len(rep.Orphans) != 4 || len(rep.Lost) != 0 || len(rep.Pending) != 0 || len(rep.Adopted) != 0 {
		t.Fatalf("reconcile: released %d orphans %d lost %d pending %d adopted %d\n%s",
			len(rep.Released), len(rep.Orphans), len(rep.Lost), len(rep.Pending), len(rep.Adopted), out)
	}
	for _, r := range append(rep.Released, rep.Orphans...) {
		// AWS bills per second with a 60 s minimum: Price × Units × s / 3600.
		if r.State != sluice.ReleaseReleased || r.BilledSeconds < 60 {
			t.Errorf("%s line %d: %s, %d s billed", r.DecisionID, r.Line, r.State, r.BilledSeconds)
		}
	}
	for _, r := range rep.Released {
		// The fake fills spot at its market price, 5.5 USD per instance-hour, read back into the placement.
		want := decimal.RequireFromString("5.5").Mul(decimal.NewFromInt(2*r.BilledSeconds)).DivRound(decimal.NewFromInt(3600), sluice.AccruedScale)
		if r.AccruedCost.String() != want.String()+" USD" {
			t.Errorf("line %d: accrued %s, want %s USD for %d s", r.Line, r.AccruedCost, want, r.BilledSeconds)
		}
		t.Logf("released after retry: %s line %d, %d s billed, accrued %s", r.DecisionID, r.Line, r.BilledSeconds, r.AccruedCost)
	}
	if c := compare(t, f, lp); c.running != 0 {
		t.Fatalf("after reconcile: %s; want nothing running", c)
	}
	l, err := ledger.OpenSQLite(t.Context(), lp)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if live, _ := l.LiveSlots(t.Context(), "train-overseas"); live != 0 {
		t.Fatalf("live %d", live)
	}
	// decision + 2 placements + 2 pending + 2 released + 4 orphans × (pending + released).
	if n, err := l.Verify(t.Context()); err != nil || n != 15 {
		t.Fatalf("ledger: %d records, %v", n, err)
	}
}

// TestKilledDuringProviderCall kills `sluice burst` (SIGKILL) while EC2 has
// created the first line's instances but not yet answered (the fake holds
// the response): the rerun finds them by client token and adopts them.
func TestKilledDuringProviderCall(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	dir := t.TempDir()
	f := startFakes(t, fakeBin, dir)
	f.post(t, "/_fake/faults", `{"kind":"timeout-after-create","times":1}`)
	lp := filepath.Join(dir, "ledger.db")
	cmd := exec.Command(sluiceBin, "burst", "--event", "../../testdata/events/alarm-sns-burst.json",
		"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay", "--ledger", lp)
	cmd.Env = f.env("")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(f.instances(t)) == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no instance created within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill() // SIGKILL while the answer is held
	_ = cmd.Wait()
	killed := compare(t, f, lp)
	code, out := burstProcess(t, sluiceBin, f, lp, "")
	if code != 0 || !strings.Contains(out, "PLACED") {
		t.Fatalf("rerun exited %d\n%s", code, out)
	}
	c := compare(t, f, lp)
	t.Logf("killed during RunInstances: %s | rerun: %s; instances ever created %d", killed, c, len(f.instances(t)))
	if killed.unrecorded != 2 || c.running != 4 || len(f.instances(t)) != 4 || c.duplicates+c.orphans+c.unrecorded+c.missing != 0 {
		t.Fatalf("killed: %s; rerun: %s; %d instances ever created, want 2 unrecorded then 4 and agreement", killed, c, len(f.instances(t)))
	}
}

// TestFiveConcurrentResumers: the first process dies right after recording
// the intent; the alarm is then redelivered to five processes at once, all
// of which resume the same recorded lines concurrently.
func TestFiveConcurrentResumers(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	for _, event := range []string{"alarm-sns-burst.json", "alarm-sns-beijing.json"} {
		t.Run(event, func(t *testing.T) {
			dir := t.TempDir()
			f := startFakes(t, fakeBin, dir)
			lp := filepath.Join(dir, "ledger.db")
			if code, out := burstEvent(t, sluiceBin, f, event, lp, sluice.StepAfterIntent); code != 137 {
				t.Fatalf("crash run exited %d\n%s", code, out)
			}
			codes := make([]int, 5)
			outs := make([]string, 5)
			var wg sync.WaitGroup
			for i := range codes {
				wg.Go(func() { codes[i], outs[i] = burstEvent(t, sluiceBin, f, event, lp, "") })
			}
			wg.Wait()
			for i, c := range codes {
				if c != 0 {
					t.Fatalf("resumer %d exited %d\n%s", i, c, outs[i])
				}
			}
			c := compare(t, f, lp)
			ever := len(f.instances(t))
			t.Logf("%s, 5 concurrent resumers: %s; instances ever created %d", event, c, ever)
			if c.running != 4 || ever != 4 || c.duplicates+c.orphans+c.unrecorded+c.missing != 0 {
				t.Fatalf("%s; %d ever created, want 4 and agreement", c, ever)
			}
		})
	}
}

// TestReconcileSettlesACrashedBurst: the burst dies after its first
// provider call and the alarm is never redelivered; `sluice reconcile`
// resumes the decision (adopts line 0, places line 1), and the provider and
// the ledger agree.
func TestReconcileSettlesACrashedBurst(t *testing.T) {
	sluiceBin, fakeBin := binaries(t)
	dir := t.TempDir()
	f := startFakes(t, fakeBin, dir)
	lp := filepath.Join(dir, "ledger.db")
	if code, out := burstProcess(t, sluiceBin, f, lp, sluice.StepAfterPlace(1)); code != 137 {
		t.Fatalf("crash run exited %d\n%s", code, out)
	}
	killed := compare(t, f, lp)
	code, out := sluiceProcess(t, sluiceBin, f, "reconcile", "--json", "--adopt-after", "0", "--config", "../../testdata/sluice.yaml",
		"--replay", "../../testdata/replay", "--ledger", lp)
	if code != 0 {
		t.Fatalf("reconcile exited %d\n%s", code, out)
	}
	var rep sluice.ReconcileReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c := compare(t, f, lp)
	t.Logf("reconcile after a crash at after-place-1: killed %s | after reconcile %s; settled %d lines, orphans %d; ever created %d",
		killed, c, len(rep.Adopted), len(rep.Orphans), len(f.instances(t)))
	if len(rep.Adopted) != 2 || len(rep.Orphans) != 0 || c.running != 4 || len(f.instances(t)) != 4 ||
		c.duplicates+c.orphans+c.unrecorded+c.missing != 0 {
		t.Fatalf("reconcile: %+v; %s", rep, c)
	}
}
