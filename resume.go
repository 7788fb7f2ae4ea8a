package sluice

// Exactly-once placement and capacity fall-through.
//
// DESIGN
//
// Intent first. A decision is appended to the ledger before any provider
// call; its lines are the intent. Each line is then placed with a client
// token and tags derived from (decision id, line) (ClientToken), and its
// outcome is appended as a placement record. The chain is never edited.
//
// Resume. A trigger whose decision is already recorded resumes it: for each
// recorded line without a placement record, Broker.Find looks the line up at
// the provider first (token or tags) and adopts what exists; only what is
// missing is placed, with the same token.
//
// Line claims. Before any provider call for a line, the burst takes the
// line's lease in the ledger (LineClaims, ClaimLease = 2 min; outside the hash
// chain): one process at a time calls a provider for one line. Another
// process resuming the same decision waits for the holder's placement record
// and takes it. A holder that died (same host, its pid gone: OwnerAlive) or
// whose lease expired is taken over, and the new holder looks the line up
// first. Client tokens already make EC2 and Alibaba idempotent; the claims
// are what keep RunPod, Vast and AutoDL (found by name or label only) from
// buying twice when resumers race. A ledger without LineClaims falls back to
// the providers' own idempotency. Adopted capacity passes the same checks as
// new capacity: the policy is evaluated again on the line's offer
// (checkAdopt), then checkReuse (provider, market, units, price read back
// against the line's bid or unit price and the queue's ceiling); capacity
// that fails is recorded (error class policy or price-mismatch), released at
// once, and its line falls through like a refused one. New capacity is held
// to checkReuse with the verdict recorded moments before.
//
// Ambiguous answers. A timeout, throttling or unclassified error may hide a
// created instance, so it is never recorded as a failure (which would give
// the slots back and leave an unrecorded instance): the burst looks the line
// up (Find), places it once more with the same token, and if it is still
// unresolved leaves the line without a record and returns ErrUnresolved; the
// retry of the trigger (Lambda's, or the operator's) resumes it, and
// reconcile adopts it after a grace period.
//
// Fall-through. A definite refusal (ErrInsufficientCapacity,
// ErrCapabilityUnavailable, ErrPriceMismatch, ErrQuota) is recorded as a
// failed placement, which gives the line's slots (and its expected cost, in
// TierSpend) back. The remaining demand is then re-planned on the same quotes
// with the refused offers excluded, and recorded as a follow-up decision
// record (id = first decision id + "-f1", "-f2", …, FollowUpOf = the record
// it follows) before its lines are placed: the same intent-first rule, the
// same stale-state guard on live slots and budget, the same idempotency on
// its own tokens; its verdicts are the policy's as it is when the follow-up
// is planned (its policy_revision says which). Follow-up ids are deterministic, so a resumed trigger finds
// and resumes its follow-ups instead of planning them again. The plan's
// quote expiry is the deadline (an offer past its ExpiresAt is refused), and
// MaxFollowUps bounds the chain.
//
// Where the fall-through may go: after a capacity, capability or price
// refusal, any offer policy allows; after a quota or configuration refusal
// only offers in the same residency zone as the refused line, from another
// provider region (a quota is per account and region): a quota problem never
// moves work across residency zones. ErrBidOutOfRange is recorded and not
// fallen through (it is a rule or configuration fault, not a market answer).
//
// Unavailable offers. A capacity, capability or price refusal also marks the
// offer unavailable for UnavailableTTL in an in-process cache (Unavailable),
// shared by the decisions this process makes (a warm Lambda container, one
// CLI run). It is not read from the ledger; the ledger shows the same facts
// as the failed placement records (error_class) and as the follow-up's
// rejections (reason "unavailable").

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Steps of a burst at which Burst.Step is called (fault injection for the
// crash tests: SLUICE_CRASH_AT names one and the process exits there).
const (
	// StepAfterIntent: the decision is recorded, no provider called yet.
	StepAfterIntent = "after-intent"
	// StepAfterFollowUpIntent: a follow-up record is appended, its lines not placed.
	StepAfterFollowUpIntent = "after-followup-intent"
	// StepBeforeOutcome: every line is placed and recorded, the result not returned.
	StepBeforeOutcome = "before-outcome"
)

// StepAfterPlace is the step after the n-th Broker.Place call of one Decide
// (1-based, follow-ups included), before its outcome is recorded.
func StepAfterPlace(n int) string { return "after-place-" + strconv.Itoa(n) }

// ReasonUnavailable is the rejection code of an offer a provider refused for
// capacity (or an offer a quota refusal rules out) in this decision chain or
// within UnavailableTTL.
const ReasonUnavailable = "unavailable"

// ErrUnresolved is returned by Decide when a line's provider answer was lost
// (timeout, throttling, unclassified error) and nothing could be found for
// it: the line has no placement record and a retry of the trigger resumes it.
var ErrUnresolved = errors.New("placement unresolved; a retry of the trigger resumes it")

// Default bounds of the fall-through.
const (
	DefaultUnavailableTTL = 10 * time.Minute
	DefaultMaxFollowUps   = 3
)

// ReusePriceTolerance is how far above the line's bid (spot) or unit price a
// price read back may be before the capacity is refused as a price mismatch:
// 2 %. Compared exactly, no rounding.
var ReusePriceTolerance = decimal.RequireFromString("0.02")

// Error classes recorded in Placement.ErrorClass.
const (
	ClassCapacity      = "capacity"
	ClassQuota         = "quota"
	ClassCapability    = "capability"
	ClassTransient     = "transient"
	ClassPriceMismatch = "price-mismatch"
	ClassBidRange      = "bid-range"
	// ClassPolicy marks held capacity (Error "") that the policy refuses when
	// it is adopted on a retry: recorded, then released at once.
	ClassPolicy = "policy"
)

// ReleasePolicyRefused is the release reason of adopted capacity the current
// policy refuses.
const ReleasePolicyRefused = "policy-refused"

// ErrorClass classifies a broker error by the error class it wraps, or "" when
// it wraps none (an unclassified error is treated as ambiguous).
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInsufficientCapacity):
		return ClassCapacity
	case errors.Is(err, ErrQuota):
		return ClassQuota
	case errors.Is(err, ErrCapabilityUnavailable):
		return ClassCapability
	case errors.Is(err, ErrPriceMismatch):
		return ClassPriceMismatch
	case errors.Is(err, ErrBidOutOfRange):
		return ClassBidRange
	case errors.Is(err, ErrTransient):
		return ClassTransient
	}
	return ""
}

