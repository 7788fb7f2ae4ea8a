package aliyun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// instanceGPU is what one instance type carries: GPU model (canonical name) and
// GPUs per instance.
type instanceGPU struct {
	Model string
	GPUs  int
}

// gpuTable lists the A100 ECS instance types Sluice can price, from Alibaba's
// instance-family documentation (gn7e: A100 80GB; gn7: A100 40GB; ebmgn7e: bare
// metal A100 80GB); see ../shared/reference/providers.md §5. A type not here is
// dropped, never guessed.
var gpuTable = map[string]instanceGPU{
	"ecs.gn7e-c16g1.4xlarge":  {"A100-80GB", 1},
	"ecs.gn7e-c16g1.8xlarge":  {"A100-80GB", 2},
	"ecs.gn7e-c16g1.16xlarge": {"A100-80GB", 4},
	"ecs.gn7e-c16g1.32xlarge": {"A100-80GB", 8},
	"ecs.gn7-c12g1.3xlarge":   {"A100-40GB", 1},
	"ecs.gn7-c13g1.13xlarge":  {"A100-40GB", 4},
	"ecs.gn7-c13g1.26xlarge":  {"A100-40GB", 8},
	"ecs.ebmgn7e.32xlarge":    {"A100-80GB", 8},
}

func lookupInstanceType(instanceType string) (instanceGPU, error) {
	g, ok := gpuTable[instanceType]
	if !ok {
		return instanceGPU{}, fmt.Errorf("InstanceType %q: not an A100 instance type in the GPU table", instanceType)
	}
	return g, nil
}

// APIError is an ECS error response,
// {"RequestId","HostId","Code","Message","Recommend"}, for one call.
type APIError struct {
	Action       string // DescribePrice or DescribeSpotPriceHistory
	Region       string // RegionId sent
	InstanceType string // InstanceType sent
	HTTPStatus   int    // 0 when the body was parsed without a response (Parse* functions)
	RequestID    string
	HostID       string
	Code         string // e.g. "InvalidInstanceType.NotSupported", "Throttling"
	Message      string
	Recommend    string
}

// ErrorClass classes the error for SourceReport.ErrorClass by its Code, then
// by HTTP status: Throttling* (Throttling, Throttling.User, Throttling.Api,
// Throttling.Resource) or HTTP 429 → throttled; InvalidAccessKeyId*,
// SignatureDoesNotMatch, IncompleteSignature, SignatureNonceUsed,
// InvalidSecurityToken*, Forbidden* or HTTP 401/403 → auth;
// ServiceUnavailable*, InternalError*, UnknownError or HTTP 5xx →
// unavailable; anything else (InvalidParameter, InvalidInstanceType.*, …) →
// bad-response.
func (e *APIError) ErrorClass() string {
	code := e.Code
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if code == p || strings.HasPrefix(code, p+".") {
				return true
			}
		}
		return false
	}
	switch {
	case has("Throttling"):
		return pricing.ClassThrottled
	case has("InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature", "SignatureNonceUsed", "InvalidSecurityToken", "Forbidden"):
		return pricing.ClassAuth
	case has("ServiceUnavailable", "InternalError", "UnknownError"):
		return pricing.ClassUnavailable
	case e.HTTPStatus == 429:
		return pricing.ClassThrottled
	case e.HTTPStatus == 401 || e.HTTPStatus == 403:
		return pricing.ClassAuth
	case e.HTTPStatus >= 500:
		return pricing.ClassUnavailable
	}
	return pricing.ClassBadResponse
}

var _ pricing.Classed = (*APIError)(nil)

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aliyun %s %s %s: ", e.Action, e.Region, e.InstanceType)
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, "HTTP %d: ", e.HTTPStatus)
	}
	fmt.Fprintf(&b, "Code %q, Message %q", e.Code, e.Message)
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (RequestId %s)", e.RequestID)
	}
	return b.String()
}

