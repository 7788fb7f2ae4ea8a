package runpod

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// Currency of every RunPod price (providers.md §0).
const Currency = "USD"

// Region is the Offer.Region of every RunPod offer. gpuTypes carries no data
// centre; all of RunPod's data centres are outside China (providers.md §2.4),
// and policy data maps runpod/global to the overseas zone.
const Region = "global"

// Source starts the Offer.Source of every RunPod offer; the rest names the
// field the price came from: "runpod graphql gpuTypes lp_s_4: lowestPrice(gpuCount:4, secureCloud:true)"
// or "runpod graphql gpuTypes securePrice (fallback: no lowestPrice for 4 GPUs)".
const Source = "runpod graphql gpuTypes"

// Units reported per lowestPrice.stockStatus (each capped by Config.MaxUnits).
// RunPod publishes a level, not a count; these are Sluice's reading of it:
// High is enough for a few pods, Medium a couple, Low one. None or null is 0
// (the offer is kept; the planner refuses it as no-capacity).
var StockUnits = map[string]int{"High": 4, "Medium": 2, "Low": 1, "None": 0}

// clouds are the two RunPod clouds; each is a separate offer (different
// hosts, different prices). Field names are <cloud>Cloud, <cloud>Price, <cloud>SpotPrice.
var clouds = []string{"secure", "community"}

