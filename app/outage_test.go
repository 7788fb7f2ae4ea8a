package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// When no quote source answers, nothing is recorded and the error is
// transient: the retry of the same alarm decides on fresh quotes. (Recorded,
// a blind NO-OFFER was the alarm's final answer: found by a new-user test.)
func TestQuoteOutageIsNotRecorded(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-replay")
	for _, p := range []string{"aws", "runpod", "vast", "aliyun", "autodl"} {
		if err := os.MkdirAll(filepath.Join(empty, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ledgerPath := filepath.Join(dir, "ledger.db")
	open := func(replay string) *App {
		a, err := Open(context.Background(), Options{
			ConfigPath: "../testdata/sluice.yaml", ReplayDir: replay, LedgerPath: ledgerPath,
			Clock: sluice.ClockFunc(func() time.Time { return decisionAt }), CodeVersion: "test",
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	trig := triggerOf(t, "alarm-sns-burst.json")
	a := open(empty)
	_, _, err := a.Burst.Decide(context.Background(), trig)
	if !errors.Is(err, sluice.ErrNoQuotes) {
		t.Fatalf("outage: err = %v, want ErrNoQuotes", err)
	}
	if _, ok, _ := a.Ledger.Decision(context.Background(), sluice.DecisionID(trig)); ok {
		t.Fatal("a decision was recorded with no quotes")
	}
	a.Close()

	b := open("../testdata/replay")
	defer b.Close()
	rec, replayed, err := b.Burst.Decide(context.Background(), trig)
	if err != nil || replayed || rec.Outcome != sluice.StatusPlaced || rec.TotalExpectedCost.String() != "103.06683 USD" {
		t.Fatalf("retry after the outage: replayed=%v err=%v outcome %s total %s", replayed, err, rec.Outcome, rec.TotalExpectedCost)
	}
}

// An alarm dated far after the decision clock (or before CloudWatch
// existed) is refused whole and permanently, and takes no slots: a
// year-9999 alarm used to hold the queue's slots against the real one.
func TestImplausibleAlarmTimeRefused(t *testing.T) {
	a := openTest(t)
	for _, at := range []time.Time{
		decisionAt.Add(sluice.MaxAlarmSkew + time.Second),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		trig := triggerOf(t, "alarm-sns-burst.json")
		trig.StateChangeTime = at
		_, _, err := a.Burst.Decide(context.Background(), trig)
		if !errors.Is(err, sluice.ErrBadTrigger) || !IsBadInput(err) || !Permanent(err) {
			t.Errorf("%s: err = %v, want a permanent ErrBadTrigger", at, err)
		}
	}
	trig := triggerOf(t, "alarm-sns-burst.json")
	trig.StateChangeTime = decisionAt.Add(sluice.MaxAlarmSkew) // within the skew: decided
	if rec, _, err := a.Burst.Decide(context.Background(), trig); err != nil || rec.Demand.Live != 0 {
		t.Fatalf("alarm within the skew: %v, live %d", err, rec.Demand.Live)
	}
}
