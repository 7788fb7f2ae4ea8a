package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/policy"
)

// PerGPUScale is the number of decimal places of the per-GPU-hour prices
// `sluice quotes` shows. Each is an exact quotient rounded once, half away
// from zero (decimal.DivRound):
//
//	original currency: unit price ÷ GPUs per unit
//	billing currency:  unit price × rate ÷ GPUs      (offer in the rate's base)
//	                   unit price ÷ (rate × GPUs)    (offer in the rate's quote)
//
// with the config's FX table (1 base = rate quote). A decision does its own
// arithmetic (per unit, at sluice.FXScale); these figures are for reading.
const PerGPUScale = 10

// zoneProfile is the profile the quotes command evaluates policy with, only
// to read each verdict's Zone (the residency zone of the offer's region, from
// policy/data/regions.json and cities.json). The zone does not depend on the
// profile; this one (public data, export approved, emergency tier,
// checkpointable) is the most permissive, and Allow and Reasons are ignored.
var zoneProfile = sluice.QueueProfile{
	Queue: "sluice-quotes", GPUModels: config.GPUModels, GPUsPerSlot: 1, HoursPerSlot: decimal.NewFromInt(1),
	MaxSlots: 1, Checkpointable: true, CheckpointIntervalMinutes: 30, DataClass: "public", ExportApproved: true,
	Tier: sluice.TierEmergency, Team: "sluice-quotes",
}

// unmapped is the zone shown for a region policy does not map.
const unmapped = "unmapped"

// zoneOrder is the column order of the counts table.
var zoneOrder = []string{string(sluice.ZoneBeijing), string(sluice.ZoneEastChina), string(sluice.ZoneCNOther), string(sluice.ZoneOverseas), unmapped}

// quoteLine is one offer as `sluice quotes` prints it.
type quoteLine struct {
	OfferID  string        `json:"offer_id"`
	Provider string        `json:"provider"`
	SKU      string        `json:"sku"`
	Region   string        `json:"region"`
	City     string        `json:"city,omitempty"`
	Zone     string        `json:"zone"`
	Market   sluice.Market `json:"market"`
	GPUs     int           `json:"gpus_per_unit"`
	// PerGPUHour is in the offer's own currency; PerGPUHourBilling in the
	// billing currency (null when the FX table has no rate for it).
	PerGPUHour        sluice.Money  `json:"price_per_gpu_hour"`
	PerGPUHourBilling *sluice.Money `json:"price_per_gpu_hour_billing"`
	UnitPrice         sluice.Money  `json:"unit_price"`
	RawPrice          string        `json:"raw_price"`
	Basis             string        `json:"price_basis"`
	AgeMS             int64         `json:"age_ms"`
	Units             int           `json:"units_available"`
	FetchedAt         time.Time     `json:"fetched_at"`
	ExpiresAt         time.Time     `json:"expires_at"`
}

// quotesReport is the --json document.
type quotesReport struct {
	At              time.Time             `json:"at"`
	BillingCurrency string                `json:"billing_currency"`
	FX              sluice.FXTable        `json:"fx"`
	PerGPUScale     int                   `json:"per_gpu_scale"`
	Offers          []quoteLine           `json:"offers"`
	Sources         []sluice.SourceReport `json:"sources"`
	// Counts is offers per provider and zone.
	Counts map[string]map[string]int `json:"counts"`
}

func quotes(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"quotes", stderr}
	fs := flag.NewFlagSet("quotes", flag.ContinueOnError)
	configPath := configFlag(fs)
	replayDir := fs.String("replay", "", replayUsage)
	asJSON := fs.Bool("json", false, "print offers, sources and counts as JSON")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.fail(exitBad, "unexpected argument %q", fs.Arg(0))
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return c.fail(exitBad, "%v", err)
	}
	offers, reports, err := app.Quotes(ctx, options(cfg, *replayDir, ""))
	if err != nil {
		return c.fail(exitCode(err), "%v", err)
	}
	now := clock.Now()
	ev, err := policy.New(ctx)
	if err != nil {
		return c.fail(exitErr, "preparing policy: %v", err)
	}
	verdicts, err := ev.Evaluate(ctx, zoneProfile, offers, now)
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	rep := quotesReport{At: now, BillingCurrency: cfg.BillingCurrency, FX: cfg.FX, PerGPUScale: PerGPUScale,
		Offers: make([]quoteLine, 0, len(offers)), Sources: reports, Counts: map[string]map[string]int{}}
	for i, o := range offers {
		l := quoteLine{OfferID: o.ID, Provider: o.Provider, SKU: o.SKU, Region: o.Region, City: o.City,
			Zone: string(verdicts[i].Zone), Market: o.Market, GPUs: o.GPUsPerUnit, UnitPrice: o.UnitPrice,
			RawPrice: o.RawPrice, Basis: string(o.Basis), AgeMS: now.Sub(o.FetchedAt).Milliseconds(),
			Units: o.UnitsAvailable, FetchedAt: o.FetchedAt, ExpiresAt: o.ExpiresAt}
		if l.Zone == "" {
			l.Zone = unmapped
		}
		l.PerGPUHour, l.PerGPUHourBilling = perGPU(o, cfg.FX, cfg.BillingCurrency)
		rep.Offers = append(rep.Offers, l)
		if rep.Counts[l.Provider] == nil {
			rep.Counts[l.Provider] = map[string]int{}
		}
		rep.Counts[l.Provider][l.Zone]++
	}
	// Cheapest first within a provider (billing price, then own price), ties on offer id.
	slices.SortStableFunc(rep.Offers, func(a, b quoteLine) int {
		return cmp.Or(strings.Compare(a.Provider, b.Provider), cmpBilling(a.PerGPUHourBilling, b.PerGPUHourBilling),
			a.PerGPUHour.Amount.Cmp(b.PerGPUHour.Amount), strings.Compare(a.OfferID, b.OfferID))
	})
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return c.fail(exitErr, "%v", err)
		}
	} else {
		printQuotes(stdout, rep)
	}
	answered := 0
	for _, r := range reports {
		if r.Error == "" || r.Offers > 0 {
			answered++
		}
	}
	if answered == 0 {
		return c.fail(exitErr, "no quote source answered (%d tried)", len(reports))
	}
	return exitOK
}

