package pricing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice"
)

// Call is one request of a quote source that makes several (per region,
// per instance type): Name says which in errors, Fetch does it.
type Call struct {
	Name  string
	Fetch func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error)
}

// CallResult is how one Call ended. Done is false for a call still running
// (or still queued) when the context ended, and for one that ended with the
// context's own error after it was done.
type CallResult struct {
	Offers  []sluice.Offer
	Dropped []sluice.DroppedOffer
	Err     error
	Done    bool
}

// CallAll runs calls concurrently, at most limit at once (0 = all), and
// returns as soon as every call has finished or ctx is done — it never waits
// for a call still in flight, so a hung request cannot hold the source past
// its deadline. Results are in the order of calls.
func CallAll(ctx context.Context, limit int, calls []Call) []CallResult {
	type finished struct {
		i int
		r CallResult
	}
	// Buffered: a call finishing after CallAll has returned never blocks, and
	// only this goroutine writes results, so returning early is race-free.
	done := make(chan finished, len(calls))
	if limit <= 0 {
		limit = len(calls)
	}
	sem := make(chan struct{}, max(limit, 1))
	for i, c := range calls {
		go func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				done <- finished{i, CallResult{Err: ctx.Err()}}
				return
			}
			defer func() { <-sem }()
			var r CallResult
			r.Offers, r.Dropped, r.Err = c.Fetch(ctx)
			r.Done = true
			done <- finished{i, r}
		}()
	}
	results := make([]CallResult, len(calls))
	take := func(f finished) { results[f.i] = f.r }
collect:
	for range calls {
		select {
		case f := <-done:
			take(f)
		case <-ctx.Done():
			for { // keep whatever has already arrived; wait for nothing more
				select {
				case f := <-done:
					take(f)
				default:
					break collect
				}
			}
		}
	}
	if ctx.Err() != nil {
		for i, r := range results {
			if r.Err != nil && (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
				results[i].Done = false
			}
		}
	}
	return results
}

// maxNamed is how many unfinished calls an error names before "and N more".
const maxNamed = 6

// UnfinishedError names the calls that had not finished when ctx ended
// ("aliyun: 1 of 18 calls unfinished at deadline: DescribePrice cn-beijing
// …: context deadline exceeded"); it wraps the context's error and is classed
// timeout. It returns nil when every call finished.
func UnfinishedError(ctx context.Context, provider, what string, calls []Call, results []CallResult) error {
	var names []string
	for i, r := range results {
		if !r.Done {
			names = append(names, calls[i].Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	cause := ctx.Err()
	if cause == nil {
		cause = context.Canceled
	}
	n := len(names)
	more := ""
	if n > maxNamed {
		names, more = names[:maxNamed], fmt.Sprintf(" and %d more", n-maxNamed)
	}
	return fmt.Errorf("%s: %d of %d %s unfinished at deadline: %s%s: %w",
		provider, n, len(calls), what, strings.Join(names, ", "), more, cause)
}
