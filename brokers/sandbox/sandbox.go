// Package sandbox is the broker for offline runs (`make run`, tests): a
// stand-in provider that accepts every plan line, keeps its orders keyed by
// client token (in memory, or in a JSON state file shared by processes), bills
// them per second, terminates them on release, and can be told to fail
// (capacity, quota, capability, throttling, a timeout after creating the
// instance, a terminate that times out). The real provider adapters live in
// brokers/<provider>.
package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice"
)

// Fault classes a Fault injects. Each is a definite answer wrapping the
// matching sluice error, except FaultTimeoutAfterCreate (the order is
// created, then the answer is lost: sluice.ErrTransient) and FaultTransient
// (nothing happens: sluice.ErrTransient).
const (
	FaultCapacity           = "capacity"             // sluice.ErrInsufficientCapacity
	FaultQuota              = "quota"                // sluice.ErrQuota
	FaultCapability         = "capability"           // sluice.ErrCapabilityUnavailable
	FaultTransient          = "transient"            // throttled / timed out before acting
	FaultTimeoutAfterCreate = "timeout-after-create" // place: created, response lost
)

// Operations a Fault applies to.
const (
	OpPlace     = "place"
	OpRelease   = "release"
	OpFind      = "find"
	OpInstances = "instances"
)

// Fault makes matching calls fail. Provider and OfferID "" match any; Times
// is how many matching calls fail (0 = every one).
type Fault struct {
	Op       string `json:"op"`
	Provider string `json:"provider,omitempty"`
	OfferID  string `json:"offer_id,omitempty"`
	Class    string `json:"class"`
	Times    int    `json:"times,omitempty"`
	// Used counts the calls it failed so far.
	Used int `json:"used,omitempty"`
}

// Order is one placed line as the sandbox provider holds it.
type Order struct {
	Placement sluice.Placement `json:"placement"`
	// TerminatedAt is when billing stopped (nil while running).
	TerminatedAt *time.Time `json:"terminated_at,omitempty"`
	// Lost marks an order the provider took back (spot interruption): it is
	// gone from Find and Instances without a release.
	Lost bool `json:"lost,omitempty"`
}

// State is everything the sandbox provider holds. With StatePath it is the
// JSON file's content.
type State struct {
	Orders []Order  `json:"orders"`
	Faults []Fault  `json:"faults,omitempty"`
	Calls  []string `json:"calls,omitempty"` // "place aws dec-…-l0" etc., in order
}

// Broker is an idempotent sluice.Broker over a sandbox provider.
type Broker struct {
	// Now stamps placements and terminations (default time.Now).
	Now func() time.Time
	// Fail, when set, is asked before each order; a non-nil error refuses it
	// (to exercise partial placement).
	Fail func(provider, offerID string) error
	// StatePath, when set, keeps the provider's state in this JSON file,
	// locked (flock) for each call, so several processes (a killed burst and
	// its rerun, concurrent deliveries) see one provider.
	StatePath string
	// NoToken makes Place ignore the client token, as a provider without
	// idempotency tokens (RunPod, Vast, AutoDL: found by name only) would:
	// every Place creates an order. Find still finds the first by token.
	NoToken bool
	// Latency delays each Place before the provider sees it (the request in
	// flight), widening the window in which concurrent callers race.
	Latency time.Duration

	mu sync.Mutex
	st State
}

var _ sluice.Broker = (*Broker)(nil)

func (b *Broker) now() time.Time {
	if b.Now != nil {
		return b.Now().UTC()
	}
	return time.Now().UTC()
}

// AddFault injects a fault (into the state file when StatePath is set).
func (b *Broker) AddFault(f Fault) error {
	return b.with(func(st *State) error { st.Faults = append(st.Faults, f); return nil })
}

// Snapshot returns a copy of the provider's state.
func (b *Broker) Snapshot() (State, error) {
	var out State
	err := b.with(func(st *State) error {
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &out)
	})
	return out, err
}

// Lose marks the orders with this client token as taken back by the
// provider (a spot interruption): they stop billing at the current time and
// disappear from Find and Instances.
func (b *Broker) Lose(token string) error {
	return b.with(func(st *State) error {
		for i := range st.Orders {
			if o := &st.Orders[i]; o.Placement.ClientToken == token && o.TerminatedAt == nil {
				at := b.now()
				o.TerminatedAt, o.Lost = &at, true
			}
		}
		return nil
	})
}

