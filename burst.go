package sluice

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

	// Step, when set, is called at each crash-consistency point of a decision
	// (StepAfterIntent, StepAfterPlace(n), StepAfterFollowUpIntent,
	// StepBeforeOutcome); fault injection makes the process exit there.
	Step func(step string)
	// Unavailable is the in-process cache of offers refused for capacity
	// (created on first use); UnavailableTTL how long a refusal lasts
	// (default DefaultUnavailableTTL); MaxFollowUps bounds the fall-through
	// records of one decision (default DefaultMaxFollowUps). See resume.go.
	Unavailable    *Unavailable
	UnavailableTTL time.Duration
	MaxFollowUps   int
	// Cost prices capacity released at once after a failed read-back check
	// (nil = per second, see Drainer.Cost).
	Cost func(p Placement, end time.Time) (Money, int64)
	// Owner names this process in line claims (LineClaims; default
	// "pid-<pid>"); OwnerAlive, when set, says whether a claim's holder is
	// still running, so a dead holder's lease is taken at once instead of
	// when it expires (ClaimLease).
	Owner      string
	OwnerAlive func(owner string) bool

	mu sync.Mutex
}

// Decide runs the main job for one trigger and returns the decision record
// with its placements and follow-ups. The intent is recorded before any
// provider call. The same trigger delivered again resumes the recorded
// decision (resume.go): lines without a placement record are looked up at
// the provider and adopted, only what is missing is placed; replayed is true
// when nothing had to be done. Errors are for the whole run (no profile,
// ledger or policy failure) or wrap ErrUnresolved when a provider's answer
// was lost (the record is returned too, and a retry resumes it); a failed
// quote source or a refused placement is recorded in the decision instead.
func (b *Burst) Decide(ctx context.Context, t Trigger) (rec DecisionRecord, replayed bool, err error) {
	profile, err := b.Profiles(t.Queue)
	if err != nil {
		return rec, false, err
	}
	if err := CheckAlarmTime(t, b.Clock.Now()); err != nil {
		return rec, false, err
	}
	id := DecisionID(t)
	if old, ok, err := b.Ledger.Decision(ctx, id); err != nil {
		return rec, false, fmt.Errorf("reading decision %s: %w", id, err)
	} else if ok {
		r := b.newRun()
		err := b.complete(ctx, &old, true, r)
		old.Outcome = Outcome(old)
		return old, !r.acted, err
	}
	now := b.Clock.Now().UTC()
	rec = DecisionRecord{
		Kind: "decision", DecisionID: id, DecidedAt: now, Trigger: t, Profile: profile,
		BillingCurrency: b.BillingCurrency, FX: b.FX, PolicyRevision: b.Policy.Revision(), CodeVersion: b.CodeVersion,
		Offers: []Offer{}, Verdicts: []Verdict{}, Sources: []SourceReport{},
	}
	fetched := false
	// Plan first, act second: the intent is recorded before any provider call.
	// The ledger refuses the record (ErrStale) if another decision changed the
	// queue's live slots or the tier's spend after they were read; then the
	// demand and budget are read again and the plan remade on the same quotes.
	for attempt := 1; ; attempt++ {
		if err := b.plan(ctx, &rec, profile, now, &fetched); err != nil {
			return rec, false, err
		}
		err := b.Ledger.AppendDecision(ctx, &rec)
		if err == nil {
			break
		}
		if errors.Is(err, ErrDuplicate) { // a concurrent delivery of the same alarm won the race and is placing
			if old, ok, rerr := b.Ledger.Decision(ctx, id); rerr == nil && ok {
				old.Outcome = Outcome(old)
				return old, true, nil
			}
		}
		if errors.Is(err, ErrStale) && attempt < maxStaleRetries {
			continue
		}
		return rec, false, fmt.Errorf("recording decision %s: %w", id, err)
	}
	b.step(StepAfterIntent)
	err = b.complete(ctx, &rec, false, b.newRun())
	rec.Outcome = Outcome(rec)
	return rec, false, err
}

