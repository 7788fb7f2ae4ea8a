package chart

import (
	"testing"
	"time"

	"github.com/go-analyze/charts"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sim"
)

// A size that leaves jobs unfinished gets no cost or wait point (a 0-GPU
// owned-only row drew cost 0 and wait 0, as if it were the best); the other
// sizes keep theirs, and the mark sits on the cheapest size meeting target.
func TestSweepSeriesSkipsUnfinishedSizes(t *testing.T) {
	row := func(owned int, cost string, p95 time.Duration, unfinished int) sim.Result {
		return sim.Result{Strategy: sim.OwnedOnly, OwnedGPUs: owned, Unfinished: unfinished, WaitP95: p95,
			TotalCost: sluice.Money{Amount: decimal.RequireFromString(cost), Currency: "USD"}}
	}
	rs := []sim.Result{row(0, "0", 0, 12), row(8, "7000", 60*time.Hour, 0), row(16, "14000", 20*time.Hour, 0)}
	costs, waits, marks, names := sweepSeries(rs, []int{0, 8, 16}, []sim.Strategy{sim.OwnedOnly}, 72*time.Hour)
	null := charts.GetNullValue()
	if names[0] != "owned-only" || costs[0][0] != null || waits[0][0] != null {
		t.Fatalf("0 GPUs (12 jobs unfinished): cost %v wait %v; want no points", costs[0][0], waits[0][0])
	}
	if costs[0][1] != 7000 || waits[0][1] != 60 || costs[0][2] != 14000 || waits[0][2] != 20 {
		t.Fatalf("finished sizes: costs %v waits %v", costs[0], waits[0])
	}
	if marks[0][0] != null || marks[0][1] != 7000 || marks[0][2] != null {
		t.Fatalf("marks %v; want the cheapest size meeting 72 h (8 GPUs) only", marks[0])
	}
}
