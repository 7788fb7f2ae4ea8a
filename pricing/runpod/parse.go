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

// Source is the Offer.Source of every RunPod offer.
const Source = "runpod graphql gpuTypes"

// clouds are the two RunPod clouds; each is a separate offer (different
// hosts, different prices). Field names are <cloud>Cloud, <cloud>Price, <cloud>SpotPrice.
var clouds = []string{"secure", "community"}

// ParseGPUTypes normalises a gpuTypes GraphQL response body into offers.
//
// The body is {"data":{"<alias>":[GpuType…],…}}: every array-valued member of
// data is read, so both the aliased form sent by Query (gpu0, gpu1, …) and a
// plain "gpuTypes" member work. Types whose id is not in cfg.GPUTypeIDs are
// ignored, as are repeats of an id already seen.
//
// For each GPU type × cloud (secure, community: only when <cloud>Cloud is true
// and <cloud>Price > 0) × market (on-demand from <cloud>Price; spot from
// <cloud>SpotPrice when > 0) × n in cfg.GPUCounts with n ≤ maxGpuCount, one
// Offer is made:
//
//   - ID "runpod:<gpuTypeId>:<secure|community>:<n>x:<on-demand|spot>", SKU the gpuTypeId
//   - UnitPrice = per-GPU price × n, USD per unit-hour (a unit is n GPUs);
//     RawPrice the per-GPU JSON token as sent, Basis sluice.PerGPUHour
//   - MinBid (spot only) = spot price × n: RunPod bids are per GPU (bidPerGpu, §2.1)
//   - GPUModel "A100-80GB" (memoryInGb 80) or "A100-40GB" (memoryInGb 40)
//   - Region "global", UnitsAvailable cfg.MaxUnits, or 0 when
//     lowestPrice.stockStatus is "None"
//
// lowestPrice.minimumBidPrice/uninterruptablePrice are not used: they are for
// gpuCount 1 across both clouds.
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

	p := parser{cfg: cfg, now: now, seen: map[string]bool{}}
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
			p.gpuType(t, fmt.Sprintf("data.%s[%d]", key.String(), i))
			i++
			return true
		})
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return p.offers, p.dropped, nil
}

type parser struct {
	cfg     Config
	now     time.Time
	seen    map[string]bool
	offers  []sluice.Offer
	dropped []sluice.DroppedOffer
}

func (p *parser) drop(ref, format string, args ...any) {
	p.dropped = append(p.dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: fmt.Sprintf(format, args...)})
}

// gpuType turns one GpuType object into its offers.
func (p *parser) gpuType(t gjson.Result, pos string) {
	if !t.IsObject() {
		p.drop(pos, "gpu type %s: not an object", snippetString(t.Raw))
		return
	}
	idr := t.Get("id")
	if idr.Type != gjson.String || idr.String() == "" {
		p.drop(pos, "id %s: not a non-empty string", rawOrMissing(idr))
		return
	}
	id := idr.String()
	if !slices.Contains(p.cfg.GPUTypeIDs, id) || p.seen[id] {
		return
	}
	p.seen[id] = true
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
	units := p.cfg.MaxUnits
	if t.Get("lowestPrice.stockStatus").String() == "None" {
		units = 0
	}

	for _, cloud := range clouds {
		if t.Get(cloud+"Cloud").Type != gjson.True {
			continue
		}
		onDemand, ok := p.price(t, cloud+"Price", ref+":"+cloud+":on-demand")
		if !ok {
			continue // no on-demand price: the cloud does not sell this type
		}
		p.emit(id, model, cloud, sluice.OnDemand, onDemand, maxCount, units)
		if spot, ok := p.price(t, cloud+"SpotPrice", ref+":"+cloud+":spot"); ok {
			p.emit(id, model, cloud, sluice.Spot, spot, maxCount, units)
		}
	}
}

// wirePrice is a per-GPU-hour price with its JSON token text.
type wirePrice struct {
	perGPU decimal.Decimal
	raw    string
}

// price reads field as a positive per-GPU-hour price. A missing, null or zero
// price means "not offered" (ok false, nothing dropped); a bad one is dropped.
func (p *parser) price(t gjson.Result, field, ref string) (wirePrice, bool) {
	r := t.Get(field)
	d, present, err := pricing.WireAmount(r)
	if err != nil {
		p.drop(ref, "%s %q: %v", field, r.Raw, err)
		return wirePrice{}, false
	}
	if !present || d.IsZero() {
		return wirePrice{}, false
	}
	return wirePrice{perGPU: d, raw: r.Raw}, true
}

func (p *parser) emit(id, model, cloud string, market sluice.Market, w wirePrice, maxCount, units int) {
	done := map[int]bool{}
	for _, n := range p.cfg.GPUCounts {
		if n < 1 || n > maxCount || done[n] {
			continue
		}
		done[n] = true
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
			FetchedAt:      p.now,
			ExpiresAt:      p.now.Add(p.cfg.TTL),
			Source:         Source,
		}
		if market == sluice.Spot {
			o.MinBid = unit
		}
		p.offers = append(p.offers, o)
	}
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
