// Package vast places Vast.ai plan lines through the REST API (providers.md
// §3): PUT /api/v0/asks/{ask}/ rents an ask (one machine slice: one unit);
// an interruptible (spot) line ALWAYS carries "price", the bid in USD per
// machine-hour (brokers/bid, 6 places, rounded down) — an ask rented without
// a price starts on-demand — and an on-demand line never carries one. The
// instance's label is placement.Name(decision, line) (Vast has no tags and no
// idempotency key), so Find and a retried Place look the label up in GET
// /api/v0/instances/ before renting. Release is DELETE /api/v0/instances/{id}/;
// ChangeBid is PUT /api/v0/instances/bid_price/{id}/.
//
// Read-back: the instance's is_bid (market) and dph_total (USD per
// machine-hour); a market other than asked, or a price beyond the tolerance,
// destroys the instance at once (*placement.MismatchError).
//
// Billing: per second (brokers/billing "vast").
package vast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/pricing"
	pricingvast "github.com/sluicehq/sluice/pricing/vast"
)

// Provider is the provider name.
const Provider = "vast"

// Currency of Vast prices.
const Currency = "USD"

// Config configures the adapter.
type Config struct {
	// BaseURL is scheme and host (default https://console.vast.ai).
	BaseURL string
	APIKey  string
	// Image is the container image (default DefaultImage); Disk is GB (default 32).
	Image string
	Disk  int
	// Tolerance is the relative price read-back tolerance (default placement.DefaultTolerance).
	Tolerance  decimal.Decimal
	HTTPClient *http.Client
	Now        func() time.Time
}

// DefaultImage is a PyTorch image (set Config.Image to the training image).
const DefaultImage = "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-devel"

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = pricingvast.DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.Disk <= 0 {
		c.Disk = 32
	}
	c.Tolerance, c.HTTPClient, c.Now = placement.OrTolerance(c.Tolerance), placement.OrHTTPClient(c.HTTPClient), placement.OrNow(c.Now)
	return c
}

// APIError is a Vast error answer {"success":false,"error":…,"msg":…} or {"detail":…}.
type APIError struct {
	Op     string
	Status int
	Code   string // "error" member, e.g. invalid_price, no_such_ask, not_found
	Msg    string
	class  error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("vast %s: HTTP %d: %s: %s", e.Op, e.Status, e.Code, e.Msg)
}

// Unwrap is the sluice class (see Classify).
func (e *APIError) Unwrap() error { return e.class }

// Adapter is the Vast.ai placement.Adapter.
type Adapter struct {
	cfg   Config
	locks placement.Locks
}

var _ placement.Adapter = (*Adapter)(nil)

// New returns an adapter.
func New(cfg Config) *Adapter { return &Adapter{cfg: cfg.withDefaults()} }

// Provider is "vast".
func (a *Adapter) Provider() string { return Provider }

// Billing is per second (brokers/billing).
func (a *Adapter) Billing() (granularity, minimum time.Duration) { return placement.Billing(Provider) }

func (a *Adapter) do(ctx context.Context, method, path, op string, body any) ([]byte, error) {
	ans, err := placement.CallJSON(ctx, a.cfg.HTTPClient, Provider, op, method, a.cfg.BaseURL+path, placement.Bearer(a.cfg.APIKey), body)
	if err != nil {
		return nil, err
	}
	if e, ok := ParseError(op, ans.Status, ans.Body); ok {
		return nil, e
	}
	if ans.Err != nil {
		return nil, fmt.Errorf("vast %s: %v: %w", op, ans.Err, placement.StatusClass(ans.Status))
	}
	return ans.Body, nil
}

// offerAsk reads the ask id from a Vast offer id "vast:<ask>:<type>".
func offerAsk(id string) (string, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 3 || parts[0] != Provider {
		return "", fmt.Errorf("vast: offer id %q: not a Vast offer id: %w", id, sluice.ErrQuota)
	}
	if n, err := strconv.ParseUint(parts[1], 10, 63); err != nil || n == 0 {
		return "", fmt.Errorf("vast: offer id %q: ask id not a positive integer: %w", id, sluice.ErrQuota)
	}
	return parts[1], nil
}