// ParseGPUTypes normalises a gpuTypes GraphQL response body into offers.
//
// The body is {"data":{"<alias>":[GpuType…],…}}: every array-valued member of
// data is read, so both the aliased form sent by Query (gpu0, gpu1, …) and a
// plain "gpuTypes" member work. Types whose id is not in cfg.GPUTypeIDs are
// ignored.
//
// For each GPU type × cloud (secure, community: only when <cloud>Cloud is
// true) × market (on-demand, spot) × n in cfg.GPUCounts with n ≤ maxGpuCount,
// at most one Offer is made. Precedence, per cloud and n:
//
//  1. lowestPrice for that count and cloud — the member LowestPriceAlias(cloud, n)
//     ("lp_s_4") of the GpuType, when it is present and not null: on-demand
//     from its uninterruptablePrice, spot from its minimumBidPrice (both per
//     GPU-hour), UnitsAvailable from its stockStatus (StockUnits: High 4,
//     Medium 2, Low 1, capped by cfg.MaxUnits; "None", null or missing 0).
//     The flat fields are not consulted for that count at all.
//  2. Otherwise (the alias is missing or null: not asked, or RunPod had no
//     answer) the flat per-GPU fields <cloud>Price / <cloud>SpotPrice, with
//     UnitsAvailable cfg.MaxUnits (no stock figure).
//
// A price that is null or 0 means that market is not sold (no offer, nothing
// dropped). A price that is missing from its object or cannot be read drops
// that market only, with a reason naming the field and value: for a
// lowestPrice the Ref is the offer id ("runpod:<id>:secure:4x:spot"), for a
// flat field, read once per cloud × market, "runpod:<id>:<cloud>:<market>".
// A lowestPrice member that is not an object, or whose stockStatus is not one
// of High, Medium, Low, None (or null), drops both markets of that count.
//
//   - ID "runpod:<gpuTypeId>:<secure|community>:<n>x:<on-demand|spot>", SKU the gpuTypeId
//   - UnitPrice = per-GPU price × n, USD per unit-hour (a unit is n GPUs);
//     RawPrice the per-GPU JSON token as sent, Basis sluice.PerGPUHour
//   - MinBid (spot only) = the spot price × n: RunPod bids are per GPU (bidPerGpu, §2.1)
//   - GPUModel "A100-80GB" (memoryInGb 80) or "A100-40GB" (memoryInGb 40)
//   - Region "global"; Source names the field the price came from
//
// Offers come per type, cloud, market (on-demand first), then count.
//
// Duplicates: a requested gpuTypeId listed more than once in one response is
// judged on the offers each entry gives. If every entry gives the same offers
// (same ids, prices, model and units), the first is kept and every later one
// is reported as a DroppedOffer "duplicate: <id> already seen in this response".
// If the entries disagree — on a price, or on which offers exist at all — the
// provider contradicts itself and no entry is trusted: every entry of that id
// is dropped, with a reason naming both values ("securePrice 1.89 vs 9").
//
// A GPU type or price that cannot be read is returned as a DroppedOffer whose
// reason names the field and its value; the rest go on. A body that is not
// JSON, carries GraphQL errors (*GraphQLError) or has no data object is an error.
func ParseGPUTypes(body []byte, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	cfg = cfg.withDefaults()
	if !gjson.ValidBytes(body) {
		return nil, nil, fmt.Errorf("runpod: graphql response: not JSON: %s", snippet(body))
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, nil, fmt.Errorf("runpod: graphql response: not a JSON object: %s", snippet(body))
	}
	if err := graphQLErrors(root.Get("errors")); err != nil {
		return nil, nil, err
	}
	data := root.Get("data")
	if !data.IsObject() {
		return nil, nil, fmt.Errorf("runpod: graphql response: data %s: not an object", rawOrMissing(data))
	}

	// First pass: the requested entries, grouped by id in first-seen order.
	p := parser{cfg: cfg, now: now}
	var order []string
	byID := map[string][]entry{}
	var err error
	data.ForEach(func(key, list gjson.Result) bool {
		switch {
		case list.Type == gjson.Null:
			return true // an alias whose type does not exist
		case !list.IsArray():
			err = fmt.Errorf("runpod: graphql response: data.%s %s: not a list", key.String(), snippetString(list.Raw))
			return false
		}
		i := 0
		list.ForEach(func(_, t gjson.Result) bool {
			pos := fmt.Sprintf("data.%s[%d]", key.String(), i)
			i++
			id, ok := p.typeID(t, pos)
			if !ok || !slices.Contains(p.cfg.GPUTypeIDs, id) {
				return true
			}
			if _, seen := byID[id]; !seen {
				order = append(order, id)
			}
			byID[id] = append(byID[id], entry{pos: pos, t: t})
			return true
		})
		return true
	})
	if err != nil {
		return nil, nil, err
	}

	// Second pass: each entry on its own, then the duplicate rule.
	for _, id := range order {
		entries := byID[id]
		for i := range entries {
			sub := parser{cfg: cfg, now: now}
			sub.gpuType(entries[i].t, id)
			entries[i].offers, entries[i].dropped, entries[i].fields = sub.offers, sub.dropped, sub.fields
		}
		p.resolve(id, entries)
	}
	return p.offers, p.dropped, nil
}

// entry is one listing of a requested gpuTypeId and what it gave on its own.
type entry struct {
	pos     string // data.<alias>[i]
	t       gjson.Result
	offers  []sluice.Offer
	dropped []sluice.DroppedOffer
	fields  map[string]wireField
}

type parser struct {
	cfg     Config
	now     time.Time
	offers  []sluice.Offer
	dropped []sluice.DroppedOffer
	// fields records, per offer id, where its price and units came from
	// (for the duplicate rule's messages).
	fields map[string]wireField
}

// wireField is where an offer's price and units were read.
type wireField struct {
	price string // "lp_s_4.uninterruptablePrice", "securePrice"
	units string // "lp_s_4.stockStatus", "Config.MaxUnits (no lowestPrice)"
}

func (p *parser) drop(ref, format string, args ...any) {
	p.dropped = append(p.dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: fmt.Sprintf(format, args...)})
}

// typeID reads a GpuType's id, dropping an entry that is not an object or has
// no usable id (Ref = its position, since there is no id to name it by).
func (p *parser) typeID(t gjson.Result, pos string) (string, bool) {
	if !t.IsObject() {
		p.drop(pos, "gpu type %s: not an object", snippetString(t.Raw))
		return "", false
	}
	idr := t.Get("id")
	if idr.Type != gjson.String || idr.String() == "" {
		p.drop(pos, "id %s: not a non-empty string", rawOrMissing(idr))
		return "", false
	}
	return idr.String(), true
}

