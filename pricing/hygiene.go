package pricing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Hygiene rules. A dropped offer's reason starts with the rule that refused it
// ("hygiene.above_band: …"); several broken rules are joined with "; ".
const (
	RuleMissingField     = "hygiene.missing_field"
	RuleMarket           = "hygiene.market"
	RuleBasis            = "hygiene.basis"
	RuleGPUsPerUnit      = "hygiene.gpus_per_unit"
	RuleGPUModel         = "hygiene.gpu_model"
	RulePriceNotPositive = "hygiene.price_not_positive"
	RuleCurrency         = "hygiene.currency"
	RuleNoFXRate         = "hygiene.no_fx_rate"
	RuleBelowBand        = "hygiene.below_band"
	RuleAboveBand        = "hygiene.above_band"
	RuleStale            = "hygiene.stale"
	RuleFuture           = "hygiene.future"
)

// DefaultMaxSkew is how far in the future an offer's FetchedAt may be (clocks
// of sources and of the decision differ a little) when Hygiene.MaxSkew is 0.
const DefaultMaxSkew = 30 * time.Second

// DefaultMaxPricePerGPUHour is a ceiling for A100 prices per GPU-hour: the
// dearest real A100 figure in the price data is AWS p4de.24xlarge on demand
// before the 2025 cut, 40.96575 USD for 8 GPUs (5.12 per GPU), and Alibaba
// gn7e on demand is 34.742 CNY (4.89 USD) per GPU. At 8 USD it still catches
// every Alibaba CNY price read as USD (the cheapest, spot, is 9.38 CNY per GPU).
var DefaultMaxPricePerGPUHour = sluice.Money{Amount: decimal.NewFromInt(8), Currency: "USD"}

// Hygiene is the sanity check every offer passes on its way from a source to
// policy (Collector.Hygiene). It catches what a single source's parser
// cannot see: a price in the wrong currency or on the wrong basis, a stale
// cache, a model or market the rest of Sluice does not know. An offer that
// breaks a rule is dropped into its source's SourceReport.Dropped with the
// rule and the values; the others go on.
//
// Money comparisons are exact: the per-GPU-hour band is multiplied by
// GPUsPerUnit (never the price divided), and the offer's price is converted
// to the band's currency with Collector.FX (the FX table's one rounding point,
// sluice.FXScale places, only when converting quote → base).
type Hygiene struct {
	// MinPricePerGPUHour is the lowest believable price per GPU-hour: an
	// offer with UnitPrice < Min × GPUsPerUnit is dropped (RuleBelowBand).
	// It catches a unit price read as per-GPU, a per-instance price spread
	// over the wrong GPU count, a scale slip (0.0000001). Zero Money: no floor.
	MinPricePerGPUHour sluice.Money
	// MaxPricePerGPUHour is the highest believable price per GPU-hour: an
	// offer with UnitPrice > Max × GPUsPerUnit is dropped (RuleAboveBand).
	// It catches a CNY price labelled USD (34.742 "USD" for one A100) or a
	// per-unit price multiplied by the GPU count twice. Zero Money: no ceiling.
	MaxPricePerGPUHour sluice.Money
	// MaxAge is how old an offer's FetchedAt may be against the collector's
	// clock (RuleStale); 0 means no age check. An offer from a cache older than
	// this is not a live quote.
	MaxAge time.Duration
	// MaxSkew is how far in the future FetchedAt may be (RuleFuture); 0 means
	// DefaultMaxSkew. A quote from the future is a broken clock or a made-up
	// timestamp, and would outlive its TTL.
	MaxSkew time.Duration
	// KnownCurrencies are the currencies an offer may be priced in
	// (RuleCurrency). Empty: every currency of Collector.FX plus those of the
	// band. Build it with Currencies(fx, billing).
	KnownCurrencies []string
	// KnownGPUModels are the canonical GPU models (RuleGPUModel), e.g.
	// config.GPUModels. Empty: no model check.
	KnownGPUModels []string
}