// HeldError is a broker error that comes with capacity the provider sold
// and the adapter gave back at once (brokers/placement.MismatchError: the
// price or market read back was beyond tolerance). Held returns what was
// bought (ExternalIDs set) and the answer to the adapter's release. The
// burst records that capacity (class price-mismatch) and its release with
// the accrued cost, as it does for adopted capacity that fails checkReuse:
// the instances existed and billed.
type HeldError interface {
	error
	Held() (p Placement, res ReleaseResult, releaseErr error)
}

// heldMismatch is the mismatch of capacity an adapter already released (or
// tried to): releaseMismatch records that release instead of asking again.
type heldMismatch struct {
	err        error
	res        ReleaseResult
	releaseErr error
}

func (h *heldMismatch) Error() string { return h.err.Error() }

// definite reports whether class is a refusal after which the provider holds
// nothing for the line.
func definite(class string) bool {
	switch class {
	case ClassCapacity, ClassQuota, ClassCapability, ClassPriceMismatch, ClassBidRange:
		return true
	}
	return false
}

// fallsThrough reports whether a refusal of this class moves the line's
// slots to the next candidate.
func fallsThrough(class string) bool {
	return class == ClassCapacity || class == ClassCapability || class == ClassPriceMismatch || class == ClassQuota || class == ClassPolicy
}

// Unavailable is the in-process cache of offers a provider refused for
// capacity: (provider, offer id) → until when. Safe for concurrent use.
type Unavailable struct {
	mu    sync.Mutex
	until map[[2]string]time.Time
}

// Mark makes the offer unavailable until until (a later mark extends it).
func (u *Unavailable) Mark(provider, offerID string, until time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.until == nil {
		u.until = map[[2]string]time.Time{}
	}
	k := [2]string{provider, offerID}
	if until.After(u.until[k]) {
		u.until[k] = until
	}
}

// Until reports whether the offer is unavailable at now, and until when.
func (u *Unavailable) Until(provider, offerID string, now time.Time) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.until[[2]string{provider, offerID}]
	return t, ok && now.Before(t)
}