// checkBody validates that body is JSON and not an error response. An error
// response is recognised by a top-level Code without the action's payload key.
func checkBody(body []byte, action, region, instanceType, payloadKey string) (gjson.Result, error) {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, fmt.Errorf("aliyun %s %s %s: response is not JSON: %q", action, region, instanceType, snippet(body))
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return gjson.Result{}, fmt.Errorf("aliyun %s %s %s: response is not a JSON object: %q", action, region, instanceType, snippet(body))
	}
	if root.Get("Code").Exists() && !root.Get(payloadKey).Exists() {
		return gjson.Result{}, apiErrorFrom(root, action, region, instanceType, 0)
	}
	return root, nil
}

func apiErrorFrom(root gjson.Result, action, region, instanceType string, status int) *APIError {
	return &APIError{
		Action: action, Region: region, InstanceType: instanceType, HTTPStatus: status,
		RequestID: root.Get("RequestId").String(),
		HostID:    root.Get("HostId").String(),
		Code:      root.Get("Code").String(),
		Message:   root.Get("Message").String(),
		Recommend: root.Get("Recommend").String(),
	}
}

func snippet(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// wirePrice reads a price that Alibaba sends as a JSON number (32-bit floats in its
// SDKs) from the token text itself, never through binary floating point. It must be a JSON
// number, a plain decimal, and > 0. field names the wire field in errors.
func wirePrice(r gjson.Result, field, currency string) (sluice.Money, string, error) {
	if !r.Exists() {
		return sluice.Money{}, "", fmt.Errorf("%s: missing", field)
	}
	raw := strings.TrimSpace(r.Raw)
	d, _, err := pricing.WireAmount(r)
	if err != nil {
		return sluice.Money{}, raw, fmt.Errorf("%s %s: %w", field, raw, err)
	}
	m, err := sluice.NewMoney(d.String(), currency)
	if err != nil {
		return sluice.Money{}, raw, fmt.Errorf("%s %s: %w", field, raw, err)
	}
	if !m.Amount.IsPositive() {
		return sluice.Money{}, raw, fmt.Errorf("%s %s: not positive", field, raw)
	}
	return m, raw, nil
}

// OnDemandID is the offer ID of the pay-as-you-go price of instanceType in region.
func OnDemandID(region, instanceType string) string {
	return "aliyun:" + region + ":" + instanceType + ":on-demand"
}

// SpotID is the offer ID of the spot price of instanceType in one zone of region.
func SpotID(region, zone, instanceType string) string {
	return "aliyun:" + region + ":" + zone + ":" + instanceType + ":spot"
}

// ParseDescribePrice turns one DescribePrice response (RegionId=region,
// InstanceType=instanceType, ResourceType=instance, PriceUnit=Hour, default
// PostPaid) into the on-demand offer. UnitPrice is PriceInfo.Price.TradePrice
// (OriginalPrice − DiscountPrice), in PriceInfo.Price.Currency (CNY on
// aliyun.com) per instance-hour; it is the price of the whole quoted
// configuration (the instance plus the default system disk when Alibaba adds
// one). The price is read from the JSON token text, never through binary floating point.
//
// A response whose price cannot be used yields no offer and one DroppedOffer
// naming the field and value; an error response or a body that is not a
// DescribePrice response is an error (an *APIError for the error JSON).
func ParseDescribePrice(body []byte, region, instanceType string, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	const action = "DescribePrice"
	root, err := checkBody(body, action, region, instanceType, "PriceInfo")
	if err != nil {
		return nil, nil, err
	}
	price := root.Get("PriceInfo.Price")
	if !price.IsObject() {
		return nil, nil, fmt.Errorf("aliyun %s %s %s: no PriceInfo.Price object in response: %q", action, region, instanceType, snippet(body))
	}
	id := OnDemandID(region, instanceType)
	drop := func(reason string) ([]sluice.Offer, []sluice.DroppedOffer, error) {
		return nil, []sluice.DroppedOffer{{Provider: ProviderName, Ref: id, Reason: reason}}, nil
	}
	gpu, err := lookupInstanceType(instanceType)
	if err != nil {
		return drop(err.Error())
	}
	currency := price.Get("Currency")
	if currency.Type != gjson.String {
		return drop(fmt.Sprintf("PriceInfo.Price.Currency %s: missing or not a string", rawOrMissing(currency)))
	}
	m, raw, err := wirePrice(price.Get("TradePrice"), "PriceInfo.Price.TradePrice", currency.String())
	if err != nil {
		return drop(err.Error())
	}
	cfg = cfg.withDefaults()
	return []sluice.Offer{{
		ID:             id,
		Provider:       ProviderName,
		SKU:            instanceType,
		GPUModel:       gpu.Model,
		GPUsPerUnit:    gpu.GPUs,
		Region:         region,
		Market:         sluice.OnDemand,
		UnitPrice:      m,
		Basis:          sluice.PerInstanceHour,
		RawPrice:       raw,
		UnitsAvailable: cfg.MaxUnits,
		FetchedAt:      now,
		ExpiresAt:      now.Add(cfg.TTL),
		Source:         "aliyun ecs DescribePrice " + region,
	}}, nil, nil
}

// spotPoint is one usable SpotPriceType entry.
type spotPoint struct {
	Zone      string
	Timestamp time.Time
	Price     sluice.Money
	Raw       string
	Bad       string // drop reason when the price cannot be used
}

// spotPage is one parsed DescribeSpotPriceHistory page.
type spotPage struct {
	Points     []spotPoint
	Dropped    []sluice.DroppedOffer // entries that cannot even be placed (no zone or timestamp)
	Entries    int                   // SpotPriceType entries on the page, good or bad
	NextOffset int
	HasNext    bool
}

// parseSpotPage reads one DescribeSpotPriceHistory page. Entries with a bad
// ZoneId or Timestamp are dropped here; entries with a bad price are kept as
// points with Bad set, so a bad latest price is not silently replaced by an older one.
func parseSpotPage(body []byte, region, instanceType string) (spotPage, error) {
	const action = "DescribeSpotPriceHistory"
	root, err := checkBody(body, action, region, instanceType, "SpotPrices")
	if err != nil {
		return spotPage{}, err
	}
	list := root.Get("SpotPrices.SpotPriceType")
	if !list.Exists() && root.Get("SpotPrices").IsObject() {
		list = gjson.Parse("[]") // an empty history may omit the array
	}
	if !list.IsArray() {
		return spotPage{}, fmt.Errorf("aliyun %s %s %s: no SpotPrices.SpotPriceType array in response: %q", action, region, instanceType, snippet(body))
	}
	var page spotPage
	if n := root.Get("NextOffset"); n.Exists() {
		v, err := strconv.Atoi(strings.TrimSpace(n.Raw))
		if err != nil || n.Type != gjson.Number {
			return spotPage{}, fmt.Errorf("aliyun %s %s %s: NextOffset %s: not an integer", action, region, instanceType, n.Raw)
		}
		page.NextOffset, page.HasNext = v, true
	}
	currency := root.Get("Currency")
	entries := list.Array()
	page.Entries = len(entries)
	for i, e := range entries {
		zone := e.Get("ZoneId").String()
		ts := e.Get("Timestamp")
		ref := fmt.Sprintf("aliyun:%s:%s:%s:spot@%s", region, zone, instanceType, ts.String())
		drop := func(reason string) {
			page.Dropped = append(page.Dropped, sluice.DroppedOffer{Provider: ProviderName, Ref: ref, Reason: reason})
		}
		if !e.IsObject() {
			ref = fmt.Sprintf("aliyun:%s:%s:spot#%d", region, instanceType, i)
			drop(fmt.Sprintf("SpotPrices.SpotPriceType[%d] %s: not an object", i, snippet([]byte(e.Raw))))
			continue
		}
		if zone == "" || e.Get("ZoneId").Type != gjson.String {
			drop(fmt.Sprintf("ZoneId %s: missing or not a string", rawOrMissing(e.Get("ZoneId"))))
			continue
		}
		if !strings.HasPrefix(zone, region+"-") {
			drop(fmt.Sprintf("ZoneId %q: not a zone of region %s", zone, region))
			continue
		}
		if it := e.Get("InstanceType"); it.Exists() && it.String() != instanceType {
			drop(fmt.Sprintf("InstanceType %s: not the requested %s", it.Raw, instanceType))
			continue
		}
		t, err := time.Parse(DateFormat, ts.String())
		if err != nil || ts.Type != gjson.String {
			drop(fmt.Sprintf("Timestamp %s: not YYYY-MM-DDTHH:MM:SSZ", rawOrMissing(ts)))
			continue
		}
		p := spotPoint{Zone: zone, Timestamp: t}
		if currency.Type != gjson.String {
			p.Bad = fmt.Sprintf("Currency %s: missing or not a string", rawOrMissing(currency))
		} else if m, raw, err := wirePrice(e.Get("SpotPrice"), "SpotPrice", currency.String()); err != nil {
			p.Bad, p.Raw = err.Error(), raw
		} else {
			p.Price, p.Raw = m, raw
		}
		page.Points = append(page.Points, p)
	}
	return page, nil
}

func rawOrMissing(r gjson.Result) string {
	if !r.Exists() {
		return "(missing)"
	}
	return r.Raw
}

// spotOffers keeps, per zone, the point with the latest Timestamp and turns it
// into a spot offer (zones in name order). A latest point with a bad price
// gives a DroppedOffer for that zone; older points are history, not offers.
func spotOffers(points []spotPoint, region, instanceType string, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer) {
	latest := map[string]spotPoint{}
	for _, p := range points {
		cur, seen := latest[p.Zone]
		// Later timestamp wins; on a tie a good price beats a bad one, then the
		// lower price wins, so the pick does not depend on the order on the wire.
		if !seen || p.Timestamp.After(cur.Timestamp) ||
			p.Timestamp.Equal(cur.Timestamp) && (cur.Bad != "" && p.Bad == "" ||
				cur.Bad == "" && p.Bad == "" && p.Price.Cmp(cur.Price) < 0) {
			latest[p.Zone] = p
		}
	}
	zones := make([]string, 0, len(latest))
	for z := range latest {
		zones = append(zones, z)
	}
	slices.Sort(zones)

	cfg = cfg.withDefaults()
	var offers []sluice.Offer
	var dropped []sluice.DroppedOffer
	for _, z := range zones {
		p := latest[z]
		id := SpotID(region, z, instanceType)
		stamp := p.Timestamp.Format(DateFormat)
		if p.Bad != "" {
			dropped = append(dropped, sluice.DroppedOffer{Provider: ProviderName, Ref: id,
				Reason: "latest entry (Timestamp " + stamp + "): " + p.Bad})
			continue
		}
		gpu, err := lookupInstanceType(instanceType)
		if err != nil {
			dropped = append(dropped, sluice.DroppedOffer{Provider: ProviderName, Ref: id, Reason: err.Error()})
			continue
		}
		offers = append(offers, sluice.Offer{
			ID:             id,
			Provider:       ProviderName,
			SKU:            instanceType,
			GPUModel:       gpu.Model,
			GPUsPerUnit:    gpu.GPUs,
			Region:         region, // RegionId, not the zone: CapacityKey must match the on-demand twin
			Market:         sluice.Spot,
			UnitPrice:      p.Price,
			Basis:          sluice.PerInstanceHour,
			RawPrice:       p.Raw,
			MinBid:         p.Price,
			UnitsAvailable: cfg.MaxUnits,
			FetchedAt:      now,
			ExpiresAt:      now.Add(cfg.TTL),
			Source:         "aliyun ecs DescribeSpotPriceHistory " + region + " zone " + z + " at " + stamp,
		})
	}
	return offers, dropped
}

// ParseSpotPriceHistory turns one DescribeSpotPriceHistory page (RegionId=region,
// InstanceType=instanceType, NetworkType=vpc, OSType=linux) into spot offers: one
// per ZoneId, priced at the SpotPrice of that zone's latest Timestamp, in the
// response's Currency (CNY on aliyun.com) per instance-hour; MinBid is the same
// price (the market price a SpotWithPriceLimit bid must reach). Prices are read
// from the JSON token text, never through binary floating point.
//
// Entries without a usable ZoneId, Timestamp or InstanceType, and zones whose
// latest SpotPrice is unusable, become DroppedOffers naming field and value; an
// error response or a body that is not a DescribeSpotPriceHistory response is an
// error. The client merges every page before picking the latest point per zone.
func ParseSpotPriceHistory(body []byte, region, instanceType string, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	page, err := parseSpotPage(body, region, instanceType)
	if err != nil {
		return nil, nil, err
	}
	offers, dropped := spotOffers(page.Points, region, instanceType, now, cfg)
	return offers, append(page.Dropped, dropped...), nil
}
