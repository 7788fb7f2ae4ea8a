package pricing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
)

// hygieneNow is the decision clock of these tests.
var hygieneNow = time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)

// testFX is the example config's rate: 1 USD = 7.1072 CNY (CFETS-style central parity).
var testFX = sluice.FXTable{{Base: "USD", Quote: "CNY", Rate: decimal.RequireFromString("7.1072"),
	AsOf: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), Source: "test"}}

// testHygiene is a band around every real A100 price in the recordings
// (0.40–8 USD per GPU-hour): the cheapest is AWS p4d spot at 5.0933 USD for
// 8 GPUs (0.6367 per GPU), the dearest Alibaba gn7e on demand at 34.742 CNY
// for 1 GPU (4.888 USD) and AWS p4de at 27.44705 USD for 8 (3.43 per GPU).
func testHygiene() *Hygiene {
	return &Hygiene{
		MinPricePerGPUHour: sluice.MustMoney("0.40", "USD"),
		MaxPricePerGPUHour: DefaultMaxPricePerGPUHour, // 8 USD
		MaxAge:             5 * time.Minute,
		KnownCurrencies:    Currencies(testFX, "USD"),
		KnownGPUModels:     []string{"A100-80GB", "A100-40GB"},
	}
}

// Real offers, as the sources normalise them from the recordings.
func runpod1x() sluice.Offer {
	return sluice.Offer{ID: "runpod:NVIDIA A100 80GB PCIe:secure:1x:on-demand", Provider: "runpod", SKU: "NVIDIA A100 80GB PCIe",
		GPUModel: "A100-80GB", GPUsPerUnit: 1, Region: "global", Market: sluice.OnDemand,
		UnitPrice: sluice.MustMoney("1.64", "USD"), Basis: sluice.PerGPUHour, RawPrice: "1.64", UnitsAvailable: 4,
		FetchedAt: hygieneNow, ExpiresAt: hygieneNow.Add(5 * time.Minute)}
}

func vast1x() sluice.Offer {
	return sluice.Offer{ID: "vast:9310001:ondemand", Provider: "vast", SKU: "9310001", GPUModel: "A100-40GB", GPUsPerUnit: 1,
		Region: "US", City: "Georgia", Market: sluice.OnDemand, UnitPrice: sluice.MustMoney("0.76", "USD"),
		Basis: sluice.PerOfferHour, RawPrice: "0.76", UnitsAvailable: 1, FetchedAt: hygieneNow, ExpiresAt: hygieneNow.Add(5 * time.Minute)}
}

func aliyun1x() sluice.Offer {
	return sluice.Offer{ID: "aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand", Provider: "aliyun", SKU: "ecs.gn7e-c16g1.4xlarge",
		GPUModel: "A100-80GB", GPUsPerUnit: 1, Region: "cn-beijing", Market: sluice.OnDemand,
		UnitPrice: sluice.MustMoney("34.742", "CNY"), Basis: sluice.PerInstanceHour, RawPrice: "34.742", UnitsAvailable: 2,
		FetchedAt: hygieneNow, ExpiresAt: hygieneNow.Add(5 * time.Minute)}
}

func awsP4d() sluice.Offer {
	return sluice.Offer{ID: "aws:us-east-1:us-east-1d:p4d.24xlarge:spot", Provider: "aws", SKU: "p4d.24xlarge",
		GPUModel: "A100-40GB", GPUsPerUnit: 8, Region: "us-east-1", Market: sluice.Spot,
		UnitPrice: sluice.MustMoney("5.0933", "USD"), MinBid: sluice.MustMoney("5.0933", "USD"), Basis: sluice.PerInstanceHour,
		RawPrice: "5.093300", UnitsAvailable: 2, FetchedAt: hygieneNow, ExpiresAt: hygieneNow.Add(5 * time.Minute)}
}

func with(o sluice.Offer, id string, f func(*sluice.Offer)) sluice.Offer {
	o.ID = id
	f(&o)
	return o
}