// LineClaims is an optional capability of a Ledger: a lease per decision
// line, so that one process at a time asks a provider for it. Client tokens
// make EC2 and Alibaba idempotent, but RunPod, Vast and AutoDL are found by
// name or label only, and two processes resuming the same line at once would
// both find nothing and both buy. The claim is operational state, not an
// audit record.
type LineClaims interface {
	// ClaimLine gives owner the lease on (decisionID, line) until until when
	// nobody holds it, owner holds it, or steal(holder, holderUntil) says the
	// holder's lease may be taken (expired, holder dead). prev is the holder
	// before the call ("" = never claimed); ok = false leaves prev holding it.
	ClaimLine(ctx context.Context, decisionID string, line int, owner string, until time.Time,
		steal func(holder string, holderUntil time.Time) bool) (prev string, ok bool, err error)
}

// ClaimLease is how long a line claim lasts: longer than one provider call
// and its retry (the adapters' HTTP clients give up after 30 s).
const ClaimLease = 2 * time.Minute

// claimPoll is how often a burst waiting on another process's claim looks
// for the line's record.
const claimPoll = 100 * time.Millisecond

// run is the state of one Decide call.
type run struct {
	places int    // Broker.Place calls so far (for StepAfterPlace)
	acted  bool   // a provider was asked to place, or a record appended
	owner  string // the line claims' owner: this Decide call
}

var runSeq struct {
	sync.Mutex
	n int
}

// newRun starts the state of one Decide call; its owner is Burst.Owner
// (default "pid-<pid>") plus a sequence number, so concurrent calls of one
// process are distinct owners.
func (b *Burst) newRun() *run {
	runSeq.Lock()
	runSeq.n++
	n := runSeq.n
	runSeq.Unlock()
	base := b.Owner
	if base == "" {
		base = "pid-" + strconv.Itoa(os.Getpid())
	}
	return &run{owner: base + "/" + strconv.Itoa(n)}
}

// unclaim ends this run's lease on a line it leaves unresolved.
func (b *Burst) unclaim(ctx context.Context, id string, i int, r *run) {
	if claims, ok := b.Ledger.(LineClaims); ok {
		_, _, _ = claims.ClaimLine(ctx, id, i, r.owner, b.Clock.Now().UTC(), nil)
	}
}

// claim takes the line's lease before any provider call for it. It returns
// takeover = true when another owner held it before (the line must be looked
// up first), or recorded when another process recorded the line while this
// one waited for its lease.
func (b *Burst) claim(ctx context.Context, rec *DecisionRecord, i int, r *run) (takeover bool, recorded *Placement, err error) {
	claims, ok := b.Ledger.(LineClaims)
	if !ok {
		return false, nil, nil
	}
	steal := func(holder string, until time.Time) bool {
		return !b.Clock.Now().Before(until) || (b.OwnerAlive != nil && !b.OwnerAlive(holder))
	}
	waitUntil := time.Now().Add(ClaimLease) // real time: a clock that stands still must not wait forever
	for {
		prev, ok, err := claims.ClaimLine(ctx, rec.DecisionID, i, r.owner, b.Clock.Now().UTC().Add(ClaimLease), steal)
		if err != nil {
			return false, nil, fmt.Errorf("%s line %d: claiming it: %v: %w", rec.DecisionID, i, err, ErrUnresolved)
		}
		if ok {
			return prev != "" && prev != r.owner, nil, nil
		}
		// Another process is placing this line: wait for its record.
		if p, err := b.recordedPlacement(ctx, rec.DecisionID, i); err == nil {
			return false, &p, nil
		}
		if time.Now().After(waitUntil) {
			return false, nil, fmt.Errorf("%s line %d: being placed by %s for longer than %s: %w", rec.DecisionID, i, prev, ClaimLease, ErrUnresolved)
		}
		select {
		case <-ctx.Done():
			return false, nil, fmt.Errorf("%s line %d: being placed by %s: %v: %w", rec.DecisionID, i, prev, ctx.Err(), ErrUnresolved)
		case <-time.After(claimPoll):
		}
	}
}

func (b *Burst) step(s string) {
	if b.Step != nil {
		b.Step(s)
	}
}

func (b *Burst) unavailable() *Unavailable {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Unavailable == nil {
		b.Unavailable = &Unavailable{}
	}
	return b.Unavailable
}

