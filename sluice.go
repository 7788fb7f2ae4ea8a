// Package sluice holds Sluice's domain: the trigger, the queue profile, demand,
// offers, verdicts, the plan and the decision record, plus the interfaces the
// adapters implement. It imports only shopspring/decimal; every adapter
// (events, pricing, policy, brokers, ledger) talks to the others in these types.
//
// The data flow is one straight walk (see DESIGN.md):
//
//	alarm → Trigger → Demand → []Offer → []Verdict → Plan → Placement → DecisionRecord
package sluice

import (
	"context"
	"errors"
	"time"

	"github.com/shopspring/decimal"
)

// Market is how capacity is bought.
type Market string

// Markets. The names follow the cloud providers' own vocabulary.
const (
	OnDemand Market = "on-demand" // pay-as-you-go at the list price, not interruptible
	Spot     Market = "spot"      // interruptible, bought with a bid (AWS spot, Vast "bid", RunPod interruptable, Alibaba SpotWithPriceLimit)
	Reserved Market = "reserved"  // capacity block / reservation: fixed term, upfront fee
)

// Valid reports whether m is one of the three markets.
func (m Market) Valid() bool { return m == OnDemand || m == Spot || m == Reserved }

// Zone is a data-residency zone. A provider region maps to exactly one zone in
// policy data (policy/data/regions.json); an unmapped region is refused.
type Zone string

// Residency zones.
const (
	ZoneBeijing   Zone = "beijing"
	ZoneEastChina Zone = "east-china"
	ZoneCNOther   Zone = "cn-other"
	ZoneOverseas  Zone = "overseas"
)

// Tier is a budget tier.
type Tier string

// Budget tiers.
const (
	TierBase      Tier = "base"      // the owned pool: never bought
	TierElastic   Tier = "elastic"   // on-demand and reserved capacity
	TierEmergency Tier = "emergency" // spot (and on-demand where policy data allows)
)

// AlarmState is the new state of a CloudWatch alarm.
type AlarmState string

// CloudWatch alarm states (StateValue in the CloudWatch API).
const (
	StateAlarm            AlarmState = "ALARM"
	StateOK               AlarmState = "OK"
	StateInsufficientData AlarmState = "INSUFFICIENT_DATA"
)

// Trigger is one delivery of a queue-depth alarm, parsed at the edge by package
// events. No aws-lambda-go type travels past events.
type Trigger struct {
	AlarmName       string     `json:"alarm_name"`
	AlarmARN        string     `json:"alarm_arn"`
	State           AlarmState `json:"state"`
	StateChangeTime time.Time  `json:"state_change_time"`
	Region          string     `json:"region"`
	// Queue is the SQS queue name (the QueueName dimension of the AWS/SQS metric).
	Queue string `json:"queue"`
	// Depth is the observed queue depth (messages visible) that tripped the alarm.
	Depth int `json:"depth"`
	// DepthSource says where Depth came from, e.g. "alarm-datapoint".
	DepthSource string `json:"depth_source"`
	// Delivery names the envelope the alarm came in: "sns", "eventbridge", "lambda-action".
	Delivery string `json:"delivery"`
}

// QueueProfile is the static description of one training-job queue (config file).
type QueueProfile struct {
	Queue string `json:"queue"`
	// GPUModels accepted, canonical names such as "A100-80GB", "A100-40GB".
	GPUModels []string `json:"gpu_models"`
	// GPUsPerSlot is how many GPUs one job slot needs, on one node (a slot never spans nodes).
	GPUsPerSlot int `json:"gpus_per_slot"`
	// HoursPerSlot is the expected run time of one slot, in hours.
	HoursPerSlot decimal.Decimal `json:"hours_per_slot"`
	// MaxSlots caps the slots one decision may buy for this queue.
	MaxSlots int `json:"max_slots"`
	// Checkpointable says a job can resume from a checkpoint after an interruption.
	Checkpointable bool `json:"checkpointable"`
	// CheckpointIntervalMinutes is the time between checkpoints (0 when not checkpointable).
	CheckpointIntervalMinutes int `json:"checkpoint_interval_minutes"`
	// DataClass is the residency class of the queue's data: "cn-beijing-only",
	// "cn-domestic" or "public".
	DataClass string `json:"data_class"`
	// ExportApproved allows a "public" queue's data to leave China (overseas zones).
	ExportApproved bool   `json:"export_approved"`
	Tier           Tier   `json:"budget_tier"`
	Team           string `json:"team"`
	// MaxPricePerGPUHour is the price ceiling per GPU-hour, in its own currency.
	MaxPricePerGPUHour Money `json:"max_price_per_gpu_hour"`

	// The fields below describe what kind of job the queue runs, for the
	// policy's suitability and interruptibility rules (policy/README.md). They
	// are omitted from JSON when unset, so records made before they existed
	// re-hash unchanged.

	// Workload is what the queue runs: "" or "training" (default),
	// "batch-inference", or "long-lived-inference" (a service that must stay
	// up; policy data lists it among the workloads never put on spot).
	Workload string `json:"workload,omitempty"`
	// CrossNodeNVLink says the jobs are tensor-parallel across several nodes
	// and need NVLink between them; bought capacity has no such fabric.
	CrossNodeNVLink bool `json:"cross_node_nvlink,omitempty"`
	// LocalStorageOnly says the jobs' data must stay on local storage in
	// StorageZone; offers in any other zone are remote and refused.
	LocalStorageOnly bool `json:"local_storage_only,omitempty"`
	// StorageZone is the residency zone of the queue's local storage.
	StorageZone Zone `json:"storage_zone,omitempty"`
}

