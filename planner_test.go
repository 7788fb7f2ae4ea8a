package sluice

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

var t0 = time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)

func testProfile() QueueProfile {
	return QueueProfile{
		Queue: "q", GPUModels: []string{"A100-80GB"}, GPUsPerSlot: 4, HoursPerSlot: decimal.NewFromInt(4),
		MaxSlots: 20, Checkpointable: true, CheckpointIntervalMinutes: 30, DataClass: "public",
		Tier: TierEmergency, MaxPricePerGPUHour: MustMoney("3", "USD"),
	}
}

func offer(id string, market Market, gpus, units int, price, cur string) Offer {
	return Offer{ID: id, Provider: "p", SKU: id, GPUModel: "A100-80GB", GPUsPerUnit: gpus, Region: "r",
		Market: market, UnitPrice: MustMoney(price, cur), UnitsAvailable: units, ExpiresAt: t0.Add(time.Hour)}
}

func allow(offers []Offer) []Verdict {
	v := make([]Verdict, len(offers))
	for i, o := range offers {
		v[i] = Verdict{OfferID: o.ID, Allow: true, Zone: ZoneOverseas}
	}
	return v
}

func input(p QueueProfile, slots int, offers []Offer) PlanInput {
	return PlanInput{
		Demand: NewDemand(p, slots, 0), Profile: p, Offers: offers, Verdicts: allow(offers),
		BillingCurrency: "USD",
		FX:              FXTable{{Base: "USD", Quote: "CNY", Rate: decimal.RequireFromString("7.1072"), Source: "test"}},
		Now:             t0,
	}
}