// refusal is one definite refusal in a decision chain.
type refusal struct {
	line  Line
	class string
}

// carryOut places every line of the recorded decision rec that has no
// placement record, appends each outcome, and returns the chain's refusals
// that fall through (recorded before or now). resuming makes it look each
// line up at the provider before placing. An unresolved line makes it return
// an error wrapping ErrUnresolved after trying the other lines.
func (b *Burst) carryOut(ctx context.Context, rec *DecisionRecord, resuming bool, r *run) ([]refusal, error) {
	recorded := map[int]bool{}
	for _, p := range rec.Placements {
		recorded[p.Line] = true
	}
	var unresolved []error
	for i, line := range rec.Lines {
		if recorded[i] {
			continue
		}
		takeover, other, err := b.claim(ctx, rec, i, r)
		if err != nil {
			unresolved = append(unresolved, err)
			continue
		}
		if other != nil {
			rec.Placements = append(rec.Placements, *other)
			continue
		}
		if takeover || resuming {
			// The previous holder may have recorded the line before its lease ended.
			if p, err := b.recordedPlacement(ctx, rec.DecisionID, i); err == nil {
				rec.Placements = append(rec.Placements, p)
				continue
			}
		}
		p, mismatch, err := b.placeLine(ctx, rec, i, line, resuming || takeover, r)
		if err != nil {
			// Hand the lease back (expired now): the next process to resume
			// the line takes it over and looks the line up first.
			b.unclaim(ctx, rec.DecisionID, i, r)
			unresolved = append(unresolved, err)
			continue
		}
		p.DecisionID, p.Line, p.Queue = rec.DecisionID, i, rec.Trigger.Queue
		// The intent is recorded before any provider call, so capacity for
		// this line cannot have started before the decision: a provider time
		// earlier than that is the provider's clock (or zone) being off, and
		// billing counts from the decision (audit verify checks it).
		if p.PlacedAt.Before(rec.DecidedAt) {
			p.PlacedAt = rec.DecidedAt
		}
		if p.Error == "" {
			// A look-up may not know what the line asked for: the record
			// always says which offer and how many slots the capacity serves.
			if p.ClientToken == "" {
				p.ClientToken = ClientToken(rec.DecisionID, i)
			}
			if p.OfferID == "" {
				p.OfferID = line.OfferID
			}
			if p.Units == 0 {
				p.Units = line.Units
			}
			if p.Slots == 0 {
				p.Slots = line.Slots
			}
			if p.Market == "" { // RunPod's look-up by pod name says no market
				p.Market = line.Market
			}
		}
		if mismatch != nil && p.Error == "" {
			// Held capacity that fails the checks is recorded (it exists and
			// bills) with class price-mismatch (or policy), then released at once.
			p.ErrorClass = ClassPriceMismatch
			var rr *refusedReuse
			if errors.As(mismatch, &rr) {
				p.ErrorClass = rr.Class
			}
		}
		r.acted = true
		if err := b.Ledger.AppendPlacement(ctx, p); err != nil {
			if !errors.Is(err, ErrDuplicate) {
				return nil, fmt.Errorf("recording placement %s line %d: %w", rec.DecisionID, i, err)
			}
			// A concurrent resumer (or reconcile) recorded the line first.
			if p, err = b.recordedPlacement(ctx, rec.DecisionID, i); err != nil {
				return nil, err
			}
			mismatch = nil
		}
		if (p.Error != "" && (p.ErrorClass == ClassCapacity || p.ErrorClass == ClassCapability)) || p.ErrorClass == ClassPriceMismatch {
			b.unavailable().Mark(line.Provider, line.OfferID, b.Clock.Now().UTC().Add(b.unavailableTTL()))
		}
		if mismatch != nil && p.Error == "" {
			b.releaseMismatch(ctx, p, mismatch)
		}
		rec.Placements = append(rec.Placements, p)
	}
	if len(unresolved) > 0 {
		return nil, errors.Join(unresolved...)
	}
	var out []refusal
	for _, p := range rec.Placements {
		if (p.Error != "" || p.ErrorClass == ClassPriceMismatch || p.ErrorClass == ClassPolicy) && fallsThrough(p.ErrorClass) && p.Line >= 0 && p.Line < len(rec.Lines) {
			out = append(out, refusal{rec.Lines[p.Line], p.ErrorClass})
		}
	}
	return out, nil
}

