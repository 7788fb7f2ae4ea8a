package ec2

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// SpotID is the offer id of a spot offer: "aws:<region>:<az>:<type>:spot".
func SpotID(region, az, instanceType string) string {
	return Provider + ":" + region + ":" + az + ":" + instanceType + ":" + string(sluice.Spot)
}

// OnDemandID is the offer id of an on-demand offer: "aws:<region>:<type>:on-demand".
func OnDemandID(region, instanceType string) string {
	return Provider + ":" + region + ":" + instanceType + ":" + string(sluice.OnDemand)
}

// spotPoint is one usable DescribeSpotPriceHistory item.
type spotPoint struct {
	AZ, AZID, Type string
	Time           time.Time
	Price          decimal.Decimal
	Raw            string
	Bad            string // why the price is unusable ("" when usable)
	// Conflict names two different good prices at the latest timestamp: the
	// zone is dropped (a provider quoting one offer twice at different
	// prices is believed at neither, as in the collector's hygiene).
	Conflict string
}

// SpotOffers turns the DescribeSpotPriceHistory items of one region (all pages)
// into spot offers: one per availability zone × instance type, priced at the
// spotPrice of the item with the latest timestamp, USD per instance-hour,
// MinBid the same price (the current spot price is what a request must reach).
//
// Items of an instance type that is not configured (cfg.InstanceTypes) or of
// another product description than Linux/UNIX are ignored. An item without
// availability zone or timestamp, or whose zone is not in region, is dropped
// with a reason. When a zone's latest item has a spotPrice that is missing,
// not a decimal, negative, zero or out of range, that zone is dropped (older
// items are history, not a fallback). On a timestamp tie a good price beats a
// bad one; two different good prices drop the zone (neither is believed), so
// the outcome does not depend on wire order.
//
// Offers come in cfg.InstanceTypes order, then by zone name.
func SpotOffers(region string, items []ec2types.SpotPrice, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer) {
	cfg = cfg.withDefaults()
	var dropped []sluice.DroppedOffer
	drop := func(ref, format string, args ...any) {
		dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: fmt.Sprintf(format, args...)})
	}
	type key struct{ typ, az string }
	latest := map[key]spotPoint{}
	for i, it := range items {
		typ := string(it.InstanceType)
		if !slices.Contains(cfg.InstanceTypes, typ) || string(it.ProductDescription) != ProductDescription {
			continue
		}
		ref := Provider + ":" + region + ":" + typ + ":spot"
		az := deref(it.AvailabilityZone)
		switch {
		case az == "":
			drop(ref, "spotPriceHistorySet item %d: availabilityZone missing", i)
			continue
		case !strings.HasPrefix(az, region) || len(az) > len(region)+8:
			drop(ref, "spotPriceHistorySet item %d: availabilityZone %q: not a zone of %s", i, snippet(az), region)
			continue
		case it.Timestamp == nil:
			drop(ref, "spotPriceHistorySet item %d (%s): timestamp missing", i, az)
			continue
		}
		p := spotPoint{AZ: az, AZID: deref(it.AvailabilityZoneId), Type: typ, Time: it.Timestamp.UTC()}
		if it.SpotPrice == nil {
			p.Bad = "spotPrice missing"
		} else {
			p.Raw = *it.SpotPrice
			p.Price, p.Bad = textPrice("spotPrice", p.Raw)
		}
		k := key{typ, az}
		cur, seen := latest[k]
		switch {
		case !seen || p.Time.After(cur.Time) || p.Time.Equal(cur.Time) && cur.Bad != "" && p.Bad == "":
			latest[k] = p
		case p.Time.Equal(cur.Time) && cur.Bad == "" && p.Bad == "" && !p.Price.Equal(cur.Price):
			lo, hi := cur.Raw, p.Raw
			if p.Price.Cmp(cur.Price) < 0 {
				lo, hi = hi, lo
			}
			if cur.Conflict == "" {
				cur.Conflict = fmt.Sprintf("two spotPrices at the same timestamp: %s and %s", snippet(lo), snippet(hi))
			}
			latest[k] = cur
		}
	}
	keys := make([]key, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := slices.Index(cfg.InstanceTypes, a.typ) - slices.Index(cfg.InstanceTypes, b.typ); c != 0 {
			return c
		}
		return strings.Compare(a.az, b.az)
	})

	var offers []sluice.Offer
	for _, k := range keys {
		p := latest[k]
		id := SpotID(region, p.AZ, p.Type)
		stamp := p.Time.Format(time.RFC3339)
		if p.Bad != "" {
			drop(id, "latest item (timestamp %s): %s", stamp, p.Bad)
			continue
		}
		if p.Conflict != "" {
			drop(id, "latest items (timestamp %s): %s", stamp, p.Conflict)
			continue
		}
		model, gpus, ok := Shape(p.Type)
		if !ok {
			drop(id, "instance type %q: not an A100 type this source prices", p.Type)
			continue
		}
		zone := p.AZ
		if p.AZID != "" {
			zone += " (" + p.AZID + ")"
		}
		price := sluice.Money{Amount: p.Price, Currency: Currency}
		offers = append(offers, sluice.Offer{
			ID:             id,
			Provider:       Provider,
			SKU:            p.Type,
			GPUModel:       model,
			GPUsPerUnit:    gpus,
			Region:         region, // the region, not the zone: CapacityKey must match the on-demand twin
			Market:         sluice.Spot,
			UnitPrice:      price,
			Basis:          sluice.PerInstanceHour,
			RawPrice:       p.Raw,
			MinBid:         price,
			UnitsAvailable: cfg.MaxUnits,
			FetchedAt:      now,
			ExpiresAt:      now.Add(cfg.TTL),
			Source:         "aws ec2 DescribeSpotPriceHistory " + region + " zone " + zone + " at " + stamp,
		})
	}
	return offers, dropped
}