// Place rents the line's ask (see the package doc).
func (a *Adapter) Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line, lim bid.Limits) (sluice.Placement, error) {
	s, err := placement.Begin(Provider, offerAsk, oneSlice, decisionID, lineNo, line, lim, a.cfg.Now())
	ask, p, b := s.Ref, s.Placement, s.Bid
	if err != nil {
		return p, err
	}
	label := placement.Name(decisionID, lineNo)
	defer a.locks.Lock(p.ClientToken)()
	inst, found, err := a.byLabel(ctx, label)
	if err != nil {
		return p, err
	}
	if !found {
		body := map[string]any{"client_id": "me", "image": a.cfg.Image, "disk": a.cfg.Disk, "runtype": "ssh", "label": label,
			"env": "-e SLUICE_DECISION=" + decisionID + " -e SLUICE_LINE=" + strconv.Itoa(lineNo)}
		if line.Market == sluice.Spot {
			body["price"] = json.RawMessage(b.Text) // never omitted: without it the ask starts on-demand
		}
		out, err := a.do(ctx, http.MethodPut, "/api/v0/asks/"+ask+"/", "PUT asks/"+ask, body)
		if err != nil {
			return p, err
		}
		id, err := ParseCreate(out)
		if err != nil {
			return p, fmt.Errorf("vast PUT asks/%s: %v: %w", ask, err, sluice.ErrTransient)
		}
		p.ExternalIDs = []string{id}
		inst, found, err = a.byLabel(ctx, label)
		if err != nil || !found {
			p.Price = placement.Expected(line)
			return p, nil // rented; the read-back waits for the next Find
		}
	}
	p.ExternalIDs = []string{inst.ID}
	p.Price = inst.Price
	if !inst.LaunchedAt.IsZero() {
		p.PlacedAt = inst.LaunchedAt
	}
	if inst.IsBid != (line.Market == sluice.Spot) {
		return placement.Mismatch(ctx, p, fmt.Sprintf("instance %s is_bid=%v for a %s line", inst.ID, inst.IsBid, line.Market), a.Release)
	}
	if reason := placement.CheckPrice(line.Market, inst.Price, placement.Expected(line), a.cfg.Tolerance); reason != "" {
		return placement.Mismatch(ctx, p, reason, a.Release)
	}
	return p, nil
}

// oneSlice refuses reserved lines and lines of other than one unit
// (placement.Begin): an ask is one machine slice.
func oneSlice(line sluice.Line) string {
	if line.Units != 1 || line.Market == sluice.Reserved {
		return "an ask is one machine slice, rented alone"
	}
	return ""
}

// Instance is one row of GET /api/v0/instances/.
type Instance struct {
	ID, Label, Status string
	IsBid             bool
	// Price is dph_total, USD per machine-hour (exact from the token text).
	Price      sluice.Money
	LaunchedAt time.Time
}

// ParseCreate reads new_contract from {"success":true,"new_contract":N}.
func ParseCreate(body []byte) (string, error) {
	if !gjson.ValidBytes(body) {
		return "", errors.New("answer is not JSON")
	}
	root := gjson.ParseBytes(body)
	if root.Get("success").Type != gjson.True {
		return "", errors.New("success is not true")
	}
	nc := root.Get("new_contract")
	if nc.Type != gjson.Number {
		return "", errors.New("new_contract missing or not a number")
	}
	if n, err := strconv.ParseUint(nc.Raw, 10, 63); err != nil || n == 0 {
		return "", fmt.Errorf("new_contract %q: not a positive integer", nc.Raw)
	}
	return nc.Raw, nil
}