func TestMakePlanHandChecked(t *testing.T) {
	p := testProfile()
	tests := []struct {
		name    string
		slots   int
		offers  []Offer
		rates   map[string]decimal.Decimal
		budget  *Money
		want    map[string]int // offer id → units
		total   string
		covered int
		short   []string
		reasons map[string][]string // offer id → reason codes
	}{
		{
			// 3 slots of 4 GPUs × 4 h. An 8-GPU unit hosts two slots:
			// 8-GPU at 9.00/h → 36.00 per 2 slots; 4-GPU at 5.00/h → 20.00 per slot.
			// Options: 2×8 (72.00), 1×8+1×4 (56.00), 3×4 (60.00) → 56.00.
			name: "mixed unit sizes", slots: 3,
			offers: []Offer{offer("big", OnDemand, 8, 5, "9.00", "USD"), offer("small", OnDemand, 4, 5, "5.00", "USD")},
			want:   map[string]int{"big": 1, "small": 1}, total: "56", covered: 3,
		},
		{
			// Only 1 unit of the cheap offer: 1×4.00×4 + 1×5.00×4 = 36.
			name: "units available bound", slots: 2,
			offers: []Offer{offer("cheap", OnDemand, 4, 1, "4.00", "USD"), offer("dear", OnDemand, 4, 5, "5.00", "USD")},
			want:   map[string]int{"cheap": 1, "dear": 1}, total: "36", covered: 2,
		},
		{
			// CNY offer: 34.742 CNY/h × 4 h = 138.968 CNY; ÷ 7.1072 = 19.55312922107… → 19.5531292211 USD (10 places; checked with Python decimal).
			name: "fx conversion", slots: 1,
			offers: []Offer{offer("cny", OnDemand, 4, 1, "34.742", "CNY"), offer("usd", OnDemand, 4, 1, "5.00", "USD")},
			want:   map[string]int{"cny": 1}, total: "19.5531292211", covered: 1,
		},
		{
			// Spot 4.76/h, 0.05 interruptions/h, 30 min checkpoints:
			// rework = 0.05 × 4 × 30 × 4.76 / 120 = 0.238; expected = 19.04 + 0.238 = 19.278 < on-demand 6.48×4 = 25.92.
			name: "spot wins with rework", slots: 1,
			offers: []Offer{
				{ID: "od", Provider: "runpod", SKU: "a100", Region: "global", GPUModel: "A100-80GB", GPUsPerUnit: 4, Market: OnDemand, UnitPrice: MustMoney("6.48", "USD"), UnitsAvailable: 4},
				{ID: "sp", Provider: "runpod", SKU: "a100", Region: "global", GPUModel: "A100-80GB", GPUsPerUnit: 4, Market: Spot, UnitPrice: MustMoney("4.76", "USD"), UnitsAvailable: 4},
			},
			rates: map[string]decimal.Decimal{"runpod": decimal.RequireFromString("0.05")},
			want:  map[string]int{"sp": 1}, total: "19.278", covered: 1,
		},
		{
			// Spot as dear as on-demand once rework is counted: never chosen.
			name: "spot not cheaper", slots: 1,
			offers: []Offer{
				{ID: "od", Provider: "vast", SKU: "m1", Region: "US", GPUModel: "A100-80GB", GPUsPerUnit: 4, Market: OnDemand, UnitPrice: MustMoney("5.00", "USD"), UnitsAvailable: 1},
				{ID: "sp", Provider: "vast", SKU: "m1", Region: "US", GPUModel: "A100-80GB", GPUsPerUnit: 4, Market: Spot, UnitPrice: MustMoney("5.00", "USD"), UnitsAvailable: 1},
			},
			rates: map[string]decimal.Decimal{"vast": decimal.RequireFromString("0.1")},
			want:  map[string]int{"od": 1}, total: "20", covered: 1,
			reasons: map[string][]string{"sp": {ReasonSpotNotCheaper}},
		},
		{
			// Budget 50 USD at 20 per slot: 2 of 3 slots.
			name: "budget cut", slots: 3,
			offers: []Offer{offer("a", OnDemand, 4, 5, "5.00", "USD")},
			budget: &Money{decimal.NewFromInt(50), "USD"},
			want:   map[string]int{"a": 2}, total: "40", covered: 2, short: []string{ReasonBudget},
		},
		{
			name: "capacity short", slots: 3,
			offers: []Offer{offer("a", OnDemand, 4, 1, "5.00", "USD"), offer("tiny", OnDemand, 2, 9, "1.00", "USD")},
			want:   map[string]int{"a": 1}, total: "20", covered: 1, short: []string{ReasonCapacity},
			reasons: map[string][]string{"tiny": {ReasonUnitTooSmall}},
		},
		{
			// Ceiling 3 USD/GPU-hour: a 4-GPU unit may cost at most 12.00/h.
			name: "price ceiling", slots: 1,
			offers: []Offer{offer("dear", OnDemand, 4, 1, "12.01", "USD"), offer("ok", OnDemand, 4, 1, "12.00", "USD")},
			want:   map[string]int{"ok": 1}, total: "48", covered: 1,
			reasons: map[string][]string{"dear": {ReasonPrice}},
		},
		{
			// A unit claiming 9999 GPUs and a zero price break the planner's
			// arithmetic, so it refuses them itself (the price band is the
			// collector's hygiene, pricing.Hygiene, applied before policy).
			name: "implausible offers", slots: 1,
			offers: []Offer{offer("huge", OnDemand, 9999, 1, "2.00", "USD"), offer("free", OnDemand, 4, 1, "0", "USD"),
				offer("ok", OnDemand, 4, 1, "0.20", "USD")},
			want: map[string]int{"ok": 1}, total: "0.8", covered: 1,
			reasons: map[string][]string{"huge": {ReasonImplausible}, "free": {ReasonImplausible}},
		},
		{
			// Equal CNY amounts convert to equal USD amounts: each line converts
			// its own total once. 2 × 34.742 × 4 = 277.936 CNY and 1 × 69.484 × 4
			// = 277.936 CNY, each ÷ 7.1072 = 39.1062584421 USD (10 places).
			name: "line-level fx", slots: 4,
			offers: []Offer{offer("one", OnDemand, 4, 2, "34.742", "CNY"), offer("two", OnDemand, 8, 1, "69.484", "CNY")},
			want:   map[string]int{"one": 2, "two": 1}, total: "78.2125168842", covered: 4,
		},
		{
			// A capacity block starting in two days does not serve this burst.
			name: "capacity block starts too late", slots: 1,
			offers: []Offer{
				{ID: "cb", Provider: "aws", SKU: "p4de", Region: "us-east-1", GPUModel: "A100-80GB", GPUsPerUnit: 8, Market: Reserved, TermHours: 4,
					UnitPrice: MustMoney("1.00", "USD"), UnitsAvailable: 1, AvailableFrom: t0.Add(48 * time.Hour)},
				offer("od", OnDemand, 4, 1, "11.00", "USD"),
			},
			want: map[string]int{"od": 1}, total: "44", covered: 1,
			reasons: map[string][]string{"cb": {ReasonNotYetAvailable}},
		},
		{
			// 12 idle cards in one pool, offered as 4- and 8-GPU units at the same
			// per-GPU price: bought once, in 4-GPU units (less stranded), at most
			// 12 / 4 = 3 units — not 3 + 1 from the same cards.
			name: "shared pool bought once", slots: 4,
			offers: []Offer{
				{ID: "p4", Provider: "autodl", SKU: "a", Region: "bj", GPUModel: "A100-80GB", GPUsPerUnit: 4, Market: OnDemand, UnitPrice: MustMoney("4.00", "USD"), UnitsAvailable: 3, Pool: "bj/a", PoolGPUs: 12},
				{ID: "p8", Provider: "autodl", SKU: "a", Region: "bj", GPUModel: "A100-80GB", GPUsPerUnit: 8, Market: OnDemand, UnitPrice: MustMoney("8.00", "USD"), UnitsAvailable: 1, Pool: "bj/a", PoolGPUs: 12},
				offer("other", OnDemand, 4, 5, "6.00", "USD"),
			},
			want: map[string]int{"p4": 3, "other": 1}, total: "72", covered: 4,
			reasons: map[string][]string{"p8": {ReasonSamePool}},
		},
		{
			// A 24 h block for 48 h slots, and a block that ends before 4 h from now.
			name: "reservations shorter than the slot", slots: 1,
			offers: []Offer{
				{ID: "cb24", Provider: "aws", SKU: "p4de", Region: "us-east-1", GPUModel: "A100-80GB", GPUsPerUnit: 8, Market: Reserved, TermHours: 2,
					UnitPrice: MustMoney("1.00", "USD"), UnitsAvailable: 1},
				{ID: "ended", Provider: "aws", SKU: "p4de", Region: "us-east-2", GPUModel: "A100-80GB", GPUsPerUnit: 8, Market: Reserved, TermHours: 24,
					UnitPrice: MustMoney("1.00", "USD"), UnitsAvailable: 1, AvailableFrom: t0.Add(-23 * time.Hour), AvailableUntil: t0.Add(time.Hour)},
				offer("od", OnDemand, 4, 1, "11.00", "USD"),
			},
			want: map[string]int{"od": 1}, total: "44", covered: 1,
			reasons: map[string][]string{"cb24": {ReasonTermTooShort}, "ended": {ReasonTermTooShort}},
		},
		{
			name: "reservation bills its term", slots: 1,
			offers: []Offer{
				{ID: "cb", Provider: "aws", SKU: "p4de", Region: "us-east-1", GPUModel: "A100-80GB", GPUsPerUnit: 8, Market: Reserved, TermHours: 24, UnitPrice: MustMoney("3.00", "USD"), UnitsAvailable: 1},
				offer("od", OnDemand, 4, 1, "11.00", "USD"),
			},
			want: map[string]int{"od": 1}, total: "44", covered: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := input(p, tc.slots, tc.offers)
			in.InterruptionsPerHour = tc.rates
			in.Budget = tc.budget
			plan, err := MakePlan(in)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, l := range plan.Lines {
				got[l.OfferID] = l.Units
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("units = %v, want %v", got, tc.want)
			}
			if plan.TotalExpectedCost.Amount.String() != tc.total || plan.TotalExpectedCost.Currency != "USD" {
				t.Errorf("total = %s, want %s USD", plan.TotalExpectedCost, tc.total)
			}
			if plan.SlotsCovered != tc.covered {
				t.Errorf("covered = %d, want %d", plan.SlotsCovered, tc.covered)
			}
			var short []string
			for _, r := range plan.Short {
				short = append(short, r.Code)
			}
			if fmt.Sprint(short) != fmt.Sprint(tc.short) {
				t.Errorf("short = %v, want %v", short, tc.short)
			}
			for id, codes := range tc.reasons {
				var got []string
				for _, rj := range plan.Rejected {
					if rj.OfferID == id {
						for _, r := range rj.Reasons {
							got = append(got, r.Code)
						}
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(codes) {
					t.Errorf("reasons[%s] = %v, want %v", id, got, codes)
				}
			}
		})
	}
}

// TestMakePlanMatchesBruteForce checks the knapsack against enumeration of
// every integer combination on small random cases, with and without budget.
func TestMakePlanMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := testProfile()
	p.MaxPricePerGPUHour = Money{}
	for n := range 400 {
		p.GPUsPerSlot = []int{1, 2, 4}[r.IntN(3)]
		slots := 1 + r.IntN(7)
		var offers []Offer
		for k := range 1 + r.IntN(4) {
			gpus := []int{1, 2, 4, 8}[r.IntN(4)]
			price := decimal.New(int64(50+r.IntN(1500)), -2).String()
			offers = append(offers, offer(fmt.Sprintf("o%d", k), OnDemand, gpus, r.IntN(4), price, "USD"))
		}
		var budget *Money
		if r.IntN(2) == 0 {
			budget = &Money{decimal.NewFromInt(int64(r.IntN(200))), "USD"}
		}
		in := input(p, slots, offers)
		in.Budget = budget
		plan, err := MakePlan(in)
		if err != nil {
			t.Fatal(err)
		}
		wantCover, wantCost := bruteForce(in, slots, budget)
		gotCover := min(plan.SlotsCovered, slots)
		if gotCover != wantCover || !plan.TotalExpectedCost.Amount.Equal(wantCost) {
			t.Fatalf("case %d: got cover %d cost %s, brute force cover %d cost %s\noffers %+v budget %v",
				n, gotCover, plan.TotalExpectedCost.Amount, wantCover, wantCost, offers, budget)
		}
	}
}

