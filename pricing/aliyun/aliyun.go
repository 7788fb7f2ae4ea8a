// Package aliyun is Sluice's quote source for Alibaba Cloud ECS A100 capacity
// (API version 2014-05-26, RPC style, V3 signature): the pay-as-you-go price of
// each instance type from DescribePrice and the current spot price per zone from
// DescribeSpotPriceHistory. Prices are CNY per instance-hour on the China site
// (aliyun.com); they are read from the JSON number text, never through binary floating point.
//
// Wire formats: ../shared/reference/providers.md §5.
package aliyun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// ProviderName is the provider name in offers.
const ProviderName = "aliyun"

// APIVersion is the ECS API version sent in x-acs-version.
const APIVersion = "2014-05-26"

// Defaults.
const (
	// DefaultEndpoint is the regional ECS endpoint; {region} is replaced by the RegionId.
	DefaultEndpoint = "https://ecs.{region}.aliyuncs.com"
	DefaultMaxUnits = 2
	DefaultTTL      = 5 * time.Minute
	// Concurrency is the most calls in flight at once (DescribePrice allows 500 calls / 60 s).
	Concurrency = 8
	// maxSpotPages bounds DescribeSpotPriceHistory pagination.
	maxSpotPages = 100
	// spotWindow is how far back DescribeSpotPriceHistory looks (StartTime = now − spotWindow).
	spotWindow = time.Hour
)

// DefaultRegions are Beijing (residency zone beijing) and Hangzhou, Shanghai (east-china).
var DefaultRegions = []string{"cn-beijing", "cn-hangzhou", "cn-shanghai"}

// DefaultInstanceTypes are the gn7e A100-80GB types: 1×, 4× and 8× GPUs.
var DefaultInstanceTypes = []string{"ecs.gn7e-c16g1.4xlarge", "ecs.gn7e-c16g1.16xlarge", "ecs.gn7e-c16g1.32xlarge"}

// Config configures the Alibaba quote source. Zero fields take the defaults.
type Config struct {
	// Endpoint is the base URL. Default "https://ecs.{region}.aliyuncs.com", where
	// {region} is replaced per region; a URL without {region} (a test or replay
	// server) is used for every region, and RegionId is still sent.
	Endpoint        string
	AccessKeyID     string
	AccessKeySecret string
	// Regions are ECS RegionIds (default cn-beijing, cn-hangzhou, cn-shanghai).
	Regions []string
	// InstanceTypes to price (default DefaultInstanceTypes). A type not in the
	// package's A100 table is dropped, never called.
	InstanceTypes []string
	// MaxUnits is how many instances each offer assumes can be bought (neither
	// API reports stock); default 2.
	MaxUnits int
	// TTL is how long an offer stays valid after it was fetched (default 5m).
	TTL        time.Duration
	HTTPClient *http.Client
	// Now is the clock (default time.Now); it stamps offers, x-acs-date and StartTime.
	Now func() time.Time
	// Nonce returns x-acs-signature-nonce values (default: 16 random bytes, hex).
	Nonce func() string
}

func (c Config) withDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if len(c.Regions) == 0 {
		c.Regions = slices.Clone(DefaultRegions)
	}
	if len(c.InstanceTypes) == 0 {
		c.InstanceTypes = slices.Clone(DefaultInstanceTypes)
	}
	if c.MaxUnits <= 0 {
		c.MaxUnits = DefaultMaxUnits
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 20 * time.Second}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Nonce == nil {
		c.Nonce = randomNonce
	}
	return c
}

func randomNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}

// Client fetches ECS A100 quotes. It implements sluice.QuoteSource.
type Client struct{ cfg Config }

var _ sluice.QuoteSource = (*Client)(nil)

// New returns a Client for cfg (defaults filled in).
func New(cfg Config) *Client { return &Client{cfg: cfg.withDefaults()} }

// Name is "aliyun".
func (c *Client) Name() string { return ProviderName }

// Offers calls DescribePrice and DescribeSpotPriceHistory for every configured
// region × instance type, at most Concurrency calls in flight. A failed call
// (error JSON, HTTP or network error) for one region × type is recorded as a
// DroppedOffer whose reason carries the error, and the other calls' offers
// stand; err is returned when every call failed, or when ctx ends first.
// Offers come in region, then instance-type order: on-demand first, then spot
// by zone.
//
// When ctx ends before every call has finished, Offers returns at once — it
// does not wait for calls that are still in flight or queued — with the offers
// and drops of the calls that finished, and an error naming the calls that did
// not ("aliyun: 1 of 18 calls unfinished at deadline: DescribePrice cn-beijing
// ecs.gn7e-c16g1.16xlarge: context deadline exceeded") that wraps ctx.Err().
// A call that ended with ctx's own error counts as unfinished.
func (c *Client) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	now := c.cfg.Now()
	var dropped []sluice.DroppedOffer
	var types []string
	for _, it := range c.cfg.InstanceTypes {
		if _, err := lookupInstanceType(it); err != nil {
			dropped = append(dropped, sluice.DroppedOffer{Provider: ProviderName, Ref: it, Reason: err.Error()})
			continue
		}
		types = append(types, it)
	}
	// Two calls per region × type, on-demand then spot: the order of the offers.
	var calls []pricing.Call
	var refs []string // "aliyun:<region>:<type>", the Ref of a failed call's drop
	for _, r := range c.cfg.Regions {
		for _, it := range types {
			calls = append(calls,
				pricing.Call{Name: "DescribePrice " + r + " " + it, Fetch: func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
					return c.fetchOnDemand(ctx, r, it, now)
				}},
				pricing.Call{Name: "DescribeSpotPriceHistory " + r + " " + it, Fetch: func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
					return c.fetchSpot(ctx, r, it, now)
				}})
			refs = append(refs, "aliyun:"+r+":"+it, "aliyun:"+r+":"+it)
		}
	}
	if len(calls) == 0 {
		return nil, dropped, fmt.Errorf("aliyun: no region × A100 instance type to price")
	}
	results := pricing.CallAll(ctx, Concurrency, calls)
	var offers []sluice.Offer
	var errs []error
	for i, r := range results {
		if !r.Done {
			continue
		}
		offers = append(offers, r.Offers...)
		dropped = append(dropped, r.Dropped...)
		if r.Err != nil {
			errs = append(errs, r.Err)
			dropped = append(dropped, sluice.DroppedOffer{Provider: ProviderName, Ref: refs[i], Reason: r.Err.Error()})
		}
	}
	if err := pricing.UnfinishedError(ctx, ProviderName, "calls", calls, results); err != nil {
		return offers, dropped, err
	}
	if len(errs) == len(calls) {
		return nil, dropped, fmt.Errorf("fetching aliyun offers: every call failed: %w", errors.Join(errs...))
	}
	return offers, dropped, nil
}