// Demand is how many slots one queue still needs now.
type Demand struct {
	Queue string `json:"queue"`
	// Depth is the observed queue depth.
	Depth int `json:"depth"`
	// Needed = min(Depth, profile MaxSlots).
	Needed int `json:"needed"`
	// Live is slots already placed and not released for this queue (from the ledger).
	Live int `json:"live"`
	// Slots = max(0, Needed − Live): what this decision must buy.
	Slots       int             `json:"slots"`
	GPUsPerSlot int             `json:"gpus_per_slot"`
	Hours       decimal.Decimal `json:"hours"`
}

// NewDemand computes demand: slots = min(depth, maxSlots) − live, never below zero.
func NewDemand(p QueueProfile, depth, live int) Demand {
	needed := max(min(depth, p.MaxSlots), 0)
	return Demand{
		Queue:       p.Queue,
		Depth:       depth,
		Needed:      needed,
		Live:        live,
		Slots:       max(needed-live, 0),
		GPUsPerSlot: p.GPUsPerSlot,
		Hours:       p.HoursPerSlot,
	}
}

// PriceBasis says what one unit of a wire price bought, before normalisation.
type PriceBasis string

// Price bases seen on the wire (../shared/reference/providers.md §0).
const (
	PerGPUHour      PriceBasis = "gpu-hour"      // RunPod: USD per GPU-hour
	PerInstanceHour PriceBasis = "instance-hour" // AWS, Alibaba: per instance-hour
	PerOfferHour    PriceBasis = "offer-hour"    // Vast.ai: per offer (machine slice)-hour
)