// TestHostileWirePrices feeds hostile price tokens through the wire readers;
// those that parse go on, as a 1-GPU USD offer, through the hygiene check.
// Each is stopped at one of the two, with the right reason.
func TestHostileWirePrices(t *testing.T) {
	h := testHygiene()
	cases := []struct {
		raw      string // the token as sent (JSON number text, or AWS-style text)
		wantWire string // WireAmount/TextAmount error ("" = parses)
		wantRule string // hygiene rule that drops the parsed value
	}{
		{"0", "", RulePriceNotPositive},
		{"0.00", "", RulePriceNotPositive},
		{"-1.2", "negative", ""},
		{"", "not a decimal", ""},
		{"NaN", "not a decimal", ""},
		{"Infinity", "not a decimal", ""},
		{"1e400", "out of range", ""},
		{"1e-31", "out of range", ""},
		{"0.0000001", "", RuleBelowBand},
		{"1.64", "", ""}, // RunPod's real 1× price: clean
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			d, err := TextAmount(c.raw)
			if got := errText(err); got != c.wantWire {
				t.Fatalf("TextAmount(%q) error %q, want %q", c.raw, got, c.wantWire)
			}
			// The same token inside a provider's JSON: "" is an empty string
			// there, not a number; the rest are the number token itself.
			doc := `{"dph_total":` + c.raw + `}`
			wantJSON := c.wantWire
			if c.raw == "" {
				doc, wantJSON = `{"dph_total":""}`, "not a JSON number"
			}
			wd, present, werr := WireAmount(gjson.Get(doc, "dph_total"))
			if got := errText(werr); got != wantJSON || !present {
				t.Fatalf("WireAmount(%s) = present %v, error %q; want present, error %q", doc, present, got, wantJSON)
			}
			if err != nil {
				return
			}
			if !wd.Equal(d) {
				t.Fatalf("WireAmount %s ≠ TextAmount %s", wd, d)
			}
			o := runpod1x()
			o.UnitPrice, o.RawPrice = sluice.Money{Amount: d, Currency: "USD"}, c.raw
			checkRules(t, h.Check(o, hygieneNow, testFX), c.wantRule)
		})
	}
	// A missing or null price is absent, not zero.
	for _, doc := range []string{`{}`, `{"dph_total":null}`} {
		if _, present, err := WireAmount(gjson.Get(doc, "dph_total")); present || err != nil {
			t.Errorf("%s: present %v err %v, want absent", doc, present, err)
		}
	}
}