// with runs fn on the state under the process lock and, with StatePath, the
// file lock, saving the state afterwards (also when fn fails: a fault's use
// count or a created order must survive an error answer).
func (b *Broker) with(fn func(*State) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.StatePath == "" {
		return fn(&b.st)
	}
	lock, err := os.OpenFile(b.StatePath+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("sandbox: lock %s: %w", b.StatePath, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	var st State
	raw, err := os.ReadFile(b.StatePath)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("sandbox: %w", err)
	default:
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("sandbox: state %s: %w", b.StatePath, err)
		}
	}
	ferr := fn(&st)
	out, err := json.MarshalIndent(&st, "", "  ")
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.StatePath), ".sandbox-*")
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Rename(tmp.Name(), b.StatePath); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return ferr
}

// fault returns the class of the first fault matching the call (and one of
// classes, when given), counting its use.
func (st *State) fault(op, provider, offerID string, classes ...string) string {
	for i := range st.Faults {
		f := &st.Faults[i]
		if f.Op != op || (f.Provider != "" && f.Provider != provider) || (f.OfferID != "" && f.OfferID != offerID) {
			continue
		}
		if len(classes) > 0 && !slices.Contains(classes, f.Class) {
			continue
		}
		if f.Times > 0 && f.Used >= f.Times {
			continue
		}
		f.Used++
		return f.Class
	}
	return ""
}

func faultError(class, what string) error {
	switch class {
	case FaultCapacity:
		return fmt.Errorf("sandbox %s: InsufficientInstanceCapacity: %w", what, sluice.ErrInsufficientCapacity)
	case FaultQuota:
		return fmt.Errorf("sandbox %s: InstanceLimitExceeded: %w", what, sluice.ErrQuota)
	case FaultCapability:
		return fmt.Errorf("sandbox %s: spot path removed: %w", what, sluice.ErrCapabilityUnavailable)
	case FaultTimeoutAfterCreate, FaultTransient:
		return fmt.Errorf("sandbox %s: timed out awaiting the response: %w", what, sluice.ErrTransient)
	}
	return fmt.Errorf("sandbox %s: unknown fault class %q", what, class)
}

func (st *State) order(token string) *Order {
	for i := range st.Orders {
		if st.Orders[i].Placement.ClientToken == token {
			return &st.Orders[i]
		}
	}
	return nil
}

// Place buys one line. It is idempotent on the client token derived from
// (decisionID, line): placing the same line again returns the first placement.
// External ids are "sbx-<provider>-<first 8 hex of SHA-256(token)>-<unit>".
// The price read back is the bid for spot lines, else the unit price.
func (b *Broker) Place(ctx context.Context, decisionID string, line int, l sluice.Line) (sluice.Placement, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Placement{}, err
	}
	token := sluice.ClientToken(decisionID, line)
	if b.Latency > 0 {
		time.Sleep(b.Latency)
	}
	var p sluice.Placement
	err := b.with(func(st *State) error {
		st.Calls = append(st.Calls, "place "+l.Provider+" "+token)
		// Throttling answers before the request is looked at; every other
		// answer comes after the token is checked (a known token returns its order).
		if class := st.fault(OpPlace, l.Provider, l.OfferID, FaultTransient); class != "" {
			return faultError(class, l.Provider+" "+l.OfferID)
		}
		if o := st.order(token); o != nil && !b.NoToken {
			p = o.Placement
			return nil
		}
		class := st.fault(OpPlace, l.Provider, l.OfferID, FaultCapacity, FaultQuota, FaultCapability, FaultTimeoutAfterCreate)
		if class != "" && class != FaultTimeoutAfterCreate {
			return faultError(class, l.Provider+" "+l.OfferID)
		}
		if b.Fail != nil {
			if err := b.Fail(l.Provider, l.OfferID); err != nil {
				return fmt.Errorf("sandbox %s %s: %w", l.Provider, l.OfferID, err)
			}
		}
		h := sha256.Sum256([]byte(token))
		p = sluice.Placement{
			DecisionID: decisionID, Line: line, Provider: l.Provider, OfferID: l.OfferID, ClientToken: token,
			Market: l.Market, Units: l.Units, Slots: l.Slots, Price: l.UnitPrice, PlacedAt: b.now(),
		}
		if l.Bid != nil {
			p.Price = *l.Bid
		}
		for u := range l.Units {
			p.ExternalIDs = append(p.ExternalIDs, fmt.Sprintf("sbx-%s-%s-%d", l.Provider, hex.EncodeToString(h[:4]), u))
		}
		st.Orders = append(st.Orders, Order{Placement: p})
		if class == FaultTimeoutAfterCreate {
			return faultError(class, l.Provider+" "+l.OfferID)
		}
		return nil
	})
	if err != nil {
		return sluice.Placement{}, err
	}
	return p, nil
}