// textPrice reads a positive price from its text; bad is why it cannot be used.
func textPrice(field, raw string) (d decimal.Decimal, bad string) {
	d, err := pricing.TextAmount(raw)
	switch {
	case err != nil:
		return decimal.Decimal{}, fmt.Sprintf("%s %q: %v", field, snippet(raw), err)
	case d.IsZero():
		return decimal.Decimal{}, fmt.Sprintf("%s %q: zero", field, raw)
	}
	return d, ""
}

// PriceListItem is what this source reads from one Price List document.
type PriceListItem struct {
	SKU          string // product.sku ("" when absent)
	RegionCode   string // product.attributes.regionCode
	InstanceType string // product.attributes.instanceType
	// Price is terms.OnDemand.*.*.priceDimensions.*.pricePerUnit.USD, USD per
	// instance-hour; Raw is that string as sent.
	Price decimal.Decimal
	Raw   string
}

// ParsePriceListItem reads one GetProducts PriceList entry: a JSON document
// carried as a string (aws_v1 format). It needs product.attributes.regionCode
// and .instanceType (non-empty strings) and at least one
// terms.OnDemand.<offer term>.priceDimensions.<rate code> with unit "Hrs" and
// pricePerUnit.USD a positive decimal string; every such dimension must carry
// the same price. The error names the field and its value.
func ParsePriceListItem(doc string) (PriceListItem, error) {
	if !gjson.Valid(doc) {
		return PriceListItem{}, fmt.Errorf("not JSON: %s", snippet(doc))
	}
	root := gjson.Parse(doc)
	if !root.IsObject() {
		return PriceListItem{}, fmt.Errorf("not a JSON object: %s", snippet(doc))
	}
	var it PriceListItem
	for _, f := range []struct {
		path string
		dst  *string
	}{
		{"product.attributes.regionCode", &it.RegionCode},
		{"product.attributes.instanceType", &it.InstanceType},
	} {
		r := root.Get(f.path)
		if r.Type != gjson.String || r.String() == "" {
			return PriceListItem{}, fmt.Errorf("%s %s: not a non-empty string", f.path, rawOrMissing(r))
		}
		*f.dst = r.String()
	}
	if r := root.Get("product.sku"); r.Type == gjson.String {
		it.SKU = r.String()
	}

	od := root.Get("terms.OnDemand")
	if !od.IsObject() {
		return PriceListItem{}, fmt.Errorf("terms.OnDemand %s: not an object", rawOrMissing(od))
	}
	var err error
	found := 0
	od.ForEach(func(termKey, term gjson.Result) bool {
		path := "terms.OnDemand." + snippet(termKey.String())
		dims := term.Get("priceDimensions")
		if !term.IsObject() || !dims.IsObject() {
			err = fmt.Errorf("%s.priceDimensions %s: not an object", path, rawOrMissing(dims))
			return false
		}
		dims.ForEach(func(rateKey, dim gjson.Result) bool {
			dpath := path + ".priceDimensions." + snippet(rateKey.String())
			if u := dim.Get("unit"); u.Type != gjson.String || u.String() != "Hrs" {
				err = fmt.Errorf("%s.unit %s: not \"Hrs\"", dpath, rawOrMissing(u))
				return false
			}
			usd := dim.Get("pricePerUnit.USD")
			if usd.Type != gjson.String {
				err = fmt.Errorf("%s.pricePerUnit.USD %s: not a string", dpath, rawOrMissing(usd))
				return false
			}
			d, bad := textPrice(dpath+".pricePerUnit.USD", usd.String())
			if bad != "" {
				err = fmt.Errorf("%s", bad)
				return false
			}
			if found > 0 && !d.Equal(it.Price) {
				err = fmt.Errorf("%s.pricePerUnit.USD %q: differs from %q in another price dimension", dpath, usd.String(), it.Raw)
				return false
			}
			if found == 0 {
				it.Price, it.Raw = d, usd.String()
			}
			found++
			return true
		})
		return err == nil
	})
	if err != nil {
		return PriceListItem{}, err
	}
	if found == 0 {
		return PriceListItem{}, fmt.Errorf("terms.OnDemand %s: no price dimension", snippet(od.Raw))
	}
	return it, nil
}