// TestHygieneRules: offers that parse but cannot be true, each dropped by its rule.
func TestHygieneRules(t *testing.T) {
	h := testHygiene()
	cases := []struct {
		name  string
		offer sluice.Offer
		want  string // rule ("" = clean)
	}{
		{"runpod 1x on-demand 1.64 USD", runpod1x(), ""},
		{"vast 1x 0.76 USD", vast1x(), ""},
		{"aliyun 1x 34.742 CNY (4.888 USD)", aliyun1x(), ""},
		{"aws p4d spot 8x 5.0933 USD", awsP4d(), ""},
		{"CNY price labelled USD: 34.742 USD for one A100", with(aliyun1x(), "aliyun:cny-as-usd", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("34.742", "USD")
		}), RuleAboveBand},
		{"8×A100 at 0.08/h", with(awsP4d(), "aws:8x-0.08", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("0.08", "USD")
		}), RuleBelowBand},
		{"per-GPU price reported for the whole 8-GPU unit: 1.64/h for 8", with(runpod1x(), "runpod:8x-at-1x-price", func(o *sluice.Offer) {
			o.GPUsPerUnit, o.UnitPrice = 8, sluice.MustMoney("1.64", "USD") // 0.205 per GPU-hour
		}), RuleBelowBand},
		{"per-GPU price multiplied twice: 8 × 8 × 1.64", with(runpod1x(), "runpod:8x-squared", func(o *sluice.Offer) {
			o.GPUsPerUnit, o.UnitPrice = 8, sluice.MustMoney("104.96", "USD") // 13.12 per GPU-hour
		}), RuleAboveBand},
		{"exactly the floor: 8 GPUs at 3.20 USD", with(awsP4d(), "aws:floor", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("3.20", "USD")
		}), ""},
		{"just under the floor: 8 GPUs at 3.1999999 USD", with(awsP4d(), "aws:under-floor", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("3.1999999", "USD")
		}), RuleBelowBand},
		{"exactly the ceiling: 1 GPU at 8 USD", with(runpod1x(), "runpod:ceiling", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("8.00", "USD")
		}), ""},
		{"just over the ceiling: 4 GPUs at 32.0000001 USD", with(runpod1x(), "runpod:over", func(o *sluice.Offer) {
			o.GPUsPerUnit, o.UnitPrice = 4, sluice.MustMoney("32.0000001", "USD")
		}), RuleAboveBand},
		{"Alibaba spot CNY read as USD: 9.38 USD for 1 GPU", with(aliyun1x(), "aliyun:spot-cny-as-usd", func(o *sluice.Offer) {
			o.Market, o.UnitPrice = sluice.Spot, sluice.MustMoney("9.38", "USD")
		}), RuleAboveBand},
		{"floor through FX: 2.84288 CNY = 0.40 USD", with(aliyun1x(), "aliyun:floor", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("2.84288", "CNY")
		}), ""},
		{"under the floor through FX: 2.84287 CNY", with(aliyun1x(), "aliyun:under-floor", func(o *sluice.Offer) {
			o.UnitPrice = sluice.MustMoney("2.84287", "CNY")
		}), RuleBelowBand},
		{"zero price", with(vast1x(), "vast:zero", func(o *sluice.Offer) { o.UnitPrice = sluice.MustMoney("0", "USD") }), RulePriceNotPositive},
		{"negative price", with(vast1x(), "vast:neg", func(o *sluice.Offer) {
			o.UnitPrice = sluice.Money{Amount: decimal.RequireFromString("-1.2"), Currency: "USD"}
		}), RulePriceNotPositive},
		{"unknown currency EUR", with(vast1x(), "vast:eur", func(o *sluice.Offer) { o.UnitPrice.Currency = "EUR" }), RuleCurrency},
		{"lower-case currency", with(vast1x(), "vast:usd", func(o *sluice.Offer) { o.UnitPrice.Currency = "usd" }), RuleCurrency},
		{"no currency", with(vast1x(), "vast:nocur", func(o *sluice.Offer) { o.UnitPrice.Currency = "" }), RuleCurrency},
		{"10 minutes old", with(vast1x(), "vast:old", func(o *sluice.Offer) { o.FetchedAt = hygieneNow.Add(-10 * time.Minute) }), RuleStale},
		{"no FetchedAt", with(vast1x(), "vast:nostamp", func(o *sluice.Offer) { o.FetchedAt = time.Time{} }), RuleStale},
		{"5 minutes old exactly", with(vast1x(), "vast:5m", func(o *sluice.Offer) { o.FetchedAt = hygieneNow.Add(-5 * time.Minute) }), ""},
		{"10 s ahead (skew)", with(vast1x(), "vast:skew", func(o *sluice.Offer) { o.FetchedAt = hygieneNow.Add(10 * time.Second) }), ""},
		{"an hour in the future", with(vast1x(), "vast:future", func(o *sluice.Offer) { o.FetchedAt = hygieneNow.Add(time.Hour) }), RuleFuture},
		{"unknown GPU model", with(vast1x(), "vast:h100", func(o *sluice.Offer) { o.GPUModel = "H100-80GB" }), RuleGPUModel},
		{"0 GPUs per unit", with(vast1x(), "vast:0gpu", func(o *sluice.Offer) { o.GPUsPerUnit = 0 }), RuleGPUsPerUnit},
		{"17 GPUs per unit", with(vast1x(), "vast:17gpu", func(o *sluice.Offer) {
			o.GPUsPerUnit, o.UnitPrice = 17, sluice.MustMoney("12.92", "USD")
		}), RuleGPUsPerUnit},
		{"market preemptible", with(vast1x(), "vast:preempt", func(o *sluice.Offer) { o.Market = "preemptible" }), RuleMarket},
		{"no market", with(vast1x(), "vast:nomarket", func(o *sluice.Offer) { o.Market = "" }), RuleMarket},
		{"no ID", with(vast1x(), "", func(*sluice.Offer) {}), RuleMissingField},
		{"no provider", with(vast1x(), "vast:noprov", func(o *sluice.Offer) { o.Provider = "" }), RuleMissingField},
		{"blank region", with(vast1x(), "vast:noregion", func(o *sluice.Offer) { o.Region = " " }), RuleMissingField},
		{"no basis", with(vast1x(), "vast:nobasis", func(o *sluice.Offer) { o.Basis = "" }), RuleBasis},
		{"unknown basis", with(vast1x(), "vast:month", func(o *sluice.Offer) { o.Basis = "gpu-month" }), RuleBasis},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRules(t, h.Check(c.offer, hygieneNow, testFX), c.want)
		})
	}
}

// TestHygieneNoFXRate: a known currency with no rate to the band's is dropped.
func TestHygieneNoFXRate(t *testing.T) {
	h := testHygiene()
	h.KnownCurrencies = []string{"USD", "CNY", "EUR"}
	o := with(vast1x(), "vast:eur", func(o *sluice.Offer) { o.UnitPrice.Currency = "EUR" })
	checkRules(t, h.Check(o, hygieneNow, testFX), RuleNoFXRate)
}

// TestHygieneDefaultCurrencies: without KnownCurrencies the FX table's and the
// band's currencies are known.
func TestHygieneDefaultCurrencies(t *testing.T) {
	h := testHygiene()
	h.KnownCurrencies = nil
	checkRules(t, h.Check(aliyun1x(), hygieneNow, testFX), "")
	checkRules(t, h.Check(with(vast1x(), "x", func(o *sluice.Offer) { o.UnitPrice.Currency = "JPY" }), hygieneNow, testFX), RuleCurrency)
	if got := strings.Join(Currencies(testFX, "USD"), ","); got != "CNY,USD" {
		t.Errorf("Currencies = %s", got)
	}
}