// resolve applies the duplicate rule (see ParseGPUTypes) to the entries of one id.
func (p *parser) resolve(id string, entries []entry) {
	ref := Provider + ":" + id
	first := entries[0]
	agree := true
	for _, e := range entries[1:] {
		agree = agree && offerDiff(first, e) == ""
	}
	if agree {
		p.offers = append(p.offers, first.offers...)
		p.dropped = append(p.dropped, first.dropped...)
		for _, e := range entries[1:] {
			p.drop(ref, "duplicate: %s already seen in this response (%s repeats %s)", id, e.pos, first.pos)
		}
		return
	}
	for i, e := range entries {
		for j, o := range entries {
			if i == j {
				continue
			}
			if d := offerDiff(e, o); d != "" {
				p.drop(ref, "duplicate: %s at %s contradicts %s (%s): all %d entries dropped", id, e.pos, o.pos, d, len(entries))
				break
			}
		}
	}
}

// offerDiff describes the first difference between the offers of two entries
// of one GPU type, values of ea first ("securePrice 1.89 vs 9"), or returns ""
// when they give the same offers.
func offerDiff(ea, eb entry) string {
	a, b := ea.offers, eb.offers
	inB := map[string]sluice.Offer{}
	for _, o := range b {
		inB[o.ID] = o
	}
	inA := map[string]bool{}
	for _, x := range a {
		inA[x.ID] = true
		y, ok := inB[x.ID]
		fx, fy := ea.fields[x.ID], eb.fields[x.ID]
		switch {
		case !ok:
			return fmt.Sprintf("%s %s offers at %s only", cloudOf(x), x.Market, ea.pos)
		case !x.UnitPrice.Amount.Equal(y.UnitPrice.Amount) && fx.price == fy.price:
			return fmt.Sprintf("%s %s vs %s", fx.price, x.RawPrice, y.RawPrice)
		case !x.UnitPrice.Amount.Equal(y.UnitPrice.Amount):
			return fmt.Sprintf("%s %s vs %s %s", fx.price, x.RawPrice, fy.price, y.RawPrice)
		case x.GPUModel != y.GPUModel:
			return fmt.Sprintf("memoryInGb gives %s vs %s", x.GPUModel, y.GPUModel)
		case x.UnitsAvailable != y.UnitsAvailable && fx.units == fy.units:
			return fmt.Sprintf("%s gives %d vs %d units", fx.units, x.UnitsAvailable, y.UnitsAvailable)
		case x.UnitsAvailable != y.UnitsAvailable:
			return fmt.Sprintf("%s gives %d vs %s %d units", fx.units, x.UnitsAvailable, fy.units, y.UnitsAvailable)
		}
	}
	for _, y := range b {
		if !inA[y.ID] {
			return fmt.Sprintf("%s %s offers at %s only", cloudOf(y), y.Market, eb.pos)
		}
	}
	return ""
}

// cloudOf is the cloud named in an offer id ("runpod:<id>:<cloud>:<n>x:<market>").
func cloudOf(o sluice.Offer) string {
	parts := strings.Split(o.ID, ":")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-3]
}

