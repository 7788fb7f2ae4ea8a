package sluice_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/brokers/sandbox"
)

// mismatchingBroker is the sandbox behind an adapter that finds the price
// read back beyond tolerance for provider: it buys (the sandbox holds the
// order), then releases at once through placement.Mismatch exactly as
// brokers/{ec2,aliyun,runpod,vast,autodl} do, the terminate confirmed
// `ran` after the purchase (EC2 bills at least 60 s).
type mismatchingBroker struct {
	*sandbox.Broker
	provider string
	clock    *clock
	ran      time.Duration
}

func (m mismatchingBroker) Place(ctx context.Context, id string, n int, l sluice.Line) (sluice.Placement, error) {
	p, err := m.Broker.Place(ctx, id, n, l)
	if err != nil || l.Provider != m.provider {
		return p, err
	}
	return placement.Mismatch(ctx, p, "price read back 30 USD per unit-hour is above the expected 10 USD by more than 2%",
		func(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
			m.clock.Add(m.ran)
			return m.Broker.Release(ctx, p)
		})
}

// An adapter that bought capacity and released it at once for a price
// mismatch returns a *placement.MismatchError carrying what it bought. The
// instances existed and billed (here 2 units for 90 s), so the ledger must
// say which instances they were and what they cost: a held placement with
// the external ids (class price-mismatch) and a settled release with its
// accrued cost, counted in the tier's spend.
func TestReviewAdapterPriceMismatchKeepsInstancesAndCost(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	p.burst.Broker = mismatchingBroker{Broker: p.broker, provider: "aws", clock: w.clock, ran: 90 * time.Second}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Placements) != 1 || rec.Placements[0].ErrorClass != sluice.ClassPriceMismatch {
		t.Fatalf("placements %+v", rec.Placements)
	}
	if len(rec.FollowUps) != 1 || rec.FollowUps[0].Lines[0].OfferID != "runpod-od" || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("follow-ups %+v outcome %s", rec.FollowUps, rec.Outcome)
	}
	held := rec.Placements[0]
	if len(held.ExternalIDs) == 0 {
		t.Errorf("the mismatched line's record names no instance (error %q): the instances it bought are unrecorded", held.Error)
	}
	recs, err := p.ledger.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var released *sluice.Release
	for _, r := range recs {
		if r.Kind != "release" {
			continue
		}
		var rel sluice.Release
		if err := jsonUnmarshal(r.Body, &rel); err != nil {
			t.Fatal(err)
		}
		if rel.DecisionID == rec.DecisionID && rel.Line == 0 && rel.State == sluice.ReleaseReleased {
			released = &rel
		}
	}
	// The sandbox reads back the line's price (10 USD per unit-hour): 2 units
	// × 10 × 90 s / 3600 = 0.5 USD, found by hand.
	if released == nil {
		t.Fatalf("no released record for the mismatched line: its cost (2 units for 90 s) is in no record")
	}
	if got := released.AccruedCost.String(); got != "0.5 USD" || released.BilledSeconds != 90 || released.Reason != sluice.ReleasePriceMismatch {
		t.Errorf("release %s, %d s, reason %s; want 0.5 USD, 90 s, %s", got, released.BilledSeconds, released.Reason, sluice.ReleasePriceMismatch)
	}
	if n := agree(t, p); n != 1 {
		t.Fatalf("%d orders running, want 1", n)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
