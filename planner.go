package sluice

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// ReworkScale is the number of decimal places kept when the expected spot
// rework cost divides by 120 (minutes per hour × 2, the mean loss of half a
// checkpoint interval). It is the planner's only rounding point besides FX
// (FXScale); rounding is half away from zero (decimal.DivRound).
const ReworkScale = 12

// PlanInput is everything MakePlan needs. It holds values only; MakePlan does no I/O.
type PlanInput struct {
	Demand  Demand
	Profile QueueProfile
	Offers  []Offer
	// Verdicts are aligned with Offers (Verdicts[i] is for Offers[i]).
	Verdicts        []Verdict
	BillingCurrency string
	FX              FXTable
	// InterruptionsPerHour is the expected number of spot interruptions per
	// running hour, by provider (config). A provider without an entry counts 0.
	InterruptionsPerHour map[string]decimal.Decimal
	// Budget is the tier's remaining headroom in the billing currency; nil means no limit.
	Budget *Money
	Now    time.Time
}

// candidate is an offer that passed every filter, with its per-unit costs.
type candidate struct {
	idx          int // index into PlanInput.Offers
	units        int // units that may be bought (UnitsAvailable, capped by the pool)
	slotsPerUnit int
	hours        decimal.Decimal
	base         Money // per unit, offer currency
	rework       Money // per unit, offer currency
	billing      Money // per unit expected cost, billing currency
	fx           *FXRate
	rank         decimal.Decimal // billing × rankScale / slotsPerUnit, when ranked
	ranked       bool
}

// MaxStartDelay is how long after the decision capacity may start and still
// serve a burst (a capacity block starting days later does not drain today's queue).
const MaxStartDelay = time.Hour

// rankScale is the least common multiple of 1..16, so cost per slot × rankScale
// is exact for any unit of up to 16 slots.
const rankScale = 720720