// Currencies returns the currencies of fx (bases and quotes) and billing,
// sorted and without repeats: the KnownCurrencies of a Hygiene.
func Currencies(fx sluice.FXTable, billing string) []string {
	var out []string
	if billing != "" {
		out = append(out, billing)
	}
	for _, r := range fx {
		out = append(out, r.Base, r.Quote)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Check returns why offer o must not reach policy, one "rule: detail" text per
// broken rule (nil when it is clean). now is the decision clock; fx converts
// the price to the band's currency.
func (h *Hygiene) Check(o sluice.Offer, now time.Time, fx sluice.FXTable) []string {
	var out []string
	bad := func(rule, format string, args ...any) {
		out = append(out, rule+": "+fmt.Sprintf(format, args...))
	}

	// Identity: an offer without an ID cannot be referred to (dedup, verdicts,
	// the record), without a Provider it cannot be placed or priced for
	// interruptions, and without a Region policy cannot place it in a
	// residency zone (an empty region must not slip past a residency rule).
	for _, f := range []struct{ name, v string }{{"ID", o.ID}, {"Provider", o.Provider}, {"Region", o.Region}} {
		if strings.TrimSpace(f.v) == "" {
			bad(RuleMissingField, "%s is empty", f.name)
		}
	}
	// Market must be on-demand, spot or reserved: the planner's spot rules and
	// policy's tier rules key on it, and an unknown market would match none.
	if !o.Market.Valid() {
		bad(RuleMarket, "market %q: not on-demand, spot or reserved", o.Market)
	}
	// Basis must say what the wire price was per (GPU, instance or offer hour):
	// without it nobody can tell whether UnitPrice was normalised, which is the
	// mistake the band exists to catch.
	switch o.Basis {
	case sluice.PerGPUHour, sluice.PerInstanceHour, sluice.PerOfferHour:
	default:
		bad(RuleBasis, "price basis %q: missing or unknown", o.Basis)
	}
	// GPUsPerUnit must be 1..sluice.MaxGPUsPerUnit: no real node has more, and
	// the per-GPU band below multiplies by it.
	gpusOK := o.GPUsPerUnit >= 1 && o.GPUsPerUnit <= sluice.MaxGPUsPerUnit
	if !gpusOK {
		bad(RuleGPUsPerUnit, "%d GPUs per unit: outside 1..%d", o.GPUsPerUnit, sluice.MaxGPUsPerUnit)
	}
	// GPUModel must be a canonical model Sluice knows: a parser that passed an
	// unknown model through ("A100", "H100-80GB") would be compared with
	// prices of another card.
	if len(h.KnownGPUModels) > 0 && !slices.Contains(h.KnownGPUModels, o.GPUModel) {
		bad(RuleGPUModel, "GPU model %q: not one of %s", o.GPUModel, strings.Join(h.KnownGPUModels, ", "))
	}
	// FetchedAt must be recent: older than MaxAge is a stale cache, later than
	// now + MaxSkew a broken clock. A zero FetchedAt counts as stale.
	if h.MaxAge > 0 && (o.FetchedAt.IsZero() || now.Sub(o.FetchedAt) > h.MaxAge) {
		bad(RuleStale, "fetched at %s: older than %s at %s", stamp(o.FetchedAt), h.MaxAge, stamp(now))
	}
	skew := h.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	if !o.FetchedAt.IsZero() && o.FetchedAt.Sub(now) > skew {
		bad(RuleFuture, "fetched at %s: more than %s after %s", stamp(o.FetchedAt), skew, stamp(now))
	}

	// The price must be positive: zero is a missing price read as 0, and
	// nothing is sold at a negative price.
	price := o.UnitPrice
	if !price.Amount.IsPositive() {
		bad(RulePriceNotPositive, "unit price %s: not positive", price)
		return out
	}
	// Currency must be one Sluice can convert (the FX table's and the
	// billing currency): anything else cannot be compared or budgeted.
	known := h.KnownCurrencies
	if len(known) == 0 {
		known = Currencies(fx, h.MinPricePerGPUHour.Currency)
		if c := h.MaxPricePerGPUHour.Currency; c != "" {
			known = append(known, c)
		}
	}
	if !slices.Contains(known, price.Currency) {
		bad(RuleCurrency, "currency %q: not one of %s", price.Currency, strings.Join(known, ", "))
		return out
	}
	if !gpusOK {
		return out // the band is per GPU
	}
	// The price per GPU-hour (UnitPrice ÷ GPUsPerUnit) must lie within
	// [Min, Max]; compared exactly as UnitPrice against band × GPUsPerUnit,
	// in the band's currency.
	for _, b := range []struct {
		rule  string
		band  sluice.Money
		sign  int
		words string
	}{
		{RuleBelowBand, h.MinPricePerGPUHour, -1, "below the floor"},
		{RuleAboveBand, h.MaxPricePerGPUHour, +1, "above the ceiling"},
	} {
		if !b.band.IsSet() {
			continue
		}
		limit := b.band.MulInt(o.GPUsPerUnit)
		conv, _, err := fx.Convert(price, b.band.Currency)
		if err != nil {
			bad(RuleNoFXRate, "%s: cannot compare with the band", err)
			break
		}
		if conv.Cmp(limit) == b.sign {
			shown := price.String()
			if conv.Currency != price.Currency {
				shown += " (" + conv.String() + ")"
			}
			bad(b.rule, "%s per unit-hour for %d GPU(s) is %s %s per GPU-hour × %d = %s: not believed",
				shown, o.GPUsPerUnit, b.words, b.band, o.GPUsPerUnit, limit)
		}
	}
	return out
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "(none)"
	}
	return t.UTC().Format(time.RFC3339)
}

// offerRef names an offer in a DroppedOffer: its ID, else what identifies it.
func offerRef(o sluice.Offer, i int) string {
	if o.ID != "" {
		return o.ID
	}
	return o.Provider + ":" + o.SKU + "#" + strconv.Itoa(i)
}