func (c *Client) fetchOnDemand(ctx context.Context, region, instanceType string, now time.Time) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	const action = "DescribePrice"
	body, err := c.call(ctx, action, region, instanceType, url.Values{
		"RegionId":     {region},
		"InstanceType": {instanceType},
		"ResourceType": {"instance"},
		"PriceUnit":    {"Hour"},
	})
	if err != nil {
		return nil, nil, err
	}
	return ParseDescribePrice(body, region, instanceType, now, c.cfg)
}

func (c *Client) fetchSpot(ctx context.Context, region, instanceType string, now time.Time) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	const action = "DescribeSpotPriceHistory"
	var points []spotPoint
	var dropped []sluice.DroppedOffer
	offset := 0
	for pages := 0; ; pages++ {
		if pages == maxSpotPages {
			return nil, nil, fmt.Errorf("aliyun %s %s %s: more than %d pages", action, region, instanceType, maxSpotPages)
		}
		params := url.Values{
			"RegionId":     {region},
			"InstanceType": {instanceType},
			"NetworkType":  {"vpc"},
			"OSType":       {"linux"},
			"StartTime":    {now.Add(-spotWindow).UTC().Format(DateFormat)},
		}
		if offset > 0 {
			params.Set("Offset", strconv.Itoa(offset))
		}
		body, err := c.call(ctx, action, region, instanceType, params)
		if err != nil {
			return nil, nil, err
		}
		page, err := parseSpotPage(body, region, instanceType)
		if err != nil {
			return nil, nil, err
		}
		points = append(points, page.Points...)
		for _, d := range page.Dropped {
			if !slices.Contains(dropped, d) { // a replayed page may repeat
				dropped = append(dropped, d)
			}
		}
		if !page.HasNext || page.NextOffset <= offset || page.Entries == 0 {
			break
		}
		offset = page.NextOffset
	}
	offers, drops := spotOffers(points, region, instanceType, now, c.cfg)
	return offers, append(dropped, drops...), nil
}

// call sends one signed RPC request (parameters in the query, empty body) and
// returns the body of a 200 application/json response of at most
// pricing.MaxBody bytes. A non-200 response is an *APIError when its body is
// the ECS error JSON, else a *pricing.HTTPError with the status, its class and
// the body start; a 200 of another content type or too large is a
// *pricing.HTTPError of class bad-response.
func (c *Client) call(ctx context.Context, action, region, instanceType string, params url.Values) ([]byte, error) {
	endpoint := strings.ReplaceAll(c.cfg.Endpoint, "{region}", region)
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("aliyun %s %s: endpoint %q: %w", action, region, endpoint, err)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("aliyun %s %s: %w", action, region, err)
	}
	req.Header.Set("x-acs-action", action)
	req.Header.Set("x-acs-version", APIVersion)
	req.Header.Set("Accept", "application/json")
	if err := Sign(req, c.cfg.AccessKeyID, c.cfg.AccessKeySecret, nil, c.cfg.Now(), c.cfg.Nonce()); err != nil {
		return nil, fmt.Errorf("aliyun %s %s: %w", action, region, err)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("aliyun %s %s %s: %w", action, region, instanceType, err)
	}
	// ECS answers application/json (";charset=utf-8"), errors included. A
	// non-2xx answer is an *APIError when its body is the ECS error JSON, else
	// ReadBody's *pricing.HTTPError (classed by status).
	body, err := pricing.ReadBody(resp, ProviderName, action+" "+region+" "+instanceType, "application/json")
	var he *pricing.HTTPError
	if errors.As(err, &he) && he.Status != http.StatusOK {
		if root := gjson.ParseBytes(body); gjson.ValidBytes(body) && root.Get("Code").Exists() {
			return nil, apiErrorFrom(root, action, region, instanceType, resp.StatusCode)
		}
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK { // another 2xx: not what ECS documents
		return nil, &pricing.HTTPError{Provider: ProviderName, Op: action + " " + region + " " + instanceType,
			Status: resp.StatusCode, Body: snippet(body), Reason: "want HTTP 200", Class: pricing.ClassBadResponse}
	}
	return body, nil
}