// MakePlan chooses integer units of allowed offers that cover Demand.Slots at
// minimum total expected cost, in three stages:
//
//  1. filter: policy verdicts first (they carry residency, interruptibility and
//     budget-tier reasons), then Go-side checks that need exact money or
//     arithmetic policy must not do (GPU model, unit size, capacity, expiry, FX,
//     price ceiling, spot-vs-on-demand). Every reason is kept, not only the first.
//  2. rank: expected cost per unit-hour in the billing currency, ties broken on
//     (provider, SKU, region, offer id) so the same input gives the same plan.
//  3. select: an exact min-cost covering knapsack over integer units
//     (see selectUnits), cut to the tier's budget (reason "budget") or to the
//     capacity there is (reason "capacity").
//
// Expected cost of one unit = UnitPrice × Hours, plus for spot the expected
// rework = InterruptionsPerHour × Hours × (checkpoint interval ÷ 2) × UnitPrice.
// A reservation bills its whole term when the term is longer than the slot hours.
func MakePlan(in PlanInput) (Plan, error) {
	if len(in.Verdicts) != len(in.Offers) {
		return Plan{}, fmt.Errorf("plan: %d verdicts for %d offers", len(in.Verdicts), len(in.Offers))
	}
	if in.Demand.GPUsPerSlot <= 0 {
		return Plan{}, fmt.Errorf("plan: queue %s: gpus_per_slot %d: must be positive", in.Demand.Queue, in.Demand.GPUsPerSlot)
	}
	plan := Plan{SlotsWanted: in.Demand.Slots, TotalExpectedCost: Money{decimal.Zero, in.BillingCurrency},
		Lines: []Line{}, Short: []Reason{}, Rejected: []Rejection{}}

	// Stage 1: filter. costs are computed for every offer with a usable price,
	// because a rejected on-demand offer still sets the bar for its spot twin.
	reasons := make([][]Reason, len(in.Offers))
	costs := make([]*candidate, len(in.Offers))
	accepted := make(map[string]bool, len(in.Profile.GPUModels))
	for _, m := range in.Profile.GPUModels {
		accepted[m] = true
	}
	for i, o := range in.Offers {
		v := in.Verdicts[i]
		if v.OfferID != o.ID {
			return Plan{}, fmt.Errorf("plan: verdict %d is for %q, offer is %q", i, v.OfferID, o.ID)
		}
		if !v.Allow {
			reasons[i] = append(reasons[i], v.Reasons...)
		}
		reasons[i] = append(reasons[i], filterOffer(in, o, accepted)...)
		c, rs := costOffer(in, i)
		reasons[i] = append(reasons[i], rs...)
		costs[i] = c
	}
	// Spot is never chosen when its expected cost ≥ that of the same capacity on demand.
	onDemand := map[CapacityKey]Money{}
	for i, o := range in.Offers {
		if o.Market == OnDemand && costs[i] != nil {
			k := o.Capacity()
			if cur, ok := onDemand[k]; !ok || costs[i].billing.Cmp(cur) < 0 {
				onDemand[k] = costs[i].billing
			}
		}
	}
	var cands []candidate
	poolBest := map[string]int{} // pool → index of the offer kept for it
	for i, o := range in.Offers {
		if o.Market == Spot && costs[i] != nil {
			if od, ok := onDemand[o.Capacity()]; ok && costs[i].billing.Cmp(od) >= 0 {
				reasons[i] = append(reasons[i], Reason{Code: ReasonSpotNotCheaper, Rule: "plan.spot_not_cheaper", Message: fmt.Sprintf(
					"spot expected %s per unit ≥ on-demand %s for the same capacity", costs[i].billing, od)})
			}
		}
		if len(reasons[i]) == 0 && o.Pool != "" {
			if j, ok := poolBest[o.Pool]; !ok || betterForPool(costs[i], costs[j], in.Offers) {
				poolBest[o.Pool] = i
			}
		}
	}
	// Offers that share a pool (unit sizes or markets of the same stock) must
	// not each be bought in full: one offer per pool is kept — the cheapest per
	// slot, then the smallest unit — with its units capped by the pool's GPUs.
	for i, o := range in.Offers {
		if len(reasons[i]) == 0 && o.Pool != "" && poolBest[o.Pool] != i {
			k := in.Offers[poolBest[o.Pool]]
			reasons[i] = append(reasons[i], Reason{Code: ReasonSamePool, Rule: "plan.same_pool", Message: fmt.Sprintf(
				"draws on pool %s, bought through %s", o.Pool, k.ID)})
		}
		if len(reasons[i]) > 0 {
			plan.Rejected = append(plan.Rejected, Rejection{Provider: o.Provider, OfferID: o.ID, Reasons: reasons[i]})
			continue
		}
		c := *costs[i]
		c.units = o.UnitsAvailable
		if o.Pool != "" && o.PoolGPUs > 0 {
			c.units = min(c.units, o.PoolGPUs/o.GPUsPerUnit)
		}
		cands = append(cands, c)
	}

	// Stage 2: rank, by expected cost per slot, then fixed keys. The key is
	// cost × (rankScale / slots): exact, since rankScale is a multiple of every
	// slots-per-unit up to 16 (cross multiplication otherwise).
	for i := range cands {
		c := &cands[i]
		if rankScale%c.slotsPerUnit == 0 {
			c.rank, c.ranked = c.billing.Amount.Mul(decimal.NewFromInt(int64(rankScale/c.slotsPerUnit))), true
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		var l, r decimal.Decimal
		if !a.ranked || !b.ranked {
			l = a.billing.Amount.Mul(decimal.NewFromInt(int64(b.slotsPerUnit)))
			r = b.billing.Amount.Mul(decimal.NewFromInt(int64(a.slotsPerUnit)))
		} else {
			l, r = a.rank, b.rank
		}
		if c := l.Cmp(r); c != 0 {
			return c
		}
		oa, ob := in.Offers[a.idx], in.Offers[b.idx]
		return cmp.Or(cmp.Compare(oa.Provider, ob.Provider), cmp.Compare(oa.SKU, ob.SKU),
			cmp.Compare(oa.Region, ob.Region), cmp.Compare(oa.ID, ob.ID))
	})

	// Stage 3: select.
	if in.Demand.Slots == 0 {
		return plan, nil
	}
	units, capShort, budgetShort := selectUnits(cands, in.Offers, in.Demand.Slots, in.Budget)
	for ci, n := range units {
		if n == 0 {
			continue
		}
		c := cands[ci]
		o := in.Offers[c.idx]
		line := Line{
			OfferID: o.ID, Provider: o.Provider, SKU: o.SKU, Region: o.Region, Zone: in.Verdicts[c.idx].Zone,
			Market: o.Market, GPUModel: o.GPUModel, Units: n, GPUs: n * o.GPUsPerUnit, Slots: n * c.slotsPerUnit,
			UnitPrice: o.UnitPrice, Hours: c.hours,
			BaseCost: c.base.MulInt(n), ReworkCost: c.rework.MulInt(n),
			ExpectedCost: c.base.Add(c.rework).MulInt(n),
		}
		// The line's own expected cost is converted once (the FX rounding
		// point); per-unit conversions above only rank and select.
		line.ExpectedCostBilling, line.FX, _ = in.FX.Convert(line.ExpectedCost, in.BillingCurrency)
		if o.Market == Spot {
			bid := o.UnitPrice
			line.Bid = &bid
		}
		plan.Lines = append(plan.Lines, line)
		plan.SlotsCovered += line.Slots
		plan.TotalExpectedCost = plan.TotalExpectedCost.Add(line.ExpectedCostBilling)
	}
	if plan.SlotsCovered < plan.SlotsWanted {
		if capShort {
			plan.Short = append(plan.Short, Reason{Code: ReasonCapacity, Rule: "plan.capacity", Message: fmt.Sprintf(
				"allowed offers cover at most %d of %d slots", plan.SlotsCovered, plan.SlotsWanted)})
		}
		if budgetShort {
			plan.Short = append(plan.Short, Reason{Code: ReasonBudget, Rule: "plan.budget", Message: fmt.Sprintf(
				"tier %s headroom %s covers %d of %d slots", in.Profile.Tier, in.Budget, plan.SlotsCovered, plan.SlotsWanted)})
		}
	}
	return plan, nil
}