// OnDemandOffers turns the GetProducts PriceList documents of one region ×
// instance type (all pages) into its on-demand offer: Region and SKU as the
// spot twins, so the two share a sluice.CapacityKey. Documents for another
// region or type are ignored (a recording may answer several questions with
// one body); a document that does not parse is dropped with the reason, as is
// every matching document after the first. When none matches, the lack of an
// on-demand price is reported as a DroppedOffer.
func OnDemandOffers(region, instanceType string, docs []string, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer) {
	cfg = cfg.withDefaults()
	id := OnDemandID(region, instanceType)
	var dropped []sluice.DroppedOffer
	drop := func(format string, args ...any) {
		dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: id, Reason: fmt.Sprintf(format, args...)})
	}
	model, gpus, ok := Shape(instanceType)
	if !ok {
		drop("instance type %q: not an A100 type this source prices", instanceType)
		return nil, dropped
	}
	var offers []sluice.Offer
	var used PriceListItem
	others := 0
	for i, doc := range docs {
		it, err := ParsePriceListItem(doc)
		if err != nil {
			drop("GetProducts PriceList[%d]: %v", i, err)
			continue
		}
		if it.RegionCode != region || it.InstanceType != instanceType {
			others++
			continue
		}
		if len(offers) > 0 {
			drop("GetProducts PriceList[%d]: another item for %s %s (sku %q, %s USD); the first (sku %q, %s USD) is used",
				i, region, instanceType, it.SKU, it.Raw, used.SKU, used.Raw)
			continue
		}
		used = it
		offers = append(offers, sluice.Offer{
			ID:             id,
			Provider:       Provider,
			SKU:            instanceType,
			GPUModel:       model,
			GPUsPerUnit:    gpus,
			Region:         region,
			Market:         sluice.OnDemand,
			UnitPrice:      sluice.Money{Amount: it.Price, Currency: Currency},
			Basis:          sluice.PerInstanceHour,
			RawPrice:       it.Raw,
			UnitsAvailable: cfg.MaxUnits,
			FetchedAt:      now,
			ExpiresAt:      now.Add(cfg.TTL),
			Source:         "aws pricing GetProducts " + ServiceCode + " sku " + it.SKU,
		})
	}
	if len(offers) == 0 && len(dropped) == 0 {
		drop("GetProducts: no Price List item for %s %s (%d item(s) for other regions or types ignored)", region, instanceType, others)
	}
	return offers, dropped
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func rawOrMissing(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	return snippet(r.Raw)
}

