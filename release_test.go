package sluice_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// idleTrigger is the queue's alarm reporting depth 0 at at.
func idleTrigger(queue string, state sluice.AlarmState, at time.Time) sluice.Trigger {
	tr := trigger(queue)
	tr.State, tr.Depth, tr.StateChangeTime = state, 0, at
	return tr
}

// A depth-0 trigger drains only once the queue has had depth 0 for the idle
// window, counted from the alarm's state-change time on the pinned clock; a
// burst recorded after the depth-0 reading makes the reading stale.
func TestDrainIdleWindow(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t) // clock at t0 + 30 s
	p := w.process(t)
	rec, _, err := p.burst.Decide(ctx, trigger("train-overseas")) // depth 2 at t0: aws-spot 2 units
	if err != nil || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("decide: %v %s", err, rec.Outcome)
	}
	d := &sluice.Drainer{Ledger: p.ledger, Broker: p.broker, Clock: w.clock, IdleWindow: 15 * time.Minute}
	rfc := func(tm *time.Time) string {
		if tm == nil {
			return "<nil>"
		}
		return tm.UTC().Format(time.RFC3339)
	}

	// A depth-0 reading from before the burst (t0 − 1 m) is stale.
	rep, err := d.Drain(ctx, idleTrigger("train-overseas", sluice.StateAlarm, t0.Add(-time.Minute)))
	if err != nil || len(rep.Released) != 0 || rep.WaitsUntil != nil || rep.IdleSince != nil ||
		rep.Skipped != "ALARM with depth 0 at 2026-11-29T10:04:00Z is stale: decision "+rec.DecisionID+" saw depth 2 at 2026-11-29T10:05:00Z; nothing drained" {
		t.Fatalf("stale reading: %+v %v", rep, err)
	}

	// Depth 0 from t0 + 10 m (10:15); at t0 + 12 m the drain waits until 10:30.
	idle := idleTrigger("train-overseas", sluice.StateAlarm, t0.Add(10*time.Minute))
	w.clock.Add(12*time.Minute - 30*time.Second)
	for _, state := range []sluice.AlarmState{sluice.StateAlarm, sluice.StateOK} {
		idle.State = state
		rep, err = d.Drain(ctx, idle)
		if err != nil || len(rep.Released) != 0 || rfc(rep.WaitsUntil) != "2026-11-29T10:30:00Z" || rfc(rep.IdleSince) != "2026-11-29T10:15:00Z" ||
			rep.Skipped != "depth 0 since 2026-11-29T10:15:00Z, idle 2m0s of the 15m0s idle window: the drain waits until 2026-11-29T10:30:00Z" {
			t.Fatalf("%s within the window: %+v %v", state, rep, err)
		}
	}
	if n := agree(t, p); n != 1 {
		t.Fatalf("%d running orders while waiting, want 1", n)
	}

	// One second before the window ends it still waits; at the end it drains.
	w.clock.Add(13*time.Minute - time.Second) // 10:29:59
	if rep, err = d.Drain(ctx, idle); err != nil || rep.WaitsUntil == nil || !strings.Contains(rep.Skipped, "idle 14m59s of the 15m0s") {
		t.Fatalf("1 s before the end: %+v %v", rep, err)
	}
	w.clock.Add(time.Second)
	rep, err = d.Drain(ctx, idle)
	if err != nil || len(rep.Released) != 1 || rep.WaitsUntil != nil || rep.Skipped != "" || rfc(rep.IdleSince) != "2026-11-29T10:15:00Z" {
		t.Fatalf("after the window: %+v %v", rep, err)
	}
	if r := rep.Released[0]; r.DecisionID != rec.DecisionID || r.State != sluice.ReleaseReleased || r.At.Format(time.RFC3339) != "2026-11-29T10:30:00Z" {
		t.Fatalf("release: %+v", r)
	}
	if n := agree(t, p); n != 0 {
		t.Fatalf("%d running orders after the drain, want 0", n)
	}
}

// Without an idle window a depth-0 trigger drains at once, and with one an OK
// trigger with depth above 0 still drains at once.
func TestDrainAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		window time.Duration
		tr     sluice.Trigger
	}{
		{"depth 0, no window", 0, idleTrigger("train-overseas", sluice.StateAlarm, t0.Add(time.Minute))},
		{"OK depth 4, 15m window", 15 * time.Minute, func() sluice.Trigger {
			tr := idleTrigger("train-overseas", sluice.StateOK, t0.Add(time.Minute))
			tr.Depth = 4
			return tr
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.process(t)
			if rec, _, err := p.burst.Decide(ctx, trigger("train-overseas")); err != nil || rec.Outcome != sluice.StatusPlaced {
				t.Fatalf("decide: %v %s", err, rec.Outcome)
			}
			w.clock.Add(2 * time.Minute)
			d := &sluice.Drainer{Ledger: p.ledger, Broker: p.broker, Clock: w.clock, IdleWindow: tc.window}
			rep, err := d.Drain(ctx, tc.tr)
			if err != nil || len(rep.Released) != 1 || rep.WaitsUntil != nil || rep.IdleSince != nil || rep.Skipped != "" {
				t.Fatalf("%+v %v", rep, err)
			}
			if n := agree(t, p); n != 0 {
				t.Fatalf("%d running orders, want 0", n)
			}
		})
	}
}
