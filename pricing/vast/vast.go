// Package vast is the Vast.ai quote source: it searches the marketplace
// (POST /api/v0/bundles/, providers.md §3) once per search type (ondemand,
// bid, reserved) and turns each offer (an "ask": a slice of one machine) into
// a sluice.Offer.
//
// Vast prices are JSON numbers in USD per OFFER-hour — the whole slice of
// num_gpus GPUs, not per GPU (providers.md §0, §3). They are read as decimal
// from the raw JSON token text (never binary floating point) and kept with Basis
// sluice.PerOfferHour; a unit is the whole ask, so UnitPrice is the wire
// price itself.
//
// Responses are read with pricing.ReadBody (size cap, Content-Type
// application/json); a failed search is a *ThrottledError (429, class
// throttled, Retry-After parsed with pricing.RetryAfter) or an *HTTPError
// (401/403 auth, 5xx unavailable, other bad-response), both classed for
// pricing.Classify.
package vast

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// Provider is the provider name used in offers.
const Provider = "vast"

// Search types (the "type" of a bundles search, providers.md §3).
const (
	TypeOnDemand = "ondemand"
	TypeBid      = "bid"      // interruptible; the CLI's "interruptible"
	TypeReserved = "reserved" // a prepaid contract on the ask (providers.md §3 "Reserved")
)

// Defaults used when a Config field is zero.
const (
	DefaultBaseURL = "https://console.vast.ai"
	DefaultTTL     = 5 * time.Minute
	DefaultLimit   = 64
)

// DefaultTypes are the search types run by Offers.
var DefaultTypes = []string{TypeOnDemand, TypeBid, TypeReserved}

// DefaultGPUNames are Vast's A100 gpu_name values (spaces on the wire, providers.md §3).
var DefaultGPUNames = []string{"A100 SXM4", "A100 PCIE", "A100 SXM"}