// ParseInstances reads {"instances":[…]}.
func ParseInstances(body []byte) ([]Instance, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("answer is not JSON")
	}
	list := gjson.GetBytes(body, "instances")
	if !list.IsArray() {
		return nil, errors.New("instances: missing or not a list")
	}
	var out []Instance
	for n, r := range list.Array() {
		id := r.Get("id")
		if id.Type != gjson.Number {
			return nil, fmt.Errorf("instances[%d].id missing", n)
		}
		if v, err := strconv.ParseUint(id.Raw, 10, 63); err != nil || v == 0 {
			return nil, fmt.Errorf("instances[%d].id %q: not a positive integer", n, id.Raw)
		}
		in := Instance{ID: id.Raw, Label: r.Get("label").String(), Status: r.Get("actual_status").String(), IsBid: r.Get("is_bid").Type == gjson.True}
		d, present, err := pricing.WireAmount(r.Get("dph_total"))
		if err != nil {
			return nil, fmt.Errorf("instances[%d].dph_total %q: %v", n, r.Get("dph_total").Raw, err)
		}
		if present {
			in.Price = sluice.Money{Amount: d, Currency: Currency}
		}
		if sd := r.Get("start_date"); sd.Type == gjson.Number {
			if v, err := decimal.NewFromString(sd.Raw); err == nil && v.IsPositive() && v.LessThan(decimal.NewFromInt(math.MaxInt32)) {
				in.LaunchedAt = time.Unix(v.IntPart(), 0).UTC()
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// ParseError reads a Vast error answer; ok is false for a success answer.
func ParseError(op string, status int, body []byte) (*APIError, bool) {
	root := gjson.ParseBytes(body)
	if status < 300 && (!gjson.ValidBytes(body) || root.Get("success").Type != gjson.False) {
		return nil, false
	}
	if status >= 300 && !gjson.ValidBytes(body) {
		return nil, false
	}
	code, msg := root.Get("error").String(), root.Get("msg").String()
	if msg == "" {
		msg = root.Get("detail").String()
	}
	return &APIError{Op: op, Status: status, Code: code, Msg: msg, class: Classify(status, code, msg)}, true
}

// Classify maps a Vast error to its sluice class: HTTP 429 or 5xx →
// ErrTransient; 410 (offer gone), no_such_ask, invalid_price (a bid under
// the current minimum) → ErrInsufficientCapacity; any other 4xx
// (insufficient_credit, invalid_args, auth) → ErrQuota.
func Classify(status int, code, msg string) error {
	switch {
	case status == 429 || status >= 500:
		return sluice.ErrTransient
	case status == 410 || code == "no_such_ask" || code == "invalid_price" || code == "offer_unavailable":
		return sluice.ErrInsufficientCapacity
	case strings.Contains(strings.ToLower(msg), "interruptible") && strings.Contains(strings.ToLower(msg), "not available"):
		return sluice.ErrCapabilityUnavailable
	}
	return sluice.ErrQuota
}

func (a *Adapter) instances(ctx context.Context) ([]Instance, error) {
	b, err := a.do(ctx, http.MethodGet, "/api/v0/instances/?owner=me", "GET instances", nil)
	if err != nil {
		return nil, err
	}
	list, err := ParseInstances(b)
	if err != nil {
		return nil, fmt.Errorf("vast GET instances: %v: %w", err, sluice.ErrTransient)
	}
	return list, nil
}

func (a *Adapter) byLabel(ctx context.Context, label string) (Instance, bool, error) {
	list, err := a.instances(ctx)
	if err != nil {
		return Instance{}, false, err
	}
	for _, in := range list {
		if in.Label == label {
			return in, true, nil
		}
	}
	return Instance{}, false, nil
}

// Find looks the line's label up.
func (a *Adapter) Find(ctx context.Context, decisionID string, lineNo int) (sluice.Placement, bool, error) {
	in, ok, err := a.byLabel(ctx, placement.Name(decisionID, lineNo))
	if err != nil || !ok {
		return sluice.Placement{}, false, err
	}
	market := sluice.OnDemand
	if in.IsBid {
		market = sluice.Spot
	}
	p := placement.Found(Provider, decisionID, lineNo)
	p.ExternalIDs, p.Market, p.Units, p.Price, p.PlacedAt = []string{in.ID}, market, 1, in.Price, in.LaunchedAt
	return p, true, nil
}

// ChangeBid sets a running interruptible instance's bid (USD per
// machine-hour, text as brokers/bid wrote it).
func (a *Adapter) ChangeBid(ctx context.Context, instanceID, price string) error {
	_, err := a.do(ctx, http.MethodPut, "/api/v0/instances/bid_price/"+instanceID+"/", "PUT bid_price/"+instanceID,
		map[string]any{"client_id": "me", "price": json.RawMessage(price)})
	return err
}

// Release destroys p's instances; one Vast no longer knows (HTTP 404) counts as gone.
func (a *Adapter) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	return placement.ReleaseEach(ctx, p.ExternalIDs, func(ctx context.Context, id string) error {
		_, err := a.do(ctx, http.MethodDelete, "/api/v0/instances/"+id+"/", "DELETE instances/"+id, nil)
		return err
	}, func(err error) bool {
		var ae *APIError
		return errors.As(err, &ae) && ae.Status == 404
	}, a.cfg.Now)
}

// Instances lists instances whose label Sluice wrote.
func (a *Adapter) Instances(ctx context.Context) ([]sluice.Instance, error) {
	list, err := a.instances(ctx)
	if err != nil {
		return nil, err
	}
	return placement.Named(Provider, list, func(in Instance) string { return in.Label }, func(in Instance) sluice.Instance {
		return sluice.Instance{ExternalID: in.ID, State: in.Status, LaunchedAt: in.LaunchedAt, Price: in.Price}
	}), nil
}