// betterForPool reports whether candidate a should represent its pool rather
// than b: lower expected cost per slot (exact cross multiplication), then
// fewer GPUs per unit (less stranded capacity), then offer id.
func betterForPool(a, b *candidate, offers []Offer) bool {
	l := a.billing.Amount.Mul(decimal.NewFromInt(int64(b.slotsPerUnit)))
	r := b.billing.Amount.Mul(decimal.NewFromInt(int64(a.slotsPerUnit)))
	if c := l.Cmp(r); c != 0 {
		return c < 0
	}
	oa, ob := offers[a.idx], offers[b.idx]
	if oa.GPUsPerUnit != ob.GPUsPerUnit {
		return oa.GPUsPerUnit < ob.GPUsPerUnit
	}
	return oa.ID < ob.ID
}

// filterOffer applies the Go-side checks that need no money.
func filterOffer(in PlanInput, o Offer, accepted map[string]bool) []Reason {
	var rs []Reason
	if o.GPUsPerUnit < 1 || o.GPUsPerUnit > MaxGPUsPerUnit {
		rs = append(rs, Reason{Code: ReasonImplausible, Rule: "plan.gpus_per_unit", Message: strconv.Itoa(o.GPUsPerUnit) + " GPUs per unit: outside 1.." + strconv.Itoa(MaxGPUsPerUnit)})
	}
	if !o.UnitPrice.Amount.IsPositive() {
		rs = append(rs, Reason{Code: ReasonImplausible, Rule: "plan.price_not_positive", Message: "unit price " + o.UnitPrice.String() + ": not positive"})
	}
	if !accepted[o.GPUModel] {
		rs = append(rs, Reason{Code: ReasonGPUModel, Rule: "plan.gpu_model", Message: "GPU model " + strconv.Quote(o.GPUModel) + " not accepted (profile: " + strings.Join(in.Profile.GPUModels, ", ") + ")"})
	}
	if o.GPUsPerUnit < in.Demand.GPUsPerSlot {
		rs = append(rs, Reason{Code: ReasonUnitTooSmall, Rule: "plan.unit_too_small", Message: strconv.Itoa(o.GPUsPerUnit) + " GPUs per unit < " + strconv.Itoa(in.Demand.GPUsPerSlot) + " per slot (a slot never spans nodes)"})
	}
	if o.UnitsAvailable <= 0 {
		rs = append(rs, Reason{Code: ReasonNoCapacity, Rule: "plan.no_units", Message: "no units available"})
	}
	if !o.AvailableFrom.IsZero() && o.AvailableFrom.After(in.Now.Add(MaxStartDelay)) {
		rs = append(rs, Reason{Code: ReasonNotYetAvailable, Rule: "plan.starts_too_late", Message: fmt.Sprintf(
			"capacity available from %s, more than %s after the decision", o.AvailableFrom.UTC().Format(time.RFC3339), MaxStartDelay)})
	}
	if o.Market == Reserved && o.TermHours > 0 && decimal.NewFromInt(int64(o.TermHours)).LessThan(in.Demand.Hours) {
		rs = append(rs, Reason{Code: ReasonTermTooShort, Rule: "plan.term_shorter_than_slot", Message: fmt.Sprintf(
			"%d h term < %s h per slot", o.TermHours, in.Demand.Hours)})
	}
	if !o.AvailableUntil.IsZero() {
		start := in.Now
		if o.AvailableFrom.After(start) {
			start = o.AvailableFrom
		}
		need := time.Duration(in.Demand.Hours.Mul(decimal.NewFromInt(int64(time.Hour))).IntPart())
		if o.AvailableUntil.Before(start.Add(need)) {
			rs = append(rs, Reason{Code: ReasonTermTooShort, Rule: "plan.ends_before_slot_done", Message: fmt.Sprintf(
				"capacity ends %s, before %s h from %s", o.AvailableUntil.UTC().Format(time.RFC3339), in.Demand.Hours, start.UTC().Format(time.RFC3339))})
		}
	}
	if !o.ExpiresAt.IsZero() && !in.Now.Before(o.ExpiresAt) {
		rs = append(rs, Reason{Code: ReasonExpired, Rule: "plan.quote_expired", Message: fmt.Sprintf("quote expired at %s", o.ExpiresAt.UTC().Format(time.RFC3339))})
	}
	return rs
}