// TestCollectAppliesHygiene: the collection keeps the good offers and drops
// the hostile ones into their own source's report, with the rule.
func TestCollectAppliesHygiene(t *testing.T) {
	list := func(name string, offers ...sluice.Offer) source {
		return source{name, func(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) { return offers, nil, nil }}
	}
	cnyAsUSD := with(aliyun1x(), "aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:usd", func(o *sluice.Offer) { o.UnitPrice.Currency = "USD" })
	eightCheap := with(awsP4d(), "aws:us-east-1:us-east-1a:p4d.24xlarge:spot", func(o *sluice.Offer) { o.UnitPrice = sluice.MustMoney("0.08", "USD") })
	perInstance := with(runpod1x(), "runpod:NVIDIA A100 80GB PCIe:secure:8x:on-demand", func(o *sluice.Offer) { o.GPUsPerUnit = 8 })
	stale := with(vast1x(), "vast:9310002:ondemand", func(o *sluice.Offer) { o.FetchedAt = hygieneNow.Add(-time.Hour) })
	c := &Collector{
		Hygiene: testHygiene(), FX: testFX, Now: func() time.Time { return hygieneNow },
		SourceTimeout: time.Second, OverallTimeout: 2 * time.Second,
		Sources: []sluice.QuoteSource{
			list("aliyun", aliyun1x(), cnyAsUSD),
			list("aws", awsP4d(), eightCheap),
			list("runpod", runpod1x(), perInstance),
			list("vast", vast1x(), stale, vast1x()), // and a duplicate
		},
	}
	offers, reports := c.Collect(context.Background())
	var ids []string
	for _, o := range offers {
		ids = append(ids, o.ID)
	}
	want := []string{aliyun1x().ID, awsP4d().ID, runpod1x().ID, vast1x().ID}
	if got := strings.Join(ids, " | "); got != strings.Join(want, " | ") {
		t.Fatalf("offers\n%s\nwant\n%s", got, strings.Join(want, " | "))
	}
	wantDrops := map[string][][2]string{
		"aliyun": {{cnyAsUSD.ID, RuleAboveBand}},
		"aws":    {{eightCheap.ID, RuleBelowBand}},
		"runpod": {{perInstance.ID, RuleBelowBand}},
		"vast":   {{stale.ID, RuleStale}, {vast1x().ID, "duplicate offer id"}},
	}
	for _, r := range reports {
		w := wantDrops[r.Provider]
		if r.Error != "" || r.Offers != 1 || len(r.Dropped) != len(w) {
			t.Errorf("%s report %+v", r.Provider, r)
			continue
		}
		for i, d := range r.Dropped {
			if d.Provider != r.Provider || d.Ref != w[i][0] || !strings.HasPrefix(d.Reason, w[i][1]) {
				t.Errorf("%s dropped %+v, want ref %s reason %s…", r.Provider, d, w[i][0], w[i][1])
			}
		}
	}
	t.Logf("e.g. %s", reports[0].Dropped[0].Reason)
}

// TestCollectSlowSource: a source that overruns its own deadline does not hold
// the collection; its report says timeout and the others' offers stand.
func TestCollectSlowSource(t *testing.T) {
	const per = 200 * time.Millisecond
	for _, honours := range []bool{true, false} {
		slow := source{"slow", func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
			if !honours {
				time.Sleep(2 * time.Second)
				return nil, nil, nil
			}
			select {
			case <-time.After(2 * time.Second):
				return []sluice.Offer{vast1x()}, nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}}
		fast := source{"runpod", func(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
			time.Sleep(20 * time.Millisecond)
			return []sluice.Offer{runpod1x()}, nil, nil
		}}
		c := &Collector{Sources: []sluice.QuoteSource{fast, slow}, SourceTimeout: per, OverallTimeout: 3 * time.Second,
			Hygiene: testHygiene(), FX: testFX, Now: func() time.Time { return hygieneNow }}
		start := time.Now()
		offers, reports := c.Collect(context.Background())
		took := time.Since(start)
		if took > per+250*time.Millisecond {
			t.Errorf("honours ctx %v: Collect took %s, want ≤ %s", honours, took, per+250*time.Millisecond)
		}
		if len(offers) != 1 || offers[0].ID != runpod1x().ID {
			t.Errorf("honours ctx %v: offers %+v", honours, offers)
		}
		if r := reports[1]; r.ErrorClass != ClassTimeout || r.Offers != 0 || r.LatencyMS < per.Milliseconds() {
			t.Errorf("honours ctx %v: slow report %+v, want class timeout after ≥ %s", honours, r, per)
		}
		if r := reports[0]; r.Error != "" || r.Offers != 1 {
			t.Errorf("honours ctx %v: fast report %+v", honours, r)
		}
	}
}

func checkRules(t *testing.T, got []string, want string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Errorf("dropped: %q, want clean", got)
		}
		return
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], want+": ") {
		t.Errorf("reasons %q, want exactly one %s", got, want)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