// recordedPlacement reads back the placement record of (id, line).
func (b *Burst) recordedPlacement(ctx context.Context, id string, line int) (Placement, error) {
	rec, ok, err := b.Ledger.Decision(ctx, id)
	if err != nil || !ok {
		return Placement{}, fmt.Errorf("reading back %s line %d: ok=%v: %w", id, line, ok, err)
	}
	for _, p := range rec.Placements {
		if p.Line == line {
			return p, nil
		}
	}
	return Placement{}, fmt.Errorf("reading back %s line %d: no placement record", id, line)
}

// placeLine resolves one line: a placement (bought or adopted), a failed
// placement (definite refusal, Error set), or an error wrapping
// ErrUnresolved. mismatch is set when capacity was obtained but fails
// checkReuse: it is recorded, then released at once.
func (b *Burst) placeLine(ctx context.Context, rec *DecisionRecord, i int, line Line, resuming bool, r *run) (p Placement, mismatch error, err error) {
	id := rec.DecisionID
	if resuming {
		found, ok, err := b.Broker.Find(ctx, line.Provider, id, i)
		if err != nil {
			return p, nil, fmt.Errorf("%s line %d: looking it up at %s: %v: %w", id, i, line.Provider, err, ErrUnresolved)
		}
		if ok {
			return found, b.checkAdopt(ctx, rec, line, found), nil
		}
	}
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			// The first answer was lost: the provider may hold the instance.
			found, ok, ferr := b.Broker.Find(ctx, line.Provider, id, i)
			if ferr == nil && ok {
				return found, b.checkAdopt(ctx, rec, line, found), nil
			}
		}
		p, err := b.Broker.Place(ctx, id, i, line)
		r.places++
		r.acted = true
		b.step(StepAfterPlace(r.places))
		if err == nil {
			return p, b.checkReuse(rec, line, p), nil
		}
		if class := ErrorClass(err); definite(class) {
			var he HeldError
			if class == ClassPriceMismatch && errors.As(err, &he) {
				if held, res, rerr := he.Held(); len(held.ExternalIDs) > 0 {
					// Bought, then given back: recorded as held capacity
					// (class price-mismatch) and released with its cost.
					held.Error = ""
					return held, &heldMismatch{err: err, res: res, releaseErr: rerr}, nil
				}
			}
			return Placement{ClientToken: ClientToken(id, i), Provider: line.Provider, OfferID: line.OfferID,
				Market: line.Market, Units: line.Units, Slots: line.Slots, PlacedAt: b.Clock.Now().UTC(),
				ErrorClass: class, Error: err.Error()}, nil, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return p, nil, fmt.Errorf("%s line %d at %s: %v: %w", id, i, line.Provider, last, ErrUnresolved)
}

// checkReuse applies to capacity a provider holds for a line (new or
// adopted) the checks new capacity passed when it was chosen: the offer's
// recorded policy verdict allows it; provider, market and units are the
// line's; the price read back, per unit-hour in the line's currency, is at
// most the line's bid (spot) or unit price × (1 + ReusePriceTolerance), and
// per GPU at most the queue's ceiling (converted with the decision's FX
// table, division rounded to FXScale places). nil when it passes.
func (b *Burst) checkReuse(rec *DecisionRecord, line Line, p Placement) error {
	allowed := false
	for _, v := range rec.Verdicts {
		if v.OfferID == line.OfferID {
			allowed = v.Allow
		}
	}
	switch {
	case !allowed:
		return fmt.Errorf("offer %s is not allowed by the decision's policy verdicts", line.OfferID)
	case p.Provider != "" && p.Provider != line.Provider:
		return fmt.Errorf("provider %s, line is %s", p.Provider, line.Provider)
	case p.Market != "" && p.Market != line.Market:
		return fmt.Errorf("market %s read back, line is %s", p.Market, line.Market)
	case p.Units != 0 && p.Units != line.Units:
		return fmt.Errorf("%d units held, line is %d", p.Units, line.Units)
	}
	if !p.Price.IsSet() {
		return nil
	}
	if p.Price.Currency != line.UnitPrice.Currency {
		return fmt.Errorf("price %s read back, line is in %s", p.Price, line.UnitPrice.Currency)
	}
	limit := line.UnitPrice
	if line.Bid != nil && line.Bid.Cmp(limit) > 0 {
		limit = *line.Bid
	}
	if max := limit.Mul(decimal.NewFromInt(1).Add(ReusePriceTolerance)); p.Price.Cmp(max) > 0 {
		return fmt.Errorf("price %s read back, above %s (bid or unit price %s + %s%%)", p.Price, max, limit, ReusePriceTolerance.Shift(2))
	}
	if ceil := rec.Profile.MaxPricePerGPUHour; ceil.IsSet() && line.Units > 0 && line.GPUs > 0 {
		gpus := decimal.NewFromInt(int64(line.GPUs / line.Units))
		perGPU, _, err := FXTable(rec.FX).Convert(Money{p.Price.Amount.DivRound(gpus, FXScale), p.Price.Currency}, ceil.Currency)
		if err != nil {
			return fmt.Errorf("price %s read back: %w", p.Price, err)
		}
		if perGPU.Cmp(ceil) > 0 {
			return fmt.Errorf("price %s read back is %s per GPU-hour, above the queue's ceiling %s", p.Price, perGPU, ceil)
		}
	}
	return nil
}

