package sluice_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/brokers/sandbox"
	"github.com/sluicehq/sluice/ledger/audit"
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

// lookupOnly is the sandbox as a provider whose look-up knows only what the
// instances say (runpod.Adapter.Find, by pod name: ids, units, price, launch
// time): not the line's slots, market or offer.
type lookupOnly struct{ *sandbox.Broker }

func (l lookupOnly) Find(ctx context.Context, provider, id string, n int) (sluice.Placement, bool, error) {
	p, ok, err := l.Broker.Find(ctx, provider, id, n)
	p.Slots, p.Market, p.OfferID = 0, "", ""
	return p, ok, err
}

// Reconcile without Resume records what the provider holds for a committed
// line with no record. The record must still say which offer, market and
// how many slots the capacity serves (as Burst.carryOut fills them from the
// line): with 0 slots its release never gives the queue's slots back, and
// with no market the audit refuses the placement.
func TestReviewReconcileAdoptionKeepsTheLine(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	p.burst.Step = crashAt(sluice.StepAfterPlace(1))
	if !decideCrashing(t, p, trigger("train-overseas")) {
		t.Fatal("did not crash after the first placement")
	}
	b := lookupOnly{p.broker}
	c := &sluice.Reconciler{Ledger: p.ledger, Broker: b, Clock: w.clock, AdoptAfter: -1, Providers: []string{"aws"}}
	rep, err := c.Reconcile(t.Context())
	if err != nil || len(rep.Adopted) != 1 {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	rec, _, _ := p.ledger.Decision(t.Context(), sluice.DecisionID(trigger("train-overseas")))
	got := rec.Placements[0]
	if got.Slots != 2 || got.Market != sluice.Spot || got.OfferID != "aws-spot" || got.Units != 2 {
		t.Errorf("adopted record: %d slots, market %q, offer %q, %d units; want the line's 2, spot, aws-spot, 2",
			got.Slots, got.Market, got.OfferID, got.Units)
	}
	d := &sluice.Drainer{Ledger: p.ledger, Broker: b, Clock: w.clock}
	if _, err := d.DrainQueue(t.Context(), "train-overseas", sluice.ReleaseDrain); err != nil {
		t.Fatal(err)
	}
	if live, _ := p.ledger.LiveSlots(t.Context(), "train-overseas"); live != 0 {
		t.Errorf("after draining everything the queue has %d live slots, want 0", live)
	}
}

// The application's path: a rerun resumes the decision and adopts what a
// look-up finds. RunPod's look-up (by pod name) says no market; the record
// must carry the line's market, or `sluice audit verify` refuses an honest
// ledger ("placement runpod/ …; line 0 is runpod/spot").
func TestReviewAdoptedRecordCarriesTheLineMarket(t *testing.T) {
	w := newWorld(t)
	first := w.process(t)
	first.burst.Step = crashAt(sluice.StepAfterPlace(1))
	if !decideCrashing(t, first, trigger("train-overseas")) {
		t.Fatal("did not crash after the first placement")
	}
	second := w.process(t)
	second.burst.Broker = lookupOnly{second.broker}
	rec, _, err := second.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Placements[0]; got.Market != rec.Lines[0].Market || got.Error != "" {
		t.Errorf("adopted record market %q (error %q), line's %q", got.Market, got.Error, rec.Lines[0].Market)
	}
	recs, err := second.ledger.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := audit.Recompute(recs); err != nil {
		t.Errorf("audit recompute of an honest ledger: %v", err)
	}
	agree(t, second)
}

// otherCurrency is the sandbox at a provider that bills the account in
// another currency than the offer was quoted in (Alibaba: CNY on
// aliyun.com, USD on alibabacloud.com, providers.md §0): the price read
// back is in CNY for a USD line.
type otherCurrency struct{ *sandbox.Broker }

func (o otherCurrency) Place(ctx context.Context, id string, n int, l sluice.Line) (sluice.Placement, error) {
	p, err := o.Broker.Place(ctx, id, n, l)
	if err == nil && l.Provider == "aws" {
		p.Price = sluice.MustMoney("71", "CNY")
	}
	return p, err
}

// Capacity read back in another currency fails checkReuse and is released
// at once; its release accrues in that currency. One such record must not
// make the tier's spend unreadable: every later decision of the tier would
// fail ("reading emergency spend"), in SQLite (TierSpend) and DynamoDB (the
// release's own append).
func TestReviewForeignCurrencyReleaseDoesNotBlockTheTier(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	p.burst.Broker = otherCurrency{p.broker}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Placements[0].ErrorClass != sluice.ClassPriceMismatch {
		t.Fatalf("placement %+v", rec.Placements[0])
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if _, err := p.ledger.TierSpend(t.Context(), sluice.TierEmergency, from, from.AddDate(0, 1, 0)); err != nil {
		t.Errorf("tier spend after one foreign-currency release: %v", err)
	}
	later := trigger("train-beijing")
	later.StateChangeTime = t0.Add(time.Hour)
	w.clock.Add(time.Hour)
	if _, _, err := p.burst.Decide(context.Background(), later); err != nil {
		t.Errorf("the next decision of the tier: %v", err)
	}
}
