package vast

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// Currency of every Vast price (providers.md §0).
const Currency = "USD"

// gpu_ram bounds, MB per GPU (providers.md §3: "distinguish 40/80 GB via
// gpu_ram"). Vast reports 40960 for an A100 40GB and 81920 for an 80GB; a
// value outside ramMin..ramMax is not a believable GPU at all, and one inside
// it but outside both bands is not an A100.
var (
	ramMin   = decimal.NewFromInt(30000)
	ramMax   = decimal.NewFromInt(200000)
	ram40Min = decimal.NewFromInt(30000)
	ram40Max = decimal.NewFromInt(50000)
	ram80Min = decimal.NewFromInt(70000)
	ram80Max = decimal.NewFromInt(90000)
)

// MaxGPUs is the most GPUs one Vast ask may have: machines top out at 8 GPUs
// today and at 16 in the largest chassis; more is not a real machine.
const MaxGPUs = 16

var (
	askIDRE   = regexp.MustCompile(`^[0-9]{1,19}$`)
	countRE   = regexp.MustCompile(`^[1-9][0-9]{0,3}$`)
	countryRE = regexp.MustCompile(`^[A-Z]{2}$`)
)

// continents are the continent codes some geolocation strings end with
// ("Oregon, US, NA"); the country code then sits before them.
var continents = map[string]bool{"AF": true, "AN": true, "AS": true, "EU": true, "NA": true, "OC": true, "SA": true}

func marketOf(searchType string) (sluice.Market, error) {
	switch searchType {
	case TypeOnDemand:
		return sluice.OnDemand, nil
	case TypeBid:
		return sluice.Spot, nil
	case TypeReserved:
		return sluice.Reserved, nil
	}
	return "", fmt.Errorf("vast: search type %q: unsupported (want %q, %q or %q)", searchType, TypeOnDemand, TypeBid, TypeReserved)
}

// MaxTermHours bounds a reserved offer's term read from duration: ten years.
// A longer duration is not a real listing and is dropped.
const MaxTermHours = 10 * 365 * 24

var secondsPerHour = decimal.NewFromInt(3600)

// termHours reads a reserved offer's duration (seconds, a JSON number that
// may carry a fraction) as whole hours, rounded down. Missing or null is 0
// (no term known). why is set for a value that cannot be read or is beyond
// MaxTermHours.
func termHours(r gjson.Result) (hours int, why string) {
	d, present, err := pricing.WireAmount(r)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("duration %q: %v", r.Raw, err)
	case !present:
		return 0, ""
	}
	h := d.Div(secondsPerHour).Floor()
	if h.Cmp(decimal.NewFromInt(MaxTermHours)) > 0 {
		return 0, fmt.Sprintf("duration %s: more than %d hours", r.Raw, MaxTermHours)
	}
	return int(h.IntPart()), ""
}