// refusedReuse is capacity held for a line that fails a check: Class is
// ClassPriceMismatch or ClassPolicy.
type refusedReuse struct {
	Class string
	Err   error
}

func (r *refusedReuse) Error() string { return r.Err.Error() }

// checkAdopt is checkReuse for capacity found at the provider (adopted): the
// policy is evaluated again now, on the offer the line bought, as it would be
// for new capacity; the recorded verdict stands in when the evaluator fails.
func (b *Burst) checkAdopt(ctx context.Context, rec *DecisionRecord, line Line, p Placement) error {
	for _, o := range rec.Offers {
		if o.ID != line.OfferID {
			continue
		}
		vs, err := b.Policy.Evaluate(ctx, rec.Profile, []Offer{o}, b.Clock.Now().UTC())
		if err == nil && len(vs) == 1 && !vs[0].Allow {
			return &refusedReuse{ClassPolicy, fmt.Errorf("offer %s is no longer allowed by policy %s: %v", o.ID, b.Policy.Revision(), vs[0].Reasons)}
		}
		break
	}
	return b.checkReuse(rec, line, p)
}

// releaseMismatch gives back capacity that failed a check at once, and
// records the release (reason price-mismatch or policy-refused) when the
// ledger keeps releases.
func (b *Burst) releaseMismatch(ctx context.Context, p Placement, why error) {
	reason := ReleasePriceMismatch
	if p.ErrorClass == ClassPolicy {
		reason = ReleasePolicyRefused
	}
	d := &Drainer{Ledger: asReleaseLedger(b.Ledger), Broker: b.Broker, Clock: b.Clock, Cost: b.Cost}
	var hm *heldMismatch
	if errors.As(why, &hm) && hm.releaseErr == nil && hm.res.Confirmed && d.Ledger != nil {
		// The adapter's terminate was confirmed: record it (pending, then
		// released at the time the provider stopped billing) without asking again.
		now := d.now()
		r := Release{Kind: "release", DecisionID: p.DecisionID, Line: p.Line, Queue: p.Queue, Provider: p.Provider,
			ExternalIDs: p.ExternalIDs, State: ReleasePending, Reason: reason, Slots: p.Slots, RequestedAt: now, At: now, Error: why.Error()}
		if err := d.Ledger.AppendRelease(ctx, r); err != nil && !errors.Is(err, ErrDuplicate) {
			return // stays open: the next drain or reconcile releases it
		}
		r.State, r.At = ReleaseReleased, hm.res.At.UTC()
		if hm.res.At.IsZero() {
			r.At = now
		}
		r.AccruedCost, r.BilledSeconds = d.cost(ctx, p, r.At)
		_ = d.Ledger.AppendRelease(ctx, r)
		return
	}
	_, _ = d.release(ctx, OpenPlacement{Placement: p}, reason, why.Error())
}

func asReleaseLedger(l Ledger) ReleaseLedger {
	if rl, ok := l.(ReleaseLedger); ok {
		return rl
	}
	return nil
}

func (b *Burst) unavailableTTL() time.Duration {
	if b.UnavailableTTL > 0 {
		return b.UnavailableTTL
	}
	return DefaultUnavailableTTL
}

