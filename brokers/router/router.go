// Package router is the application's sluice.Broker: it routes every call to
// the provider's adapter (brokers/<provider>) by provider name, and gives
// each spot line its bid limits (the offer's minimum bid and the on-demand
// price of the same capacity, brokers/bid) from the decision recorded before
// placement.
package router

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/placement"
)

// Records gives the recorded decision a line belongs to (sluice.Ledger has it).
type Records interface {
	Decision(ctx context.Context, id string) (rec sluice.DecisionRecord, ok bool, err error)
}

// Router is a sluice.Broker over provider adapters.
type Router struct {
	adapters map[string]placement.Adapter
	// Records, when set, is asked for the decision of each placed line to
	// find its bid limits; without it (or when the decision or offer is not
	// found) only the provider's own bid rules apply.
	Records Records
}

var _ sluice.Broker = (*Router)(nil)

// New routes to adapters (one per provider name; a later one replaces an earlier).
func New(records Records, adapters ...placement.Adapter) *Router {
	r := &Router{adapters: map[string]placement.Adapter{}, Records: records}
	for _, a := range adapters {
		r.adapters[a.Provider()] = a
	}
	return r
}

// Providers lists the routed provider names, sorted.
func (r *Router) Providers() []string {
	var out []string
	for p := range r.adapters {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Adapter returns the adapter of provider.
func (r *Router) Adapter(provider string) (placement.Adapter, bool) {
	a, ok := r.adapters[provider]
	return a, ok
}

func (r *Router) adapter(provider string) (placement.Adapter, error) {
	a, ok := r.adapters[provider]
	if !ok {
		return nil, fmt.Errorf("broker: provider %q is not configured for placement: %w", provider, sluice.ErrQuota)
	}
	return a, nil
}

// Limits are the bid limits of line in decision decisionID (zero when unknown).
func (r *Router) Limits(ctx context.Context, decisionID string, line sluice.Line) (bid.Limits, error) {
	if r.Records == nil {
		return bid.Limits{}, nil
	}
	rec, ok, err := r.Records.Decision(ctx, decisionID)
	if err != nil {
		return bid.Limits{}, fmt.Errorf("broker: reading decision %s for bid limits: %w", decisionID, err)
	}
	if !ok {
		return bid.Limits{}, nil
	}
	return bid.LimitsFor(rec.Offers, line.OfferID), nil
}

// Place routes to line.Provider's adapter with the line's bid limits.
func (r *Router) Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line) (sluice.Placement, error) {
	a, err := r.adapter(line.Provider)
	if err != nil {
		return sluice.Placement{}, err
	}
	lim, err := r.Limits(ctx, decisionID, line)
	if err != nil {
		return sluice.Placement{}, err
	}
	return a.Place(ctx, decisionID, lineNo, line, lim)
}

// Find routes to provider's adapter.
func (r *Router) Find(ctx context.Context, provider, decisionID string, lineNo int) (sluice.Placement, bool, error) {
	a, err := r.adapter(provider)
	if err != nil {
		return sluice.Placement{}, false, err
	}
	return a.Find(ctx, decisionID, lineNo)
}

// Release routes to p.Provider's adapter.
func (r *Router) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	a, err := r.adapter(p.Provider)
	if err != nil {
		return sluice.ReleaseResult{}, err
	}
	return a.Release(ctx, p)
}

// Instances routes to provider's adapter.
func (r *Router) Instances(ctx context.Context, provider string) ([]sluice.Instance, error) {
	a, err := r.adapter(provider)
	if err != nil {
		return nil, err
	}
	return a.Instances(ctx)
}

// Billing is provider's billing granularity and minimum (brokers/billing).
func (r *Router) Billing(provider string) (granularity, minimum time.Duration, err error) {
	a, err := r.adapter(provider)
	if err != nil {
		return 0, 0, err
	}
	g, m := a.Billing()
	return g, m, nil
}
