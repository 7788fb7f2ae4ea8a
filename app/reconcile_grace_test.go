package app

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// A provider listing that misses a fresh placement (EC2 DescribeInstances is
// eventually consistent after RunInstances) must not make reconcile record it
// lost — that freed its slots and, once the listing caught up, got its running
// instances terminated as orphans (found by a new-user test). Only a
// placement older than the grace period (DefaultAdoptAfter) is judged lost.
func TestReconcileGivesFreshPlacementsGrace(t *testing.T) {
	dir := t.TempDir()
	c := &movingClock{t: decisionAt}
	a, err := Open(context.Background(), Options{
		ConfigPath: "../testdata/sluice.yaml", ReplayDir: "../testdata/replay",
		LedgerPath: filepath.Join(dir, "ledger.db"), Clock: c, CodeVersion: "test",
		Placement: &Placement{SandboxState: filepath.Join(dir, "provider.json")}, // default grace
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ctx := context.Background()
	rec, _, err := a.Burst.Decide(ctx, triggerOf(t, "alarm-sns-burst.json"))
	if err != nil || len(rec.Placements) != 2 {
		t.Fatalf("burst: %v, %d placements", err, len(rec.Placements))
	}
	if err := a.Broker.Lose(rec.Placements[0].ClientToken); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute)
	rep, err := a.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lost) != 0 || len(rep.Orphans) != 0 || len(rep.Unlisted) != 1 || rep.Unlisted[0].Line != 0 {
		t.Fatalf("1 min after placing: lost %d, orphans %d, unlisted %+v; want 0, 0 and line 0", len(rep.Lost), len(rep.Orphans), rep.Unlisted)
	}
	if live, _ := a.Ledger.LiveSlots(ctx, "train-overseas"); live != 8 {
		t.Fatalf("live slots after an early miss: %d, want 8", live)
	}
	c.Add(sluice.DefaultAdoptAfter)
	rep, err = a.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 16 min at 2 × 5.8394 USD/h = 960 s → 3.1143466667 USD.
	if len(rep.Lost) != 1 || rep.Lost[0].Line != 0 || rep.Lost[0].BilledSeconds != 960 || rep.Lost[0].AccruedCost.String() != "3.1143466667 USD" {
		t.Fatalf("after the grace period: %+v", rep.Lost)
	}
}

// The sandbox stands in for AWS, so a drain one second after placing bills
// AWS's 60-second minimum (brokers/billing), not one second.
func TestSandboxDrainBillsProviderMinimum(t *testing.T) {
	dir := t.TempDir()
	c := &movingClock{t: decisionAt}
	a := openSandboxed(t, dir, c)
	if _, _, err := a.Burst.Decide(context.Background(), triggerOf(t, "alarm-sns-burst.json")); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Second)
	rep, err := a.Drain(context.Background(), okNow(t, c))
	if err != nil || len(rep.Released) != 2 {
		t.Fatalf("drain: %v, %d released", err, len(rep.Released))
	}
	// 60 s × 2 × 6.8849 USD/h = 0.2294966667; 60 s × 2 × 5.8394 = 0.1946466667.
	for i, want := range []string{"0.2294966667 USD", "0.1946466667 USD"} {
		if r := rep.Released[i]; r.BilledSeconds != 60 || r.AccruedCost.String() != want {
			t.Errorf("release %d: %d s %s, want 60 s %s", i, r.BilledSeconds, r.AccruedCost, want)
		}
	}
}

// A drain refuses an implausible OK (year 9999) as bad input, and does
// nothing for an OK older than the alarm that bought the capacity: a late
// OK must not kill running jobs (found by a new-user test).
func TestDrainRefusesImplausibleAndStaleOK(t *testing.T) {
	dir := t.TempDir()
	c := &movingClock{t: decisionAt}
	a := openSandboxed(t, dir, c)
	if _, _, err := a.Burst.Decide(context.Background(), triggerOf(t, "alarm-sns-burst.json")); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	ok := okNow(t, c)
	ok.StateChangeTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	if _, err := a.Drain(context.Background(), ok); !errors.Is(err, sluice.ErrBadTrigger) || !IsBadInput(err) {
		t.Fatalf("year-9999 OK: %v, want a bad trigger", err)
	}
	ok.StateChangeTime = decisionAt.Add(-10 * time.Minute) // before the 10:05 ALARM
	rep, err := a.Drain(context.Background(), ok)
	if err != nil || len(rep.Released)+len(rep.Pending) != 0 || rep.Skipped == "" {
		t.Fatalf("stale OK: %+v %v; want nothing released and a reason", rep, err)
	}
	if open, _ := a.Ledger.OpenPlacements(context.Background(), "train-overseas"); len(open) != 2 {
		t.Fatalf("open placements after a stale OK: %d, want 2", len(open))
	}
}
