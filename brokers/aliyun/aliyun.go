// Package aliyun places Alibaba Cloud ECS plan lines (API 2014-05-26, RPC
// style, V3 signature from pricing/aliyun; providers.md §5): RunInstances
// with InstanceChargeType PostPaid, SpotStrategy SpotWithPriceLimit and
// SpotPriceLimit (≤ 3 decimals, per instance-hour; brokers/bid) for spot
// lines or NoSpot for on-demand, Amount = MinAmount = units, ClientToken
// (sluice.ClientToken; ECS returns the first call's instances for a repeated
// token) and Tag.N (sluice:decision, sluice:line, sluice:token). Find is
// DescribeInstances by the sluice:token tag; Release is DeleteInstances with
// Force; Instances lists instances with the sluice:decision tag.
//
// Read-back: the instance's SpotStrategy (market) and, for spot, the zone's
// current price from DescribeSpotPriceHistory (what a spot instance pays);
// beyond the tolerance the instances are deleted at once
// (*placement.MismatchError). ECS has no per-instance price for pay-as-you-go
// instances: their price is the line's.
//
// Billing: per second (ASSUMPTION, brokers/billing "aliyun").
package aliyun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/pricing"
	pricingaliyun "github.com/sluicehq/sluice/pricing/aliyun"
)

// Provider is the provider name.
const Provider = "aliyun"

// Config configures the adapter.
type Config struct {
	// Endpoint is the base URL; "{region}" is replaced by the RegionId
	// (default https://ecs.{region}.aliyuncs.com).
	Endpoint                     string
	AccessKeyID, AccessKeySecret string
	// Regions are listed by Instances and searched by Find (default
	// pricing/aliyun's DefaultRegions).
	Regions []string
	// ImageID, SecurityGroupID and VSwitchID are sent with RunInstances when
	// set (ImageID is required by ECS; default "aliyun_3_x64_20G_alibase_20240819.vhd").
	ImageID, SecurityGroupID, VSwitchID string
	// Tolerance is the relative price read-back tolerance (default placement.DefaultTolerance).
	Tolerance  decimal.Decimal
	HTTPClient *http.Client
	Now        func() time.Time
	Nonce      func() string
}

// DefaultImageID is a public Alibaba Cloud Linux 3 image id (an assumption:
// set Config.ImageID to the training image).
const DefaultImageID = "aliyun_3_x64_20G_alibase_20240819.vhd"

func (c Config) withDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = pricingaliyun.DefaultEndpoint
	}
	if len(c.Regions) == 0 {
		c.Regions = slices.Clone(pricingaliyun.DefaultRegions)
	}
	if c.ImageID == "" {
		c.ImageID = DefaultImageID
	}
	c.Tolerance, c.HTTPClient, c.Now = placement.OrTolerance(c.Tolerance), placement.OrHTTPClient(c.HTTPClient), placement.OrNow(c.Now)
	if c.Nonce == nil {
		c.Nonce = func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			return hex.EncodeToString(b[:])
		}
	}
	return c
}

// API is the ECS RPC call the adapter makes: one signed action with its
// query parameters, returning the 200 JSON body or an error wrapping a
// sluice class (*APIError for an ECS error answer).
type API interface {
	Call(ctx context.Context, action, region string, params url.Values) ([]byte, error)
}

// Client is the HTTP API: V3-signed POSTs (pricing/aliyun.Sign).
type Client struct{ cfg Config }

// Call sends one signed RPC request.
func (c *Client) Call(ctx context.Context, action, region string, params url.Values) ([]byte, error) {
	endpoint := strings.ReplaceAll(c.cfg.Endpoint, "{region}", region)
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("aliyun %s: endpoint %q: %v: %w", action, endpoint, err, sluice.ErrQuota)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	params.Set("RegionId", region)
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("aliyun %s: %v: %w", action, err, sluice.ErrQuota)
	}
	req.Header.Set("x-acs-action", action)
	req.Header.Set("x-acs-version", pricingaliyun.APIVersion)
	req.Header.Set("Accept", "application/json")
	if err := pricingaliyun.Sign(req, c.cfg.AccessKeyID, c.cfg.AccessKeySecret, nil, c.cfg.Now(), c.cfg.Nonce()); err != nil {
		return nil, fmt.Errorf("aliyun %s: %v: %w", action, err, sluice.ErrQuota)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, placement.CallError(Provider, action, err)
	}
	body, err := pricing.ReadBody(resp, Provider, action, "application/json")
	if ae, ok := ParseError(action, resp.StatusCode, body); ok {
		return nil, ae // an ECS error answer, whatever ReadBody made of it
	}
	if err != nil {
		return nil, fmt.Errorf("aliyun %s: %v: %w", action, err, placement.StatusClass(resp.StatusCode))
	}
	return body, nil
}

