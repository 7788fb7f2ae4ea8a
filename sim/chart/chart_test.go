package chart_test

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sim/chart"
)

func result(st sim.Strategy, owned int, cost string, p95 time.Duration) sim.Result {
	return sim.Result{Strategy: st, OwnedGPUs: owned, TotalCost: sluice.Money{Amount: decimal.RequireFromString(cost), Currency: "USD"}, WaitP95: p95}
}

// wellFormed checks the bytes are one well-formed XML (SVG) document.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return
			}
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

func TestStrategies(t *testing.T) {
	b, err := chart.Strategies([]sim.Result{
		result(sim.OwnedOnly, 8, "1441.095890411", 70*time.Hour),
		result(sim.OnDemandBurst, 8, "1807.5616438356", 8*time.Hour),
	}, "USD", "weekend")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "owned-only") || !strings.Contains(s, "on-demand") || !strings.Contains(s, "weekend") {
		t.Errorf("svg lacks its labels: %.300s", s)
	}
	wellFormed(t, b)
}

func TestSweep(t *testing.T) {
	var rs []sim.Result
	for _, n := range []int{0, 8, 16} {
		rs = append(rs, result(sim.OwnedOnly, n, decimal.NewFromInt(int64(1000*n)).String(), time.Duration(100-5*n)*time.Hour))
		rs = append(rs, result(sim.Tiered, n, decimal.NewFromInt(int64(500+1000*n)).String(), 2*time.Hour))
	}
	b, err := chart.Sweep(rs, 72*time.Hour, "USD", "sweep")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Count(s, "<svg") != 3 || !strings.Contains(s, "p95 wait ≤ 72h00m") || !strings.Contains(s, "owned GPUs") {
		t.Errorf("want an outer svg with two panels naming the target: %.300s", s)
	}
	wellFormed(t, b)
	// The cheapest meeting 72 h: owned-only from 8 GPUs (p95 60 h; 100 h at 0 GPUs), tiered at 0.
	best := sim.Cheapest(rs, 72*time.Hour)
	if best[sim.OwnedOnly].OwnedGPUs != 8 || best[sim.Tiered].OwnedGPUs != 0 {
		t.Errorf("cheapest: %+v", best)
	}
}
