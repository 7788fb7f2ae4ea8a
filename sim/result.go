package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// CostScale is the number of decimal places kept where a cost divides:
// unit price × billed minutes ÷ 60 for each elastic cost line, and the owned
// pool's monthly cost × GPUs × window minutes ÷ (hours per month × 60)
// (ChargeOwned). Each is
// rounded once, half away from zero (decimal.DivRound); sums of rounded
// lines are exact. Conversion to the billing currency rounds at
// sluice.FXScale when it divides.
const CostScale = 10

// HoursScale is the number of decimal places of GPU-hours and rework hours
// (GPU-minutes ÷ 60, rounded half away from zero).
const HoursScale = 4

// ShareScale is the number of decimal places of a tier's share of the total
// cost, in percent (rounded half away from zero).
const ShareScale = 2

// Result is one strategy's outcome. Money is in the billing currency.
type Result struct {
	Strategy  Strategy
	OwnedGPUs int
	// OwnedCost is the owned pool's amortised cost over OwnedWindow:
	// GPUs × monthly cost per GPU × window hours ÷ hours per month
	// (ChargeOwned has the rounding point).
	OwnedCost sluice.Money
	// OwnedWindow is the calendar time the owned pool is charged for, from
	// the trace's first submit: the run's makespan for a lone Run, the
	// latest completion of every result compared for Compare (CommonWindow).
	OwnedWindow time.Duration
	// Elastic is the elastic cost by tier, provider and market, sorted.
	Elastic     []CostLine
	ElasticCost sluice.Money
	// TotalCost is OwnedCost + ElasticCost.
	TotalCost sluice.Money
	// OwnedGPUHours is the work run on the owned pool; ElasticGPUHours the
	// GPU-hours of elastic capacity billed (held, busy or not).
	OwnedGPUHours, ElasticGPUHours decimal.Decimal
	// Waits are from submit to first start, over jobs that ran (nearest rank).
	WaitP50, WaitP95, WaitMax time.Duration
	// Makespan is first submit to last completion.
	Makespan time.Duration
	// Teams is each team's own makespan (its first submit to its last
	// completion) and p95 wait, sorted by team.
	Teams []TeamSpan
	// TierShare is each tier's share of TotalCost, in percent (base = the owned pool).
	TierShare map[sluice.Tier]decimal.Decimal
	// Interruptions of spot units, and the GPU-hours of work lost to them and redone.
	Interruptions  int
	ReworkGPUHours decimal.Decimal
	// Jobs that ran, jobs that never could (more GPUs than the owned pool and no allowed offer).
	Jobs, Unfinished int
	// JobsElastic ran (last) on elastic capacity.
	JobsElastic int
	// Decisions is how many plans MakePlan made; Repeats the alarm
	// evaluations whose inputs were unchanged since the queue's last plan.
	Decisions, Repeats int
}

// TeamSpan is one team's jobs in a result.
type TeamSpan struct {
	Team     string
	Jobs     int
	Makespan time.Duration
	WaitP95  time.Duration
}

// CostLine is the elastic cost of one tier, provider and market.
type CostLine struct {
	Tier     sluice.Tier
	Provider string
	Market   sluice.Market
	GPUHours decimal.Decimal
	Cost     sluice.Money
}

func (r *run) result() (Result, error) {
	p := r.s.p
	cur := p.BillingCurrency
	res := Result{Strategy: r.strategy, OwnedGPUs: r.owned, Decisions: r.decisions, Repeats: r.skipped,
		Interruptions: r.interruptions, TierShare: map[sluice.Tier]decimal.Decimal{}}
	var waits []int64
	var last int64
	for i := range r.jobs {
		js := &r.jobs[i]
		if !js.done {
			res.Unfinished++
			continue
		}
		res.Jobs++
		if js.unit >= 0 {
			res.JobsElastic++
		}
		waits = append(waits, js.firstWait)
		last = max(last, js.end)
	}
	slices.Sort(waits)
	if n := len(waits); n > 0 {
		res.WaitP50, res.WaitP95, res.WaitMax = rank(waits, 50), rank(waits, 95), time.Duration(waits[n-1])*time.Minute
	}
	teams := map[string]*teamAcc{}
	var names []string
	for i := range r.jobs {
		js, j := &r.jobs[i], &p.Jobs[i]
		if !js.done {
			continue
		}
		t, ok := teams[j.Team]
		if !ok {
			t = &teamAcc{first: r.minute(j.Submit)}
			teams[j.Team] = t
			names = append(names, j.Team)
		}
		t.last = max(t.last, js.end)
		t.waits = append(t.waits, js.firstWait)
	}
	slices.Sort(names)
	for _, name := range names {
		t := teams[name]
		slices.Sort(t.waits)
		res.Teams = append(res.Teams, TeamSpan{Team: name, Jobs: len(t.waits),
			Makespan: time.Duration(t.last-t.first) * time.Minute, WaitP95: rank(t.waits, 95)})
	}
	res.Makespan = time.Duration(last) * time.Minute
	sixty := decimal.NewFromInt(60)
	res.OwnedGPUHours = decimal.NewFromInt(r.ownedGPUMinutes).DivRound(sixty, HoursScale)

	type lineKey struct {
		tier     sluice.Tier
		provider string
		market   sluice.Market
	}
	lines := map[lineKey]*CostLine{}
	gpuMinutes := map[lineKey]int64{}
	var elasticGPUMinutes int64
	res.ElasticCost = sluice.Money{Amount: decimal.Zero, Currency: cur}
	for _, b := range r.buckets {
		cost := b.price.Amount.Mul(decimal.NewFromInt(b.minutes)).DivRound(sixty, CostScale)
		c, _, err := p.FX.Convert(sluice.Money{Amount: cost, Currency: b.price.Currency}, cur)
		if err != nil {
			return res, err
		}
		k := lineKey{b.key.tier, b.key.provider, b.key.market}
		l, ok := lines[k]
		if !ok {
			l = &CostLine{Tier: k.tier, Provider: k.provider, Market: k.market, Cost: sluice.Money{Amount: decimal.Zero, Currency: cur}}
			lines[k] = l
		}
		l.Cost = l.Cost.Add(c)
		gpuMinutes[k] += b.gpuMinutes
		elasticGPUMinutes += b.gpuMinutes
		res.ElasticCost = res.ElasticCost.Add(c)
	}
	for k, l := range lines {
		l.GPUHours = decimal.NewFromInt(gpuMinutes[k]).DivRound(sixty, HoursScale)
		res.Elastic = append(res.Elastic, *l)
	}
	slices.SortFunc(res.Elastic, func(a, b CostLine) int {
		return cmp.Or(cmp.Compare(a.Tier, b.Tier), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Market, b.Market))
	})
	res.ElasticGPUHours = decimal.NewFromInt(elasticGPUMinutes).DivRound(sixty, HoursScale)
	res.ReworkGPUHours = decimal.NewFromInt(r.reworkGPUMinutes).DivRound(sixty, HoursScale)
	// Alone, a run is its own comparison: the window is its makespan.
	// Compare charges every result of a run over the common window.
	if err := r.s.ChargeOwned(&res, res.Makespan); err != nil {
		return res, err
	}
	return res, nil
}

