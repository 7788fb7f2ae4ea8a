// Package autodl is Sluice's quote source for AutoDL (autodl.com) A100
// capacity, through the Elastic Deployment (弹性部署) developer API
// (../shared/reference/providers.md §4).
//
// AutoDL publishes stock but no price: POST /api/v1/dev/machine/region/gpu_stock
// answers, per data centre (region_sign), how many cards of each GPU name are
// idle, and nothing else. There is no documented price-list endpoint
// (providers.md §4, "Prices"). So an AutoDL offer joins two things:
//
//   - the live idle-card count of one region × GPU name (from the API), and
//   - the per-GPU-hour price of that GPU name from a dated price list in the
//     configuration (Config.PriceList), which someone copied from AutoDL's
//     published prices on its AsOf date.
//
// Every offer says so in Offer.Source ("autodl gpu_stock beijingDC1 + price
// list 2026-11-01 (<list source>)"): its price is the list's, not the API's.
// The price actually charged is known only after a container is created
// (container list "price"), so a list that is out of date makes the plan wrong;
// keep AsOf honest.
//
// Units: the list is in yuan (CNY) per GPU-hour, as a decimal (Yuan("6.68")).
// AutoDL's API speaks milli-yuan (yuan × 1000) per hour in its price_from /
// price_to filters and container "price"; MilliYuan("6680") converts that form.
// Money never passes through binary floating point.
//
// AutoDL has no spot or interruptible market: every offer is on-demand
// (pay-as-you-go).
package autodl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// Provider is the provider name used in offers.
const Provider = "autodl"

// Currency of every AutoDL price (providers.md §0).
const Currency = "CNY"

// StockPath is the region GPU-stock endpoint under BaseURL.
const StockPath = "/api/v1/dev/machine/region/gpu_stock"

// Defaults used when a Config field is zero.
const (
	DefaultBaseURL = "https://api.autodl.com"
	DefaultTTL     = 5 * time.Minute
)

// DefaultRegions are the region_sign codes asked by default: Beijing A and B
// (residency zone beijing), Yangzhou (east-china; AutoDL calls it 3090专区 and
// it may hold no A100 at all) and the Northwest enterprise zone (cn-other).
// policy/data/regions.json maps every AutoDL code to its zone.
var DefaultRegions = []string{"beijingDC1", "beijingDC2", "yangzhouDC1", "westDC2"}

// DefaultGPUNames are the gpu_name strings asked for. AutoDL's exact A100
// names are NOT verified (providers.md §8): these follow NVIDIA's product
// names as AutoDL's console is believed to show them. Check them against a
// live gpu_stock answer before relying on them.
var DefaultGPUNames = []string{"A100-SXM4-80GB", "A100-PCIE-40GB"}

// DefaultGPUCounts are the GPUs-per-unit quoted for each region × GPU name
// (each only when it is ≤ the idle-card count).
var DefaultGPUCounts = []int{1, 2, 4, 8}

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	// BaseURL is the scheme and host, default https://api.autodl.com; requests
	// go to BaseURL + StockPath. For a replay server: srv.URL("autodl").
	BaseURL string
	// Token is the developer token (控制台 → 设置 → 开发者Token), sent as the raw
	// "Authorization: <token>" header: AutoDL uses no "Bearer" prefix.
	Token string
	// Regions are region_sign codes, one gpu_stock call each (each once,
	// however often it is listed).
	Regions []string
	// GPUNames are sent as gpu_name_set; GPU names in an answer that are not
	// listed here are ignored. Matching is exact (case and punctuation).
	GPUNames []string
	// GPUCounts are the GPUs-per-unit quoted (1..sluice.MaxGPUsPerUnit; others ignored).
	GPUCounts []int
	// PriceList gives the price of each GPU name (AutoDL's API has none).
	PriceList PriceList
	// TTL is how long an offer is valid after it was fetched (ExpiresAt = FetchedAt + TTL).
	TTL        time.Duration
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.Regions = uniqueStrings(c.Regions, DefaultRegions)
	c.GPUNames = uniqueStrings(c.GPUNames, DefaultGPUNames)
	if len(c.GPUCounts) == 0 {
		c.GPUCounts = DefaultGPUCounts
	}
	var counts []int
	for _, n := range c.GPUCounts {
		if n >= 1 && n <= sluice.MaxGPUsPerUnit && !slices.Contains(counts, n) {
			counts = append(counts, n)
		}
	}
	c.GPUCounts = counts
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 20 * time.Second}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// uniqueStrings is list without empty strings and repeats, or def when that leaves nothing.
func uniqueStrings(list, def []string) []string {
	var out []string
	for _, s := range list {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return slices.Clone(def)
	}
	return out
}