// complete carries out a recorded decision and its fall-through chain.
func (b *Burst) complete(ctx context.Context, rec *DecisionRecord, resuming bool, r *run) error {
	refused, err := b.carryOut(ctx, rec, resuming, r)
	if err != nil {
		return err
	}
	if err := b.fallThrough(ctx, rec, refused, r); err != nil {
		return err
	}
	b.step(StepBeforeOutcome)
	return nil
}

// maxStaleRetries bounds how often one decision is re-planned because
// concurrent decisions kept changing the ledger under it.
const maxStaleRetries = 5

// plan reads the queue's live slots and the tier's headroom, computes demand
// and, when slots are wanted, collects quotes (once per decision), evaluates
// policy and makes the plan, filling rec.
func (b *Burst) plan(ctx context.Context, rec *DecisionRecord, profile QueueProfile, now time.Time, fetched *bool) error {
	t := rec.Trigger
	live, err := b.Ledger.LiveSlots(ctx, t.Queue)
	if err != nil {
		return fmt.Errorf("reading live slots of %s: %w", t.Queue, err)
	}
	if t.State == StateAlarm {
		rec.Demand = NewDemand(profile, t.Depth, live)
	} else {
		rec.Demand = Demand{Queue: t.Queue, Depth: t.Depth, Live: live, GPUsPerSlot: profile.GPUsPerSlot, Hours: profile.HoursPerSlot}
	}
	if rec.Budget, err = b.budget(ctx, profile.Tier, now); err != nil {
		return err
	}
	rec.Plan = Plan{SlotsWanted: rec.Demand.Slots, TotalExpectedCost: Money{decimal.Zero, b.BillingCurrency},
		Lines: []Line{}, Short: []Reason{}, Rejected: []Rejection{}}
	if rec.Demand.Slots > 0 {
		if !*fetched {
			rec.Offers, rec.Sources = b.Quotes.Collect(ctx)
			if err := noSourceAnswered(rec.Sources); err != nil {
				return err
			}
			if rec.Verdicts, err = b.Policy.Evaluate(ctx, profile, rec.Offers, now); err != nil {
				return fmt.Errorf("evaluating policy: %w", err)
			}
			// Offers refused for capacity within UnavailableTTL are not chosen again.
			rec.Verdicts = b.excluding(rec.Offers, rec.Verdicts, nil, now)
			*fetched = true
		}
		var headroom *Money
		if rec.Budget != nil {
			headroom = &rec.Budget.Headroom
		}
		// Quote expiry is judged when the plan is made, after the fetch.
		plan, err := MakePlan(PlanInput{
			Demand: rec.Demand, Profile: profile, Offers: rec.Offers, Verdicts: rec.Verdicts,
			BillingCurrency: b.BillingCurrency, FX: b.FX, InterruptionsPerHour: b.InterruptionsPerHour,
			Budget: headroom, Now: b.Clock.Now().UTC(),
		})
		if err != nil {
			return err
		}
		rec.Plan = plan
	}
	switch {
	case rec.Demand.Slots == 0:
		rec.Status = StatusNothingToDo
	case len(rec.Lines) == 0:
		rec.Status = StatusNoOffer
	default:
		rec.Status = StatusPlanned
	}
	return nil
}

// Outcome is the status of a decision given its placements and follow-ups:
// a planned decision with a line (its own or a follow-up's) that has no
// placement record yet is "placing" (another process is placing it, or one
// died: a retry of the alarm or reconcile settles it); else one whose placed
// slots (its own successful placements and its follow-ups') reach the slots
// its plan covers, with no shortfall, is "placed", else "partial" (a line
// failed and was not replaced, or the plan covers fewer slots than wanted).
func Outcome(rec DecisionRecord) string {
	if rec.Status != StatusPlanned {
		return rec.Status
	}
	placed := 0
	for _, r := range append([]DecisionRecord{rec}, rec.FollowUps...) {
		recorded := map[int]bool{}
		for _, p := range r.Placements {
			recorded[p.Line] = true
		}
		for i := range r.Lines {
			if !recorded[i] {
				return StatusPlacing
			}
		}
		for _, p := range r.Placements {
			if p.Error == "" && p.ErrorClass == "" { // a class on a held placement: released at once (price mismatch)
				placed += p.Slots
			}
		}
	}
	if placed >= rec.SlotsCovered && len(rec.Short) == 0 {
		return StatusPlaced
	}
	return StatusPartial
}