// ChargeOwned charges r's owned pool over window (whole minutes, from the
// trace's first submit; at least r.Makespan) and sets r.OwnedWindow,
// r.OwnedCost, r.TotalCost and r.TierShare from it:
//
//	owned = GPUs × gpu_month_cost × window minutes ÷ (hours_per_month × 60)
//
// rounded once to CostScale places, half away from zero (decimal.DivRound),
// then converted to the billing currency (sluice.FXScale when FX divides).
// A team pays for owned GPUs by the calendar, busy or idle, so strategies
// compared in one run are charged over one window (CommonWindow).
func (s *Simulator) ChargeOwned(r *Result, window time.Duration) error {
	p := s.p
	if window < r.Makespan || window%time.Minute != 0 {
		return fmt.Errorf("simulate: owned-pool window %s for %s with %d GPUs: want whole minutes, at least its makespan %s",
			window, r.Strategy, r.OwnedGPUs, r.Makespan)
	}
	minutes := int64(window / time.Minute)
	owned := p.Settings.OwnedGPUMonthCost.Amount.Mul(decimal.NewFromInt(int64(r.OwnedGPUs)*minutes)).
		DivRound(p.Settings.HoursPerMonth.Mul(decimal.NewFromInt(60)), CostScale)
	oc, _, err := p.FX.Convert(sluice.Money{Amount: owned, Currency: p.Settings.OwnedGPUMonthCost.Currency}, p.BillingCurrency)
	if err != nil {
		return err
	}
	r.OwnedWindow, r.OwnedCost = window, oc
	r.TotalCost = r.OwnedCost.Add(r.ElasticCost)
	byTier := map[sluice.Tier]decimal.Decimal{sluice.TierBase: r.OwnedCost.Amount}
	for _, l := range r.Elastic {
		byTier[l.Tier] = byTier[l.Tier].Add(l.Cost.Amount)
	}
	r.TierShare = map[sluice.Tier]decimal.Decimal{}
	for _, t := range tiers {
		share := decimal.Zero
		if r.TotalCost.Amount.IsPositive() {
			share = byTier[t].Mul(decimal.NewFromInt(100)).DivRound(r.TotalCost.Amount, ShareScale)
		}
		r.TierShare[t] = share
	}
	return nil
}

// CommonWindow is the window a run's results are compared on: from the
// trace's first submit to the latest completion of any of them (every
// strategy and, in a sweep, every owned-pool size).
func CommonWindow(results []Result) time.Duration {
	var w time.Duration
	for _, r := range results {
		w = max(w, r.Makespan)
	}
	return w
}

// Compare runs every strategy for every owned-pool size (sizes outer,
// strategies inner: report order), then charges every result's owned pool
// over CommonWindow of them all, so totals compare across the whole table:
// a strategy that finishes sooner still pays for the owned GPUs until the
// slowest one finishes (the pool is bought by the month, not by the job).
func (s *Simulator) Compare(ctx context.Context, strategies []Strategy, sizes []int) ([]Result, error) {
	var out []Result
	for _, n := range sizes {
		for _, st := range strategies {
			r, err := s.Run(ctx, st, n)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	w := CommonWindow(out)
	for i := range out {
		if err := s.ChargeOwned(&out[i], w); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type teamAcc struct {
	first, last int64
	waits       []int64
}

// rank is the nearest-rank percentile q of sorted minutes.
func rank(sorted []int64, q int) time.Duration {
	return time.Duration(sorted[(q*len(sorted)+99)/100-1]) * time.Minute
}
