package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// AccruedScale is the number of decimal places PerSecond keeps when it
// divides by 3600 (seconds per hour); rounding is half away from zero
// (decimal.DivRound). It is PerSecond's only rounding point.
const AccruedScale = 10

// PerSecond is the default cost rule (the sandbox's billing): the running
// time from p.PlacedAt to end rounded up to whole seconds, cost = Price ×
// Units × seconds ÷ 3600, rounded to AccruedScale places. Zero when end is not
// after PlacedAt.
func PerSecond(p Placement, end time.Time) (Money, int64) {
	d := end.Sub(p.PlacedAt)
	if d <= 0 {
		return Money{decimal.Zero, p.Price.Currency}, 0
	}
	secs := int64((d + time.Second - 1) / time.Second)
	amount := p.Price.Amount.Mul(decimal.NewFromInt(int64(p.Units)*secs)).DivRound(decimal.NewFromInt(3600), AccruedScale)
	return Money{amount, p.Price.Currency}, secs
}

// Drainer gives a queue's capacity back when its alarm returns to OK (or its
// depth is 0): the queue's open placements, most expensive first, are
// recorded release-pending, terminated at the provider, and recorded released
// with their accrued cost once the provider confirms. A terminate that fails
// or times out leaves the placement pending; the next drain or reconcile
// retries it, and the cost accrues until the provider confirms.
type Drainer struct {
	Ledger ReleaseLedger
	Broker Broker
	Clock  Clock
	// Cost is what a placement cost from PlacedAt to end at its provider's
	// billing granularity, with the billed seconds (nil = PerSecond). The
	// application wires each provider's rule (brokers/billing).
	Cost func(p Placement, end time.Time) (Money, int64)
	// IdleWindow is how long a queue must have had depth 0 before a trigger
	// reporting depth 0 (ALARM or OK) drains it (config placement.drain.
	// idle_window); 0 drains such a trigger at once. An OK trigger with a
	// depth above 0 drains at once whatever the window: the alarm's own
	// evaluation periods are its smoothing. See Drain for how the idle time
	// is known without state of its own.
	IdleWindow time.Duration
}

// DrainReport is what one drain (or a reconcile's retries) did.
type DrainReport struct {
	Queue string `json:"queue"`
	// Skipped says why nothing was released ("" when the drain ran).
	Skipped string `json:"skipped,omitempty"`
	// Released are the placements the providers confirmed, in release order.
	Released []Release `json:"released"`
	// Pending are the placements asked for and not confirmed (retried later).
	Pending []Release `json:"pending"`
	// IdleSince is when the queue was last seen at depth 0 with no later
	// burst (the trigger's state-change time), set when an idle window applied.
	IdleSince *time.Time `json:"idle_since,omitempty"`
	// WaitsUntil is set when the drain waits for the idle window: a delivery
	// of the same (or a later) depth-0 trigger at or after this time drains.
	WaitsUntil *time.Time `json:"waits_until,omitempty"`
}

// ErrReleasePending is wrapped by Drain's error when some releases stay pending.
var ErrReleasePending = errors.New("release not confirmed by the provider; stays pending and is retried")

