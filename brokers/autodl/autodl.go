// Package autodl places AutoDL plan lines through the elastic deployment
// developer API (providers.md §4): POST /api/v1/dev/deployment creates a
// ReplicaSet deployment named placement.Name(decision, line) with
// replica_num = units, one container per unit of gpu_num GPUs in the offer's
// data centre, and container_template.price_to as the price CEILING in
// milli-yuan per GPU-hour (brokers/bid: the line's unit price per GPU, ×1000,
// rounded down). AutoDL has no spot market and no idempotency key: Place and
// Find look the deployment up by name first. The price actually charged is
// read back from the container list ("price", milli-yuan per container-hour
// [assumption]); beyond the tolerance the deployment is deleted at once
// (*placement.MismatchError). Release is DELETE /api/v1/dev/deployment.
//
// External ids are "<deployment uuid>/<container uuid>", so a release (or a
// reconcile of an orphan) can name the deployment from the id alone.
//
// Billing: per second (ASSUMPTION, brokers/billing "autodl").
package autodl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/pricing"
	pricingautodl "github.com/sluicehq/sluice/pricing/autodl"
)

// Provider is the provider name.
const Provider = "autodl"

// Config configures the adapter.
type Config struct {
	// BaseURL is scheme and host (default https://api.autodl.com).
	BaseURL string
	// Token is the developer token, sent raw as Authorization (no "Bearer").
	Token string
	// ImageUUID is the deployment image (default DefaultImage); Cmd its command.
	ImageUUID, Cmd string
	// Tolerance is the relative price read-back tolerance (default placement.DefaultTolerance).
	Tolerance  decimal.Decimal
	HTTPClient *http.Client
	Now        func() time.Time
}

// DefaultImage is a placeholder AutoDL base image uuid (set Config.ImageUUID).
const DefaultImage = "base-image-l2t43iu6uk"

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = pricingautodl.DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.ImageUUID == "" {
		c.ImageUUID = DefaultImage
	}
	if c.Cmd == "" {
		c.Cmd = "sleep infinity"
	}
	c.Tolerance, c.HTTPClient, c.Now = placement.OrTolerance(c.Tolerance), placement.OrHTTPClient(c.HTTPClient), placement.OrNow(c.Now)
	return c
}

// APIError is an envelope whose code is not "Success".
type APIError struct {
	Op, Code, Msg string
	Status        int
	class         error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("autodl %s: HTTP %d code %s: %s", e.Op, e.Status, e.Code, e.Msg)
}

// Unwrap is the sluice class (see Classify).
func (e *APIError) Unwrap() error { return e.class }

// Words by class, matched in the lower-cased code and msg. AutoDL documents
// no code list (providers.md §8): these are judged from the codes and
// messages seen.
var (
	capacityWords   = []string{"库存不足", "资源不足", "无可用", "没有可用", "noenough", "not enough", "insufficient", "nostock", "no_stock", "stock"}
	transientWords  = []string{"toomany", "too_many", "ratelimit", "频繁", "限流", "internal", "busy", "系统繁忙", "服务繁忙", "系统错误", "timeout"}
	capabilityWords = []string{"notavailable", "featurenotavailable", "暂不可用"}
)

func hasWord(s string, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
}

// Classify maps an envelope code and msg (and HTTP status) to a sluice
// class: stock words → ErrInsufficientCapacity; HTTP 429/5xx or frequency,
// busy, internal words → ErrTransient; feature-not-available →
// ErrCapabilityUnavailable; anything else (auth, permission, bad
// parameters) → ErrQuota.
func Classify(status int, code, msg string) error {
	s := strings.ToLower(code + " " + msg)
	switch {
	case status == 429 || status >= 500 || hasWord(s, transientWords):
		return sluice.ErrTransient
	case hasWord(s, capacityWords):
		return sluice.ErrInsufficientCapacity
	case hasWord(s, capabilityWords):
		return sluice.ErrCapabilityUnavailable
	}
	return sluice.ErrQuota
}

// ParseEnvelope reads {"code","msg","data"}: data when code is "Success",
// else an *APIError.
func ParseEnvelope(op string, status int, body []byte) (gjson.Result, error) {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, fmt.Errorf("autodl %s: HTTP %d: answer is not JSON: %w", op, status, placement.StatusClass(max(status, 500)))
	}
	root := gjson.ParseBytes(body)
	code := root.Get("code")
	if code.Type != gjson.String {
		return gjson.Result{}, fmt.Errorf("autodl %s: code missing: %w", op, sluice.ErrTransient)
	}
	if code.String() != pricingautodl.CodeSuccess || status != 200 {
		msg := root.Get("msg").String()
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return gjson.Result{}, &APIError{Op: op, Code: code.String(), Msg: msg, Status: status, class: Classify(status, code.String(), msg)}
	}
	return root.Get("data"), nil
}

// Adapter is the AutoDL placement.Adapter.
type Adapter struct {
	cfg   Config
	locks placement.Locks
}

var _ placement.Adapter = (*Adapter)(nil)

