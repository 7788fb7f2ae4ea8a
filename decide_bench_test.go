package sluice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/policy"
)

var benchNow = time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)

// benchOffers builds n offers shaped like a real market: Vast asks in many
// countries (1–8 GPUs, on-demand and bid), RunPod GPU types in 1/2/4/8-GPU
// pods, Alibaba gn7e in Beijing / East China, in USD and CNY.
func benchOffers(n int) []sluice.Offer {
	countries := []string{"US", "DE", "SI", "CA", "FR", "NL", "SE", "GB", "JP", "KR", "SG", "AU", "CN", "PL", "CZ", "NO", "FI", "ES", "IT", "BR"}
	aliRegions := []string{"cn-beijing", "cn-hangzhou", "cn-shanghai"}
	sizes := []int{1, 2, 4, 8}
	out := make([]sluice.Offer, 0, n)
	for i := range n {
		gpus := sizes[i%4]
		o := sluice.Offer{GPUsPerUnit: gpus, GPUModel: []string{"A100-80GB", "A100-40GB"}[i%2], UnitsAvailable: 1 + i%3,
			FetchedAt: benchNow, ExpiresAt: benchNow.Add(5 * time.Minute)}
		switch {
		case i%10 < 7: // Vast
			o.Provider, o.Region, o.SKU = "vast", countries[i%len(countries)], fmt.Sprint(9000000+i/2)
			o.Market = []sluice.Market{sluice.OnDemand, sluice.Spot}[i%2]
			o.UnitPrice = sluice.Money{Amount: decimal.New(int64(70+i%90)*int64(gpus), -2), Currency: "USD"}
		case i%10 < 9: // RunPod
			o.Provider, o.Region, o.SKU = "runpod", "global", fmt.Sprintf("gpu-%d", i%7)
			o.Market = []sluice.Market{sluice.OnDemand, sluice.Spot}[i%2]
			o.UnitPrice = sluice.Money{Amount: decimal.New(int64(119+i%70)*int64(gpus), -2), Currency: "USD"}
		default: // Alibaba
			o.Provider, o.Region, o.SKU = "aliyun", aliRegions[i%3], fmt.Sprintf("ecs.gn7e-%d", gpus)
			o.Market = []sluice.Market{sluice.OnDemand, sluice.Spot}[i%2]
			o.UnitPrice = sluice.Money{Amount: decimal.New(34742*int64(gpus)-int64(i%500), -3), Currency: "CNY"}
		}
		o.ID = fmt.Sprintf("%s:%d:%s", o.Provider, i, o.Market)
		out = append(out, o)
	}
	return out
}

func benchProfile() sluice.QueueProfile {
	return sluice.QueueProfile{
		Queue: "train-overseas", GPUModels: []string{"A100-80GB"}, GPUsPerSlot: 4, HoursPerSlot: decimal.NewFromInt(4),
		MaxSlots: 8, Checkpointable: true, CheckpointIntervalMinutes: 30, DataClass: "public", ExportApproved: true,
		Tier: sluice.TierEmergency, Team: "research", MaxPricePerGPUHour: sluice.MustMoney("2.50", "USD"),
	}
}

func benchDecide(b *testing.B, evaluate func(context.Context, sluice.QueueProfile, []sluice.Offer, time.Time) ([]sluice.Verdict, error)) {
	ctx := context.Background()
	offers, p := benchOffers(1000), benchProfile()
	in := sluice.PlanInput{
		Demand: sluice.NewDemand(p, 8, 0), Profile: p, Offers: offers, BillingCurrency: "USD",
		FX:                   sluice.FXTable{{Base: "USD", Quote: "CNY", Rate: decimal.RequireFromString("7.1072"), Source: "bench"}},
		InterruptionsPerHour: map[string]decimal.Decimal{"vast": decimal.RequireFromString("0.08"), "runpod": decimal.RequireFromString("0.05")},
		Now:                  benchNow,
	}
	var lines int
	for b.Loop() {
		v, err := evaluate(ctx, p, offers, benchNow)
		if err != nil {
			b.Fatal(err)
		}
		in.Verdicts = v
		plan, err := sluice.MakePlan(in)
		if err != nil {
			b.Fatal(err)
		}
		lines = len(plan.Lines)
	}
	if lines == 0 {
		b.Fatal("benchmark plan chose nothing")
	}
}

// BenchmarkDecide is policy + plan for 1,000 offers, no network: the policy
// evaluates each distinct (provider, region, city, market, GPU model) once, in
// one prepared query. Target ≤ 5 ms per decision.
func BenchmarkDecide(b *testing.B) {
	ev, err := policy.New(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	benchDecide(b, ev.Evaluate)
}

// BenchmarkDecidePerOfferPolicy is the baseline: one OPA query per offer.
// BenchmarkDecide must be ≥ 10× faster.
func BenchmarkDecidePerOfferPolicy(b *testing.B) {
	ev, err := policy.New(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	benchDecide(b, ev.EvaluateEach)
}

// BenchmarkMakePlan is the planner alone on 1,000 allowed offers.
func BenchmarkMakePlan(b *testing.B) {
	offers, p := benchOffers(1000), benchProfile()
	v := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		v[i] = sluice.Verdict{OfferID: o.ID, Allow: true, Zone: sluice.ZoneOverseas}
	}
	in := sluice.PlanInput{Demand: sluice.NewDemand(p, 8, 0), Profile: p, Offers: offers, Verdicts: v, BillingCurrency: "USD",
		FX: sluice.FXTable{{Base: "USD", Quote: "CNY", Rate: decimal.RequireFromString("7.1072"), Source: "bench"}}, Now: benchNow}
	for b.Loop() {
		if _, err := sluice.MakePlan(in); err != nil {
			b.Fatal(err)
		}
	}
}
