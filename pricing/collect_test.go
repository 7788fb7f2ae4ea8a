package pricing

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// source is a test QuoteSource built from a function.
type source struct {
	name   string
	offers func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error)
}

func (s source) Name() string { return s.name }
func (s source) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	return s.offers(ctx)
}

func fixed(name string, ids ...string) source {
	return source{name, func(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
		var out []sluice.Offer
		for _, id := range ids {
			out = append(out, sluice.Offer{ID: id, Provider: name, UnitPrice: sluice.MustMoney("1.19", "USD")})
		}
		return out, []sluice.DroppedOffer{{Provider: name, Ref: "x", Reason: `dph_total "-1": negative`}}, nil
	}}
}

func TestCollectSurvivesSlowFailingAndPanickingSources(t *testing.T) {
	c := &Collector{
		SourceTimeout:  100 * time.Millisecond,
		OverallTimeout: 300 * time.Millisecond,
		Sources: []sluice.QuoteSource{
			fixed("vast", "vast:2", "vast:1", "vast:1"),
			source{"hang", func(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
				time.Sleep(2 * time.Second) // ignores its context
				return []sluice.Offer{{ID: "late"}}, nil, nil
			}},
			source{"slow", func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
				<-ctx.Done()
				return nil, nil, ctx.Err()
			}},
			source{"broken", func(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
				return []sluice.Offer{{ID: "half", Provider: "broken"}}, nil, errors.New("HTTP 500")
			}},
			source{"partial", func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
				<-ctx.Done() // returns what it has once its deadline passes
				return []sluice.Offer{{ID: "partial:done", Provider: "partial"}}, nil, errors.New("1 of 2 calls unfinished")
			}},
			source{"panics", func(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) { panic("boom") }},
			fixed("runpod", "runpod:a"),
		},
	}
	start := time.Now()
	offers, reports := c.Collect(context.Background())
	if el := time.Since(start); el > time.Second {
		t.Fatalf("collect took %s; a hanging source must not hold the decision", el)
	}
	var ids []string
	for _, o := range offers {
		ids = append(ids, o.ID)
	}
	// "broken" and "partial" failed part of their work but returned good offers: kept.
	if got := strings.Join(ids, ","); got != "half,partial:done,runpod:a,vast:1,vast:2" {
		t.Fatalf("offers = %s", got)
	}
	want := map[string]string{"vast": "", "hang": "deadline", "slow": "deadline", "broken": "HTTP 500", "partial": "unfinished", "panics": "panic: boom", "runpod": ""}
	for _, r := range reports {
		w := want[r.Provider]
		if (w == "") != (r.Error == "") || !strings.Contains(r.Error, w) {
			t.Errorf("%s: error %q, want %q", r.Provider, r.Error, w)
		}
	}
	if reports[0].Offers != 2 || len(reports[0].Dropped) != 2 || reports[0].Dropped[1].Reason != "duplicate offer id" {
		t.Errorf("vast report: %+v", reports[0])
	}
}
