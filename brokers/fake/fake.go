// Package fake is a set of stateful loopback provider servers, one per
// provider, each speaking that provider's real wire format
// (../shared/reference/providers.md): EC2 Query/XML (§1.3, §1.4), RunPod
// GraphQL (§2.1), Vast REST (§3), AutoDL JSON (§4) and Alibaba ECS RPC JSON
// (§5). They accept placement calls, keep instances (idempotent on the client
// token where the real API is), list, describe and terminate them, bill them
// (brokers/billing), and can be told to fail (Fault).
//
// One Server holds the state of all five; Handler(provider) serves one of
// them. In tests use httptest.NewServer(s.Handler("aws")); as a process use
// cmd/fakeproviders, which persists the state in a JSON file (Server.Path) so
// it survives a restart.
//
// Every provider handler also serves a control API under /_fake/:
//
//	GET    /_fake/instances          every instance of this provider (JSON array of Instance)
//	POST   /_fake/faults             add a Fault (JSON); its Provider is set to this provider
//	DELETE /_fake/faults             clear this provider's faults
//	POST   /_fake/prices             {"sku":"p4d.24xlarge","price":"9.1"}: the market price of a SKU
//	GET    /_fake/bill               billed seconds and cost per instance (JSON array of Bill)
package fake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/billing"
)

// Providers served, by name (config.Providers names).
var Providers = []string{"aws", "aliyun", "runpod", "vast", "autodl"}

// Fault kinds.
const (
	// Capacity: the placement call fails with the provider's no-capacity answer.
	Capacity = "capacity"
	// Quota: the placement call fails with a quota / limit / permission answer.
	Quota = "quota"
	// Throttle: the call fails with the provider's throttling answer.
	Throttle = "throttle"
	// TimeoutAfterCreate: the instance is created (and persisted), then the
	// response never comes: the handler waits until the client gives up or
	// Server.Hang passes, then answers 504 with no body.
	TimeoutAfterCreate = "timeout-after-create"
	// Price: the instance is created but billed at Fault.Price (per unit-hour)
	// instead of the price asked; read-backs show that price.
	Price = "price"
	// TerminateTimeout: a terminate call hangs like TimeoutAfterCreate and
	// does NOT terminate.
	TerminateTimeout = "terminate-timeout"
	// Unavailable: the capability is gone (RunPod's spot path: a GraphQL error).
	Unavailable = "unavailable"
)

// Fault is one scripted failure. Op "" matches every placement call (or, for
// TerminateTimeout, every terminate call); otherwise it names the provider's
// operation ("RunInstances", "podRentInterruptable", "PUT asks", ...).
type Fault struct {
	Provider string `json:"provider"`
	Op       string `json:"op,omitempty"`
	Kind     string `json:"kind"`
	// Times is how many calls it hits; 0 means every call until cleared.
	Times int `json:"times,omitempty"`
	// Price is the per unit-hour price billed for Kind Price (decimal text).
	Price string `json:"price,omitempty"`
}

