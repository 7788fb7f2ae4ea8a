package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/sandbox"
	"github.com/sluicehq/sluice/events"
)

// movingClock is a settable clock starting at decisionAt.
type movingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *movingClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *movingClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openSandboxed opens the app with the sandbox provider's state in a file,
// as separate processes (burst, drain, reconcile) would share it.
func openSandboxed(t *testing.T, dir string, c sluice.Clock) *App {
	t.Helper()
	a, err := Open(context.Background(), Options{
		ConfigPath: "../testdata/sluice.yaml", ReplayDir: "../testdata/replay",
		LedgerPath: filepath.Join(dir, "ledger.db"), Clock: c, CodeVersion: "test",
		Placement: &Placement{SandboxState: filepath.Join(dir, "provider.json")}, AdoptAfter: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func triggerOf(t *testing.T, event string) sluice.Trigger {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../testdata/events", event))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := events.Parse(raw)
	if err != nil || len(ts) != 1 {
		t.Fatalf("%s: %v", event, err)
	}
	return ts[0]
}

// burstThenOK places the overseas alarm's two AWS lines (line 0: 2 ×
// 5.8394 USD/h, line 1: 2 × 6.8849 USD/h) and returns the app and clock
// 30 minutes later.
func burstThenOK(t *testing.T) (*App, *movingClock, string) {
	dir := t.TempDir()
	c := &movingClock{t: decisionAt}
	a := openSandboxed(t, dir, c)
	rec, _, err := a.Burst.Decide(context.Background(), triggerOf(t, "alarm-sns-burst.json"))
	if err != nil || rec.Outcome != sluice.StatusPlaced || len(rec.Placements) != 2 {
		t.Fatalf("burst: %v, outcome %s", err, rec.Outcome)
	}
	c.Add(30 * time.Minute)
	return a, c, dir
}

func TestDrainReleasesMostExpensiveFirst(t *testing.T) {
	a, _, _ := burstThenOK(t)
	ok := okNow(t, a.Burst.Clock)
	rep, err := a.Drain(context.Background(), ok)
	if err != nil {
		t.Fatal(err)
	}
	// 1800 s at 2 × 6.8849 USD/h = 6.8849 USD; at 2 × 5.8394 = 5.8394 USD.
	if len(rep.Released) != 2 || len(rep.Pending) != 0 {
		t.Fatalf("released %d, pending %d", len(rep.Released), len(rep.Pending))
	}
	for i, want := range []struct {
		line int
		cost string
	}{{1, "6.8849 USD"}, {0, "5.8394 USD"}} {
		r := rep.Released[i]
		if r.Line != want.line || r.State != sluice.ReleaseReleased || r.BilledSeconds != 1800 || r.AccruedCost.String() != want.cost {
			t.Errorf("release %d: line %d %s %d s %s; want line %d released 1800 s %s", i, r.Line, r.State, r.BilledSeconds, r.AccruedCost, want.line, want.cost)
		}
	}
	if live, _ := a.Ledger.LiveSlots(context.Background(), "train-overseas"); live != 0 {
		t.Fatalf("live %d after drain, want 0", live)
	}
	if running, _ := a.Broker.Running(); len(running) != 0 {
		t.Fatalf("%d orders still running at the provider", len(running))
	}
	// Draining again finds nothing open.
	if rep, err := a.Drain(context.Background(), ok); err != nil || len(rep.Released)+len(rep.Pending) != 0 {
		t.Fatalf("second drain: %+v, %v", rep, err)
	}
	// decision + 2 placements + 2 × (pending + released).
	if n, err := a.Ledger.Verify(context.Background()); err != nil || n != 7 {
		t.Fatalf("ledger: %d records, %v", n, err)
	}
}

func TestDrainSkipsAnAlarmWithDepth(t *testing.T) {
	a, _, _ := burstThenOK(t)
	rep, err := a.Drain(context.Background(), triggerOf(t, "alarm-sns-burst.json"))
	if err != nil || rep.Skipped == "" || len(rep.Released) != 0 {
		t.Fatalf("drain of an ALARM: %+v, %v", rep, err)
	}
}

func TestTerminateTimeoutStaysPendingAndCostAccrues(t *testing.T) {
	a, c, _ := burstThenOK(t)
	// The first terminate (line 1, the dearer) times out at the provider.
	if err := a.Broker.AddFault(sandbox.Fault{Op: sandbox.OpRelease, Class: sandbox.FaultTransient, Times: 1}); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Drain(context.Background(), okNow(t, a.Burst.Clock))
	if !errors.Is(err, sluice.ErrReleasePending) || len(rep.Pending) != 1 || len(rep.Released) != 1 || rep.Pending[0].Line != 1 {
		t.Fatalf("drain: %v; pending %+v released %d", err, rep.Pending, len(rep.Released))
	}
	open, _ := a.Ledger.OpenPlacements(context.Background(), "train-overseas")
	if len(open) != 1 || open[0].ReleaseState != sluice.ReleasePending {
		t.Fatalf("open after the timeout: %+v", open)
	}
	if live, _ := a.Ledger.LiveSlots(context.Background(), "train-overseas"); live != 4 {
		t.Fatalf("live %d: a pending release keeps its slots", live)
	}
	// Ten minutes later reconcile retries it: 2400 s at 2 × 6.8849 USD/h.
	c.Add(10 * time.Minute)
	rr, err := a.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Released) != 1 || rr.Released[0].BilledSeconds != 2400 || rr.Released[0].AccruedCost.String() != "9.1798666667 USD" {
		t.Fatalf("reconcile retried: %+v", rr.Released)
	}
	if len(rr.Orphans)+len(rr.Lost)+len(rr.Pending) != 0 {
		t.Fatalf("reconcile: %+v", rr)
	}
	if live, _ := a.Ledger.LiveSlots(context.Background(), "train-overseas"); live != 0 {
		t.Fatalf("live %d", live)
	}
}

func TestReconcileOrphanLostAndAdopted(t *testing.T) {
	a, c, _ := burstThenOK(t)
	ctx := context.Background()
	rec, _, _ := a.Ledger.Decision(ctx, sluice.DecisionID(triggerOf(t, "alarm-sns-burst.json")))
	// Line 0 is taken back by the provider (spot interruption).
	if err := a.Broker.Lose(rec.Placements[0].ClientToken); err != nil {
		t.Fatal(err)
	}
	// An instance tagged with a decision the ledger never committed.
	orphan := rec.Lines[1]
	if _, err := a.Broker.Place(ctx, "dec-00000000000000000000000000000000", 0, orphan); err != nil {
		t.Fatal(err)
	}
	c.Add(5 * time.Minute)
	rep, err := a.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lost) != 1 || rep.Lost[0].Line != 0 || rep.Lost[0].State != sluice.ReleaseLost ||
		rep.Lost[0].BilledSeconds != 2100 || rep.Lost[0].AccruedCost.String() != "6.8126333333 USD" {
		// 30 min until the loss was noticed at reconcile + 5 min: 2100 s × 2 × 5.8394 USD/h.
		t.Fatalf("lost: %+v", rep.Lost)
	}
	if len(rep.Orphans) != 2 || rep.Orphans[0].State != sluice.ReleaseReleased || rep.Orphans[0].DecisionID != "" {
		t.Fatalf("orphans (one per instance of the 2-unit order): %+v", rep.Orphans)
	}
	if running, _ := a.Broker.Running(); len(running) != 1 || running[0].Line != 1 {
		t.Fatalf("running after reconcile: %+v", running)
	}
	if live, _ := a.Ledger.LiveSlots(ctx, "train-overseas"); live != 4 {
		t.Fatalf("live %d, want 4 (line 1: 2 units × 2 slots)", live)
	}
	// A second pass finds everything in order.
	rep, err = a.Reconcile(ctx)
	if err != nil || len(rep.Orphans)+len(rep.Lost)+len(rep.Adopted)+len(rep.Released)+len(rep.Pending) != 0 {
		t.Fatalf("second reconcile: %+v, %v", rep, err)
	}
	if _, err := a.Ledger.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReconcileAdoptsAnUnrecordedLine(t *testing.T) {
	dir := t.TempDir()
	c := &movingClock{t: decisionAt}
	a := openSandboxed(t, dir, c)
	ctx := context.Background()
	// The burst dies between the provider call for line 0 and its record.
	a.Burst.Step = func(s string) {
		if s == sluice.StepAfterPlace(1) {
			panic("killed")
		}
	}
	func() {
		defer func() { _ = recover() }()
		_, _, _ = a.Burst.Decide(ctx, triggerOf(t, "alarm-sns-burst.json"))
	}()
	a.Burst.Step = nil
	c.Add(time.Hour)
	// Reconcile resumes the decision as a redelivery would: line 0 is found
	// at the provider and adopted, line 1 (never placed) is placed.
	rep, err := a.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Adopted) != 2 || rep.Adopted[0].Line != 0 || rep.Adopted[1].Line != 1 || len(rep.Orphans) != 0 {
		t.Fatalf("reconcile: adopted %+v orphans %+v", rep.Adopted, rep.Orphans)
	}
	open, _ := a.Ledger.OpenPlacements(ctx, "train-overseas")
	running, _ := a.Broker.Running()
	if len(open) != 2 || len(running) != 2 {
		t.Fatalf("open %d, running %d; want 2 and 2 (nothing bought twice)", len(open), len(running))
	}
	if rep, err := a.Reconcile(ctx); err != nil || len(rep.Adopted)+len(rep.Orphans)+len(rep.Lost) != 0 {
		t.Fatalf("second reconcile: %+v %v", rep, err)
	}
}

func TestPlacementFromEnv(t *testing.T) {
	env := map[string]string{EnvPlacement: "providers", EnvPlacementEndpoints: "aws=http://127.0.0.1:9001, vast=http://127.0.0.1:9002",
		EnvCrashAt: "after-place-2"}
	p, err := PlacementFromEnv(func(k string) string { return env[k] })
	if err != nil || p.Mode != PlaceProviders || p.Endpoints["aws"] != "http://127.0.0.1:9001" || p.Endpoints["vast"] != "http://127.0.0.1:9002" || p.CrashAt != "after-place-2" {
		t.Fatalf("%+v, %v", p, err)
	}
	for _, bad := range []map[string]string{{EnvPlacement: "live"}, {EnvPlacementEndpoints: "aws"}} {
		if _, err := PlacementFromEnv(func(k string) string { return bad[k] }); !IsBadInput(err) {
			t.Errorf("%v: %v, want a bad-config error", bad, err)
		}
	}
}

// okNow is the recorded OK alarm as if its state changed at the clock's now
// (its file says 11:40; a drain refuses an alarm more than
// sluice.MaxAlarmSkew ahead of the clock).
func okNow(t *testing.T, c sluice.Clock) sluice.Trigger {
	t.Helper()
	ok := triggerOf(t, "alarm-sns-ok.json")
	ok.StateChangeTime = c.Now()
	return ok
}
