package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Quoter collects offers from every source at once (pricing.Collector).
type Quoter interface {
	Collect(ctx context.Context) ([]Offer, []SourceReport)
}

// Burst is the main job: trigger → demand → quotes → policy → plan → placement → ledger.
// Every field is required except Budgets (no entry = no limit for that tier).
type Burst struct {
	Profiles             func(queue string) (QueueProfile, error)
	Quotes               Quoter
	Policy               PolicyEvaluator
	Ledger               Ledger
	Broker               Broker
	Clock                Clock
	BillingCurrency      string
	FX                   FXTable
	InterruptionsPerHour map[string]decimal.Decimal
	// Budgets is the monthly budget per tier in BillingCurrency.
	Budgets     map[Tier]Money
	CodeVersion string
}

// ErrUnknownQueue is returned when a trigger names a queue without a profile.
var ErrUnknownQueue = errors.New("unknown queue")

// Decide runs the main job for one trigger and returns the decision record
// with its placements. The same trigger delivered again returns the recorded
// decision (replayed = true) and places nothing. Errors are for the whole run
// (no profile, ledger or policy failure); a failed quote source or a failed
// placement is recorded in the decision instead.
func (b *Burst) Decide(ctx context.Context, t Trigger) (rec DecisionRecord, replayed bool, err error) {
	profile, err := b.Profiles(t.Queue)
	if err != nil {
		return rec, false, err
	}
	id := DecisionID(t)
	if old, ok, err := b.Ledger.Decision(ctx, id); err != nil {
		return rec, false, fmt.Errorf("reading decision %s: %w", id, err)
	} else if ok {
		old.Outcome = Outcome(old)
		return old, true, nil
	}
	now := b.Clock.Now().UTC()
	live, err := b.Ledger.LiveSlots(ctx, t.Queue)
	if err != nil {
		return rec, false, fmt.Errorf("reading live slots of %s: %w", t.Queue, err)
	}
	rec = DecisionRecord{
		Kind: "decision", DecisionID: id, DecidedAt: now, Trigger: t, Profile: profile,
		BillingCurrency: b.BillingCurrency, FX: b.FX, PolicyRevision: b.Policy.Revision(), CodeVersion: b.CodeVersion,
		Offers: []Offer{}, Verdicts: []Verdict{}, Sources: []SourceReport{},
		Plan: Plan{TotalExpectedCost: Money{decimal.Zero, b.BillingCurrency}, Lines: []Line{}, Rejected: []Rejection{}},
	}
	if t.State == StateAlarm {
		rec.Demand = NewDemand(profile, t.Depth, live)
	} else {
		rec.Demand = Demand{Queue: t.Queue, Depth: t.Depth, Live: live, GPUsPerSlot: profile.GPUsPerSlot, Hours: profile.HoursPerSlot}
	}
	rec.Plan.SlotsWanted = rec.Demand.Slots

	if rec.Demand.Slots > 0 {
		rec.Offers, rec.Sources = b.Quotes.Collect(ctx)
		if rec.Verdicts, err = b.Policy.Evaluate(ctx, profile, rec.Offers, now); err != nil {
			return rec, false, fmt.Errorf("evaluating policy: %w", err)
		}
		budget, err := b.headroom(ctx, profile.Tier, now)
		if err != nil {
			return rec, false, err
		}
		plan, err := MakePlan(PlanInput{
			Demand: rec.Demand, Profile: profile, Offers: rec.Offers, Verdicts: rec.Verdicts,
			BillingCurrency: b.BillingCurrency, FX: b.FX, InterruptionsPerHour: b.InterruptionsPerHour,
			Budget: budget, Now: now,
		})
		if err != nil {
			return rec, false, err
		}
		rec.Plan = plan
		if rec.Plan.Lines == nil {
			rec.Plan.Lines = []Line{}
		}
		if rec.Plan.Rejected == nil {
			rec.Plan.Rejected = []Rejection{}
		}
	}
	switch {
	case rec.Demand.Slots == 0:
		rec.Status = StatusNothingToDo
	case len(rec.Lines) == 0:
		rec.Status = StatusNoOffer
	default:
		rec.Status = StatusPlanned
	}

	// Plan first, act second: the intent is recorded before any provider call.
	if err := b.Ledger.AppendDecision(ctx, &rec); err != nil {
		if errors.Is(err, ErrDuplicate) { // a concurrent delivery won the race
			old, ok, rerr := b.Ledger.Decision(ctx, id)
			if rerr == nil && ok {
				old.Outcome = Outcome(old)
				return old, true, nil
			}
		}
		return rec, false, fmt.Errorf("recording decision %s: %w", id, err)
	}
	for i, line := range rec.Lines {
		p, err := b.Broker.Place(ctx, id, i, line)
		if err != nil {
			continue // the line stays unplaced; Outcome reports "partial"
		}
		p.DecisionID, p.Line, p.Queue = id, i, t.Queue
		if err := b.Ledger.AppendPlacement(ctx, p); err != nil {
			return rec, false, fmt.Errorf("recording placement %s line %d: %w", id, i, err)
		}
		rec.Placements = append(rec.Placements, p)
	}
	rec.Outcome = Outcome(rec)
	return rec, false, nil
}

// Outcome is the status of a decision given its placements: a planned
// decision whose every line is placed is "placed", else "partial" (also when
// the plan covers fewer slots than wanted).
func Outcome(rec DecisionRecord) string {
	if rec.Status != StatusPlanned {
		return rec.Status
	}
	if len(rec.Placements) == len(rec.Lines) && len(rec.Short) == 0 {
		return StatusPlaced
	}
	return StatusPartial
}

// headroom is the tier's monthly budget minus what decisions this month
// (UTC calendar month of now) have committed; nil when the tier has no budget.
func (b *Burst) headroom(ctx context.Context, tier Tier, now time.Time) (*Money, error) {
	budget, ok := b.Budgets[tier]
	if !ok {
		return nil, nil
	}
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	spent, err := b.Ledger.TierSpend(ctx, tier, from, from.AddDate(0, 1, 0))
	if err != nil {
		return nil, fmt.Errorf("reading %s spend: %w", tier, err)
	}
	left := Money{budget.Amount.Sub(spent), budget.Currency}
	return &left, nil
}