func (b *Burst) maxFollowUps() int {
	if b.MaxFollowUps > 0 {
		return b.MaxFollowUps
	}
	return DefaultMaxFollowUps
}

// Resume carries on the recorded decision id (or, for a follow-up, the
// decision it follows) exactly as a redelivered trigger would: lines
// without a record are claimed, looked up, checked (policy as it is now,
// price) and adopted or placed, and refusals fall through. Reconcile uses it
// to settle lines a burst left unrecorded. ok = false when id is not recorded.
func (b *Burst) Resume(ctx context.Context, id string) (rec DecisionRecord, ok bool, err error) {
	for {
		rec, ok, err = b.Ledger.Decision(ctx, id)
		if err != nil || !ok {
			return rec, ok, err
		}
		if rec.FollowUpOf == "" {
			break
		}
		id = rec.FollowUpOf
	}
	err = b.complete(ctx, &rec, true, b.newRun())
	rec.Outcome = Outcome(rec)
	return rec, true, err
}

// FollowUpID is the id of the n-th follow-up (1-based) of decision id.
func FollowUpID(id string, n int) string { return id + "-f" + strconv.Itoa(n) }

// fallThrough carries the chain of root on from its last record: while the
// records' refusals fall through and MaxFollowUps allows, it finds (or
// plans and records) the next follow-up and carries it out. root.FollowUps
// receives each follow-up with its placements.
func (b *Burst) fallThrough(ctx context.Context, root *DecisionRecord, refused []refusal, r *run) error {
	all := append([]refusal(nil), refused...)
	for n := 1; len(refused) > 0 && n <= b.maxFollowUps(); n++ {
		id := FollowUpID(root.DecisionID, n)
		fu, ok, err := b.Ledger.Decision(ctx, id)
		if err != nil {
			return fmt.Errorf("reading follow-up %s: %w", id, err)
		}
		resuming := ok
		if !ok {
			if ctx.Err() != nil {
				return nil // past the deadline: the refused lines stay refused
			}
			parent := root.DecisionID
			if len(root.FollowUps) > 0 {
				parent = root.FollowUps[len(root.FollowUps)-1].DecisionID
			}
			fu, resuming, err = b.planFollowUp(ctx, root, parent, id, all)
			if err != nil {
				return err
			}
			if !resuming {
				r.acted = true
				b.step(StepAfterFollowUpIntent)
			}
		}
		root.FollowUps = append(root.FollowUps, fu)
		cur := &root.FollowUps[len(root.FollowUps)-1]
		if refused, err = b.carryOut(ctx, cur, resuming, r); err != nil {
			return err
		}
		cur.Outcome = Outcome(*cur)
		all = append(all, refused...)
	}
	return nil
}

// planFollowUp re-plans root's queue on root's quotes with every refused
// offer excluded (and, after a quota refusal, every offer outside the
// refused line's zone or in its provider region), and records it as
// follow-up id. When another process recorded it first, the recorded one is
// returned with resumed = true.
func (b *Burst) planFollowUp(ctx context.Context, root *DecisionRecord, parent, id string, refused []refusal) (fu DecisionRecord, resumed bool, err error) {
	now := b.Clock.Now().UTC()
	// The same quotes (their expiry is the deadline), the policy as it is now.
	verdicts, err := b.Policy.Evaluate(ctx, root.Profile, root.Offers, now)
	if err != nil {
		return fu, false, fmt.Errorf("evaluating policy for follow-up %s: %w", id, err)
	}
	fu = DecisionRecord{
		Kind: "decision", DecisionID: id, FollowUpOf: parent, DecidedAt: now, Trigger: root.Trigger, Profile: root.Profile,
		BillingCurrency: root.BillingCurrency, FX: root.FX, PolicyRevision: b.Policy.Revision(), CodeVersion: b.CodeVersion,
		Sources: root.Sources, Offers: remaining(root, refused), Verdicts: b.excluding(root.Offers, verdicts, refused, now),
	}
	fetched := true
	for attempt := 1; ; attempt++ {
		if err := b.plan(ctx, &fu, root.Profile, now, &fetched); err != nil {
			return fu, false, err
		}
		err := b.Ledger.AppendDecision(ctx, &fu)
		if err == nil {
			return fu, false, nil
		}
		if errors.Is(err, ErrDuplicate) {
			old, ok, rerr := b.Ledger.Decision(ctx, id)
			if rerr == nil && ok {
				return old, true, nil
			}
		}
		if errors.Is(err, ErrStale) && attempt < maxStaleRetries {
			continue
		}
		return fu, false, fmt.Errorf("recording follow-up %s: %w", id, err)
	}
}