// costOffer computes the per-unit expected cost of offer i, and the reasons
// that depend on money (FX, price ceiling). It returns nil when the offer has
// no usable cost.
func costOffer(in PlanInput, i int) (*candidate, []Reason) {
	o := in.Offers[i]
	c := &candidate{idx: i, hours: in.Demand.Hours}
	if in.Demand.GPUsPerSlot > 0 {
		c.slotsPerUnit = o.GPUsPerUnit / in.Demand.GPUsPerSlot
	}
	if o.Market == Reserved && o.TermHours > 0 {
		if term := decimal.NewFromInt(int64(o.TermHours)); term.Cmp(c.hours) > 0 {
			c.hours = term
		}
	}
	c.base = o.UnitPrice.Mul(c.hours)
	c.rework = Money{decimal.Zero, o.UnitPrice.Currency}
	if o.Market == Spot {
		rate := in.InterruptionsPerHour[o.Provider]
		minutes := decimal.NewFromInt(int64(in.Profile.CheckpointIntervalMinutes))
		c.rework = Money{rate.Mul(c.hours).Mul(minutes).Mul(o.UnitPrice.Amount).DivRound(decimal.NewFromInt(120), ReworkScale), o.UnitPrice.Currency}
	}
	billing, fx, err := in.FX.Convert(c.base.Add(c.rework), in.BillingCurrency)
	if err != nil {
		return nil, []Reason{{Code: ReasonFX, Rule: "plan.no_fx_rate", Message: err.Error()}}
	}
	c.billing, c.fx = billing, fx
	var rs []Reason
	if ceil := in.Profile.MaxPricePerGPUHour; ceil.IsSet() {
		limit := ceil.MulInt(o.GPUsPerUnit)
		price, _, err := in.FX.Convert(o.UnitPrice, ceil.Currency)
		switch {
		case err != nil:
			rs = append(rs, Reason{Code: ReasonFX, Rule: "plan.no_fx_rate", Message: err.Error()})
		case price.Cmp(limit) > 0:
			rs = append(rs, Reason{Code: ReasonPrice, Rule: "plan.above_ceiling", Message: fmt.Sprintf(
				"%s per unit-hour (%d GPUs) > ceiling %s per GPU-hour × %d = %s", o.UnitPrice, o.GPUsPerUnit, ceil, o.GPUsPerUnit, limit)})
		}
	}
	return c, rs
}