// Orders returns how many distinct orders were placed.
func (b *Broker) Orders() int {
	n := 0
	_ = b.with(func(st *State) error { n = len(st.Orders); return nil })
	return n
}

// Find returns the running order placed for (decisionID, line), if any.
func (b *Broker) Find(_ context.Context, provider string, decisionID string, line int) (sluice.Placement, bool, error) {
	var p sluice.Placement
	found := false
	err := b.with(func(st *State) error {
		token := sluice.ClientToken(decisionID, line)
		st.Calls = append(st.Calls, "find "+provider+" "+token)
		if class := st.fault(OpFind, provider, ""); class != "" {
			return faultError(class, "find "+token)
		}
		if o := st.order(token); o != nil && !o.Lost && (provider == "" || o.Placement.Provider == provider) {
			p, found = o.Placement, true
		}
		return nil
	})
	return p, found, err
}

// Release terminates the order's instances (found by client token) and
// confirms with the time billing stopped; releasing a terminated order
// confirms again with the first time. A FaultTransient on release leaves the
// instances running (the terminate timed out).
func (b *Broker) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	if err := ctx.Err(); err != nil {
		return sluice.ReleaseResult{}, err
	}
	var res sluice.ReleaseResult
	err := b.with(func(st *State) error {
		token := p.ClientToken
		if token == "" {
			token = sluice.ClientToken(p.DecisionID, p.Line)
		}
		st.Calls = append(st.Calls, "release "+p.Provider+" "+token)
		if class := st.fault(OpRelease, p.Provider, p.OfferID); class != "" {
			return faultError(class, "release "+token)
		}
		o := st.order(token)
		if o == nil {
			for i := range st.Orders { // an orphan is released by external id
				if len(p.ExternalIDs) > 0 && slices.Contains(st.Orders[i].Placement.ExternalIDs, p.ExternalIDs[0]) {
					o = &st.Orders[i]
				}
			}
		}
		if o == nil {
			res = sluice.ReleaseResult{Confirmed: true, At: b.now()}
			return nil
		}
		if o.TerminatedAt == nil {
			at := b.now()
			o.TerminatedAt = &at
		}
		res = sluice.ReleaseResult{Confirmed: true, At: *o.TerminatedAt}
		return nil
	})
	return res, err
}

// Instances lists the provider's running orders as instances, one per unit.
func (b *Broker) Instances(_ context.Context, provider string) ([]sluice.Instance, error) {
	var out []sluice.Instance
	err := b.with(func(st *State) error {
		st.Calls = append(st.Calls, "instances "+provider)
		if class := st.fault(OpInstances, provider, ""); class != "" {
			return faultError(class, "instances "+provider)
		}
		for _, o := range st.Orders {
			p := o.Placement
			if p.Provider != provider || o.TerminatedAt != nil {
				continue
			}
			for _, id := range p.ExternalIDs {
				out = append(out, sluice.Instance{Provider: p.Provider, ExternalID: id, DecisionID: p.DecisionID,
					Line: p.Line, State: "running", LaunchedAt: p.PlacedAt, Price: p.Price})
			}
		}
		return nil
	})
	return out, err
}

// Running returns the running orders (not terminated, not lost), for tests
// that compare the provider's state with the ledger.
func (b *Broker) Running() ([]sluice.Placement, error) {
	var out []sluice.Placement
	err := b.with(func(st *State) error {
		for _, o := range st.Orders {
			if o.TerminatedAt == nil {
				out = append(out, o.Placement)
			}
		}
		return nil
	})
	return out, err
}