// bruteForce enumerates all unit counts: the best plan covers the most slots
// (capped at S) within budget, at least cost among those.
func bruteForce(in PlanInput, S int, budget *Money) (int, decimal.Decimal) {
	offers := in.Offers
	bestCover, bestCost := 0, decimal.Zero
	x := make([]int, len(offers))
	var rec func(i int)
	rec = func(i int) {
		if i == len(offers) {
			cover, cost := 0, decimal.Zero
			for k, o := range offers {
				if o.GPUsPerUnit < in.Demand.GPUsPerSlot {
					if x[k] > 0 {
						return
					}
					continue
				}
				cover += x[k] * (o.GPUsPerUnit / in.Demand.GPUsPerSlot)
				cost = cost.Add(o.UnitPrice.Amount.Mul(in.Demand.Hours).Mul(decimal.NewFromInt(int64(x[k]))))
			}
			cover = min(cover, S)
			if budget != nil && cost.GreaterThan(budget.Amount) {
				return
			}
			if cover > bestCover || (cover == bestCover && cost.LessThan(bestCost)) {
				bestCover, bestCost = cover, cost
			}
			return
		}
		for u := 0; u <= offers[i].UnitsAvailable; u++ {
			x[i] = u
			rec(i + 1)
		}
		x[i] = 0
	}
	rec(0)
	return bestCover, bestCost
}

func TestMakePlanDeterministic(t *testing.T) {
	p := testProfile()
	offers := []Offer{offer("b", OnDemand, 4, 3, "5.00", "USD"), offer("a", OnDemand, 4, 3, "5.00", "USD"), offer("c", OnDemand, 8, 1, "10.00", "USD")}
	first, _ := MakePlan(input(p, 2, offers))
	for range 20 {
		rev := []Offer{offers[2], offers[0], offers[1]}
		got, _ := MakePlan(input(p, 2, rev))
		if fmt.Sprint(got.Lines) != fmt.Sprint(first.Lines) {
			t.Fatalf("plan depends on input order:\n%v\n%v", got.Lines, first.Lines)
		}
	}
	// equal cost per slot: ties break on provider, SKU, region, id → "a" first.
	if first.Lines[0].OfferID != "a" || first.Lines[0].Units != 2 {
		t.Fatalf("tie break: got %+v", first.Lines)
	}
}