// ParseBundles normalises one bundles search response ({"offers":[…]}) for
// searchType ("ondemand", "bid" or "reserved") into offers. One Offer per ask:
//
//   - ID "vast:<id>:<ondemand|bid|reserved>"; SKU is the ask id alone ("4821007"), so the
//     ondemand, bid and reserved offers of the same ask share a CapacityKey
//     (provider, SKU, region, GPUs per unit) and spot can be compared with its
//     on-demand twin. The size is in GPUModel and GPUsPerUnit.
//   - GPUsPerUnit num_gpus, 1..MaxGPUs (16); a unit is the whole ask.
//   - ondemand: Market on-demand, UnitPrice = dph_total (USD per offer-hour),
//     RawPrice its JSON token, MinBid zero Money.
//   - bid: Market spot, UnitPrice = MinBid = min_bid (USD per offer-hour, the
//     current minimum bid for the whole ask; providers.md §3); an offer with no
//     or zero min_bid is dropped.
//   - reserved: Market reserved, UnitPrice = dph_total (USD per offer-hour),
//     MinBid zero Money. A reserved contract on Vast is the same ask bought
//     with a prepayment that earns a discount (PUT /instances/prepay/{id}/
//     answers the discount_rate, up to ~40%, providers.md §3); the search's
//     dph_total is read as the hourly price and no discount is assumed, so
//     the price is an upper bound. TermHours = the offer's duration (seconds)
//     ÷ 3600 rounded down, when present; without duration it is 0 (the
//     planner then bills the demand's hours only, as for on-demand). A
//     duration that is not a non-negative number, or above MaxTermHours,
//     drops the offer.
//   - Basis sluice.PerOfferHour.
//   - GPUModel from gpu_ram (MB per GPU): 70000–90000 → "A100-80GB",
//     30000–50000 → "A100-40GB"; outside 30000–200000 is dropped as out of
//     range, anything else as not an A100 size; gpu_name must be one of
//     cfg.GPUNames and name an A100.
//   - Region the country code of geolocation ("Georgia, US" → "US"; a trailing
//     continent as in "Oregon, US, NA" is skipped), City the text before it.
//   - UnitsAvailable 1, or 0 when rented is true or rentable is false.
//
// A bad offer is returned as a DroppedOffer (Ref = the offer id, or offers[i]
// when there is none) whose reason names the field and its value; the rest go
// on. A body that is not JSON or has no "offers" list is an error.
//
// Duplicates: an ask id listed more than once in one response is kept once
// only if every listing gives the same offer (price, GPUs, model, location,
// units): the first is kept and each later one is reported as a DroppedOffer
// "duplicate: <offer id> already seen in this response". If the listings
// disagree — a different price, or one of them unusable — the provider
// contradicts itself about that ask and no listing is trusted: every usable
// listing is dropped with a reason naming both values ("dph_total 1.33 vs
// 9"), and an unusable one keeps its own reason.
func ParseBundles(body []byte, searchType string, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	cfg = cfg.withDefaults()
	market, err := marketOf(searchType)
	if err != nil {
		return nil, nil, err
	}
	if !gjson.ValidBytes(body) {
		return nil, nil, fmt.Errorf("vast: bundles search type=%s: response is not JSON: %s", searchType, snippet(string(body)))
	}
	list := gjson.GetBytes(body, "offers")
	if !list.IsArray() {
		return nil, nil, fmt.Errorf("vast: bundles search type=%s: offers %s: not a list", searchType, rawOrMissing(list))
	}
	// First pass: every listing on its own.
	var items []listing
	groups := map[string][]int{} // offer id → indexes into items, of listings with that id
	list.ForEach(func(_, o gjson.Result) bool {
		i := len(items)
		it := listing{pos: fmt.Sprintf("offers[%d]", i)}
		it.offer, it.ref, it.reason = parseOffer(o, searchType, market, now, cfg)
		if it.ref != "" {
			groups[it.ref] = append(groups[it.ref], i)
		} else {
			it.ref = it.pos
		}
		items = append(items, it)
		return true
	})

	// Second pass: the duplicate rule, in wire order.
	var (
		offers  []sluice.Offer
		dropped []sluice.DroppedOffer
	)
	drop := func(ref, reason string) {
		dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: reason})
	}
	for i, it := range items {
		if it.reason != "" {
			drop(it.ref, it.reason)
			continue
		}
		g := groups[it.ref]
		if len(g) == 1 {
			offers = append(offers, it.offer)
			continue
		}
		contradiction := ""
		for _, j := range g {
			if j == i {
				continue
			}
			if d := listingDiff(it, items[j]); d != "" {
				contradiction = fmt.Sprintf("duplicate: %s at %s contradicts %s (%s): all %d listings dropped",
					it.ref, it.pos, items[j].pos, d, len(g))
				break
			}
		}
		switch {
		case contradiction != "":
			drop(it.ref, contradiction)
		case g[0] == i:
			offers = append(offers, it.offer)
		default:
			drop(it.ref, fmt.Sprintf("duplicate: %s already seen in this response (%s repeats %s)", it.ref, it.pos, items[g[0]].pos))
		}
	}
	return offers, dropped, nil
}

// listing is one entry of the offers list and what it gave on its own: an
// offer, or a reason to drop it.
type listing struct {
	pos    string // offers[i]
	ref    string // the offer id, or pos when the entry has no usable id
	offer  sluice.Offer
	reason string
}

// listingDiff describes the first difference between two listings of the same
// ask (values of a first), or returns "" when they give the same offer. a is usable.
func listingDiff(a, b listing) string {
	if b.reason != "" {
		return b.pos + " unusable: " + b.reason
	}
	x, y := a.offer, b.offer
	field := "dph_total"
	if x.Market == sluice.Spot {
		field = "min_bid"
	}
	switch {
	case !x.UnitPrice.Amount.Equal(y.UnitPrice.Amount):
		return fmt.Sprintf("%s %s vs %s", field, x.RawPrice, y.RawPrice)
	case x.GPUsPerUnit != y.GPUsPerUnit:
		return fmt.Sprintf("num_gpus %d vs %d", x.GPUsPerUnit, y.GPUsPerUnit)
	case x.GPUModel != y.GPUModel:
		return fmt.Sprintf("gpu_ram gives %s vs %s", x.GPUModel, y.GPUModel)
	case x.Region != y.Region || x.City != y.City:
		return fmt.Sprintf("geolocation gives %s/%s vs %s/%s", x.Region, x.City, y.Region, y.City)
	case x.UnitsAvailable != y.UnitsAvailable:
		return fmt.Sprintf("rented/rentable give %d vs %d units", x.UnitsAvailable, y.UnitsAvailable)
	case x.TermHours != y.TermHours:
		return fmt.Sprintf("duration gives %d vs %d term hours", x.TermHours, y.TermHours)
	}
	return ""
}