// Client is a sluice.QuoteSource for AutoDL.
type Client struct{ cfg Config }

var _ sluice.QuoteSource = (*Client)(nil)

// New returns a Client; zero Config fields take their defaults.
func New(cfg Config) *Client { return &Client{cfg: cfg.withDefaults()} }

// Name is "autodl".
func (c *Client) Name() string { return Provider }

// StockRequest is the JSON body of one gpu_stock call.
type StockRequest struct {
	RegionSign string   `json:"region_sign"`
	GPUNameSet []string `json:"gpu_name_set"`
}

// Offers calls gpu_stock for every configured region at once and joins each
// answer with the price list (see ParseGPUStock). Offers come in region order.
//
// A region whose call fails (HTTP error, code ≠ "Success", unreadable body,
// network error) becomes a DroppedOffer with Ref "autodl:<region>" and the
// error as its reason; the other regions' offers stand. err is returned when
// every region failed (it wraps each region's error, so pricing.Classify
// gives the first one's class), or when ctx ends first.
//
// When ctx ends before every call has finished, Offers returns at once — it
// does not wait for hung calls — with the offers and drops of the regions
// that finished and an error naming those that did not ("autodl: 1 of 4
// regions unfinished at deadline: westDC2: context deadline exceeded"),
// wrapping ctx.Err().
//
// A price list with no prices or no AsOf date is an error before any call.
func (c *Client) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	if err := c.cfg.PriceList.checkList(); err != nil {
		return nil, nil, err
	}
	now := c.cfg.Now()
	regions := c.cfg.Regions

	calls := make([]pricing.Call, len(regions))
	for i, region := range regions {
		calls[i] = pricing.Call{Name: region, Fetch: func(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
			return c.fetch(ctx, region, now)
		}}
	}
	results := pricing.CallAll(ctx, 0, calls)
	var offers []sluice.Offer
	var dropped []sluice.DroppedOffer
	var errs []error
	for i, r := range results {
		if !r.Done {
			continue
		}
		offers = append(offers, r.Offers...)
		dropped = append(dropped, r.Dropped...)
		if r.Err != nil {
			errs = append(errs, r.Err)
			dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: Provider + ":" + regions[i], Reason: r.Err.Error()})
		}
	}
	if err := pricing.UnfinishedError(ctx, Provider, "regions", calls, results); err != nil {
		return offers, dropped, err
	}
	if len(errs) == len(regions) {
		return nil, dropped, fmt.Errorf("autodl: every region failed: %w", errors.Join(errs...))
	}
	return offers, dropped, nil
}

// fetch makes one gpu_stock call for region and parses the answer.
func (c *Client) fetch(ctx context.Context, region string, now time.Time) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	op := "gpu_stock " + region
	payload, err := json.Marshal(StockRequest{RegionSign: region, GPUNameSet: c.cfg.GPUNames})
	if err != nil {
		return nil, nil, fmt.Errorf("autodl %s: encoding request: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+StockPath, bytes.NewReader(payload))
	if err != nil {
		return nil, nil, fmt.Errorf("autodl %s: building request: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", c.cfg.Token) // raw token, no "Bearer" (providers.md §4)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("autodl %s: %w", op, err)
	}
	// The op names the region, so an HTTP error reads
	// "autodl gpu_stock beijingDC1: HTTP 500 (unavailable): …".
	body, err := pricing.ReadBody(resp, Provider, op, "application/json")
	if err != nil {
		return nil, nil, err
	}
	return ParseGPUStock(body, region, now, c.cfg)
}
