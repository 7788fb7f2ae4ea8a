// Package runpod is the RunPod quote source: it asks RunPod's GraphQL API
// (gpuTypes, providers.md §2.1) for the configured GPU types and turns each
// GPU type × cloud × market × GPU count into a sluice.Offer.
//
// Each GPU count N is quoted on its own: the query asks, inside every
// gpuTypes field, one aliased lowestPrice per cloud and count
// ("lp_s_4: lowestPrice(input:{gpuCount:4, secureCloud:true}) {…}", see
// Query), because RunPod's per-count prices are not N × the 1-GPU price
// (the catalog's 2x/4x/8x A100 80GB PCIe pods are 1.62 per GPU-hour, the 1x
// pod 1.64). The flat securePrice/communityPrice fields are only a fallback
// (see ParseGPUTypes for the precedence).
//
// RunPod prices are JSON Floats in USD per GPU-hour (providers.md §0, §2.1).
// They are read as decimal from the raw JSON token text (never binary floating point); the
// token is kept in Offer.RawPrice with Basis sluice.PerGPUHour, and
// Offer.UnitPrice is that per-GPU price × GPUs per unit, exactly.
//
// Responses are read with pricing.ReadBody (size cap, status classes,
// Content-Type application/json); every error this package returns is
// classed (pricing.Classify): *HTTPError by status, *GraphQLError auth or
// bad-response by its messages.
package runpod

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
const Provider = "runpod"

// Defaults used when a Config field is zero.
const (
	DefaultBaseURL  = "https://api.runpod.io/graphql"
	DefaultMaxUnits = 4
	DefaultTTL      = 5 * time.Minute
)

// DefaultGPUTypeIDs are RunPod's two A100 80GB gpuTypeIds (providers.md §2.1).
var DefaultGPUTypeIDs = []string{"NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"}

