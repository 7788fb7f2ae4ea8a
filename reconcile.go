package sluice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// DefaultAdoptAfter is how old a decision must be before reconcile adopts
// (or gives up on) a line that has no placement record: longer than a burst
// takes to place and record (its function timeout), so a burst still
// running is never overtaken.
const DefaultAdoptAfter = 15 * time.Minute

// Reconciler matches what each provider holds against the ledger:
//
//   - a Sluice-tagged instance whose decision is not committed in the ledger
//     (or whose line is already released, lost or failed) is terminated and
//     recorded as an orphan release (reason reconcile-orphan);
//   - an instance of a committed line with no placement record (a burst that
//     died between the provider call and the record) is adopted once the
//     decision is older than AdoptAfter: with Resume (the application's
//     Burst.Resume) the decision is carried on as a redelivered trigger would
//     (claims, look-up, the checks of new capacity, missing lines placed,
//     fall-through); without it, what the provider holds is recorded;
//   - an open placement whose instances the provider no longer lists is
//     recorded lost (reason reconcile-lost) with its accrued cost up to now
//     (the provider does not say when it stopped billing; now is the upper
//     bound) — once it is older than AdoptAfter: a younger one may simply not
//     be listed yet, and is reported as Unlisted;
//   - a pending release is retried (Drainer).
//
// A provider whose listing fails is skipped whole: nothing of it is marked
// lost or orphaned on a failed answer.
type Reconciler struct {
	Ledger ReleaseLedger
	Broker Broker
	Clock  Clock
	// Providers to list; providers of open placements are always listed.
	Providers []string
	// Cost as in Drainer (nil = PerSecond).
	Cost func(p Placement, end time.Time) (Money, int64)
	// AdoptAfter is the grace period for adopting unrecorded lines and for
	// judging an unlisted placement lost: 0 = DefaultAdoptAfter; negative =
	// at once (tests, the crash test).
	AdoptAfter time.Duration
	// Resume, when set, settles a committed decision's unrecorded lines the
	// way a redelivered trigger would (Burst.Resume: line claims, look-up,
	// the policy and price checks of new capacity, fall-through). Without
	// it, what the provider holds for the line is recorded as found.
	Resume func(ctx context.Context, decisionID string) (DecisionRecord, bool, error)
}

// ReconcileReport is what one reconcile found and did.
type ReconcileReport struct {
	// Listed is the number of Sluice-tagged running instances per provider.
	Listed map[string]int `json:"listed"`
	// Orphans were terminated (released) or asked to (pending).
	Orphans []Release `json:"orphans"`
	// Lost placements, with their accrued cost.
	Lost []Release `json:"lost"`
	// Adopted placements of lines that had no record.
	Adopted []Placement `json:"adopted"`
	// Unlisted open placements younger than the grace period that the
	// provider does not list yet: not judged lost on this pass.
	Unlisted []Placement `json:"unlisted"`
	// Retried pending releases: confirmed now, or still pending.
	Released []Release `json:"released"`
	Pending  []Release `json:"pending"`
	// Errors per provider whose listing (or a call) failed.
	Errors []string `json:"errors,omitempty"`
}

// grace is AdoptAfter with its default: 0 = DefaultAdoptAfter, negative = none.
func (c *Reconciler) grace() time.Duration {
	switch {
	case c.AdoptAfter == 0:
		return DefaultAdoptAfter
	case c.AdoptAfter < 0:
		return -1
	}
	return c.AdoptAfter
}

