package sluice

import (
	"context"
	"errors"
	"time"
)

// BidUnit is what one unit of a provider's bid price buys per hour
// (../shared/reference/providers.md §0).
type BidUnit string

// Bid units.
const (
	BidPerGPU      BidUnit = "gpu"      // RunPod bidPerGpu: per GPU-hour
	BidPerMachine  BidUnit = "machine"  // Vast.ai asks price: per machine (offer)-hour
	BidPerInstance BidUnit = "instance" // EC2 MaxPrice, Alibaba SpotPriceLimit: per instance-hour
)

// Broker places plan lines with providers, finds what was placed, and
// releases it. The application's broker routes each call to the provider's
// adapter (brokers/<provider>) by provider name.
type Broker interface {
	// Place buys one plan line. It is idempotent on ClientToken(decisionID,
	// lineNo): when the provider already holds capacity for that token (or the
	// sluice:decision / sluice:line tags) it returns that placement and buys
	// nothing. Errors wrap one of ErrInsufficientCapacity, ErrQuota,
	// ErrCapabilityUnavailable, ErrTransient, ErrBidOutOfRange or
	// ErrPriceMismatch when the provider's answer says so.
	Place(ctx context.Context, decisionID string, lineNo int, line Line) (Placement, error)
	// Find returns what provider already holds for (decisionID, lineNo),
	// looked up by client token or tags, or ok=false when it holds nothing.
	Find(ctx context.Context, provider, decisionID string, lineNo int) (p Placement, ok bool, err error)
	// Release asks the provider to terminate p's instances. Confirmed is true
	// when the provider reports every instance gone; otherwise the release
	// stays pending and is retried (reconcile).
	Release(ctx context.Context, p Placement) (ReleaseResult, error)
	// Instances lists every instance tagged by Sluice that provider holds.
	Instances(ctx context.Context, provider string) ([]Instance, error)
}

// ReleaseResult is a provider's answer to a release request.
type ReleaseResult struct {
	Confirmed bool `json:"confirmed"`
	// At is when the provider stopped (or will stop) billing.
	At time.Time `json:"at"`
}

// Instance is one provider instance (pod, Vast instance, EC2/ECS instance,
// AutoDL container) as listed for reconcile.
type Instance struct {
	Provider   string    `json:"provider"`
	ExternalID string    `json:"external_id"`
	DecisionID string    `json:"decision_id"` // from the sluice:decision tag / name ("" = untagged)
	Line       int       `json:"line"`
	State      string    `json:"state"` // provider's own state text
	LaunchedAt time.Time `json:"launched_at"`
	// Price is per unit-hour as the provider bills it now.
	Price Money `json:"price"`
}

// Release states.
const (
	ReleasePending  = "release-pending" // asked, provider has not confirmed
	ReleaseReleased = "released"        // provider confirmed; billing stopped
	ReleaseLost     = "lost"            // the provider no longer has it (reconcile)
)

// Release reasons.
const (
	ReleaseDrain         = "drain"            // the queue drained (alarm OK)
	ReleasePriceMismatch = "price-mismatch"   // price read back beyond tolerance
	ReleaseOrphan        = "reconcile-orphan" // tagged instance with no committed decision
	ReleaseReconcileLost = "reconcile-lost"   // placement missing at the provider
)

// Release is one step of giving capacity back, appended to the ledger: a
// request (State ReleasePending), a confirmation (ReleaseReleased) or a loss
// (ReleaseLost). Its Slots return to the queue's demand when the state is
// released or lost.
type Release struct {
	Kind        string    `json:"kind"` // "release"
	DecisionID  string    `json:"decision_id"`
	Line        int       `json:"line"`
	Queue       string    `json:"queue"`
	Provider    string    `json:"provider"`
	ExternalIDs []string  `json:"external_ids"`
	State       string    `json:"state"`
	Reason      string    `json:"reason"`
	Slots       int       `json:"slots"`
	RequestedAt time.Time `json:"requested_at"`
	// At is when the provider stopped billing (released/lost) or the request time (pending).
	At time.Time `json:"at"`
	// AccruedCost is what the placement cost from PlacedAt to At at the
	// provider's billing granularity, in the offer's currency (zero while pending).
	AccruedCost Money `json:"accrued_cost"`
	// BilledSeconds is the billed duration after rounding up to the granularity.
	BilledSeconds int64  `json:"billed_seconds"`
	Error         string `json:"error,omitempty"`
}

// OpenPlacement is a placement that is not released or lost, with the state
// of its latest release request ("" when none was made).
type OpenPlacement struct {
	Placement
	ReleaseState string `json:"release_state"`
	// ReleaseReason is the reason of the latest release step (for example
	// ReleasePriceMismatch on a pending step), "" when none was made. A
	// retried pending release keeps it (Drainer.release).
	ReleaseReason string `json:"release_reason,omitempty"`
}

// ReleaseLedger is the ledger as drain and reconcile use it.
type ReleaseLedger interface {
	Ledger
	// AppendRelease records one release step; ErrNoDecision-like errors when
	// the placement is unknown (except orphans, DecisionID "").
	AppendRelease(ctx context.Context, r Release) error
	// OpenPlacements returns the successful placements of queue ("" = every
	// queue) with no released/lost record, most expensive first.
	OpenPlacements(ctx context.Context, queue string) ([]OpenPlacement, error)
}

// Broker error classes: adapters wrap them (fmt.Errorf("...: %w", ErrX)) so
// the burst can branch.
var (
	// ErrInsufficientCapacity: the provider has no capacity for the offer now;
	// the offer is marked unavailable for a TTL and the next candidate tried.
	ErrInsufficientCapacity = errors.New("insufficient capacity")
	// ErrQuota: a quota, permission or configuration refusal; never moves
	// work to another residency zone.
	ErrQuota = errors.New("quota or configuration refused")
	// ErrCapabilityUnavailable: the provider no longer offers this way of
	// buying (e.g. RunPod's spot path); treated like a capacity error.
	ErrCapabilityUnavailable = errors.New("capability unavailable")
	// ErrTransient: throttling or a timeout; the same call may succeed later.
	ErrTransient = errors.New("transient provider error")
	// ErrBidOutOfRange: the bid breaks a provider rule (e.g. EC2 MaxPrice ≤
	// 0.001) and was refused before any call.
	ErrBidOutOfRange = errors.New("bid out of range")
	// ErrPriceMismatch: the price read back is beyond tolerance; the capacity
	// was released at once.
	ErrPriceMismatch = errors.New("price mismatch")
)