// selectUnits solves, exactly, min Σ cost_i·x_i subject to Σ slots_i·x_i ≥ S,
// 0 ≤ x_i ≤ units available, x_i integer, and returns x (aligned with cands).
//
// Two facts keep it small: within one class of equal slots-per-unit, an
// optimal plan uses the cheapest units first (swap argument), so at most
// ceil(S/s) units of each class can matter; and coverage above S is worth no
// more than S, so states are capped at S. What remains is a 0/1 knapsack over
// at most Σ ceil(S/s) unit items and S+1 states.
//
// When S cannot be covered within budget (or at all), it returns the plan with
// the most slots covered that fits, cheapest among those, and says which limit bit.
func selectUnits(cands []candidate, offers []Offer, S int, budget *Money) (units []int, capShort, budgetShort bool) {
	units = make([]int, len(cands))
	type item struct {
		cand  int
		slots int
		cost  decimal.Decimal
	}
	var items []item
	taken := map[int]int{} // slots-per-unit class → units taken so far
	for ci, c := range cands {
		need := (S + c.slotsPerUnit - 1) / c.slotsPerUnit
		n := min(c.units, need-taken[c.slotsPerUnit])
		for range max(n, 0) {
			items = append(items, item{ci, c.slotsPerUnit, c.billing.Amount})
		}
		taken[c.slotsPerUnit] += max(n, 0)
	}

	valid := make([]bool, S+1)
	cost := make([]decimal.Decimal, S+1)
	valid[0] = true
	take := make([][]bool, len(items))
	prev := make([][]int32, len(items))
	for i, it := range items {
		take[i] = make([]bool, S+1)
		prev[i] = make([]int32, S+1)
		for j := S; j >= 0; j-- {
			if !valid[j] {
				continue
			}
			nj := min(S, j+it.slots)
			c := cost[j].Add(it.cost)
			if !valid[nj] || c.Cmp(cost[nj]) < 0 {
				valid[nj], cost[nj] = true, c
				take[i][nj], prev[i][nj] = true, int32(j)
			}
		}
	}

	best := -1
	for k := S; k >= 0; k-- {
		if valid[k] && (budget == nil || cost[k].Cmp(budget.Amount) <= 0) {
			best = k
			break
		}
	}
	maxCover := 0
	for k := S; k >= 0; k-- {
		if valid[k] {
			maxCover = k
			break
		}
	}
	capShort = maxCover < S
	budgetShort = best < maxCover
	for i, k := len(items)-1, best; i >= 0 && k > 0; i-- {
		if take[i][k] {
			units[items[i].cand]++
			k = int(prev[i][k])
		}
	}
	return units, capShort, budgetShort
}
