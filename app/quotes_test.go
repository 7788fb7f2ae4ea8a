package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/pricing"
)

// TestReplayQuotesClean: with the recordings in testdata/replay, every
// enabled source answers without error, and each gives offers.
func TestReplayQuotesClean(t *testing.T) {
	a := openTest(t)
	offers, reports := a.Burst.Quotes.Collect(context.Background())
	if len(reports) == 0 || len(offers) == 0 {
		t.Fatalf("%d offers from %d sources", len(offers), len(reports))
	}
	for _, r := range reports {
		if r.Error != "" || r.ErrorClass != "" {
			t.Errorf("%s: error %q (class %q)", r.Provider, r.Error, r.ErrorClass)
		}
		if r.Offers == 0 {
			t.Errorf("%s: no offers", r.Provider)
		}
	}
}

// TestReplayQuotesPassHygiene: the hygiene the lead is to wire into Open
// (band from the config's floor to pricing.DefaultMaxPricePerGPUHour, quote
// age up to the TTL, the config's currencies and GPU models, the decision
// clock) drops none of the real recorded offers — only the drops the sources
// already make themselves remain.
func TestReplayQuotesPassHygiene(t *testing.T) {
	a := openTest(t)
	base, ok := a.Burst.Quotes.(*pricing.Collector)
	if !ok {
		t.Fatalf("Quotes is %T, want *pricing.Collector", a.Burst.Quotes)
	}
	_, plain := base.Collect(context.Background())

	c := *base
	cfg := a.Config
	c.FX, c.Now = cfg.FX, func() time.Time { return decisionAt }
	c.Hygiene = &pricing.Hygiene{
		MinPricePerGPUHour: cfg.Quotes.MinPricePerGPUHour,
		MaxPricePerGPUHour: pricing.DefaultMaxPricePerGPUHour,
		MaxAge:             cfg.Quotes.TTL,
		KnownCurrencies:    pricing.Currencies(cfg.FX, cfg.BillingCurrency),
		KnownGPUModels:     config.GPUModels,
	}
	offers, reports := c.Collect(context.Background())
	if len(offers) == 0 {
		t.Fatal("no offers")
	}
	for i, r := range reports {
		if r.Error != "" || r.Offers != plain[i].Offers || len(r.Dropped) != len(plain[i].Dropped) {
			t.Errorf("%s: %d offers, %d dropped with hygiene; %d, %d without", r.Provider, r.Offers, len(r.Dropped), plain[i].Offers, len(plain[i].Dropped))
		}
		for _, d := range r.Dropped {
			if strings.HasPrefix(d.Reason, "hygiene.") {
				t.Errorf("%s: %s dropped: %s", r.Provider, d.Ref, d.Reason)
			}
		}
	}
}
