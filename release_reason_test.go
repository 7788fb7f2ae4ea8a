package sluice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/brokers/sandbox"
)

// stuckTerminate is the sandbox behind an adapter that finds the price read
// back beyond tolerance for provider and whose terminates time out while
// *stuck: the capacity is held and its release stays pending.
type stuckTerminate struct {
	*sandbox.Broker
	provider string
	stuck    *bool
}

func (s stuckTerminate) Place(ctx context.Context, id string, n int, l sluice.Line) (sluice.Placement, error) {
	p, err := s.Broker.Place(ctx, id, n, l)
	if err != nil || l.Provider != s.provider {
		return p, err
	}
	return placement.Mismatch(ctx, p, "price read back 30 USD per unit-hour is above the expected 10 USD by more than 2%",
		func(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) { return s.Release(ctx, p) })
}

func (s stuckTerminate) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	if *s.stuck {
		return sluice.ReleaseResult{}, fmt.Errorf("terminate %v: deadline exceeded: %w", p.ExternalIDs, sluice.ErrTransient)
	}
	return s.Broker.Release(ctx, p)
}

// Finding #10: a pending price-mismatch release that reconcile confirms is
// recorded released with reason price-mismatch (the pending step's reason),
// not drain.
func TestReconcileKeepsPendingReleaseReason(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	stuck := true
	p.burst.Broker = stuckTerminate{Broker: p.broker, provider: "aws", stuck: &stuck}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Placements[0].ErrorClass != sluice.ClassPriceMismatch {
		t.Fatalf("placement %+v", rec.Placements[0])
	}
	steps := func() []string {
		recs, err := p.ledger.Records(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			if r.Kind != "release" {
				continue
			}
			var rel sluice.Release
			if err := jsonUnmarshal(r.Body, &rel); err != nil {
				t.Fatal(err)
			}
			if rel.DecisionID == rec.DecisionID && rel.Line == 0 {
				out = append(out, rel.State+" "+rel.Reason+" "+rel.AccruedCost.String())
			}
		}
		return out
	}
	if got := fmt.Sprint(steps()); got != "[release-pending price-mismatch 0 ]" {
		t.Fatalf("after the stuck terminate: %s", got)
	}
	open, err := p.ledger.OpenPlacements(t.Context(), "train-overseas")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, o := range open {
		if o.DecisionID == rec.DecisionID && o.Line == 0 {
			found = o.ReleaseState == sluice.ReleasePending && o.ReleaseReason == sluice.ReleasePriceMismatch
		}
	}
	if !found {
		t.Fatalf("open placements %+v: line 0 not pending with reason price-mismatch", open)
	}

	stuck = false
	w.clock.Add(90 * time.Second)
	c := &sluice.Reconciler{Ledger: p.ledger, Broker: p.burst.Broker, Clock: w.clock, Providers: []string{"aws"}}
	rep, err := c.Reconcile(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Released) != 1 || rep.Released[0].Reason != sluice.ReleasePriceMismatch {
		t.Fatalf("reconcile released %+v, want one with reason price-mismatch", rep.Released)
	}
	got := steps()
	// 2 units × 10 USD per unit-hour × 90 s ÷ 3600 = 0.5 USD (by hand).
	if len(got) != 2 || got[1] != "released price-mismatch 0.5 USD" {
		t.Fatalf("release steps %q, want pending then \"released price-mismatch 0.5 USD\"", got)
	}
}