// Offer is one purchasable capacity unit from one provider. Its UnitPrice is per
// unit-hour, where a unit is GPUsPerUnit GPUs on one node.
type Offer struct {
	// ID is unique within one decision, e.g. "vast:1234:bid" or "runpod:NVIDIA A100-SXM4-80GB:secure:4:on-demand".
	ID       string `json:"offer_id"`
	Provider string `json:"provider"`
	// SKU is the provider's name for the capacity (instance type, GPU type id, ask id).
	SKU string `json:"sku"`
	// GPUModel is canonical: "A100-80GB" or "A100-40GB".
	GPUModel    string `json:"gpu_model"`
	GPUsPerUnit int    `json:"gpus_per_unit"`
	// Region is the provider's own location code (EC2/Alibaba region, RunPod data
	// centre, Vast country code, AutoDL data centre); policy maps it to a Zone.
	Region string `json:"region"`
	// City is free text where the provider gives one (Vast geolocation), else "".
	City   string `json:"city,omitempty"`
	Market Market `json:"market"`
	// UnitPrice is per unit-hour in the provider's currency. For spot it is the
	// price the offer can be had at (current spot price or minimum bid).
	UnitPrice Money `json:"unit_price"`
	// Basis and RawPrice keep the wire form: the price text exactly as sent and what it was per.
	Basis    PriceBasis `json:"price_basis"`
	RawPrice string     `json:"raw_price"`
	// MinBid is the lowest accepted bid per unit-hour (spot only; zero Money when none).
	MinBid Money `json:"min_bid"`
	// UnitsAvailable is how many units can be bought now.
	UnitsAvailable int `json:"units_available"`
	// TermHours is the fixed term of a reservation (reserved only).
	TermHours int `json:"term_hours,omitempty"`
	// AvailableFrom is when the capacity can first be used (a capacity block's
	// start date); zero means now.
	AvailableFrom time.Time `json:"available_from,omitzero"`
	// AvailableUntil is when the capacity ends (a capacity block's end date);
	// zero means no fixed end.
	AvailableUntil time.Time `json:"available_until,omitzero"`
	// Pool names the stock this offer draws from when several offers (unit
	// sizes, markets) share it, e.g. AutoDL's idle cards of one GPU in one data
	// centre; "" means the offer's own UnitsAvailable is all there is.
	Pool string `json:"pool,omitempty"`
	// PoolGPUs is how many GPUs the pool holds (0 = unknown: only
	// UnitsAvailable bounds the offer).
	PoolGPUs  int       `json:"pool_gpus,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Source names where the offer came from (API operation and endpoint).
	Source string `json:"source"`
}

// CapacityKey identifies the same capacity across markets (provider, SKU,
// region, GPUs per unit), so a spot offer can be compared with its on-demand twin.
type CapacityKey struct {
	Provider, SKU, Region string
	GPUsPerUnit           int
}

// Capacity returns the offer's CapacityKey.
func (o Offer) Capacity() CapacityKey {
	return CapacityKey{o.Provider, o.SKU, o.Region, o.GPUsPerUnit}
}

// Reason is why an offer was refused or a plan is short: a stable code for
// counting and a text for people.
type Reason struct {
	// Code is the category: residency, interruptibility, budget-tier, price, ...
	Code string `json:"code"`
	// Rule names the exact rule, e.g. "residency.unmapped" (may be empty).
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message"`
}

// Reason codes used outside policy (Go-side filters and the planner).
const (
	ReasonResidency        = "residency"
	ReasonInterruptibility = "interruptibility"
	ReasonBudgetTier       = "budget-tier"
	ReasonGPUModel         = "gpu-model"         // GPU model not accepted by the profile
	ReasonUnitTooSmall     = "unit-too-small"    // fewer GPUs per unit than a slot needs
	ReasonNoCapacity       = "no-capacity"       // zero units available
	ReasonExpired          = "expired"           // quote older than its expiry
	ReasonNotYetAvailable  = "not-yet-available" // capacity starts too late for a burst
	ReasonTermTooShort     = "term-too-short"    // a reservation ends before the slot's hours are done
	ReasonSamePool         = "same-pool"         // another offer of the same stock was kept
	ReasonPrice            = "price"             // above the price ceiling
	ReasonFX               = "fx"                // no FX rate to the billing currency
	ReasonSpotNotCheaper   = "spot-not-cheaper"
	ReasonImplausible      = "implausible" // GPUs per unit or price outside what any real offer has
	ReasonBudget           = "budget"      // tier headroom too small
	ReasonCapacity         = "capacity"    // not enough allowed capacity to cover the demand
)

// MaxGPUsPerUnit is the most GPUs one node (unit) is believed to hold; an
// offer claiming more is refused as implausible. The largest A100 nodes sold
// have 8 (p4d/p4de, gn7e-c16g1.32xlarge) and a few marketplace hosts 10–16.
const MaxGPUsPerUnit = 16

// Verdict is the policy's answer for one offer.
type Verdict struct {
	OfferID string `json:"offer_id"`
	Allow   bool   `json:"allow"`
	// Zone is the residency zone the offer's region maps to ("" if unmapped).
	Zone    Zone     `json:"zone"`
	Reasons []Reason `json:"reasons,omitempty"`
}

