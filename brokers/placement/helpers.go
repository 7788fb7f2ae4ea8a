package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/billing"
	"github.com/sluicehq/sluice/pricing"
)

// This file holds the steps the provider adapters (brokers/runpod, vast,
// autodl, aliyun, ec2) take the same way. What differs between providers
// (the calls, the error codes, the read-back) stays in the adapters.

// Start is what Begin prepares for Place: the parsed offer id, the placement
// filled by Base (and WithBid when the line carries a bid) and the bid.
type Start[R any] struct {
	// Ref is the provider's reading of line.OfferID.
	Ref R
	// Placement is Base(decisionID, lineNo, line, now) plus the bid.
	Placement sluice.Placement
	// Bid is bid.ForLine's bid (zero when the line has none: on-demand,
	// reserved).
	Bid bid.Bid
}

// Begin is the prologue every adapter's Place shares, in this order:
//
//  1. parse reads line.OfferID; its error is returned as is, with a zero
//     Placement (nothing to record: the offer id is not the provider's).
//  2. Base(decisionID, lineNo, line, now) and bid.ForLine(line, lim); a bid
//     is recorded on the placement (WithBid) whenever ForLine returns one,
//     also when the bid then breaks a rule. A ForLine error is returned as
//     "<provider> <client token>: <err>" (sluice.ErrBidOutOfRange,
//     sluice.ErrCapabilityUnavailable … as bid.ForLine classes it).
//  3. refuse, when not nil, says why the provider cannot place line ("" when
//     it can: the market and the number of units); a reason is returned as
//     "<provider> <client token>: <market> line of <n> units: <reason>"
//     wrapping sluice.ErrQuota, before any call to the provider.
//
// On an error after step 1 the returned Start still carries the placement
// (with the bid), as Place returns it. The per-token lock (Locks) is the
// caller's: only the providers without an idempotency key take it.
func Begin[R any](provider string, parse func(offerID string) (R, error), refuse func(sluice.Line) string,
	decisionID string, lineNo int, line sluice.Line, lim bid.Limits, now time.Time) (Start[R], error) {
	var s Start[R]
	ref, err := parse(line.OfferID)
	if err != nil {
		return s, err
	}
	s.Ref, s.Placement = ref, Base(decisionID, lineNo, line, now)
	b, hasBid, err := bid.ForLine(line, lim)
	if hasBid {
		s.Bid = b
		WithBid(&s.Placement, b)
	}
	if err != nil {
		return s, fmt.Errorf("%s %s: %w", provider, s.Placement.ClientToken, err)
	}
	if refuse != nil {
		if why := refuse(line); why != "" {
			return s, fmt.Errorf("%s %s: %s line of %d units: %s: %w", provider, s.Placement.ClientToken, line.Market, line.Units, why, sluice.ErrQuota)
		}
	}
	return s, nil
}

// Found is the placement Find starts from for (decisionID, lineNo): the
// identity fields only (decision, line, provider, client token); the caller
// adds what the provider reports (external ids, units, market, price, time).
func Found(provider, decisionID string, lineNo int) sluice.Placement {
	return sluice.Placement{DecisionID: decisionID, Line: lineNo, Provider: provider, ClientToken: sluice.ClientToken(decisionID, lineNo)}
}

// Earliest moves p.PlacedAt back to started when started is set and earlier
// (or PlacedAt is not set yet): a placement of several units dates from its
// first unit.
func Earliest(p *sluice.Placement, started time.Time) {
	if !started.IsZero() && (p.PlacedAt.IsZero() || started.Before(p.PlacedAt)) {
		p.PlacedAt = started
	}
}

// Released is a confirmed release answered at now (stored in UTC).
func Released(now time.Time) sluice.ReleaseResult {
	return sluice.ReleaseResult{Confirmed: true, At: now.UTC()}
}