// Drain releases the open placements of t's queue when t is the alarm's OK
// state or reports depth 0; any other trigger is skipped. The error wraps
// ErrReleasePending when some releases were not confirmed (the report lists
// them), or is a ledger error.
//
// With an IdleWindow, a trigger reporting depth 0 drains only once the queue
// has had depth 0 for the window. Drain keeps no state of its own to know
// that; it reads two facts:
//   - the trigger: the alarm's datapoint said depth 0 at its
//     StateChangeTime, so the queue is idle since then (IdleSince);
//   - the ledger: a decision behind one of the queue's open placements whose
//     trigger changed state after IdleSince with depth above 0 means the
//     queue backed up again: the depth-0 reading is stale and nothing is
//     drained (Skipped).
//
// When the Clock is before IdleSince + IdleWindow, nothing is released and
// the report says until when the drain waits (WaitsUntil, Skipped): the drain
// happens on a delivery at or after that time (the same event again, e.g.
// `sluice drain --event FILE` rerun, or a later depth-0 alarm). A queue whose
// depth rose and fell back between the reading and the rerun without a burst
// is not seen: the alarm datapoint and the ledger are all Drain knows.
func (d *Drainer) Drain(ctx context.Context, t Trigger) (DrainReport, error) {
	if t.State != StateOK && t.Depth != 0 {
		return DrainReport{Queue: t.Queue, Released: []Release{}, Pending: []Release{},
			Skipped: fmt.Sprintf("alarm %s is %s with depth %d: nothing to drain", t.AlarmName, t.State, t.Depth)}, nil
	}
	if err := CheckAlarmTime(t, d.now()); err != nil {
		return DrainReport{Queue: t.Queue, Released: []Release{}, Pending: []Release{}}, err
	}
	// A trigger older than the alarm that bought the queue's capacity is
	// stale (a late OK must not kill running jobs): nothing is drained.
	if skip, err := d.stale(ctx, t); err != nil || skip != "" {
		return DrainReport{Queue: t.Queue, Released: []Release{}, Pending: []Release{}, Skipped: skip}, err
	}
	if t.Depth == 0 && d.IdleWindow > 0 {
		rep, wait, err := d.idle(ctx, t)
		if err != nil || wait {
			return rep, err
		}
		drained, err := d.DrainQueue(ctx, t.Queue, ReleaseDrain)
		drained.IdleSince = rep.IdleSince
		return drained, err
	}
	return d.DrainQueue(ctx, t.Queue, ReleaseDrain)
}

// stale returns why t is older than the alarm that bought some of its
// queue's open capacity (a decision whose trigger saw depth > 0 after t's
// state change), or "" when it is not.
func (d *Drainer) stale(ctx context.Context, t Trigger) (string, error) {
	since := t.StateChangeTime.UTC()
	ops, err := d.Ledger.OpenPlacements(ctx, t.Queue)
	if err != nil {
		return "", fmt.Errorf("reading open placements of %q: %w", t.Queue, err)
	}
	seen := map[string]bool{}
	for _, op := range ops {
		id := op.DecisionID
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		rec, ok, err := d.Ledger.Decision(ctx, id)
		if err != nil {
			return "", fmt.Errorf("reading decision %s: %w", id, err)
		}
		if ok && rec.Trigger.Depth > 0 && rec.Trigger.StateChangeTime.After(since) {
			return fmt.Sprintf("%s with depth %d at %s is stale: decision %s saw depth %d at %s; nothing drained",
				t.State, t.Depth, since.Format(time.RFC3339), id, rec.Trigger.Depth, rec.Trigger.StateChangeTime.UTC().Format(time.RFC3339)), nil
		}
	}
	return "", nil
}

// idle checks t (depth 0) against IdleWindow: wait is true when nothing may
// be released yet, with rep saying why.
func (d *Drainer) idle(ctx context.Context, t Trigger) (rep DrainReport, wait bool, err error) {
	since := t.StateChangeTime.UTC()
	rep = DrainReport{Queue: t.Queue, Released: []Release{}, Pending: []Release{}, IdleSince: &since}
	until := since.Add(d.IdleWindow)
	if now := d.now(); now.Before(until) {
		rep.WaitsUntil = &until
		idleFor := max(now.Sub(since), 0)
		rep.Skipped = fmt.Sprintf("depth 0 since %s, idle %s of the %s idle window: the drain waits until %s",
			since.Format(time.RFC3339), idleFor.Round(time.Second), d.IdleWindow, until.Format(time.RFC3339))
		return rep, true, nil
	}
	return rep, false, nil
}