// Reconcile runs one pass. Its error is for the ledger; provider failures
// are in the report.
func (c *Reconciler) Reconcile(ctx context.Context) (ReconcileReport, error) {
	rep := ReconcileReport{Listed: map[string]int{}, Orphans: []Release{}, Lost: []Release{}, Adopted: []Placement{}, Unlisted: []Placement{},
		Released: []Release{}, Pending: []Release{}}
	d := &Drainer{Ledger: c.Ledger, Broker: c.Broker, Clock: c.Clock, Cost: c.Cost}
	now := d.now()
	open, err := c.Ledger.OpenPlacements(ctx, "")
	if err != nil {
		return rep, fmt.Errorf("reconcile: reading open placements: %w", err)
	}
	providers := slices.Clone(c.Providers)
	for _, op := range open {
		if !slices.Contains(providers, op.Provider) {
			providers = append(providers, op.Provider)
		}
	}
	slices.Sort(providers)
	listed := map[string]map[string]Instance{} // provider → external id → instance
	for _, prov := range providers {
		insts, err := c.Broker.Instances(ctx, prov)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: listing instances: %v", prov, err))
			continue
		}
		m := map[string]Instance{}
		for _, in := range insts {
			m[in.ExternalID] = in
		}
		listed[prov] = m
		rep.Listed[prov] = len(insts)
	}

	// Pending releases first: retrying them may confirm what a listing no
	// longer shows (a terminate that went through after its answer was lost).
	known := map[string]bool{} // external ids of open placements
	for _, op := range open {
		for _, id := range op.ExternalIDs {
			known[op.Provider+"\x00"+id] = true
		}
		if op.ReleaseState == ReleasePending {
			// The retry keeps the pending step's reason (op.ReleaseReason);
			// ReleaseDrain only when the ledger gave none.
			r, err := d.release(ctx, op, ReleaseDrain, "")
			switch {
			case errors.Is(err, ErrReleasePending):
				rep.Pending = append(rep.Pending, r)
			case err != nil:
				return rep, err
			default:
				rep.Released = append(rep.Released, r)
			}
			continue
		}
		m, ok := listed[op.Provider]
		if !ok {
			continue // listing failed: no verdict on this provider
		}
		held := false
		for _, id := range op.ExternalIDs {
			if _, ok := m[id]; ok {
				held = true
			}
		}
		if held {
			continue
		}
		// A fresh placement may not be listed yet (EC2 DescribeInstances is
		// eventually consistent after RunInstances): it is judged lost only
		// once it is older than the grace period, never on one early miss.
		if grace := c.grace(); grace > 0 && now.Sub(op.PlacedAt) < grace {
			rep.Unlisted = append(rep.Unlisted, op.Placement)
			continue
		}
		r := Release{Kind: "release", DecisionID: op.DecisionID, Line: op.Line, Queue: op.Queue, Provider: op.Provider,
			ExternalIDs: op.ExternalIDs, State: ReleaseLost, Reason: ReleaseReconcileLost, Slots: op.Slots,
			RequestedAt: now, At: now, Error: "the provider no longer lists the placement's instances"}
		r.AccruedCost, r.BilledSeconds = d.cost(ctx, op.Placement, now)
		if err := c.Ledger.AppendRelease(ctx, r); err != nil && !errors.Is(err, ErrDuplicate) {
			return rep, fmt.Errorf("reconcile: recording lost %s line %d: %w", op.DecisionID, op.Line, err)
		}
		rep.Lost = append(rep.Lost, r)
	}

	// Instances the ledger has no open placement for.
	adoptAfter := c.grace()
	decisions := map[string]*DecisionRecord{}
	for _, prov := range providers {
		m, ok := listed[prov]
		if !ok {
			continue
		}
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		adopted := map[string]bool{}
		for _, id := range ids {
			in := m[id]
			if known[prov+"\x00"+id] || adopted[in.DecisionID+"\x00"+fmt.Sprint(in.Line)] {
				continue
			}
			var rec *DecisionRecord
			if in.DecisionID != "" {
				if r, ok := decisions[in.DecisionID]; ok {
					rec = r
				} else {
					got, ok, err := c.Ledger.Decision(ctx, in.DecisionID)
					if err != nil {
						return rep, fmt.Errorf("reconcile: reading decision %s: %w", in.DecisionID, err)
					}
					if ok {
						rec = &got
					}
					decisions[in.DecisionID] = rec
				}
			}
			if rec != nil && in.Line >= 0 && in.Line < len(rec.Lines) && !hasPlacement(rec, in.Line) {
				// A committed line without a record: adopt it (after the grace period).
				if now.Sub(rec.DecidedAt) < adoptAfter && adoptAfter > 0 {
					continue
				}
				if c.Resume != nil {
					adopted[in.DecisionID+"\x00"+fmt.Sprint(in.Line)] = true
					got, ok, err := c.Resume(ctx, rec.DecisionID)
					if err != nil || !ok {
						rep.Errors = append(rep.Errors, fmt.Sprintf("%s: resuming %s: ok=%v: %v", prov, rec.DecisionID, ok, err))
						continue
					}
					// Every line the resume settled is now the ledger's: its
					// instances are neither adopted again nor orphans.
					for _, r := range append([]DecisionRecord{got}, got.FollowUps...) {
						for _, p := range r.Placements {
							fresh := true
							for _, id := range p.ExternalIDs {
								k := p.Provider + "\x00" + id
								fresh = fresh && !known[k]
								known[k] = true
							}
							// Refused capacity (class policy or price-mismatch) was released by the resume.
							if fresh && p.Error == "" && p.ErrorClass == "" {
								rep.Adopted = append(rep.Adopted, p)
							}
						}
						r := r
						decisions[r.DecisionID] = &r
					}
					continue
				}
				p, ok, err := c.Broker.Find(ctx, prov, rec.DecisionID, in.Line)
				if err != nil {
					rep.Errors = append(rep.Errors, fmt.Sprintf("%s: finding %s line %d: %v", prov, rec.DecisionID, in.Line, err))
					continue
				}
				if ok {
					p.DecisionID, p.Line, p.Queue = rec.DecisionID, in.Line, rec.Trigger.Queue
					// A look-up may not know what the line asked for (as in
					// Burst.carryOut): the record says which offer, market
					// and slots the capacity serves, or its release never
					// gives the slots back.
					l := rec.Lines[in.Line]
					if p.ClientToken == "" {
						p.ClientToken = ClientToken(rec.DecisionID, in.Line)
					}
					if p.OfferID == "" {
						p.OfferID = l.OfferID
					}
					if p.Market == "" {
						p.Market = l.Market
					}
					if p.Units == 0 {
						p.Units = l.Units
					}
					if p.Slots == 0 {
						p.Slots = l.Slots
					}
					if err := c.Ledger.AppendPlacement(ctx, p); err != nil && !errors.Is(err, ErrDuplicate) {
						return rep, fmt.Errorf("reconcile: adopting %s line %d: %w", rec.DecisionID, in.Line, err)
					}
					adopted[in.DecisionID+"\x00"+fmt.Sprint(in.Line)] = true
					rep.Adopted = append(rep.Adopted, p)
					continue
				}
			}
			// No committed decision, or a line already settled: an orphan.
			op := OpenPlacement{Placement: Placement{Provider: prov, ExternalIDs: []string{id}, Units: 1,
				Price: in.Price, PlacedAt: in.LaunchedAt, OfferID: ""}}
			r, err := d.release(ctx, op, ReleaseOrphan, fmt.Sprintf("tagged decision %q line %d: no open placement in the ledger", in.DecisionID, in.Line))
			switch {
			case errors.Is(err, ErrReleasePending):
				rep.Orphans = append(rep.Orphans, r)
			case err != nil:
				return rep, err
			default:
				rep.Orphans = append(rep.Orphans, r)
			}
		}
	}
	return rep, nil
}

func hasPlacement(rec *DecisionRecord, line int) bool {
	for _, p := range rec.Placements {
		if p.Line == line {
			return true
		}
	}
	return false
}
