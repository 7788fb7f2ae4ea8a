package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// benchNow is the decision time used by the benchmarks and tests.
var benchNow = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

// benchProfile is a queue that may go anywhere (public, export approved),
// checkpoints every 30 minutes and bursts on the emergency tier, so every
// policy package has work to do and most offers are allowed.
func benchProfile() sluice.QueueProfile {
	return sluice.QueueProfile{
		Queue:                     "train-llm",
		GPUModels:                 []string{"A100-80GB", "A100-40GB"},
		GPUsPerSlot:               8,
		HoursPerSlot:              decimal.RequireFromString("6"),
		MaxSlots:                  16,
		Checkpointable:            true,
		CheckpointIntervalMinutes: 30,
		DataClass:                 "public",
		ExportApproved:            true,
		Tier:                      sluice.TierEmergency,
		Team:                      "research",
		MaxPricePerGPUHour:        sluice.MustMoney("3.50", "USD"),
	}
}

// vastHosts are Vast.ai-like host locations: country code and the cities
// hosts report in that country ("" = no city). CN hosts exercise the city
// table; "QA" is not in the region map and must be refused.
var vastHosts = []struct {
	country string
	cities  []string
}{
	{"US", []string{"Dallas", "Kansas City", "San Jose"}},
	{"CA", []string{"Montreal", "Toronto"}},
	{"DE", []string{"Frankfurt", ""}},
	{"NL", []string{"Amsterdam"}},
	{"GB", []string{"London"}},
	{"FR", []string{"Paris"}},
	{"SE", []string{"Stockholm"}},
	{"NO", []string{"Oslo"}},
	{"FI", []string{"Helsinki"}},
	{"PL", []string{"Warsaw"}},
	{"CZ", []string{"Prague"}},
	{"SI", []string{"Ljubljana"}},
	{"RO", []string{"Bucharest"}},
	{"ES", []string{"Madrid"}},
	{"JP", []string{"Tokyo"}},
	{"KR", []string{"Seoul"}},
	{"SG", []string{"Singapore"}},
	{"AU", []string{"Sydney"}},
	{"CN", []string{"Beijing", "Shanghai", "Chengdu"}},
	{"QA", []string{"Doha"}},
}

// benchOffers returns n synthetic offers shaped like a real collection:
// mostly Vast.ai asks (3 markets, 2 GPU models, ~20 countries), plus RunPod
// data centres, AWS regions, Alibaba regions and AutoDL data centres. The
// sequence is deterministic.
func benchOffers(n int) []sluice.Offer {
	rng := rand.New(rand.NewPCG(7, 11))
	models := []string{"A100-80GB", "A100-40GB"}
	markets := []sluice.Market{sluice.OnDemand, sluice.Spot, sluice.Reserved}
	type place struct{ provider, region string }
	others := []place{
		{"runpod", "US-KS-2"}, {"runpod", "US-TX-3"}, {"runpod", "EU-RO-1"}, {"runpod", "EUR-IS-1"}, {"runpod", "CA-MTL-1"}, {"runpod", "global"},
		{"aws", "us-east-1"}, {"aws", "us-west-2"}, {"aws", "eu-central-1"}, {"aws", "ap-northeast-1"}, {"aws", "cn-north-1"},
		{"aliyun", "cn-beijing"}, {"aliyun", "cn-hangzhou"}, {"aliyun", "cn-shanghai"}, {"aliyun", "cn-zhangjiakou"}, {"aliyun", "cn-hongkong"},
		{"autodl", "beijingDC1"}, {"autodl", "beijingDC2"}, {"autodl", "yangzhouDC1"}, {"autodl", "westDC2"}, {"autodl", "beijingDC3"},
	}
	offers := make([]sluice.Offer, n)
	for i := range offers {
		model := models[rng.IntN(len(models))]
		market := markets[rng.IntN(len(markets))]
		var o sluice.Offer
		if rng.IntN(100) < 80 {
			h := vastHosts[rng.IntN(len(vastHosts))]
			city := h.cities[rng.IntN(len(h.cities))]
			o = sluice.Offer{
				ID:       fmt.Sprintf("vast:%d:%s", 4000000+i, market),
				Provider: "vast", SKU: "A100 SXM4", Region: h.country, City: city,
				GPUsPerUnit: 1 << rng.IntN(4), Basis: sluice.PerOfferHour,
			}
		} else {
			p := others[rng.IntN(len(others))]
			o = sluice.Offer{
				ID:       fmt.Sprintf("%s:%s:%d:%s", p.provider, p.region, i, market),
				Provider: p.provider, SKU: "a100-sku", Region: p.region,
				GPUsPerUnit: 8, Basis: sluice.PerInstanceHour,
			}
		}
		o.GPUModel = model
		o.Market = market
		o.UnitPrice = sluice.MustMoney(fmt.Sprintf("%d.%02d", 1+rng.IntN(20), rng.IntN(100)), "USD")
		o.RawPrice = o.UnitPrice.Amount.String()
		o.UnitsAvailable = 1 + rng.IntN(4)
		o.FetchedAt = benchNow.Add(-time.Minute)
		o.ExpiresAt = benchNow.Add(4 * time.Minute)
		o.Source = "synthetic"
		offers[i] = o
	}
	return offers
}

func newBenchEvaluator(b *testing.B) *Evaluator {
	b.Helper()
	e, err := New(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func BenchmarkEvaluate1000(b *testing.B) {
	e := newBenchEvaluator(b)
	p, offers := benchProfile(), benchOffers(1000)
	ctx := context.Background()
	var d Decision
	c0 := processCPU()
	for b.Loop() {
		var err error
		if d, err = e.Decide(ctx, p, offers, benchNow); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(d.Locations), "locations")
	b.ReportMetric(float64(d.Prices), "prices")
}

func BenchmarkEvaluateEach1000(b *testing.B) {
	e := newBenchEvaluator(b)
	p, offers := benchProfile(), benchOffers(1000)
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.EvaluateEach(ctx, p, offers, benchNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileEmbedded is the cold start of the policy: read the
// embedded files, hash them, parse, check the sandbox, compile (strict) and
// prepare both queries.
func BenchmarkCompileEmbedded(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := New(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchedVsPerOffer runs, in the same iteration, the batched
// evaluation and one query per offer over the same 1,000 offers, and reports
// both times and their ratio (the target is a ratio of at least 10).
func BenchmarkBatchedVsPerOffer(b *testing.B) {
	e := newBenchEvaluator(b)
	p, offers := benchProfile(), benchOffers(1000)
	ctx := context.Background()
	var batched, each, batchedCPU, eachCPU time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), processCPU()
		if _, err := e.Decide(ctx, p, offers, benchNow); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), processCPU()
		if _, err := e.EvaluateEach(ctx, p, offers, benchNow); err != nil {
			b.Fatal(err)
		}
		batched, each = batched+t1.Sub(t0), each+time.Since(t1)
		batchedCPU, eachCPU = batchedCPU+c1-c0, eachCPU+processCPU()-c1
	}
	b.ReportMetric(float64(batched.Nanoseconds())/float64(b.N), "batched-ns/op")
	b.ReportMetric(float64(each.Nanoseconds())/float64(b.N), "per-offer-ns/op")
	b.ReportMetric(float64(each)/float64(batched), "ratio")
	// CPU time (all threads, GC included): steadier than wall time on a shared machine.
	b.ReportMetric(float64(batchedCPU.Nanoseconds())/float64(b.N), "batched-cpu-ns/op")
	b.ReportMetric(float64(eachCPU.Nanoseconds())/float64(b.N), "per-offer-cpu-ns/op")
}