// New returns an adapter.
func New(cfg Config) *Adapter { return &Adapter{cfg: cfg.withDefaults()} }

// Provider is "autodl".
func (a *Adapter) Provider() string { return Provider }

// Billing is per second (assumption; brokers/billing).
func (a *Adapter) Billing() (granularity, minimum time.Duration) { return placement.Billing(Provider) }

func (a *Adapter) do(ctx context.Context, method, path, op string, body any) (gjson.Result, error) {
	ans, err := placement.CallJSON(ctx, a.cfg.HTTPClient, Provider, op, method, a.cfg.BaseURL+path, a.cfg.Token, body)
	if err != nil {
		return gjson.Result{}, err
	}
	if ans.Err != nil && len(ans.Body) == 0 {
		return gjson.Result{}, fmt.Errorf("autodl %s: %v: %w", op, ans.Err, placement.StatusClass(ans.Status))
	}
	return ParseEnvelope(op, ans.Status, ans.Body)
}

// offerRef is what an AutoDL offer id says: "autodl:<region>:<gpu name>:<n>x:on-demand".
type offerRef struct {
	Region, GPUName string
	GPUs            int
}

func parseOfferID(id string) (offerRef, error) {
	parts := strings.Split(id, ":")
	bad := fmt.Errorf("autodl: offer id %q: not an AutoDL offer id: %w", id, sluice.ErrQuota)
	if len(parts) != 5 || parts[0] != Provider || parts[1] == "" || parts[2] == "" || parts[4] != string(sluice.OnDemand) {
		return offerRef{}, bad
	}
	var n int
	if _, err := fmt.Sscanf(parts[3], "%dx", &n); err != nil || n < 1 || n > sluice.MaxGPUsPerUnit || parts[3] != fmt.Sprintf("%dx", n) {
		return offerRef{}, bad
	}
	return offerRef{Region: parts[1], GPUName: parts[2], GPUs: n}, nil
}

// payAsYouGo refuses other than on-demand lines and lines without units
// (placement.Begin).
func payAsYouGo(line sluice.Line) string {
	if line.Market != sluice.OnDemand || line.Units < 1 {
		return "AutoDL sells pay-as-you-go only"
	}
	return ""
}

// Container is one container of a deployment.
type Container struct {
	Deployment, UUID, Status string
	// Price is CNY per container-hour (the wire's milli-yuan / 1000, exact).
	Price     sluice.Money
	StartedAt time.Time
}

// ExternalID is "<deployment>/<container>".
func (c Container) ExternalID() string { return c.Deployment + "/" + c.UUID }

// ParseContainers reads data.list of a container list answer.
func ParseContainers(data gjson.Result) ([]Container, error) {
	list := data.Get("list")
	if !list.IsArray() {
		return nil, errors.New("data.list: missing or not a list")
	}
	var out []Container
	for n, r := range list.Array() {
		c := Container{Deployment: r.Get("deployment_uuid").String(), UUID: r.Get("uuid").String(), Status: r.Get("status").String()}
		if c.UUID == "" || c.Deployment == "" || strings.Contains(c.UUID, "/") || strings.Contains(c.Deployment, "/") {
			return nil, fmt.Errorf("data.list[%d]: uuid or deployment_uuid missing or bad", n)
		}
		d, present, err := pricing.WireAmount(r.Get("price"))
		if err != nil {
			return nil, fmt.Errorf("data.list[%d].price %q: %v", n, r.Get("price").Raw, err)
		}
		if present {
			c.Price = sluice.Money{Amount: d.Shift(-3), Currency: pricingautodl.Currency}
		}
		if t, err := time.Parse(time.RFC3339, r.Get("started_at").String()); err == nil {
			c.StartedAt = t.UTC()
		}
		out = append(out, c)
	}
	return out, nil
}

// deployment returns the uuid of the running deployment named name.
func (a *Adapter) deployment(ctx context.Context, name string) (string, bool, error) {
	for page := 1; page <= 50; page++ {
		data, err := a.do(ctx, http.MethodPost, "/api/v1/dev/deployment/list", "deployment/list", map[string]any{"page_index": page, "page_size": 100})
		if err != nil {
			return "", false, err
		}
		for _, d := range data.Get("list").Array() {
			if d.Get("name").String() == name && d.Get("uuid").String() != "" {
				return d.Get("uuid").String(), true, nil
			}
		}
		if data.Get("max_page").Int() <= int64(page) {
			break
		}
	}
	return "", false, nil
}

func (a *Adapter) containers(ctx context.Context, dep string) ([]Container, error) {
	data, err := a.do(ctx, http.MethodPost, "/api/v1/dev/deployment/container/list", "container/list",
		map[string]any{"deployment_uuid": dep, "page_index": 1, "page_size": 100})
	if err != nil {
		return nil, err
	}
	cs, err := ParseContainers(data)
	if err != nil {
		return nil, fmt.Errorf("autodl container/list: %v: %w", err, sluice.ErrTransient)
	}
	return cs, nil
}