// perGPU returns the offer's price per GPU-hour in its own currency and in
// billing (nil when there is no rate), each rounded once to PerGPUScale places.
func perGPU(o sluice.Offer, fx sluice.FXTable, billing string) (sluice.Money, *sluice.Money) {
	gpus := decimal.NewFromInt(int64(max(o.GPUsPerUnit, 1)))
	own := sluice.Money{Amount: o.UnitPrice.Amount.DivRound(gpus, PerGPUScale), Currency: o.UnitPrice.Currency}
	if o.UnitPrice.Currency == billing {
		return own, &own
	}
	_, rate, err := fx.Convert(o.UnitPrice, billing)
	if err != nil || rate == nil {
		return own, nil
	}
	var amount decimal.Decimal
	if rate.Base == o.UnitPrice.Currency { // base → quote: multiply
		amount = o.UnitPrice.Amount.Mul(rate.Rate).DivRound(gpus, PerGPUScale)
	} else { // quote → base: divide
		amount = o.UnitPrice.Amount.DivRound(rate.Rate.Mul(gpus), PerGPUScale)
	}
	return own, &sluice.Money{Amount: amount, Currency: billing}
}

// cmpBilling orders known billing prices before unknown ones.
func cmpBilling(a, b *sluice.Money) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Amount.Cmp(b.Amount)
}

func printQuotes(w io.Writer, rep quotesReport) {
	fmt.Fprintf(w, "quotes    %d offers from %d sources at %s; prices per GPU-hour, rounded to %d places\n",
		len(rep.Offers), len(rep.Sources), rep.At.UTC().Format(time.RFC3339), rep.PerGPUScale)
	for _, fx := range rep.FX {
		fmt.Fprintf(w, "fx        1 %s = %s %s (as of %s, %s)\n", fx.Base, fx.Rate, fx.Quote, fx.AsOf.Format(time.DateOnly), fx.Source)
	}
	if len(rep.Offers) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "provider\tsku\tregion\tzone\tmarket\tGPUs\t%s/GPU-h\toriginal/GPU-h\tage\tunits\toffer\n", rep.BillingCurrency)
		for _, l := range rep.Offers {
			billing := "no FX rate"
			if l.PerGPUHourBilling != nil {
				billing = l.PerGPUHourBilling.Amount.String()
			}
			region := l.Region
			if l.City != "" {
				region += " (" + l.City + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\n", l.Provider, l.SKU, region, l.Zone, l.Market, l.GPUs,
				billing, l.PerGPUHour, (time.Duration(l.AgeMS) * time.Millisecond).String(), l.Units, l.OfferID)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "source\toffers\tdropped\terror\tlatency")
	for _, s := range rep.Sources {
		status := "ok"
		if s.Error != "" {
			status = s.ErrorClass + ": " + s.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d ms\n", s.Provider, s.Offers, len(s.Dropped), status, s.LatencyMS)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var zones []string
	for _, z := range zoneOrder {
		for _, c := range rep.Counts {
			if c[z] > 0 {
				zones = append(zones, z)
				break
			}
		}
	}
	providers := make([]string, 0, len(rep.Counts))
	for p := range rep.Counts {
		providers = append(providers, p)
	}
	slices.Sort(providers)
	fmt.Fprintf(tw, "offers\t%s\ttotal\n", strings.Join(zones, "\t"))
	colTotal := map[string]int{}
	for _, p := range providers {
		fmt.Fprintf(tw, "%s\t", p)
		total := 0
		for _, z := range zones {
			n := rep.Counts[p][z]
			fmt.Fprintf(tw, "%d\t", n)
			total += n
			colTotal[z] += n
		}
		fmt.Fprintf(tw, "%d\n", total)
	}
	fmt.Fprint(tw, "total\t")
	for _, z := range zones {
		fmt.Fprintf(tw, "%d\t", colTotal[z])
	}
	fmt.Fprintf(tw, "%d\n", len(rep.Offers))
	tw.Flush()
}