// DefaultGPUCounts are the GPUs-per-pod counts quoted for each GPU type
// (each capped by the type's maxGpuCount).
var DefaultGPUCounts = []int{1, 2, 4, 8}

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	// BaseURL is the GraphQL endpoint itself (not a prefix), default
	// https://api.runpod.io/graphql. For a replay server: srv.URL("runpod")+"/graphql".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" (providers.md §2.1).
	APIKey string
	// GPUTypeIDs are the gpuTypeIds asked for (each once, however often it is
	// listed); types in the response that are not listed here are ignored.
	GPUTypeIDs []string
	// GPUCounts are the GPUs-per-unit quoted for each type (one lowestPrice
	// per cloud and count in the query); counts above a type's maxGpuCount
	// give no offer. Counts below 1 or listed twice are ignored.
	GPUCounts []int
	// MaxUnits caps the units an offer reports: lowestPrice.stockStatus High
	// → 4, Medium → 2, Low → 1, each at most MaxUnits; None or null → 0. An
	// offer priced from the securePrice/communityPrice fallback (no stock
	// figure) reports MaxUnits. Default 4.
	MaxUnits int
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
	if len(c.GPUTypeIDs) == 0 {
		c.GPUTypeIDs = DefaultGPUTypeIDs
	}
	// An id configured twice is asked for once: the response would otherwise
	// list it twice and every offer of it would be reported as a duplicate.
	var ids []string
	for _, id := range c.GPUTypeIDs {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	c.GPUTypeIDs = ids
	if len(c.GPUCounts) == 0 {
		c.GPUCounts = DefaultGPUCounts
	}
	var counts []int
	for _, n := range c.GPUCounts {
		if n >= 1 && !slices.Contains(counts, n) {
			counts = append(counts, n)
		}
	}
	c.GPUCounts = counts
	if c.MaxUnits <= 0 {
		c.MaxUnits = DefaultMaxUnits
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

// Client is a sluice.QuoteSource for RunPod.
type Client struct {
	cfg Config
}

var _ sluice.QuoteSource = (*Client)(nil)

// New returns a Client; zero Config fields take their defaults.
func New(cfg Config) *Client { return &Client{cfg: cfg.withDefaults()} }

// Name is "runpod".
func (c *Client) Name() string { return Provider }

// OperationName is the GraphQL operation name sent with the gpuTypes query
// (the replay server looks up "graphql.<OperationName>.json" first).
const OperationName = "GpuTypes"

// gpuTypeFields is the selection set asked for each GPU type (providers.md
// §2.1), before the lowestPrice aliases.
const gpuTypeFields = `id displayName memoryInGb maxGpuCount secureCloud communityCloud ` +
	`securePrice communityPrice secureSpotPrice communitySpotPrice`

// lowestPriceFields is the selection set of every lowestPrice alias.
const lowestPriceFields = `minimumBidPrice uninterruptablePrice stockStatus`

// LowestPriceAlias is the alias of the lowestPrice field for cloud
// ("secure" or "community") and GPU count n: "lp_s_4", "lp_c_1".
func LowestPriceAlias(cloud string, n int) string {
	return fmt.Sprintf("lp_%c_%d", cloud[0], n)
}

// Query returns the GraphQL document sent for ids and counts: one aliased
// gpuTypes(input:{id:…}) field per id (gpu0, gpu1, …), so one POST fetches
// them all, and inside each, for every count n (≥ 1, each once) and both
// clouds, an aliased
//
//	lp_s_<n>: lowestPrice(input:{gpuCount:<n>, secureCloud:true}) { minimumBidPrice uninterruptablePrice stockStatus }
//	lp_c_<n>: lowestPrice(input:{gpuCount:<n>, secureCloud:false}) { … }
//
// The type's maxGpuCount is not known when asking, so every configured count
// is asked; ParseGPUTypes ignores counts above it.
func Query(ids []string, counts []int) string {
	var lp strings.Builder
	done := map[int]bool{}
	for _, n := range counts {
		if n < 1 || done[n] {
			continue
		}
		done[n] = true
		for _, cloud := range clouds {
			fmt.Fprintf(&lp, " %s: lowestPrice(input:{gpuCount:%d, secureCloud:%t}) { %s }",
				LowestPriceAlias(cloud, n), n, cloud == "secure", lowestPriceFields)
		}
	}
	var b strings.Builder
	b.WriteString("query ")
	b.WriteString(OperationName)
	b.WriteString(" {")
	for i, id := range ids {
		lit, _ := json.Marshal(id) // a JSON string is a valid GraphQL string literal
		fmt.Fprintf(&b, " gpu%d: gpuTypes(input:{id:%s}) { %s%s }", i, lit, gpuTypeFields, lp.String())
	}
	b.WriteString(" }")
	return b.String()
}

// GraphQLError is a 200 response whose body carries GraphQL "errors".
type GraphQLError struct {
	Messages []string
}

func (e *GraphQLError) Error() string {
	return fmt.Sprintf("runpod: graphql errors: %s", strings.Join(e.Messages, "; "))
}

// ErrorClass is auth when a message speaks of a missing or bad key
// (contains "unauthorized" or "api key", any case), else bad-response: an
// answer with errors is not the data the query documents.
func (e *GraphQLError) ErrorClass() string {
	for _, m := range e.Messages {
		l := strings.ToLower(m)
		if strings.Contains(l, "unauthorized") || strings.Contains(l, "api key") {
			return pricing.ClassAuth
		}
	}
	return pricing.ClassBadResponse
}

// HTTPError is a non-2xx response from the GraphQL endpoint (401 for a bad
// key). Err is the *pricing.HTTPError it came from (status class, Retry-After).
type HTTPError struct {
	Status int
	Body   string // the start of the body, for the message
	// RetryAfter is the Retry-After header of a 429/503 (0 when absent).
	RetryAfter time.Duration
	Err        *pricing.HTTPError
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("runpod: graphql HTTP %d %s (%s): %s", e.Status, http.StatusText(e.Status), e.ErrorClass(), e.Body)
}

// ErrorClass is the status class: 401/403 auth, 429 throttled, 5xx
// unavailable, any other bad-response.
func (e *HTTPError) ErrorClass() string {
	if e.Err != nil && e.Err.Class != "" {
		return e.Err.Class
	}
	return pricing.ClassBadResponse
}

func (e *HTTPError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// Offers POSTs the gpuTypes query and normalises the answer (see ParseGPUTypes).
func (c *Client) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	payload, err := json.Marshal(map[string]any{
		"operationName": OperationName,
		"query":         Query(c.cfg.GPUTypeIDs, c.cfg.GPUCounts),
		"variables":     map[string]any{},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("runpod: encoding query: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL, bytes.NewReader(payload))
	if err != nil {
		return nil, nil, fmt.Errorf("runpod: building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("runpod: POST graphql: %w", err)
	}
	body, err := pricing.ReadBody(resp, Provider, "POST graphql", "application/json")
	if err != nil {
		var he *pricing.HTTPError
		if errors.As(err, &he) && (he.Status < 200 || he.Status > 299) {
			return nil, nil, &HTTPError{Status: he.Status, Body: snippet(body), RetryAfter: he.RetryAfter, Err: he}
		}
		// A 2xx that is too large or not JSON by its Content-Type (bad-response).
		return nil, nil, fmt.Errorf("runpod: graphql response: %w", err)
	}
	return ParseGPUTypes(body, c.cfg.Now(), c.cfg)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