func snippet(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}

// ReservedID is the offer id of a Capacity Block offering:
// "aws:<region>:<az>:<type>:reserved:<offeringId>".
func ReservedID(region, az, instanceType, offeringID string) string {
	return Provider + ":" + region + ":" + az + ":" + instanceType + ":" + string(sluice.Reserved) + ":" + offeringID
}

// ReservedRef names one DescribeCapacityBlockOfferings call (region × type) in
// a DroppedOffer: "aws:<region>:<type>:reserved".
func ReservedRef(region, instanceType string) string {
	return Provider + ":" + region + ":" + instanceType + ":" + string(sluice.Reserved)
}

// HourlyScale is the number of decimal places of a Capacity Block's derived
// hourly rate (CapacityBlockHourly), rounded half away from zero.
const HourlyScale = 10

// MaxCapacityBlockHours is the longest Capacity Block AWS sells: 182 days.
const MaxCapacityBlockHours = 182 * 24

var (
	offeringIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
	currencyRE   = regexp.MustCompile(`^[A-Z]{3}$`)
)

// CapacityBlockHourly is the effective rate per instance-hour of a Capacity
// Block whose upfront fee (the TOTAL for the block) buys count instances for
// hours h and minutes m (providers.md §1.4):
//
//	fee ÷ (count × (h + m/60))
//
// computed as fee × 60 ÷ (count × (60·h + m)) — the same value, but the
// divisor is an exact integer, so there is one rounding only: decimal
// DivRound to HourlyScale (10) places, half away from zero. The rate times
// the block's hours can therefore differ from the fee by at most
// 0.5·10⁻¹⁰ × count × hours. count must be ≥ 1 and 60·h + m ≥ 1.
func CapacityBlockHourly(fee decimal.Decimal, count, hours, minutes int) (decimal.Decimal, error) {
	if count < 1 {
		return decimal.Decimal{}, fmt.Errorf("instance count %d: not positive", count)
	}
	total := int64(hours)*60 + int64(minutes)
	if hours < 0 || minutes < 0 || total < 1 {
		return decimal.Decimal{}, fmt.Errorf("duration %d h %d min: not positive", hours, minutes)
	}
	div := decimal.NewFromInt(int64(count)).Mul(decimal.NewFromInt(total))
	return fee.Mul(decimal.NewFromInt(60)).DivRound(div, HourlyScale), nil
}

