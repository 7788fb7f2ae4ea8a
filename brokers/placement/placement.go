// Package placement holds what every provider adapter shares: the adapter
// contract the router drives (Adapter), the Sluice tags and names that carry
// a decision id and line to the provider, the price read-back check, and the
// price-mismatch error.
package placement

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
)

// Tag keys put on every instance Sluice buys (EC2 TagSpecifications,
// Alibaba Tag.N). Providers without tags carry the client token in the
// instance's name or label instead (see Name).
const (
	TagDecision = "sluice:decision" // the decision id, "dec-<32 hex>"
	TagLine     = "sluice:line"     // the line number, decimal
	TagToken    = "sluice:token"    // sluice.ClientToken(decision, line)
)

// NamePrefix starts every instance name / label / deployment name Sluice
// sets where a provider has no tags (RunPod pod name, Vast label, AutoDL
// deployment name): "sluice-<client token>", and "-u<k>" for the k-th unit
// when each unit is its own call.
const NamePrefix = "sluice-"

// Name is the instance name for (decisionID, line): "sluice-dec-…-l3".
func Name(decisionID string, line int) string {
	return NamePrefix + sluice.ClientToken(decisionID, line)
}

// UnitName is Name plus "-u<unit>" (RunPod: one pod per call).
func UnitName(decisionID string, line, unit int) string {
	return fmt.Sprintf("%s-u%d", Name(decisionID, line), unit)
}

var tokenRE = regexp.MustCompile(`^(?:sluice-)?(dec-[0-9a-f]{32})-l([0-9]{1,6})(?:-u[0-9]{1,6})?$`)

// ParseToken reads a client token, Name or UnitName back into its decision id
// and line; ok is false for anything Sluice did not write.
func ParseToken(s string) (decisionID string, line int, ok bool) {
	m := tokenRE.FindStringSubmatch(s)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	return m[1], n, true
}

// Tags are the tags of (decisionID, line).
func Tags(decisionID string, line int) map[string]string {
	return map[string]string{TagDecision: decisionID, TagLine: strconv.Itoa(line), TagToken: sluice.ClientToken(decisionID, line)}
}

// Adapter is one provider's part of sluice.Broker. brokers/router routes to
// adapters by provider name.
type Adapter interface {
	// Provider is the provider name ("aws", "aliyun", "runpod", "vast", "autodl").
	Provider() string
	// Place buys line for (decisionID, lineNo) unless the provider already
	// holds it (then it returns that). lim bounds the bid (brokers/bid).
	Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line, lim bid.Limits) (sluice.Placement, error)
	// Find looks (decisionID, lineNo) up by client token, tags or name.
	Find(ctx context.Context, decisionID string, lineNo int) (sluice.Placement, bool, error)
	// Release terminates p's instances.
	Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error)
	// Instances lists the provider's instances tagged or named by Sluice.
	Instances(ctx context.Context) ([]sluice.Instance, error)
	// Billing is the provider's billing granularity and minimum billed time
	// (brokers/billing).
	Billing() (granularity, minimum time.Duration)
}

// DefaultTolerance is the relative difference allowed between the price
// read back after placement and the price expected: 2%.
var DefaultTolerance = decimal.RequireFromString("0.02")

// CheckPrice compares the price read back (per unit-hour) with the price
// expected (per unit-hour, same currency). For spot only an excess counts
// (the market may fall, the bid caps it): got > want × (1 + tol). For
// on-demand and reserved both ways: |got − want| > want × tol. A different
// currency is a mismatch. It returns a reason, "" when within tolerance.
func CheckPrice(market sluice.Market, got, want sluice.Money, tol decimal.Decimal) string {
	if got.Currency != want.Currency {
		return fmt.Sprintf("price read back %s is not in the offer's currency %s", got, want.Currency)
	}
	limit := want.Amount.Mul(tol)
	diff := got.Amount.Sub(want.Amount)
	if diff.GreaterThan(limit) {
		return fmt.Sprintf("price read back %s per unit-hour is above the expected %s by more than %s%%", got, want, tol.Shift(2))
	}
	if market != sluice.Spot && diff.Neg().GreaterThan(limit) {
		return fmt.Sprintf("price read back %s per unit-hour is below the expected %s by more than %s%%", got, want, tol.Shift(2))
	}
	return ""
}

// Expected is the price per unit-hour a line should be billed at: the bid for
// spot (at most), else the unit price.
func Expected(line sluice.Line) sluice.Money {
	if line.Market == sluice.Spot && line.Bid != nil {
		return *line.Bid
	}
	return line.UnitPrice
}