// ReleaseEach terminates ids one by one with terminate, for providers whose
// terminate call takes one id (RunPod podTerminate, Vast DELETE instance,
// AutoDL DELETE deployment). An error for which gone is true is the
// provider's "already gone" answer and counts as released (a retried release
// is confirmed). The first other error stops the loop and is returned as is
// (the release stays pending). When every id is terminated or gone the result
// is Released(now()).
func ReleaseEach(ctx context.Context, ids []string, terminate func(ctx context.Context, id string) error, gone func(error) bool, now func() time.Time) (sluice.ReleaseResult, error) {
	for _, id := range ids {
		if err := terminate(ctx, id); err != nil && !gone(err) {
			return sluice.ReleaseResult{}, err
		}
	}
	return Released(now()), nil
}

// Named lists the items of list whose name (name(item): RunPod pod name,
// Vast label) Sluice wrote, i.e. starts with NamePrefix, as instances of
// provider: instance(item) gives the provider's facts (external id, state,
// launch time, price) and Named sets Provider and the decision id and line
// read back from the name (ParseToken; zero when the name is not a whole
// token). The order of list is kept.
func Named[T any](provider string, list []T, name func(T) string, instance func(T) sluice.Instance) []sluice.Instance {
	var out []sluice.Instance
	for _, item := range list {
		n := name(item)
		if !strings.HasPrefix(n, NamePrefix) {
			continue
		}
		in := instance(item)
		in.Provider = provider
		in.DecisionID, in.Line, _ = ParseToken(n)
		out = append(out, in)
	}
	return out
}

// Billing is provider's billing granularity and minimum billed time from
// brokers/billing.Rules (zero for a provider without a rule): the body of
// every Adapter.Billing.
func Billing(provider string) (granularity, minimum time.Duration) {
	r := billing.Rules[provider]
	return r.Granularity, r.Minimum
}

// Answer is the HTTP answer to CallJSON: the status, the body as
// pricing.ReadBody returned it, and ReadBody's error (a non-2xx status, a
// content type other than application/json, an over-long body; nil when
// none) for the adapter to classify with its provider's error format.
type Answer struct {
	Status int
	Body   []byte
	Err    error
}

// CallJSON sends one JSON request for the HTTP adapters (RunPod, Vast,
// AutoDL): body JSON-encoded (no body when nil), Content-Type and Accept
// application/json, and the Authorization header set to authorization when
// that is not "" (RunPod and Vast "Bearer <key>", AutoDL the raw token).
// A request that cannot be encoded or built is "<provider> <op>: …"
// wrapping sluice.ErrQuota (configuration, not worth a retry); a call without
// an answer is CallError (sluice.ErrTransient). Otherwise the Answer, whose
// Err the caller classifies.
func CallJSON(ctx context.Context, hc *http.Client, provider, op, method, url, authorization string, body any) (Answer, error) {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Answer{}, fmt.Errorf("%s %s: encoding: %v: %w", provider, op, err, sluice.ErrQuota)
		}
		payload = b
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(payload))
	if err != nil {
		return Answer{}, fmt.Errorf("%s %s: %v: %w", provider, op, err, sluice.ErrQuota)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, CallError(provider, op, err)
	}
	out, err := pricing.ReadBody(resp, provider, op, "application/json")
	return Answer{Status: resp.StatusCode, Body: out, Err: err}, nil
}

// Bearer is the Authorization value "Bearer <key>" for CallJSON, "" (no
// header) when key is "".
func Bearer(key string) string {
	if key == "" {
		return ""
	}
	return "Bearer " + key
}

// Config defaults every adapter shares (each adapter's withDefaults).

// DefaultHTTPTimeout bounds one HTTP call of an adapter's default client.
const DefaultHTTPTimeout = 30 * time.Second

// OrTolerance is tol, or DefaultTolerance when tol is zero (unset).
func OrTolerance(tol decimal.Decimal) decimal.Decimal {
	if tol.IsZero() {
		return DefaultTolerance
	}
	return tol
}

// OrHTTPClient is hc, or a new client with DefaultHTTPTimeout when nil.
func OrHTTPClient(hc *http.Client) *http.Client {
	if hc == nil {
		return &http.Client{Timeout: DefaultHTTPTimeout}
	}
	return hc
}

// OrNow is now, or time.Now when nil.
func OrNow(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