// parseOffer returns the offer, or a non-empty reason to drop it. ref is the ask id when known.
func parseOffer(o gjson.Result, searchType string, market sluice.Market, now time.Time, cfg Config) (offer sluice.Offer, ref, reason string) {
	if !o.IsObject() {
		return offer, "", fmt.Sprintf("offer %s: not an object", snippet(o.Raw))
	}
	idr := o.Get("id")
	if idr.Type != gjson.Number || !askIDRE.MatchString(idr.Raw) {
		return offer, "", fmt.Sprintf("id %s: not an ask id (non-negative integer)", rawOrMissing(idr))
	}
	id := idr.Raw
	ref = Provider + ":" + id + ":" + searchType

	nr := o.Get("num_gpus")
	if nr.Type != gjson.Number || !countRE.MatchString(nr.Raw) {
		return offer, ref, fmt.Sprintf("num_gpus %s: not a positive integer", rawOrMissing(nr))
	}
	numGPUs, _ := strconv.Atoi(nr.Raw)
	if numGPUs > MaxGPUs {
		return offer, ref, fmt.Sprintf("num_gpus %d: out of range 1..%d", numGPUs, MaxGPUs)
	}

	name := o.Get("gpu_name")
	if name.Type != gjson.String || !slices.Contains(cfg.GPUNames, name.String()) {
		return offer, ref, fmt.Sprintf("gpu_name %s: not one of the searched names %q", rawOrMissing(name), cfg.GPUNames)
	}
	if !strings.Contains(strings.ToUpper(name.String()), "A100") {
		return offer, ref, fmt.Sprintf("gpu_name %q: not an A100", name.String())
	}
	ram := o.Get("gpu_ram")
	model, why := gpuModel(ram)
	if why != "" {
		return offer, ref, why
	}

	geo := o.Get("geolocation")
	if geo.Type != gjson.String {
		return offer, ref, fmt.Sprintf("geolocation %s: not a string", rawOrMissing(geo))
	}
	city, cc, ok := splitGeolocation(geo.String())
	if !ok {
		return offer, ref, fmt.Sprintf("geolocation %q: no country code", geo.String())
	}

	field := "dph_total"
	if market == sluice.Spot {
		field = "min_bid"
	}
	pr := o.Get(field)
	price, present, err := pricing.WireAmount(pr)
	switch {
	case err != nil:
		return offer, ref, fmt.Sprintf("%s %q: %v", field, pr.Raw, err)
	case !present:
		return offer, ref, missing(field, pr)
	case price.IsZero():
		return offer, ref, fmt.Sprintf("%s %q: zero", field, pr.Raw)
	}
	unit := sluice.Money{Amount: price, Currency: Currency}

	term := 0
	if market == sluice.Reserved {
		if term, reason = termHours(o.Get("duration")); reason != "" {
			return offer, ref, reason
		}
	}

	units := 1
	if o.Get("rented").Type == gjson.True || o.Get("rentable").Type == gjson.False {
		units = 0
	}
	offer = sluice.Offer{
		ID:             ref,
		Provider:       Provider,
		SKU:            id,
		GPUModel:       model,
		GPUsPerUnit:    numGPUs,
		Region:         cc,
		City:           city,
		Market:         market,
		UnitPrice:      unit,
		Basis:          sluice.PerOfferHour,
		RawPrice:       pr.Raw,
		UnitsAvailable: units,
		TermHours:      term,
		FetchedAt:      now,
		ExpiresAt:      now.Add(cfg.TTL),
		Source:         "vast POST " + BundlesPath + " type=" + searchType,
	}
	if market == sluice.Spot {
		offer.MinBid = unit
	}
	return offer, ref, ""
}

// gpuModel maps gpu_ram (MB per GPU) to the canonical A100 model, or a reason.
func gpuModel(r gjson.Result) (model, reason string) {
	d, present, err := pricing.WireAmount(r)
	switch {
	case err != nil:
		return "", fmt.Sprintf("gpu_ram %q: %v", r.Raw, err)
	case !present:
		return "", missing("gpu_ram", r)
	case d.Cmp(ramMin) < 0 || d.Cmp(ramMax) > 0:
		return "", fmt.Sprintf("gpu_ram %s: out of range %s..%s MB per GPU", r.Raw, ramMin, ramMax)
	case d.Cmp(ram80Min) >= 0 && d.Cmp(ram80Max) <= 0:
		return "A100-80GB", ""
	case d.Cmp(ram40Min) >= 0 && d.Cmp(ram40Max) <= 0:
		return "A100-40GB", ""
	}
	return "", fmt.Sprintf("gpu_ram %s: not an A100 size (MB per GPU: %s–%s for 80GB, %s–%s for 40GB)", r.Raw, ram80Min, ram80Max, ram40Min, ram40Max)
}

// splitGeolocation splits Vast's "City, CC" into city and upper-case country
// code. "CC" alone, ", CC" (no city) and "State, CC, Continent" also work.
func splitGeolocation(s string) (city, cc string, ok bool) {
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	last := len(parts) - 1
	if last >= 2 && continents[strings.ToUpper(parts[last])] && countryRE.MatchString(strings.ToUpper(parts[last-1])) {
		last--
	}
	cc = strings.ToUpper(parts[last])
	if !countryRE.MatchString(cc) {
		return "", "", false
	}
	return strings.Join(parts[:last], ", "), cc, true
}

// missing is the reason for an absent or null field: "min_bid: missing", "min_bid null: missing".
func missing(field string, r gjson.Result) string {
	if !r.Exists() {
		return field + ": missing"
	}
	return field + " " + r.Raw + ": missing"
}

func rawOrMissing(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	return snippet(r.Raw)
}
