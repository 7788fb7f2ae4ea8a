// Package runpod is the RunPod quote source: it asks RunPod's GraphQL API
// (gpuTypes, providers.md §2.1) for the configured GPU types and turns each
// GPU type × cloud × market × GPU count into a sluice.Offer.
//
// RunPod prices are JSON Floats in USD per GPU-hour (providers.md §0, §2.1).
// They are read as decimal from the raw JSON token text (never float64); the
// token is kept in Offer.RawPrice with Basis sluice.PerGPUHour, and
// Offer.UnitPrice is that per-GPU price × GPUs per unit, exactly.
package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
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

// maxBody caps how much of a response is read.
const maxBody = 8 << 20

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
	// GPUCounts are the GPUs-per-unit quoted for each type, capped by its maxGpuCount.
	GPUCounts []int
	// MaxUnits is how many units each offer is assumed to have available
	// (gpuTypes carries no count): default 4; 0 when lowestPrice.stockStatus is "None".
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

// gpuTypeFields is the selection set asked for each GPU type (providers.md §2.1).
const gpuTypeFields = `id displayName memoryInGb maxGpuCount secureCloud communityCloud ` +
	`securePrice communityPrice secureSpotPrice communitySpotPrice ` +
	`lowestPrice(input:{gpuCount:1}){minimumBidPrice uninterruptablePrice stockStatus}`

// Query returns the GraphQL document sent for ids: one aliased
// gpuTypes(input:{id:…}) field per id (gpu0, gpu1, …), so one POST fetches them all.
func Query(ids []string) string {
	var b strings.Builder
	b.WriteString("query ")
	b.WriteString(OperationName)
	b.WriteString(" {")
	for i, id := range ids {
		lit, _ := json.Marshal(id) // a JSON string is a valid GraphQL string literal
		fmt.Fprintf(&b, " gpu%d: gpuTypes(input:{id:%s}) { %s }", i, lit, gpuTypeFields)
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

// HTTPError is a non-2xx response from the GraphQL endpoint (401 for a bad key).
type HTTPError struct {
	Status int
	Body   string // the start of the body, for the message
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("runpod: graphql HTTP %d %s: %s", e.Status, http.StatusText(e.Status), e.Body)
}

// Offers POSTs the gpuTypes query and normalises the answer (see ParseGPUTypes).
func (c *Client) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	payload, err := json.Marshal(map[string]any{
		"operationName": OperationName,
		"query":         Query(c.cfg.GPUTypeIDs),
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
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, nil, fmt.Errorf("runpod: reading graphql response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, &HTTPError{Status: resp.StatusCode, Body: snippet(body)}
	}
	return ParseGPUTypes(body, c.cfg.Now(), c.cfg)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