// CapacityBlockOffers turns the DescribeCapacityBlockOfferings items of one
// region × instance type (all pages) into reserved offers, one per offering:
//
//   - ID ReservedID(region, az, type, offeringId); SKU the instance type and
//     Region the region (the on-demand and spot twins' CapacityKey).
//   - UnitPrice = CapacityBlockHourly(upfrontFee, instanceCount, hours,
//     minutes) in currencyCode, per instance-hour (Basis sluice.PerInstanceHour);
//     RawPrice the upfrontFee text exactly as sent — the block's TOTAL, not
//     an hourly price; Source "aws ec2 DescribeCapacityBlockOfferings <region>
//     zone <az>: upfront fee <fee> <currency> for <h> h[ <m> min] (<n>
//     instance(s), <start>–<end>)".
//   - TermHours = capacityBlockDurationHours (whole hours; the planner bills
//     UnitPrice × TermHours, so a block with capacityBlockDurationMinutes > 0
//     is billed up to 59 minutes short of its fee — the fee is in RawPrice).
//   - UnitsAvailable = instanceCount (1, as asked: a block is bought whole).
//   - GPUModel and GPUsPerUnit from Shape (8 GPUs); MinBid zero Money.
//
// Items of another instance type are ignored (a replay recording answers
// every type of a region). An item is dropped, Ref ReservedRef(region, type)
// or its offer id once known, when its offering id is missing or not
// [A-Za-z0-9-]{1,64}; its zone is missing or not a zone of region; its
// instanceCount is not CapacityBlockInstanceCount; its duration is missing,
// not positive or above MaxCapacityBlockHours (minutes outside 0..59); its
// upfrontFee is missing, not a decimal, zero, negative or out of range; or its
// currencyCode is not three capital letters. An offering id listed twice
// keeps the first listing when both give the same offer and drops every
// listing when they differ.
//
// Offers come by zone, then start date, then offering id.
func CapacityBlockOffers(region, instanceType string, items []ec2types.CapacityBlockOffering, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer) {
	cfg = cfg.withDefaults()
	ref := ReservedRef(region, instanceType)
	var dropped []sluice.DroppedOffer
	drop := func(ref, format string, args ...any) {
		dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: fmt.Sprintf(format, args...)})
	}
	model, gpus, ok := Shape(instanceType)
	if !ok {
		drop(ref, "instance type %q: not an A100 type this source prices", instanceType)
		return nil, dropped
	}
	type block struct {
		offer     sluice.Offer
		oid, zone string
		desc      string // zone, fee and duration, for a contradiction
		start     time.Time
		pos       int
		bad       string // contradiction, when set
	}
	var blocks []*block
	byID := map[string]*block{}
	for i, it := range items {
		if deref(it.InstanceType) != instanceType {
			continue
		}
		pos := fmt.Sprintf("capacityBlockOfferingSet item %d", i)
		oid := deref(it.CapacityBlockOfferingId)
		if !offeringIDRE.MatchString(oid) {
			drop(ref, "%s: capacityBlockOfferingId %q: not an offering id", pos, snippet(oid))
			continue
		}
		az := deref(it.AvailabilityZone)
		if az == "" || !strings.HasPrefix(az, region) || len(az) > len(region)+8 {
			drop(ref, "%s (%s): availabilityZone %q: not a zone of %s", pos, oid, snippet(az), region)
			continue
		}
		id := ReservedID(region, az, instanceType, oid)
		o, why := capacityBlockOffer(it, id, model, gpus, region, az, now, cfg)
		if why != "" {
			drop(id, "%s: %s", pos, why)
			continue
		}
		b := &block{offer: o, oid: oid, zone: az, pos: i,
			desc: fmt.Sprintf("%s %s %s for %d h", az, o.RawPrice, o.UnitPrice.Currency, o.TermHours)}
		if it.StartDate != nil {
			b.start = it.StartDate.UTC()
		}
		first, seen := byID[oid]
		switch {
		case !seen:
			byID[oid] = b
			blocks = append(blocks, b)
		case sameBlock(first.offer, o):
			drop(id, "%s: duplicate: offering %s already seen in this response (item %d)", pos, oid, first.pos)
		default:
			first.bad = fmt.Sprintf("capacityBlockOfferingSet item %d: duplicate: offering %s contradicts item %d (%s vs %s): every listing dropped",
				first.pos, oid, i, first.desc, b.desc)
			drop(id, "%s: duplicate: offering %s contradicts item %d (%s vs %s): every listing dropped",
				pos, oid, first.pos, b.desc, first.desc)
		}
	}
	slices.SortStableFunc(blocks, func(a, b *block) int {
		if c := strings.Compare(a.zone, b.zone); c != 0 {
			return c
		}
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return strings.Compare(a.oid, b.oid)
	})
	var offers []sluice.Offer
	for _, b := range blocks {
		if b.bad != "" {
			drop(b.offer.ID, "%s", b.bad)
			continue
		}
		offers = append(offers, b.offer)
	}
	return offers, dropped
}

// sameBlock reports whether two listings of one offering give the same offer.
func sameBlock(a, b sluice.Offer) bool {
	return a.ID == b.ID && a.UnitPrice.Cmp(b.UnitPrice) == 0 && a.UnitPrice.Currency == b.UnitPrice.Currency &&
		a.RawPrice == b.RawPrice && a.TermHours == b.TermHours && a.UnitsAvailable == b.UnitsAvailable && a.Source == b.Source
}