// Instance is one instance (EC2 instance, Alibaba instance, pod, Vast
// contract, AutoDL container) a fake provider holds.
type Instance struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	// Token is the client token (EC2/Alibaba ClientToken; for the others the
	// name / label / deployment name the adapter chose).
	Token  string            `json:"token"`
	Name   string            `json:"name,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
	Market string            `json:"market"` // spot, on-demand, capacity-block
	SKU    string            `json:"sku"`
	Region string            `json:"region,omitempty"`
	// Zone is the availability zone where the provider has both (Alibaba).
	Zone string `json:"zone,omitempty"`
	GPUs int    `json:"gpus"`
	// Bid is the bid text as received ("" when none).
	Bid string `json:"bid,omitempty"`
	// Price is what the instance is billed per unit-hour (decimal text).
	Price    string `json:"price"`
	Currency string `json:"currency"`
	// Group ties instances made by one call (reservation, deployment).
	Group        string    `json:"group,omitempty"`
	State        string    `json:"state"` // running, terminated
	LaunchedAt   time.Time `json:"launched_at"`
	TerminatedAt time.Time `json:"terminated_at,omitzero"`
}

// Running reports whether the instance has not been terminated.
func (i Instance) Running() bool { return i.State != "terminated" }

// Bill is one instance's bill at the provider's billing rule.
type Bill struct {
	Provider      string       `json:"provider"`
	ID            string       `json:"id"`
	BilledSeconds int64        `json:"billed_seconds"`
	Cost          sluice.Money `json:"cost"`
}

// State is everything a Server keeps (and persists).
type State struct {
	Instances []*Instance `json:"instances"`
	Faults    []Fault     `json:"faults"`
	// Prices are market prices per unit-hour by provider and SKU.
	Prices map[string]map[string]string `json:"prices"`
	// Reservations are EC2 capacity reservations (capacity blocks).
	Reservations []*Reservation `json:"reservations,omitempty"`
	Seq          int            `json:"seq"`
}

// Reservation is an EC2 capacity block bought with PurchaseCapacityBlock.
type Reservation struct {
	ID         string            `json:"id"`
	OfferingID string            `json:"offering_id"`
	SKU        string            `json:"sku"`
	AZ         string            `json:"az"`
	Count      int               `json:"count"`
	Tags       map[string]string `json:"tags,omitempty"`
	Start, End time.Time
	State      string `json:"state"`
}

// Server is the shared state of the five fake providers.
type Server struct {
	// Path, when set, is the JSON file the state is saved to after every
	// change (and loaded from by Open).
	Path string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Hang bounds how long a timeout fault holds the response (default 30 s;
	// the client's own deadline usually ends it first).
	Hang time.Duration

	mu sync.Mutex
	st State
}

// Open returns a Server persisting to path; an existing file is loaded.
// path "" keeps the state in memory only.
func Open(path string) (*Server, error) {
	s := &Server{Path: path}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("fake: reading state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &s.st); err != nil {
		return nil, fmt.Errorf("fake: state %s: %w", path, err)
	}
	return s, nil
}

// New is an in-memory Server.
func New() *Server { return &Server{} }

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// saveLocked writes the state file (atomically: temp file + rename).
func (s *Server) saveLocked() {
	if s.Path == "" {
		return
	}
	b, err := json.MarshalIndent(&s.st, "", " ")
	if err != nil {
		panic(err)
	}
	tmp := s.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		_ = os.Rename(tmp, s.Path)
	}
}

// Fail adds a fault.
func (s *Server) Fail(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Faults = append(s.st.Faults, f)
	s.saveLocked()
}

// Clear removes every fault of provider ("" = all providers).
func (s *Server) Clear(provider string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Faults = slices.DeleteFunc(s.st.Faults, func(f Fault) bool { return provider == "" || f.Provider == provider })
	s.saveLocked()
}

// SetPrice sets the market price per unit-hour of a provider's SKU.
func (s *Server) SetPrice(provider, sku, price string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Prices == nil {
		s.st.Prices = map[string]map[string]string{}
	}
	if s.st.Prices[provider] == nil {
		s.st.Prices[provider] = map[string]string{}
	}
	s.st.Prices[provider][sku] = price
	s.saveLocked()
}

func (s *Server) priceLocked(provider, sku string) (string, bool) {
	p, ok := s.st.Prices[provider][sku]
	return p, ok
}

// Instances returns copies of provider's instances ("" = all), in creation order.
func (s *Server) Instances(provider string) []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Instance
	for _, i := range s.st.Instances {
		if provider == "" || i.Provider == provider {
			c := *i
			out = append(out, c)
		}
	}
	return out
}

// Running counts provider's instances not terminated.
func (s *Server) Running(provider string) int {
	n := 0
	for _, i := range s.Instances(provider) {
		if i.Running() {
			n++
		}
	}
	return n
}

// Bills bills every instance of provider ("" = all) from launch to
// termination (or now) with brokers/billing's rule for its provider.
func (s *Server) Bills(provider string) ([]Bill, error) {
	now := s.now()
	var out []Bill
	for _, i := range s.Instances(provider) {
		r, err := billing.For(i.Provider)
		if err != nil {
			return nil, err
		}
		p, err := sluice.NewMoney(i.Price, i.Currency)
		if err != nil {
			return nil, fmt.Errorf("fake: instance %s price: %w", i.ID, err)
		}
		end := now
		if !i.Running() {
			end = i.TerminatedAt
		}
		c, sec := r.Cost(p, i.LaunchedAt, end)
		out = append(out, Bill{Provider: i.Provider, ID: i.ID, BilledSeconds: sec, Cost: c})
	}
	return out, nil
}

// takeFault returns (and counts down) the first fault of provider matching op
// and one of kinds.
func (s *Server) takeFaultLocked(provider, op string, kinds ...string) (Fault, bool) {
	for i, f := range s.st.Faults {
		if f.Provider != provider || (f.Op != "" && f.Op != op) || !slices.Contains(kinds, f.Kind) {
			continue
		}
		if f.Times > 0 {
			s.st.Faults[i].Times--
			if s.st.Faults[i].Times == 0 {
				s.st.Faults = slices.Delete(s.st.Faults, i, i+1)
			}
		}
		s.saveLocked()
		return f, true
	}
	return Fault{}, false
}

// placementFault is the fault a placement call meets: one of Capacity,
// Quota, Throttle, Unavailable (fail before creating), or TimeoutAfterCreate
// / Price (create, then misbehave). ok is false when none applies.
func (s *Server) placementFaultLocked(provider, op string) (Fault, bool) {
	return s.takeFaultLocked(provider, op, Capacity, Quota, Throttle, Unavailable, TimeoutAfterCreate, Price)
}

func (s *Server) nextIDLocked(prefix string) string {
	s.st.Seq++
	return fmt.Sprintf("%s%08x", prefix, s.st.Seq)
}

// addLocked stores a new instance.
func (s *Server) addLocked(i *Instance) {
	if i.State == "" {
		i.State = "running"
	}
	if i.LaunchedAt.IsZero() {
		i.LaunchedAt = s.now()
	}
	s.st.Instances = append(s.st.Instances, i)
}

func (s *Server) findLocked(provider, id string) *Instance {
	for _, i := range s.st.Instances {
		if i.Provider == provider && i.ID == id {
			return i
		}
	}
	return nil
}

func (s *Server) byTokenLocked(provider, token string) []*Instance {
	var out []*Instance
	for _, i := range s.st.Instances {
		if i.Provider == provider && i.Token == token {
			out = append(out, i)
		}
	}
	return out
}

func (s *Server) terminateLocked(i *Instance) {
	if i.Running() {
		i.State = "terminated"
		i.TerminatedAt = s.now()
	}
}

// hang holds a response until the client gives up or Hang passes, then
// answers 504 with an empty body.
func (s *Server) hang(w http.ResponseWriter, r *http.Request) {
	d := s.Hang
	if d <= 0 {
		d = 30 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
	w.WriteHeader(http.StatusGatewayTimeout)
}

// priceFor is the billed price of a new instance: a Price fault's price,
// else want.
func priceFor(f Fault, hit bool, want string) string {
	if hit && f.Kind == Price && f.Price != "" {
		return f.Price
	}
	return want
}

// Handler serves provider's wire API and the /_fake/ control API.
func (s *Server) Handler(provider string) http.Handler {
	var api http.Handler
	switch provider {
	case "aws":
		api = http.HandlerFunc(s.serveEC2)
	case "aliyun":
		api = http.HandlerFunc(s.serveAliyun)
	case "runpod":
		api = http.HandlerFunc(s.serveRunPod)
	case "vast":
		api = http.HandlerFunc(s.serveVast)
	case "autodl":
		api = http.HandlerFunc(s.serveAutoDL)
	default:
		panic("fake: unknown provider " + provider)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_fake/") {
			s.serveControl(provider, w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

func (s *Server) serveControl(provider string, w http.ResponseWriter, r *http.Request) {
	writeJSON := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /_fake/instances":
		out := s.Instances(provider)
		if out == nil {
			out = []Instance{}
		}
		writeJSON(out)
	case "GET /_fake/bill":
		b, err := s.Bills(provider)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(b)
	case "POST /_fake/faults":
		var f Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil || f.Kind == "" {
			http.Error(w, fmt.Sprintf("fault: %v (kind required)", err), http.StatusBadRequest)
			return
		}
		f.Provider = provider
		s.Fail(f)
		writeJSON(f)
	case "DELETE /_fake/faults":
		s.Clear(provider)
		w.WriteHeader(http.StatusNoContent)
	case "POST /_fake/prices":
		var p struct{ SKU, Price string }
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.SKU == "" {
			http.Error(w, "price: want {\"sku\":…,\"price\":…}", http.StatusBadRequest)
			return
		}
		if _, err := decimal.NewFromString(p.Price); err != nil {
			http.Error(w, "price: not a decimal", http.StatusBadRequest)
			return
		}
		s.SetPrice(provider, p.SKU, p.Price)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// Servers runs one httptest-like listener per provider on loopback; see
// cmd/fakeproviders. Endpoints maps provider name to base URL.
type Endpoints map[string]string

// ParseEndpointLine reads one "provider=url" line as printed by cmd/fakeproviders.
func ParseEndpointLine(line string) (provider, url string, ok bool) {
	provider, url, ok = strings.Cut(strings.TrimSpace(line), "=")
	return provider, url, ok && slices.Contains(Providers, provider) && strings.HasPrefix(url, "http")
}

// Save writes the state file now (cmd/fakeproviders at shutdown).
func (s *Server) Save() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saveLocked()
}

// DefaultStatePath is a state file under dir.
func DefaultStatePath(dir string) string { return filepath.Join(dir, "fakeproviders.json") }

// faultAnswer is a provider's error answer to one fault kind (Capacity,
// Quota, Throttle, Unavailable): the HTTP status, the provider's error code
// and message, as the provider's API documents or was seen to send them.
type faultAnswer struct {
	status    int
	code, msg string
}

// answerFault writes answers[kind] with write (the provider's error
// format) and reports whether kind had an answer: the other kinds (timeouts,
// a price read back) are the caller's to act out.
func answerFault(w http.ResponseWriter, kind string, answers map[string]faultAnswer, write func(w http.ResponseWriter, status int, code, msg string)) bool {
	a, ok := answers[kind]
	if ok {
		write(w, a.status, a.code, a.msg)
	}
	return ok
}