// Place creates the line's deployment unless one of its name runs.
func (a *Adapter) Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line, lim bid.Limits) (sluice.Placement, error) {
	s, err := placement.Begin(Provider, parseOfferID, payAsYouGo, decisionID, lineNo, line, lim, a.cfg.Now())
	ref, p, b := s.Ref, s.Placement, s.Bid
	if err != nil {
		return p, err
	}
	name := placement.Name(decisionID, lineNo)
	defer a.locks.Lock(p.ClientToken)()
	dep, found, err := a.deployment(ctx, name)
	if err != nil {
		return p, err
	}
	if !found {
		body := map[string]any{"name": name, "deployment_type": "ReplicaSet", "replica_num": line.Units, "reuse_container": true,
			"container_template": map[string]any{"dc_list": []string{ref.Region}, "gpu_name_set": []string{ref.GPUName}, "gpu_num": ref.GPUs,
				"cuda_v_from": 113, "cuda_v_to": 128, "price_to": json.RawMessage(b.Text), "image_uuid": a.cfg.ImageUUID, "cmd": a.cfg.Cmd}}
		data, err := a.do(ctx, http.MethodPost, "/api/v1/dev/deployment", "POST deployment", body)
		if err != nil {
			return p, err
		}
		dep = data.Get("deployment_uuid").String()
		if dep == "" || strings.Contains(dep, "/") {
			return p, fmt.Errorf("autodl POST deployment %s: no deployment_uuid in the answer: %w", name, sluice.ErrTransient)
		}
	}
	cs, err := a.containers(ctx, dep)
	if err != nil {
		p.Price = line.UnitPrice
		return p, nil // created; read back on the next Find
	}
	p.Price = line.UnitPrice
	var reason string
	for _, c := range cs {
		p.ExternalIDs = append(p.ExternalIDs, c.ExternalID())
		placement.Earliest(&p, c.StartedAt)
		if c.Price.IsSet() {
			p.Price = c.Price
			if r := placement.CheckPrice(line.Market, c.Price, line.UnitPrice, a.cfg.Tolerance); r != "" && reason == "" {
				reason = "container " + c.UUID + ": " + r
			}
		}
	}
	if len(p.ExternalIDs) == 0 {
		p.ExternalIDs = []string{dep + "/"} // the deployment exists; no container yet
	}
	if reason != "" {
		return placement.Mismatch(ctx, p, reason, a.Release)
	}
	return p, nil
}

// Find returns the containers of the line's deployment.
func (a *Adapter) Find(ctx context.Context, decisionID string, lineNo int) (sluice.Placement, bool, error) {
	dep, ok, err := a.deployment(ctx, placement.Name(decisionID, lineNo))
	if err != nil || !ok {
		return sluice.Placement{}, false, err
	}
	cs, err := a.containers(ctx, dep)
	if err != nil {
		return sluice.Placement{}, false, err
	}
	p := placement.Found(Provider, decisionID, lineNo)
	p.Market, p.Units = sluice.OnDemand, len(cs)
	for _, c := range cs {
		p.ExternalIDs = append(p.ExternalIDs, c.ExternalID())
		p.Price = c.Price
		placement.Earliest(&p, c.StartedAt)
	}
	if len(p.ExternalIDs) == 0 {
		p.ExternalIDs = []string{dep + "/"}
	}
	return p, true, nil
}

// Release deletes every deployment named in p's external ids; a deployment
// AutoDL no longer knows counts as gone.
func (a *Adapter) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	var deps []string
	for _, id := range p.ExternalIDs {
		dep, _, _ := strings.Cut(id, "/")
		if dep != "" && !slices.Contains(deps, dep) {
			deps = append(deps, dep)
		}
	}
	return placement.ReleaseEach(ctx, deps, func(ctx context.Context, dep string) error {
		_, err := a.do(ctx, http.MethodDelete, "/api/v1/dev/deployment", "DELETE deployment", map[string]string{"deployment_uuid": dep})
		return err
	}, func(err error) bool {
		var ae *APIError
		return errors.As(err, &ae) && strings.Contains(strings.ToLower(ae.Code), "notfound")
	}, a.cfg.Now)
}

// Instances lists the containers of deployments whose name Sluice wrote.
func (a *Adapter) Instances(ctx context.Context) ([]sluice.Instance, error) {
	data, err := a.do(ctx, http.MethodPost, "/api/v1/dev/deployment/list", "deployment/list", map[string]any{"page_index": 1, "page_size": 100})
	if err != nil {
		return nil, err
	}
	var out []sluice.Instance
	for _, d := range data.Get("list").Array() {
		name, dep := d.Get("name").String(), d.Get("uuid").String()
		if !strings.HasPrefix(name, placement.NamePrefix) || dep == "" {
			continue
		}
		cs, err := a.containers(ctx, dep)
		if err != nil {
			return nil, err
		}
		decision, line, _ := placement.ParseToken(name)
		for _, c := range cs {
			out = append(out, sluice.Instance{Provider: Provider, ExternalID: c.ExternalID(), DecisionID: decision, Line: line,
				State: c.Status, LaunchedAt: c.StartedAt, Price: c.Price})
		}
	}
	return out, nil
}