// capacityBlockOffer converts one offering (offering id and zone already
// checked), or returns why it cannot be used.
func capacityBlockOffer(it ec2types.CapacityBlockOffering, id, model string, gpus int, region, az string, now time.Time, cfg Config) (sluice.Offer, string) {
	if it.InstanceCount == nil {
		return sluice.Offer{}, "instanceCount missing"
	}
	count := int(*it.InstanceCount)
	if count != CapacityBlockInstanceCount {
		return sluice.Offer{}, fmt.Sprintf("instanceCount %d: asked for %d (a block is bought whole)", count, CapacityBlockInstanceCount)
	}
	if it.CapacityBlockDurationHours == nil {
		return sluice.Offer{}, "capacityBlockDurationHours missing"
	}
	hours, minutes := int(*it.CapacityBlockDurationHours), 0
	if it.CapacityBlockDurationMinutes != nil {
		minutes = int(*it.CapacityBlockDurationMinutes)
	}
	switch {
	case minutes < 0 || minutes > 59:
		return sluice.Offer{}, fmt.Sprintf("capacityBlockDurationMinutes %d: not 0..59", minutes)
	case hours < 0 || hours > MaxCapacityBlockHours || hours == MaxCapacityBlockHours && minutes > 0:
		return sluice.Offer{}, fmt.Sprintf("capacityBlockDurationHours %d: not 0..%d", hours, MaxCapacityBlockHours)
	case hours == 0 && minutes == 0:
		return sluice.Offer{}, "capacityBlockDuration 0 h 0 min: not positive"
	}
	if it.UpfrontFee == nil {
		return sluice.Offer{}, "upfrontFee missing"
	}
	fee, bad := textPrice("upfrontFee", *it.UpfrontFee)
	if bad != "" {
		return sluice.Offer{}, bad
	}
	cur := deref(it.CurrencyCode)
	if !currencyRE.MatchString(cur) {
		return sluice.Offer{}, fmt.Sprintf("currencyCode %q: not an ISO 4217 code", snippet(cur))
	}
	rate, err := CapacityBlockHourly(fee, count, hours, minutes)
	if err != nil {
		return sluice.Offer{}, err.Error()
	}
	if !rate.IsPositive() {
		return sluice.Offer{}, fmt.Sprintf("upfrontFee %q: hourly rate rounds to 0 at %d places", *it.UpfrontFee, HourlyScale)
	}
	dur := fmt.Sprintf("%d h", hours)
	if minutes > 0 {
		dur += fmt.Sprintf(" %d min", minutes)
	}
	when := ""
	if it.StartDate != nil && it.EndDate != nil {
		when = ", " + it.StartDate.UTC().Format(time.RFC3339) + "–" + it.EndDate.UTC().Format(time.RFC3339)
	}
	var from, until time.Time
	if it.StartDate != nil {
		from = it.StartDate.UTC()
	}
	if it.EndDate != nil {
		until = it.EndDate.UTC()
	}
	return sluice.Offer{
		ID:             id,
		Provider:       Provider,
		SKU:            deref(it.InstanceType),
		GPUModel:       model,
		GPUsPerUnit:    gpus,
		Region:         region,
		AvailableFrom:  from,
		AvailableUntil: until,
		Market:         sluice.Reserved,
		UnitPrice:      sluice.Money{Amount: rate, Currency: cur},
		Basis:          sluice.PerInstanceHour,
		RawPrice:       *it.UpfrontFee,
		UnitsAvailable: count,
		TermHours:      hours,
		FetchedAt:      now,
		ExpiresAt:      now.Add(cfg.TTL),
		Source: fmt.Sprintf("aws ec2 DescribeCapacityBlockOfferings %s zone %s: upfront fee %s %s for %s (%d instance%s)",
			region, az, *it.UpfrontFee, cur, dur, count, when),
	}, ""
}