// Placement is what a provider actually gave for one plan line.
type Placement struct {
	DecisionID string `json:"decision_id"`
	Line       int    `json:"line"`
	Queue      string `json:"queue"`
	Provider   string `json:"provider"`
	OfferID    string `json:"offer_id"`
	// ClientToken is the idempotency key sent to the provider (decision id + line).
	ClientToken string   `json:"client_token"`
	ExternalIDs []string `json:"external_ids"`
	Market      Market   `json:"market"`
	Units       int      `json:"units"`
	Slots       int      `json:"slots"`
	// Price is the price read back from the provider per unit-hour.
	Price    Money     `json:"price"`
	PlacedAt time.Time `json:"placed_at"`
	// BidDecided is the bid the plan decided, per bid unit-hour in the offer's
	// currency (spot lines only; see BidUnit); BidSent is the exact text sent on
	// the wire after the provider's unit conversion and rounding (brokers/bid).
	BidDecided *Money  `json:"bid_decided,omitempty"`
	BidSent    string  `json:"bid_sent,omitempty"`
	BidUnit    BidUnit `json:"bid_unit,omitempty"`
	// ErrorClass classifies why the line holds no capacity: "capacity",
	// "quota", "capability", "transient", "price-mismatch", "bid-range",
	// "policy" (ClassCapacity … ClassPolicy in resume.go; the Err* values in
	// broker.go). With Error set, the provider refused or failed the call. It
	// may also be set with an empty Error: the provider gave the capacity
	// (ExternalIDs, Price are its own) but Sluice refused it on its own checks
	// — "price-mismatch" (price or market read back beyond tolerance, or a
	// reused placement's price no longer within the plan) or "policy" (reused
	// capacity the current policy refuses) — and released it at once (a
	// Release record, reason price-mismatch or policy-refused, follows).
	// Either way the line counts as not placed; its Slots go back to demand
	// at once with Error, and with the release record without it.
	ErrorClass string `json:"error_class,omitempty"`
	// Error is set when the line could not be placed; the record then gives
	// the line's Slots back to the queue's demand.
	Error string `json:"error,omitempty"`
}

// ErrDuplicate is returned by a Ledger when a record with the same id exists.
var ErrDuplicate = errors.New("duplicate record")

// ErrStale is returned by Ledger.AppendDecision when the queue's live slots or
// the tier's period spend changed after the decision read them (another
// decision was recorded meanwhile); the caller re-plans and tries again.
var ErrStale = errors.New("decision based on stale ledger state")

// Clock gives the decision's time; injected so replays are exact.
type Clock interface{ Now() time.Time }

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now calls f.
func (f ClockFunc) Now() time.Time { return f() }

// QuoteSource fetches current offers from one provider.
type QuoteSource interface {
	// Name is the provider name used in offers ("runpod", "vast", "aliyun", ...).
	Name() string
	// Offers returns the provider's normalised offers. Offers that fail to parse
	// are returned as Dropped with their reason; err is for the source as a whole.
	Offers(ctx context.Context) (offers []Offer, dropped []DroppedOffer, err error)
}

// DroppedOffer is a wire offer that could not be normalised, with why.
type DroppedOffer struct {
	Provider string `json:"provider"`
	Ref      string `json:"ref"`
	Reason   string `json:"reason"`
}

// SourceReport is how one quote source fared in one collection.
type SourceReport struct {
	Provider string         `json:"provider"`
	Offers   int            `json:"offers"`
	Dropped  []DroppedOffer `json:"dropped,omitempty"`
	Error    string         `json:"error,omitempty"`
	// ErrorClass is timeout, throttled, auth, bad-response or unavailable.
	ErrorClass string `json:"error_class,omitempty"`
	LatencyMS  int64  `json:"latency_ms"`
}

// PolicyEvaluator decides, for one profile, which offers policy allows.
type PolicyEvaluator interface {
	// Evaluate returns one verdict per offer, in the order of offers.
	Evaluate(ctx context.Context, p QueueProfile, offers []Offer, now time.Time) ([]Verdict, error)
	// Revision identifies the policy files (SHA-256 over their contents).
	Revision() string
}

// Ledger stores decision records and placements.
type Ledger interface {
	// Decision returns the recorded decision with this id, or ok=false.
	Decision(ctx context.Context, id string) (rec DecisionRecord, ok bool, err error)
	// AppendDecision records a decision; ErrDuplicate when the id exists,
	// ErrStale when rec.Demand.Live or rec.Budget.Spent no longer hold.
	AppendDecision(ctx context.Context, rec *DecisionRecord) error
	// AppendPlacement records one placement of a recorded decision.
	AppendPlacement(ctx context.Context, p Placement) error
	// LiveSlots is the number of slots committed (planned by recorded
	// decisions, less failed placements) and not released for queue.
	LiveSlots(ctx context.Context, queue string) (int, error)
	// TierSpend is the expected cost committed by decisions of tier decided in
	// [from, to), in the billing currency.
	TierSpend(ctx context.Context, tier Tier, from, to time.Time) (decimal.Decimal, error)
}