// remaining returns a copy of root's offers with the units the chain already
// holds taken out: every line of root and of its follow-ups so far that was
// not refused holds (or may still hold) its units, so a follow-up never plans
// the same stock twice. UnitsAvailable drops by the units held of that offer,
// and an offer's pool (PoolGPUs) by the GPUs held from that pool. The
// follow-up's record keeps these reduced offers.
func remaining(root *DecisionRecord, refused []refusal) []Offer {
	type key struct{ provider, offer string }
	held := map[key]int{}
	pool := map[string]int{}
	gpusPerUnit := map[key]int{}
	poolOf := map[key]string{}
	for _, o := range root.Offers {
		k := key{o.Provider, o.ID}
		gpusPerUnit[k], poolOf[k] = o.GPUsPerUnit, o.Pool
	}
	count := func(l Line, sign int) {
		k := key{l.Provider, l.OfferID}
		held[k] += sign * l.Units
		if p := poolOf[k]; p != "" {
			pool[p] += sign * l.Units * gpusPerUnit[k]
		}
	}
	for _, l := range root.Lines {
		count(l, 1)
	}
	for _, fu := range root.FollowUps {
		for _, l := range fu.Lines {
			count(l, 1)
		}
	}
	for _, r := range refused {
		count(r.line, -1)
	}
	out := make([]Offer, len(root.Offers))
	copy(out, root.Offers)
	for i := range out {
		o := &out[i]
		if h := held[key{o.Provider, o.ID}]; h > 0 {
			o.UnitsAvailable = max(o.UnitsAvailable-h, 0)
		}
		if o.Pool != "" && o.PoolGPUs > 0 && pool[o.Pool] > 0 {
			o.PoolGPUs = max(o.PoolGPUs-pool[o.Pool], 0)
		}
	}
	return out
}

// excluding returns a copy of verdicts with the refused offers (and, after a
// quota refusal, the offers of the refused provider region and of other
// zones) and the offers in the Unavailable cache disallowed, reason
// ReasonUnavailable.
func (b *Burst) excluding(offers []Offer, verdicts []Verdict, refused []refusal, now time.Time) []Verdict {
	out := make([]Verdict, len(verdicts))
	copy(out, verdicts)
	type pr struct{ provider, region string }
	quota := map[pr]bool{}
	zones := map[Zone]bool{}
	for _, r := range refused {
		if r.class == ClassQuota {
			quota[pr{r.line.Provider, r.line.Region}] = true
			zones[r.line.Zone] = true
		}
	}
	for i, o := range offers {
		if i >= len(out) {
			break
		}
		v := &out[i]
		var why []Reason
		for _, r := range refused {
			if r.line.OfferID == o.ID && r.line.Provider == o.Provider {
				why = append(why, Reason{Code: ReasonUnavailable, Rule: "broker." + r.class,
					Message: fmt.Sprintf("%s refused this offer in this decision (%s)", o.Provider, r.class)})
			}
		}
		if quota[pr{o.Provider, o.Region}] {
			why = append(why, Reason{Code: ReasonUnavailable, Rule: "broker.quota",
				Message: fmt.Sprintf("%s refused a line in %s for quota or configuration", o.Provider, o.Region)})
		}
		if len(zones) > 0 && !zones[v.Zone] {
			why = append(why, Reason{Code: ReasonUnavailable, Rule: "broker.quota-same-zone",
				Message: fmt.Sprintf("a quota refusal never moves work to another residency zone (%s)", v.Zone)})
		}
		if until, ok := b.unavailable().Until(o.Provider, o.ID, now); ok && len(why) == 0 {
			why = append(why, Reason{Code: ReasonUnavailable, Rule: "broker.capacity-ttl",
				Message: fmt.Sprintf("%s refused this offer for capacity; unavailable until %s", o.Provider, until.Format(time.RFC3339))})
		}
		if len(why) > 0 {
			v.Allow = false
			v.Reasons = append(append([]Reason(nil), v.Reasons...), why...)
		}
	}
	return out
}
