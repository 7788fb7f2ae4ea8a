package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
)

// Hours formats d as "12h05m" (the simulation's clock ticks in minutes).
func Hours(d time.Duration) string {
	m := int64(d / time.Minute)
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}

var tiers = []sluice.Tier{sluice.TierBase, sluice.TierElastic, sluice.TierEmergency}

// WriteTable writes results as aligned text: one summary row per result,
// then the elastic cost lines. Money is exact, in the billing currency;
// "owned window" is the calendar time the owned cost is charged for
// (Result.OwnedWindow), "makespan" the strategy's own first submit to last
// completion.
func WriteTable(w io.Writer, results []Result, currency string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "strategy\towned GPUs\ttotal %s\towned %s\telastic %s\towned GPU-h\telastic GPU-h\twait p50\twait p95\twait max\tmakespan\towned window\tbase %%\telastic %%\temergency %%\tinterruptions\trework GPU-h\tjobs\telastic jobs\tunfinished\tdecisions\n",
		currency, currency, currency)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\n",
			r.Strategy, r.OwnedGPUs, r.TotalCost.Amount, r.OwnedCost.Amount, r.ElasticCost.Amount,
			r.OwnedGPUHours, r.ElasticGPUHours, Hours(r.WaitP50), Hours(r.WaitP95), Hours(r.WaitMax), Hours(r.Makespan), Hours(r.OwnedWindow),
			r.TierShare[sluice.TierBase], r.TierShare[sluice.TierElastic], r.TierShare[sluice.TierEmergency],
			r.Interruptions, r.ReworkGPUHours, r.Jobs, r.JobsElastic, r.Unfinished, r.Decisions)
	}
	fmt.Fprintf(tw, "\nstrategy\towned GPUs\ttier\tprovider\tmarket\tGPU-h\tcost %s\n", currency)
	for _, r := range results {
		for _, l := range r.Elastic {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Strategy, r.OwnedGPUs, l.Tier, l.Provider, l.Market, l.GPUHours, l.Cost.Amount)
		}
	}
	fmt.Fprintf(tw, "\nstrategy\towned GPUs\tteam\tjobs\tmakespan\twait p95\n")
	for _, r := range results {
		for _, t := range r.Teams {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", r.Strategy, r.OwnedGPUs, t.Team, t.Jobs, Hours(t.Makespan), Hours(t.WaitP95))
		}
	}
	return tw.Flush()
}

// CSVHeader is the header of WriteCSV. A "summary" row fills the strategy's
// totals; an "elastic" row fills tier, provider, market, gpu_hours and cost
// of one elastic cost line.
var CSVHeader = []string{"kind", "strategy", "owned_gpus", "currency", "total_cost", "owned_cost", "elastic_cost",
	"owned_gpu_hours", "elastic_gpu_hours", "wait_p50_minutes", "wait_p95_minutes", "wait_max_minutes", "makespan_minutes",
	"owned_window_minutes", "share_base_pct", "share_elastic_pct", "share_emergency_pct", "interruptions", "rework_gpu_hours",
	"jobs", "elastic_jobs", "unfinished", "decisions", "tier", "provider", "market", "gpu_hours", "cost"}

// WriteCSV writes results as CSV (CSVHeader).
func WriteCSV(w io.Writer, results []Result, currency string) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	min := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Minute), 10) }
	for _, r := range results {
		_ = cw.Write([]string{"summary", string(r.Strategy), strconv.Itoa(r.OwnedGPUs), currency,
			r.TotalCost.Amount.String(), r.OwnedCost.Amount.String(), r.ElasticCost.Amount.String(),
			r.OwnedGPUHours.String(), r.ElasticGPUHours.String(), min(r.WaitP50), min(r.WaitP95), min(r.WaitMax), min(r.Makespan), min(r.OwnedWindow),
			r.TierShare[sluice.TierBase].String(), r.TierShare[sluice.TierElastic].String(), r.TierShare[sluice.TierEmergency].String(),
			strconv.Itoa(r.Interruptions), r.ReworkGPUHours.String(), strconv.Itoa(r.Jobs), strconv.Itoa(r.JobsElastic),
			strconv.Itoa(r.Unfinished), strconv.Itoa(r.Decisions), "", "", "", "", ""})
		for _, l := range r.Elastic {
			row := make([]string, len(CSVHeader))
			row[0], row[1], row[2], row[3] = "elastic", string(r.Strategy), strconv.Itoa(r.OwnedGPUs), currency
			n := len(row)
			row[n-5], row[n-4], row[n-3], row[n-2], row[n-1] = string(l.Tier), l.Provider, string(l.Market), l.GPUHours.String(), l.Cost.Amount.String()
			_ = cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

// Cheapest returns, per strategy, the result with the least total cost
// among those whose p95 wait is at most target and whose every job ran
// (ties: fewer owned GPUs). A strategy that never meets the target is absent.
func Cheapest(results []Result, target time.Duration) map[Strategy]Result {
	best := map[Strategy]Result{}
	for _, r := range results {
		if r.WaitP95 > target || r.Unfinished > 0 {
			continue
		}
		b, ok := best[r.Strategy]
		if !ok || r.TotalCost.Cmp(b.TotalCost) < 0 || (r.TotalCost.Cmp(b.TotalCost) == 0 && r.OwnedGPUs < b.OwnedGPUs) {
			best[r.Strategy] = r
		}
	}
	return best
}

// WriteCheapest writes Cheapest's answer, one line per strategy in report order.
func WriteCheapest(w io.Writer, results []Result, target time.Duration, currency string) {
	best := Cheapest(results, target)
	fmt.Fprintf(w, "\ncheapest owned-pool size with p95 wait ≤ %s:\n", Hours(target))
	for _, st := range Strategies {
		if _, ran := resultsOf(results, st); !ran {
			continue
		}
		if b, ok := best[st]; ok {
			fmt.Fprintf(w, "  %-18s %d GPUs, total %s %s, p95 wait %s\n", st, b.OwnedGPUs, b.TotalCost.Amount, currency, Hours(b.WaitP95))
		} else {
			fmt.Fprintf(w, "  %-18s no size in the sweep meets the target\n", st)
		}
	}
}

func resultsOf(results []Result, st Strategy) ([]Result, bool) {
	var out []Result
	for _, r := range results {
		if r.Strategy == st {
			out = append(out, r)
		}
	}
	return out, len(out) > 0
}