// gpuType turns one GpuType object (already known to be an object with a
// requested id) into its offers.
func (p *parser) gpuType(t gjson.Result, id string) {
	ref := Provider + ":" + id
	if !strings.Contains(strings.ToUpper(id), "A100") {
		p.drop(ref, "id %q: not an A100 GPU type", id)
		return
	}
	model, err := gpuModel(t.Get("memoryInGb"))
	if err != nil {
		p.drop(ref, "%v", err)
		return
	}
	mr := t.Get("maxGpuCount")
	maxCount, aerr := strconv.Atoi(mr.Raw)
	if mr.Type != gjson.Number || aerr != nil || maxCount < 1 {
		p.drop(ref, "maxGpuCount %s: not a positive integer", rawOrMissing(mr))
		return
	}
	var counts []int
	for _, n := range p.cfg.GPUCounts {
		if n >= 1 && n <= maxCount && !slices.Contains(counts, n) {
			counts = append(counts, n)
		}
	}

	for _, cloud := range clouds {
		if t.Get(cloud+"Cloud").Type != gjson.True {
			continue
		}
		// Each count's lowestPrice is read once, for both markets; a
		// count without one falls back to the flat field, read once per
		// cloud × market (one reason when it is bad, not one per count).
		type quote struct {
			lp    gjson.Result
			units int
			ok    bool // the lowestPrice member is usable
			flat  bool // no lowestPrice member: the flat field is used
		}
		quotes := make([]quote, len(counts))
		for i, n := range counts {
			alias := LowestPriceAlias(cloud, n)
			lp := t.Get(alias)
			if !lp.Exists() || lp.Type == gjson.Null {
				quotes[i] = quote{flat: true, units: p.cfg.MaxUnits}
				continue
			}
			oref := fmt.Sprintf("%s:%s:%dx", ref, cloud, n)
			if !lp.IsObject() {
				p.drop(oref, "%s %s: not an object", alias, snippetString(lp.Raw))
				continue
			}
			units, why := p.stockUnits(lp.Get("stockStatus"))
			if why != "" {
				p.drop(oref, "%s.stockStatus %s", alias, why)
				continue
			}
			quotes[i] = quote{lp: lp, units: units, ok: true}
		}
		for _, m := range []struct {
			market     sluice.Market
			lpField    string
			flatField  string
			flatRead   bool
			flatPrice  wirePrice
			flatOffers bool
		}{
			{market: sluice.OnDemand, lpField: "uninterruptablePrice", flatField: cloud + "Price"},
			{market: sluice.Spot, lpField: "minimumBidPrice", flatField: cloud + "SpotPrice"},
		} {
			for i, n := range counts {
				q := quotes[i]
				switch {
				case q.flat:
					if !m.flatRead {
						m.flatRead = true
						m.flatPrice, m.flatOffers = p.price(t, m.flatField, m.flatField, fmt.Sprintf("%s:%s:%s", ref, cloud, m.market))
					}
					if m.flatOffers {
						p.emit(id, model, cloud, m.market, n, m.flatPrice, q.units,
							wireField{m.flatField, "Config.MaxUnits (no lowestPrice)"},
							fmt.Sprintf("%s %s (fallback: no lowestPrice for %d GPUs)", Source, m.flatField, n))
					}
				case q.ok:
					alias := LowestPriceAlias(cloud, n)
					label := alias + "." + m.lpField
					if w, ok := p.price(q.lp, m.lpField, label, fmt.Sprintf("%s:%s:%dx:%s", ref, cloud, n, m.market)); ok {
						p.emit(id, model, cloud, m.market, n, w, q.units,
							wireField{label, alias + ".stockStatus"},
							fmt.Sprintf("%s %s: lowestPrice(gpuCount:%d, secureCloud:%t)", Source, alias, n, cloud == "secure"))
					}
				}
			}
		}
	}
}

// stockUnits maps a lowestPrice stockStatus to units (StockUnits, capped by
// cfg.MaxUnits); null or missing is no stock. why is set for any other value.
func (p *parser) stockUnits(r gjson.Result) (units int, why string) {
	if !r.Exists() || r.Type == gjson.Null {
		return 0, ""
	}
	u, ok := StockUnits[r.String()]
	if r.Type != gjson.String || !ok {
		return 0, fmt.Sprintf("%s: not High, Medium, Low or None", snippetString(r.Raw))
	}
	return min(u, p.cfg.MaxUnits), ""
}