// MismatchError is returned by Place when the market or price read back is
// not what was asked: the capacity was released at once (Release, or
// ReleaseErr when that failed — the release then stays pending). It wraps
// sluice.ErrPriceMismatch. Placement is what was bought (ExternalIDs set).
type MismatchError struct {
	Placement  sluice.Placement
	Reason     string
	Release    sluice.ReleaseResult
	ReleaseErr error
}

func (e *MismatchError) Error() string {
	s := fmt.Sprintf("%s %s: %s; released", e.Placement.Provider, e.Placement.ClientToken, e.Reason)
	if e.ReleaseErr != nil {
		s = fmt.Sprintf("%s %s: %s; release failed (pending): %v", e.Placement.Provider, e.Placement.ClientToken, e.Reason, e.ReleaseErr)
	}
	return s
}

// Held is what was bought and the answer to its release (sluice.HeldError):
// the burst records the capacity and its release with the accrued cost.
func (e *MismatchError) Held() (sluice.Placement, sluice.ReleaseResult, error) {
	return e.Placement, e.Release, e.ReleaseErr
}

var _ sluice.HeldError = (*MismatchError)(nil)

// Unwrap is sluice.ErrPriceMismatch.
func (e *MismatchError) Unwrap() error { return sluice.ErrPriceMismatch }

// Mismatch releases p through release and returns the MismatchError.
func Mismatch(ctx context.Context, p sluice.Placement, reason string, release func(context.Context, sluice.Placement) (sluice.ReleaseResult, error)) (sluice.Placement, error) {
	p.ErrorClass, p.Error = ErrorClass(sluice.ErrPriceMismatch), reason
	res, err := release(ctx, p)
	return p, &MismatchError{Placement: p, Reason: reason, Release: res, ReleaseErr: err}
}

// ErrorClass is the Placement.ErrorClass text of err's root class ("" when none).
func ErrorClass(err error) string {
	switch {
	case errors.Is(err, sluice.ErrInsufficientCapacity):
		return "capacity"
	case errors.Is(err, sluice.ErrQuota):
		return "quota"
	case errors.Is(err, sluice.ErrCapabilityUnavailable):
		return "capability"
	case errors.Is(err, sluice.ErrTransient):
		return "transient"
	case errors.Is(err, sluice.ErrPriceMismatch):
		return "price-mismatch"
	case errors.Is(err, sluice.ErrBidOutOfRange):
		return "bid-range"
	}
	return ""
}

// Base fills the fields every adapter sets on a placement of line.
func Base(decisionID string, lineNo int, line sluice.Line, now time.Time) sluice.Placement {
	return sluice.Placement{
		DecisionID: decisionID, Line: lineNo, Provider: line.Provider, OfferID: line.OfferID,
		ClientToken: sluice.ClientToken(decisionID, lineNo), Market: line.Market, Units: line.Units,
		Slots: line.Slots, PlacedAt: now.UTC(),
	}
}

// WithBid records b on p (decided, sent text and unit).
func WithBid(p *sluice.Placement, b bid.Bid) {
	d := b.Decided
	p.BidDecided, p.BidSent, p.BidUnit = &d, b.Text, b.Unit
}

// CallError wraps a failed HTTP call (no answer: a network error, a deadline)
// as sluice.ErrTransient — the call may or may not have taken effect, so the
// caller Finds before it retries. A cancelled context is returned as is.
func CallError(provider, op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s %s: %w", provider, op, err)
	}
	return fmt.Errorf("%s %s: %v: %w", provider, op, err, sluice.ErrTransient)
}

// StatusClass is the error class of an HTTP status without a provider code:
// 429, 408 and 5xx transient, any other 4xx a quota / configuration refusal.
func StatusClass(status int) error {
	if status == 429 || status == 408 || status >= 500 {
		return sluice.ErrTransient
	}
	return sluice.ErrQuota
}

// Locks serialises placements of one client token inside one process, for
// providers without an idempotency key (RunPod, Vast, AutoDL), whose
// look-up-then-create would otherwise race when the same line is placed
// concurrently. Across processes the ledger's recorded intent decides who
// places. The zero value is ready to use.
type Locks struct {
	mu    sync.Mutex
	locks map[string]*tokenLock
}

type tokenLock struct {
	mu   sync.Mutex
	refs int
}

// Lock locks token and returns its unlock function.
func (l *Locks) Lock(token string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*tokenLock{}
	}
	t := l.locks[token]
	if t == nil {
		t = &tokenLock{}
		l.locks[token] = t
	}
	t.refs++
	l.mu.Unlock()
	t.mu.Lock()
	return func() {
		t.mu.Unlock()
		l.mu.Lock()
		if t.refs--; t.refs == 0 {
			delete(l.locks, token)
		}
		l.mu.Unlock()
	}
}