// DrainQueue releases every open placement of queue ("" = every queue),
// most expensive first (ReleaseLedger.OpenPlacements), for reason.
func (d *Drainer) DrainQueue(ctx context.Context, queue, reason string) (DrainReport, error) {
	rep := DrainReport{Queue: queue, Released: []Release{}, Pending: []Release{}}
	ops, err := d.Ledger.OpenPlacements(ctx, queue)
	if err != nil {
		return rep, fmt.Errorf("reading open placements of %q: %w", queue, err)
	}
	var pending []error
	for _, op := range ops {
		r, err := d.release(ctx, op, reason, "")
		switch {
		case errors.Is(err, ErrReleasePending):
			rep.Pending = append(rep.Pending, r)
			pending = append(pending, err)
		case err != nil:
			return rep, err
		default:
			rep.Released = append(rep.Released, r)
		}
	}
	if len(pending) > 0 {
		return rep, errors.Join(pending...)
	}
	return rep, nil
}

func (d *Drainer) now() time.Time {
	if d.Clock == nil {
		return time.Now().UTC()
	}
	return d.Clock.Now().UTC()
}

// cost is what p cost until end. A reservation (a capacity block) is paid
// for its whole term whatever ran: Price × Units × the line's Hours (the
// term, as planned), billed seconds = Hours × 3600, when the decision is
// recorded; anything else is priced by Cost (default PerSecond).
func (d *Drainer) cost(ctx context.Context, p Placement, end time.Time) (Money, int64) {
	if p.Market == Reserved && d.Ledger != nil && p.DecisionID != "" {
		if rec, ok, err := d.Ledger.Decision(ctx, p.DecisionID); err == nil && ok && p.Line >= 0 && p.Line < len(rec.Lines) {
			h := rec.Lines[p.Line].Hours
			return p.Price.Mul(h).MulInt(p.Units), h.Mul(decimal.NewFromInt(3600)).Ceil().IntPart()
		}
	}
	if d.Cost != nil {
		return d.Cost(p, end)
	}
	return PerSecond(p, end)
}

// release gives one placement back: a release-pending record first (unless
// one exists), then the provider's terminate, then the released record with
// the accrued cost from PlacedAt to the time the provider stopped billing.
// It returns the last step; an unconfirmed terminate returns the pending
// step and an error wrapping ErrReleasePending. An orphan (DecisionID "")
// has no placement record and is recorded by its external ids. With a nil
// Ledger nothing is recorded. A retried pending release (op.ReleaseState
// ReleasePending) keeps op.ReleaseReason when the ledger gave one; reason is
// then only the fallback.
func (d *Drainer) release(ctx context.Context, op OpenPlacement, reason, note string) (Release, error) {
	p := op.Placement
	now := d.now()
	if op.ReleaseState == ReleasePending && op.ReleaseReason != "" {
		// A retried pending release keeps the reason its pending step
		// recorded (price-mismatch, policy-refused, ...), not the caller's.
		reason = op.ReleaseReason
	}
	r := Release{Kind: "release", DecisionID: p.DecisionID, Line: p.Line, Queue: p.Queue, Provider: p.Provider,
		ExternalIDs: p.ExternalIDs, State: ReleasePending, Reason: reason, Slots: p.Slots, RequestedAt: now, At: now, Error: note}
	if p.DecisionID == "" {
		r.Slots = 0
	}
	if op.ReleaseState != ReleasePending && d.Ledger != nil {
		if err := d.Ledger.AppendRelease(ctx, r); err != nil && !errors.Is(err, ErrDuplicate) {
			return r, fmt.Errorf("recording release-pending of %s line %d: %w", p.DecisionID, p.Line, err)
		}
	}
	res, err := d.Broker.Release(ctx, p)
	if err == nil && !res.Confirmed {
		err = errors.New("the provider has not confirmed the terminate")
	}
	if err != nil {
		r.Error = err.Error()
		return r, fmt.Errorf("releasing %s line %d at %s (%v): %w", p.DecisionID, p.Line, p.Provider, err, ErrReleasePending)
	}
	r.State, r.At = ReleaseReleased, res.At.UTC()
	r.AccruedCost, r.BilledSeconds = d.cost(ctx, p, r.At)
	if d.Ledger != nil {
		if err := d.Ledger.AppendRelease(ctx, r); err != nil && !errors.Is(err, ErrDuplicate) {
			return r, fmt.Errorf("recording release of %s line %d: %w", p.DecisionID, p.Line, err)
		}
	}
	return r, nil
}