// BundlesPath is the search endpoint under BaseURL.
const BundlesPath = "/api/v0/bundles/"

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	// BaseURL is the scheme and host, default https://console.vast.ai; requests go to BaseURL + BundlesPath.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>".
	APIKey string
	// Types are the search types run concurrently: "ondemand", "bid" and/or
	// "reserved" (each once, however often it is listed); default all three.
	Types []string
	// GPUNames is the gpu_name "in" filter; offers with another gpu_name are dropped.
	GPUNames []string
	// Limit is the search's "limit" (offers per search), default 64.
	Limit int
	// TTL is how long an offer is valid after it was fetched.
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
	if len(c.Types) == 0 {
		c.Types = DefaultTypes
	}
	// A type configured twice is searched once: its offers would otherwise
	// all come back twice.
	var types []string
	for _, t := range c.Types {
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	c.Types = types
	if len(c.GPUNames) == 0 {
		c.GPUNames = DefaultGPUNames
	}
	if c.Limit <= 0 {
		c.Limit = DefaultLimit
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Client is a sluice.QuoteSource for Vast.ai.
type Client struct {
	cfg Config
}

var _ sluice.QuoteSource = (*Client)(nil)

// New returns a Client; zero Config fields take their defaults.
func New(cfg Config) *Client { return &Client{cfg: cfg.withDefaults()} }

// Name is "vast".
func (c *Client) Name() string { return Provider }

// ThrottledError is a 429 from the search endpoint
// ({"detail":"API requests too frequent endpoint threshold=4.5"}, providers.md §3).
// The caller should wait RetryAfter (0 when the response had no Retry-After).
type ThrottledError struct {
	SearchType string
	RetryAfter time.Duration
	Detail     string
}

func (e *ThrottledError) Error() string {
	msg := fmt.Sprintf("vast: bundles search type=%s throttled (HTTP 429)", e.SearchType)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// ErrorClass is throttled.
func (e *ThrottledError) ErrorClass() string { return pricing.ClassThrottled }

// HTTPError is any other non-2xx answer from the search endpoint.
type HTTPError struct {
	SearchType string
	Status     int
	Body       string
	// RetryAfter is the Retry-After header (a 503 may carry one), else 0.
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("vast: bundles search type=%s: HTTP %d %s (%s): %s", e.SearchType, e.Status, http.StatusText(e.Status), e.ErrorClass(), e.Body)
}

// ErrorClass is the status class: 401/403 auth, 429 throttled, 5xx
// unavailable, any other bad-response.
func (e *HTTPError) ErrorClass() string {
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return pricing.ClassAuth
	case e.Status == http.StatusTooManyRequests:
		return pricing.ClassThrottled
	case e.Status >= 500:
		return pricing.ClassUnavailable
	}
	return pricing.ClassBadResponse
}

// SearchBody is the JSON filter sent for one search type: A100 names, rentable,
// not rented, verified, ordered by dph_total ascending (providers.md §3).
func SearchBody(searchType string, cfg Config) []byte {
	cfg = cfg.withDefaults()
	b, _ := json.Marshal(map[string]any{
		"gpu_name": map[string]any{"in": cfg.GPUNames},
		"rentable": map[string]any{"eq": true},
		"rented":   map[string]any{"eq": false},
		"verified": map[string]any{"eq": true},
		"external": map[string]any{"eq": false},
		"type":     searchType,
		"order":    [][]string{{"dph_total", "asc"}},
		"limit":    cfg.Limit,
	})
	return b
}

// Offers runs one search per configured type, concurrently, and returns the
// offers of all of them (in Types order). If a search fails, the offers and
// drops of the searches that worked are still returned, with the failures
// joined into err (errors.As finds a *ThrottledError): a 429 on the bid search
// does not cost the on-demand offers. A caller must therefore use the offers
// returned alongside a non-nil err.
func (c *Client) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	type result struct {
		offers  []sluice.Offer
		dropped []sluice.DroppedOffer
		err     error
	}
	results := make([]result, len(c.cfg.Types))
	var wg sync.WaitGroup
	for i, t := range c.cfg.Types {
		wg.Go(func() {
			o, d, err := c.search(ctx, t)
			results[i] = result{o, d, err}
		})
	}
	wg.Wait()
	var (
		offers  []sluice.Offer
		dropped []sluice.DroppedOffer
		errs    []error
	)
	for _, r := range results {
		offers = append(offers, r.offers...)
		dropped = append(dropped, r.dropped...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return offers, dropped, errors.Join(errs...)
}

func (c *Client) search(ctx context.Context, searchType string) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	if _, err := marketOf(searchType); err != nil {
		return nil, nil, err
	}
	url := c.cfg.BaseURL + BundlesPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(SearchBody(searchType, c.cfg)))
	if err != nil {
		return nil, nil, fmt.Errorf("vast: building bundles search type=%s: %w", searchType, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("vast: POST %s type=%s: %w", BundlesPath, searchType, err)
	}
	now := c.cfg.Now()
	retry := pricing.RetryAfter(strings.TrimSpace(resp.Header.Get("Retry-After")), now)
	body, err := pricing.ReadBody(resp, Provider, "POST "+BundlesPath+" type="+searchType, "application/json")
	var he *pricing.HTTPError
	switch {
	case err == nil:
		return ParseBundles(body, searchType, now, c.cfg)
	case !errors.As(err, &he) || (he.Status >= 200 && he.Status <= 299):
		// Reading failed, or a 2xx too large or not application/json (bad-response).
		return nil, nil, fmt.Errorf("vast: bundles search type=%s: %w", searchType, err)
	case he.Status == http.StatusTooManyRequests:
		var detail struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &detail)
		return nil, nil, &ThrottledError{SearchType: searchType, RetryAfter: retry, Detail: detail.Detail}
	}
	return nil, nil, &HTTPError{SearchType: searchType, Status: he.Status, Body: snippet(string(body)), RetryAfter: retry}
}

func snippet(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