// budget is the tier's budget state for the UTC calendar month of now: the
// monthly budget, what decisions this month have committed, and the headroom
// left; nil when the tier has no budget.
func (b *Burst) budget(ctx context.Context, tier Tier, now time.Time) (*BudgetState, error) {
	monthly, ok := b.Budgets[tier]
	if !ok {
		return nil, nil
	}
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	spent, err := b.Ledger.TierSpend(ctx, tier, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading %s spend: %w", tier, err)
	}
	return &BudgetState{Tier: tier, PeriodStart: from, PeriodEnd: to, Budget: monthly,
		Spent:    Money{spent, monthly.Currency},
		Headroom: Money{monthly.Amount.Sub(spent), monthly.Currency}}, nil
}

// ErrNoQuotes is returned by Decide when slots are wanted and no quote
// source answered at all (every source timed out or failed). Nothing is
// recorded: a decision made blind would be the trigger's final answer (a
// redelivery replays it and CloudWatch does not notify again while the
// alarm stays in ALARM), so the error is transient and the trigger's retry
// decides on fresh quotes. A partial outage is recorded as usual, with each
// failed source in the decision's sources.
var ErrNoQuotes = errors.New("no quote source answered")

// noSourceAnswered returns ErrNoQuotes naming each source's error (its
// first line, at most maxSourceError bytes; the whole error is in the
// source report) when every source failed (or there were none), else nil.
func noSourceAnswered(sources []SourceReport) error {
	var why []string
	for _, s := range sources {
		if s.Error == "" {
			return nil
		}
		why = append(why, s.Provider+": "+firstLine(s.Error, maxSourceError))
	}
	if len(why) == 0 {
		return fmt.Errorf("%w: no source is enabled", ErrNoQuotes)
	}
	return fmt.Errorf("%w: %s", ErrNoQuotes, strings.Join(why, "; "))
}

// ErrBadTrigger wraps a trigger refused whole by the decision (permanent: a
// retry gets the same answer).
var ErrBadTrigger = errors.New("bad trigger")

// MaxAlarmSkew is how far an alarm's StateChangeTime may lie after the
// decision clock (clock skew between CloudWatch and the function).
const MaxAlarmSkew = 15 * time.Minute

// cloudWatchLaunch is the earliest plausible StateChangeTime: CloudWatch
// became generally available on 2009-05-18.
var cloudWatchLaunch = time.Date(2009, 5, 18, 0, 0, 0, 0, time.UTC)

// CheckAlarmTime refuses a trigger whose StateChangeTime lies more than
// MaxAlarmSkew after now, or before CloudWatch existed: a year-9999 alarm
// would otherwise hold the queue's slots against every real one.
func CheckAlarmTime(t Trigger, now time.Time) error {
	switch {
	case t.StateChangeTime.After(now.Add(MaxAlarmSkew)):
		return fmt.Errorf("%w: alarm %s: StateChangeTime %s is more than %s after the decision clock %s",
			ErrBadTrigger, t.AlarmName, t.StateChangeTime.UTC().Format(time.RFC3339), MaxAlarmSkew, now.UTC().Format(time.RFC3339))
	case t.StateChangeTime.Before(cloudWatchLaunch):
		return fmt.Errorf("%w: alarm %s: StateChangeTime %s is before CloudWatch existed (2009-05-18)",
			ErrBadTrigger, t.AlarmName, t.StateChangeTime.UTC().Format(time.RFC3339))
	}
	return nil
}

// maxSourceError bounds each source's error in ErrNoQuotes's message.
const maxSourceError = 200

// firstLine is s up to its first line break, cut to at most n bytes on a
// rune boundary, with "…" when anything was cut.
func firstLine(s string, n int) string {
	cut := false
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s, cut = s[:i], true
	}
	if len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s, cut = s[:i], true
	}
	if cut {
		s += "…"
	}
	return s
}