// Adapter is the Alibaba ECS placement.Adapter.
type Adapter struct {
	cfg Config
	api API
}

var _ placement.Adapter = (*Adapter)(nil)

// New is an adapter over the HTTP API.
func New(cfg Config) *Adapter {
	cfg = cfg.withDefaults()
	return &Adapter{cfg: cfg, api: &Client{cfg: cfg}}
}

// NewWithAPI is an adapter over api (tests).
func NewWithAPI(cfg Config, api API) *Adapter { return &Adapter{cfg: cfg.withDefaults(), api: api} }

// Provider is "aliyun".
func (a *Adapter) Provider() string { return Provider }

// Billing is per second, no minimum (assumption; brokers/billing).
func (a *Adapter) Billing() (granularity, minimum time.Duration) { return placement.Billing(Provider) }

// offerRef is what an Alibaba offer id says: "aliyun:<region>:<type>:on-demand"
// or "aliyun:<region>:<zone>:<type>:spot" (pricing/aliyun OnDemandID, SpotID).
type offerRef struct{ Region, Zone, Type string }

// ParseOfferID reads an Alibaba offer id.
func ParseOfferID(id string) (offerRef, error) {
	parts := strings.Split(id, ":")
	switch {
	case len(parts) == 4 && parts[0] == Provider && parts[3] == string(sluice.OnDemand) && parts[1] != "" && parts[2] != "":
		return offerRef{Region: parts[1], Type: parts[2]}, nil
	case len(parts) == 5 && parts[0] == Provider && parts[4] == string(sluice.Spot) && parts[1] != "" && parts[2] != "" && parts[3] != "":
		return offerRef{Region: parts[1], Zone: parts[2], Type: parts[3]}, nil
	}
	return offerRef{}, fmt.Errorf("aliyun: offer id %q: not an ECS offer id: %w", id, sluice.ErrQuota)
}

func tagParams(v url.Values, tags map[string]string) {
	for n, k := range []string{placement.TagDecision, placement.TagLine, placement.TagToken} {
		v.Set(fmt.Sprintf("Tag.%d.Key", n+1), k)
		v.Set(fmt.Sprintf("Tag.%d.Value", n+1), tags[k])
	}
}

// Place buys line (see the package doc).
func (a *Adapter) Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line, lim bid.Limits) (sluice.Placement, error) {
	s, err := placement.Begin(Provider, ParseOfferID, notPlaceable, decisionID, lineNo, line, lim, a.cfg.Now())
	ref, p, b := s.Ref, s.Placement, s.Bid
	if err != nil {
		return p, err
	}
	v := url.Values{}
	v.Set("InstanceType", ref.Type)
	if ref.Zone != "" {
		v.Set("ZoneId", ref.Zone)
	}
	v.Set("ImageId", a.cfg.ImageID)
	if a.cfg.SecurityGroupID != "" {
		v.Set("SecurityGroupId", a.cfg.SecurityGroupID)
	}
	if a.cfg.VSwitchID != "" {
		v.Set("VSwitchId", a.cfg.VSwitchID)
	}
	v.Set("InstanceChargeType", "PostPaid")
	v.Set("Amount", strconv.Itoa(line.Units))
	v.Set("MinAmount", strconv.Itoa(line.Units))
	v.Set("ClientToken", p.ClientToken)
	v.Set("InstanceName", placement.Name(decisionID, lineNo))
	tagParams(v, placement.Tags(decisionID, lineNo))
	if line.Market == sluice.Spot {
		v.Set("SpotStrategy", "SpotWithPriceLimit")
		v.Set("SpotPriceLimit", b.Text)
		v.Set("SpotInterruptionBehavior", "Terminate")
	} else {
		v.Set("SpotStrategy", "NoSpot")
	}
	body, err := a.api.Call(ctx, "RunInstances", ref.Region, v)
	if err != nil {
		return p, err
	}
	ids, err := ParseRunInstances(body)
	if err != nil {
		return p, fmt.Errorf("aliyun RunInstances %s: %v: %w", p.ClientToken, err, sluice.ErrTransient)
	}
	p.ExternalIDs = ids
	p.Price = line.UnitPrice
	insts, err := a.describe(ctx, ref.Region, url.Values{"InstanceIds": {mustJSON(ids)}})
	if err != nil {
		return p, nil // bought; the market and price are read on the next Find
	}
	for _, i := range insts {
		if (i.Spot) != (line.Market == sluice.Spot) {
			return placement.Mismatch(ctx, p, fmt.Sprintf("instance %s SpotStrategy %s for a %s line", i.ID, i.Strategy, line.Market), a.Release)
		}
	}
	if line.Market == sluice.Spot {
		price, err := a.spotPrice(ctx, ref.Region, ref.Zone, ref.Type)
		if err != nil {
			return p, nil
		}
		p.Price = price
		if reason := placement.CheckPrice(line.Market, price, placement.Expected(line), a.cfg.Tolerance); reason != "" {
			return placement.Mismatch(ctx, p, reason, a.Release)
		}
	}
	return p, nil
}

