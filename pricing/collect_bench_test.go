package pricing

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
)

// httpSource is a quote source that asks one loopback server for one price
// (ReadBody, WireAmount) — what a real source does, minus the provider format.
type httpSource struct {
	name, url string
	client    *http.Client
	now       func() time.Time
}

func (s httpSource) Name() string { return s.name }

func (s httpSource) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	body, err := ReadBody(resp, s.name, "GET price", "application/json")
	if err != nil {
		return nil, nil, err
	}
	d, _, err := WireAmount(gjson.GetBytes(body, "price"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s price: %w", s.name, err)
	}
	o := runpod1x()
	o.ID, o.Provider, o.UnitPrice.Amount, o.FetchedAt = s.name+":1x", s.name, d, s.now()
	return []sluice.Offer{o}, nil, nil
}

// BenchmarkCollectFiveSources: five loopback sources that each take 50 ms to
// answer are collected at once, so a collection takes about one source's
// latency, not five. It reports the wall time per collection and the
// concurrency ratio (sum of the sources' latencies ÷ wall time; ≈ 5 when the
// fan-out is fully parallel).
func BenchmarkCollectFiveSources(b *testing.B) {
	const delay = 50 * time.Millisecond
	client := &http.Client{Transport: &RetryTransport{}}
	var sources []sluice.QuoteSource
	for i := range 5 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"price":1.64}`)
		}))
		b.Cleanup(srv.Close)
		sources = append(sources, httpSource{fmt.Sprintf("src%d", i), srv.URL, client, time.Now})
	}
	c := &Collector{Sources: sources, SourceTimeout: time.Second, OverallTimeout: 2 * time.Second,
		Hygiene: testHygiene(), FX: testFX}
	var sumLatency time.Duration
	n := 0
	start := time.Now()
	for b.Loop() {
		offers, reports := c.Collect(context.Background())
		if len(offers) != 5 {
			b.Fatalf("%d offers; reports %+v", len(offers), reports)
		}
		for _, r := range reports {
			sumLatency += time.Duration(r.LatencyMS) * time.Millisecond
		}
		n++
	}
	wall := time.Since(start)
	b.ReportMetric(float64(wall.Microseconds())/1000/float64(n), "wall-ms/collect")
	b.ReportMetric(float64(sumLatency)/float64(wall), "latency-sum/wall")
}
