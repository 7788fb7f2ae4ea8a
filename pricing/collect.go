// Package pricing collects normalised offers from every quote source at once.
// One package per source lives below it (pricing/runpod, pricing/vast,
// pricing/aliyun, ...); pricing/replay serves recorded provider responses on
// loopback for offline runs and tests.
package pricing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// Money is the root Money type (decimal amount + ISO 4217 currency), re-exported
// for callers that think of money as a pricing concern.
type Money = sluice.Money

// grace is how long past its deadline a source may take to return the
// offers it already has.
const grace = 50 * time.Millisecond

// Collector fetches from all sources concurrently, each under its own
// deadline, all under an overall deadline. A source that fails or times out is
// reported, never fatal: the decision goes on with the others. With Hygiene
// set, every offer is sanity-checked before it is returned (see Hygiene).
type Collector struct {
	Sources        []sluice.QuoteSource
	SourceTimeout  time.Duration // per source (default 2s)
	OverallTimeout time.Duration // whole fan-out (default 3s)
	// Hygiene, when set, is applied to every source's offers; an offer that
	// breaks a rule is dropped into that source's report. Nil: no checks.
	Hygiene *Hygiene
	// FX converts offer prices to the currency of the Hygiene band (the
	// decision's FX table).
	FX sluice.FXTable
	// Redact, when set, is applied to every error text and drop reason a
	// source reports, so credential values a provider echoes back never reach
	// a decision record.
	Redact func(string) string
	// Now is the decision clock offers' FetchedAt is checked against (default
	// time.Now); the sources should stamp offers with the same clock.
	// Latency is always measured on the real (monotonic) clock.
	Now func() time.Time
}

// Collect returns the offers of every source that answered in time (also
// those a failing source returned beside its error), sorted by (provider,
// offer id), and one report per source in the order of Sources. Offers that
// fail Hygiene, then offers with a duplicate id within a source, are dropped
// into the source's report with a reason.
func (c *Collector) Collect(ctx context.Context) ([]sluice.Offer, []sluice.SourceReport) {
	per, overall := c.SourceTimeout, c.OverallTimeout
	if per <= 0 {
		per = 2 * time.Second
	}
	if overall <= 0 {
		overall = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, overall)
	defer cancel()

	type result struct {
		offers  []sluice.Offer
		dropped []sluice.DroppedOffer
		err     error
		latency time.Duration
	}
	results := make([]result, len(c.Sources))
	var wg sync.WaitGroup
	for i, s := range c.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, scancel := context.WithTimeout(ctx, per)
			defer scancel()
			start := time.Now()
			done := make(chan result, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						done <- result{err: fmt.Errorf("panic: %v", p)}
					}
				}()
				o, d, err := s.Offers(sctx)
				done <- result{offers: o, dropped: d, err: err}
			}()
			// A source that ignores its context cannot hold the decision past
			// the deadline; one that honours it gets a short grace to hand
			// back what it has (offers of the calls that did finish).
			select {
			case r := <-done:
				results[i] = r
			case <-sctx.Done():
				select {
				case r := <-done:
					results[i] = r
				case <-time.After(grace):
					results[i] = result{err: fmt.Errorf("%s: no answer within the deadline (%s per source, %s overall): %w", s.Name(), per, overall, context.DeadlineExceeded)}
				}
			}
			results[i].latency = time.Since(start)
		}()
	}
	wg.Wait()

	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	var offers []sluice.Offer
	reports := make([]sluice.SourceReport, len(c.Sources))
	for i, s := range c.Sources {
		r := results[i]
		rep := sluice.SourceReport{Provider: s.Name(), Dropped: r.dropped, LatencyMS: r.latency.Milliseconds()}
		if r.err != nil {
			// The offers a source returns with its error are kept: each is
			// complete on its own (a failed region or search type loses only
			// its own offers), and the error is recorded beside them.
			rep.Error, rep.ErrorClass = r.err.Error(), Classify(r.err)
		}
		seen := map[string]bool{}
		for j, o := range r.offers {
			if c.Hygiene != nil {
				if why := c.Hygiene.Check(o, now, c.FX); len(why) > 0 {
					rep.Dropped = append(rep.Dropped, sluice.DroppedOffer{Provider: s.Name(), Ref: offerRef(o, j), Reason: strings.Join(why, "; ")})
					continue
				}
			}
			if seen[o.ID] {
				rep.Dropped = append(rep.Dropped, sluice.DroppedOffer{Provider: s.Name(), Ref: o.ID, Reason: "duplicate offer id"})
				continue
			}
			seen[o.ID] = true
			offers = append(offers, o)
			rep.Offers++
		}
		if c.Redact != nil {
			rep.Error = c.Redact(rep.Error)
			for k := range rep.Dropped {
				rep.Dropped[k].Reason = c.Redact(rep.Dropped[k].Reason)
			}
		}
		reports[i] = rep
	}
	slices.SortStableFunc(offers, func(a, b sluice.Offer) int {
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return offers, reports
}