// notPlaceable refuses reserved lines and lines outside 1..100 units
// (placement.Begin; RunInstances Amount is 1..100).
func notPlaceable(line sluice.Line) string {
	if line.Market == sluice.Reserved || line.Units < 1 || line.Units > 100 {
		return "not placeable (pay-as-you-go and spot only, 1..100 units)"
	}
	return ""
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ParseRunInstances reads InstanceIdSet.InstanceIdSets from a RunInstances answer.
func ParseRunInstances(body []byte) ([]string, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("answer is not JSON")
	}
	set := gjson.GetBytes(body, "InstanceIdSet.InstanceIdSets")
	if !set.IsArray() {
		return nil, errors.New("InstanceIdSet.InstanceIdSets: missing or not a list")
	}
	var ids []string
	for _, id := range set.Array() {
		if id.Type != gjson.String || id.String() == "" || len(id.String()) > 64 {
			return nil, fmt.Errorf("InstanceIdSets: bad id %s", snippet(id.Raw))
		}
		ids = append(ids, id.String())
	}
	if len(ids) == 0 {
		return nil, errors.New("InstanceIdSets: empty")
	}
	return ids, nil
}

func snippet(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// instance is one DescribeInstances entry.
type instance struct {
	ID, Name, Type, Zone, Status, Strategy string
	Spot                                   bool
	Tags                                   map[string]string
	Created                                time.Time
}

// ParseDescribeInstances reads Instances.Instance[] and TotalCount.
func ParseDescribeInstances(body []byte) ([]instance, int, error) {
	if !gjson.ValidBytes(body) {
		return nil, 0, errors.New("answer is not JSON")
	}
	root := gjson.ParseBytes(body)
	list := root.Get("Instances.Instance")
	if !list.IsArray() {
		return nil, 0, errors.New("Instances.Instance: missing or not a list")
	}
	var out []instance
	for n, it := range list.Array() {
		id := it.Get("InstanceId")
		if id.Type != gjson.String || id.String() == "" {
			return nil, 0, fmt.Errorf("Instances.Instance[%d].InstanceId missing", n)
		}
		i := instance{ID: id.String(), Name: it.Get("InstanceName").String(), Type: it.Get("InstanceType").String(),
			Zone: it.Get("ZoneId").String(), Status: it.Get("Status").String(), Strategy: it.Get("SpotStrategy").String(),
			Tags: map[string]string{}}
		i.Spot = i.Strategy == "SpotWithPriceLimit" || i.Strategy == "SpotAsPriceGo"
		for _, t := range it.Get("Tags.Tag").Array() {
			i.Tags[t.Get("TagKey").String()] = t.Get("TagValue").String()
		}
		if ts, err := time.Parse("2006-01-02T15:04Z", it.Get("CreationTime").String()); err == nil {
			i.Created = ts.UTC()
		}
		out = append(out, i)
	}
	total := int(root.Get("TotalCount").Int())
	return out, total, nil
}

func (a *Adapter) describe(ctx context.Context, region string, v url.Values) ([]instance, error) {
	var out []instance
	for page := 1; page <= 100; page++ {
		q := url.Values{}
		for k, vv := range v {
			q[k] = vv
		}
		q.Set("PageSize", "100")
		q.Set("PageNumber", strconv.Itoa(page))
		body, err := a.api.Call(ctx, "DescribeInstances", region, q)
		if err != nil {
			return nil, err
		}
		insts, total, err := ParseDescribeInstances(body)
		if err != nil {
			return nil, fmt.Errorf("aliyun DescribeInstances %s: %v: %w", region, err, sluice.ErrTransient)
		}
		out = append(out, insts...)
		if len(insts) == 0 || len(out) >= total {
			break
		}
	}
	return out, nil
}

// spotPrice is the latest SpotPrice of (zone, type), in the answer's Currency.
func (a *Adapter) spotPrice(ctx context.Context, region, zone, typ string) (sluice.Money, error) {
	now := a.cfg.Now().UTC()
	body, err := a.api.Call(ctx, "DescribeSpotPriceHistory", region, url.Values{"InstanceType": {typ}, "ZoneId": {zone},
		"NetworkType": {"vpc"}, "OSType": {"linux"}, "StartTime": {now.Add(-time.Hour).Format("2006-01-02T15:04:05Z")}})
	if err != nil {
		return sluice.Money{}, err
	}
	return ParseSpotPrice(body, zone)
}

// ParseSpotPrice reads the latest SpotPrices.SpotPriceType[].SpotPrice of zone
// (any zone when zone is "") from a DescribeSpotPriceHistory answer, exact
// from the JSON number text, in the answer's Currency.
func ParseSpotPrice(body []byte, zone string) (sluice.Money, error) {
	if !gjson.ValidBytes(body) {
		return sluice.Money{}, errors.New("aliyun DescribeSpotPriceHistory: answer is not JSON")
	}
	root := gjson.ParseBytes(body)
	cur := root.Get("Currency").String()
	var best gjson.Result
	for _, p := range root.Get("SpotPrices.SpotPriceType").Array() {
		if zone == "" || p.Get("ZoneId").String() == zone {
			if !best.Exists() || p.Get("Timestamp").String() >= best.Get("Timestamp").String() {
				best = p
			}
		}
	}
	if !best.Exists() {
		return sluice.Money{}, fmt.Errorf("aliyun DescribeSpotPriceHistory: no price for zone %q: %w", zone, sluice.ErrTransient)
	}
	d, present, err := pricing.WireAmount(best.Get("SpotPrice"))
	if err != nil || !present {
		return sluice.Money{}, fmt.Errorf("aliyun DescribeSpotPriceHistory: SpotPrice %s: %v", snippet(best.Get("SpotPrice").Raw), err)
	}
	m, err := sluice.NewMoney(d.String(), cur)
	if err != nil {
		return sluice.Money{}, fmt.Errorf("aliyun DescribeSpotPriceHistory: %v", err)
	}
	return m, nil
}

// Find looks the line up by the sluice:token tag in every configured region.
func (a *Adapter) Find(ctx context.Context, decisionID string, lineNo int) (sluice.Placement, bool, error) {
	token := sluice.ClientToken(decisionID, lineNo)
	for _, region := range a.cfg.Regions {
		insts, err := a.describe(ctx, region, url.Values{"Tag.1.Key": {placement.TagToken}, "Tag.1.Value": {token}})
		if err != nil {
			return sluice.Placement{}, false, err
		}
		if len(insts) == 0 {
			continue
		}
		p := placement.Found(Provider, decisionID, lineNo)
		p.Units, p.Market = len(insts), sluice.OnDemand
		for _, i := range insts {
			p.ExternalIDs = append(p.ExternalIDs, i.ID)
			if i.Spot {
				p.Market = sluice.Spot
			}
			if p.PlacedAt.IsZero() || i.Created.Before(p.PlacedAt) {
				p.PlacedAt = i.Created
			}
		}
		if p.Market == sluice.Spot {
			if price, err := a.spotPrice(ctx, region, insts[0].Zone, insts[0].Type); err == nil {
				p.Price = price
			}
		}
		return p, true, nil
	}
	return sluice.Placement{}, false, nil
}

// regionsOf are the regions to look for p's instances in: the offer's
// region, or every configured region when p carries no ECS offer id (an
// orphan found by reconcile).
func (a *Adapter) regionsOf(p sluice.Placement) []string {
	if ref, err := ParseOfferID(p.OfferID); err == nil {
		return []string{ref.Region}
	}
	return a.cfg.Regions
}

// Release deletes p's instances (DeleteInstances, Force=true). Confirmed when
// ECS accepted the deletion, or no searched region knows the instances.
func (a *Adapter) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	if len(p.ExternalIDs) == 0 {
		return placement.Released(a.cfg.Now()), nil
	}
	v := url.Values{"Force": {"true"}, "ClientToken": {"rel-" + p.ClientToken}}
	for n, id := range p.ExternalIDs {
		v.Set("InstanceId."+strconv.Itoa(n+1), id)
	}
	for _, region := range a.regionsOf(p) {
		_, err := a.api.Call(ctx, "DeleteInstances", region, v)
		var ae *APIError
		if errors.As(err, &ae) && strings.HasPrefix(ae.Code, "InvalidInstanceId.NotFound") {
			continue
		}
		if err != nil {
			return sluice.ReleaseResult{}, err
		}
		break
	}
	return placement.Released(a.cfg.Now()), nil
}

// Instances lists the instances with a sluice:decision tag in every configured region.
func (a *Adapter) Instances(ctx context.Context) ([]sluice.Instance, error) {
	var out []sluice.Instance
	for _, region := range a.cfg.Regions {
		insts, err := a.describe(ctx, region, url.Values{"Tag.1.Key": {placement.TagDecision}})
		if err != nil {
			return nil, err
		}
		for _, i := range insts {
			in := sluice.Instance{Provider: Provider, ExternalID: i.ID, DecisionID: i.Tags[placement.TagDecision], State: i.Status, LaunchedAt: i.Created}
			in.Line, _ = strconv.Atoi(i.Tags[placement.TagLine])
			if i.Spot {
				if price, err := a.spotPrice(ctx, region, i.Zone, i.Type); err == nil {
					in.Price = price
				}
			}
			out = append(out, in)
		}
	}
	return out, nil
}
