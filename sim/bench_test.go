package sim_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sim/tracegen"
)

// BenchmarkMonthPerMinute is the speed target: a 30-day trace with one job
// a minute (43,200 steps), all 5 strategies, a 96-GPU owned pool and the 75
// recorded offers of testdata/replay; target ≤ 10 s per op on the 2-core
// machine. Each op builds a fresh simulator, so the policy evaluations are
// inside the timing. It reports decisions per op, the mean wall time per
// decision (whole simulation ÷ decisions) and the mean time inside MakePlan.
func BenchmarkMonthPerMinute(b *testing.B) {
	var buf bytes.Buffer
	tracegen.PerMinute(&buf, 30, 1)
	jobs, err := sim.ParseTrace(&buf, "per-minute")
	if err != nil {
		b.Fatal(err)
	}
	if len(jobs) != 43200 {
		b.Fatalf("%d jobs", len(jobs))
	}
	cfg := loadConfig(b)
	prices := replayPrices(b, cfg)
	evaluator(b)
	b.ResetTimer()
	var decisions, evals int
	var plan, total time.Duration
	for range b.N {
		start := time.Now()
		s := newSim(b, cfg, jobs, prices, 1)
		for _, r := range runAll(b, s, 96) {
			decisions += r.Decisions
		}
		total += time.Since(start)
		plan += s.PlanTime
		evals += s.PolicyEvaluations
	}
	b.ReportMetric(float64(decisions)/float64(b.N), "decisions/op")
	b.ReportMetric(float64(evals)/float64(b.N), "policy-evals/op")
	b.ReportMetric(float64(total.Microseconds())/float64(decisions), "µs/decision")
	b.ReportMetric(float64(plan.Microseconds())/float64(decisions), "µs-in-MakePlan/decision")
}