// wirePrice is a per-GPU-hour price with its JSON token text.
type wirePrice struct {
	perGPU decimal.Decimal
	raw    string
}

// price reads field of obj as a positive per-GPU-hour price; label names it
// in reasons. A null or zero price means "not offered" (ok false, nothing
// dropped). A missing field (the query asks for every price field, so
// GraphQL always sends it, null at worst) or a price that cannot be read is
// dropped with a reason under ref.
func (p *parser) price(obj gjson.Result, field, label, ref string) (wirePrice, bool) {
	r := obj.Get(field)
	if !r.Exists() {
		p.drop(ref, "%s: missing", label)
		return wirePrice{}, false
	}
	d, present, err := pricing.WireAmount(r)
	if err != nil {
		p.drop(ref, "%s %q: %v", label, r.Raw, err)
		return wirePrice{}, false
	}
	if !present || d.IsZero() {
		return wirePrice{}, false
	}
	return wirePrice{perGPU: d, raw: r.Raw}, true
}

func (p *parser) emit(id, model, cloud string, market sluice.Market, n int, w wirePrice, units int, f wireField, source string) {
	unit := sluice.Money{Amount: w.perGPU.Mul(decimal.NewFromInt(int64(n))), Currency: Currency}
	o := sluice.Offer{
		ID:             fmt.Sprintf("%s:%s:%s:%dx:%s", Provider, id, cloud, n, market),
		Provider:       Provider,
		SKU:            id,
		GPUModel:       model,
		GPUsPerUnit:    n,
		Region:         Region,
		Market:         market,
		UnitPrice:      unit,
		Basis:          sluice.PerGPUHour,
		RawPrice:       w.raw,
		UnitsAvailable: units,
		// Every pod size and both markets of one GPU type in one cloud draw on
		// the same machines; RunPod gives no GPU count for the pool.
		Pool:      Provider + ":" + id + ":" + cloud,
		FetchedAt: p.now,
		ExpiresAt: p.now.Add(p.cfg.TTL),
		Source:    source,
	}
	if market == sluice.Spot {
		o.MinBid = unit
	}
	p.offers = append(p.offers, o)
	if p.fields == nil {
		p.fields = map[string]wireField{}
	}
	p.fields[o.ID] = f
}

// gpuModel maps memoryInGb (GB per GPU) to the canonical A100 model name.
func gpuModel(r gjson.Result) (string, error) {
	d, present, err := pricing.WireAmount(r)
	switch {
	case err != nil:
		return "", fmt.Errorf("memoryInGb %q: %v", r.Raw, err)
	case !present:
		if !r.Exists() {
			return "", fmt.Errorf("memoryInGb: missing")
		}
		return "", fmt.Errorf("memoryInGb %s: missing", r.Raw)
	case d.Equal(decimal.NewFromInt(80)):
		return "A100-80GB", nil
	case d.Equal(decimal.NewFromInt(40)):
		return "A100-40GB", nil
	}
	return "", fmt.Errorf("memoryInGb %s: not an A100 size (40 or 80)", r.Raw)
}

// graphQLErrors returns a *GraphQLError when errors is a non-empty value.
func graphQLErrors(errs gjson.Result) error {
	if !errs.Exists() || errs.Type == gjson.Null {
		return nil
	}
	if !errs.IsArray() {
		return &GraphQLError{Messages: []string{snippetString(errs.Raw)}}
	}
	var msgs []string
	errs.ForEach(func(_, e gjson.Result) bool {
		if m := e.Get("message"); m.Type == gjson.String {
			msgs = append(msgs, m.String())
		} else {
			msgs = append(msgs, snippetString(e.Raw))
		}
		return true
	})
	if len(msgs) == 0 {
		return nil
	}
	return &GraphQLError{Messages: msgs}
}

func rawOrMissing(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	return snippetString(r.Raw)
}

func snippetString(s string) string { return snippet([]byte(s)) }
