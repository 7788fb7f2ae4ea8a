// Package bid holds every provider's bid rules in one place: what one unit of
// the bid buys (per GPU, per machine, per instance), the precision the
// provider accepts, the rounding direction, and the bounds (the offer's
// minimum bid, the on-demand price of the same capacity, the provider's own
// limits). Adapters call Decide before any provider call and send Bid.Text;
// the placement records Bid.Decided and Bid.Text.
//
// Rounding point (the only one): the bid per bid unit is rounded DOWN
// (toward zero; bids are positive) to Rule.Places decimals, so Sluice never
// bids more than it decided. When rounding down would put the bid below the
// offer's minimum bid, the bid is refused (ErrBidOutOfRange) rather than
// rounded up: rounding up would pay more than decided.
//
// Wire facts: ../shared/reference/providers.md §1.3 (EC2 MaxPrice > 0.001),
// §2.1 (RunPod bidPerGpu), §3 (Vast price per machine, 0.001..128), §4
// (AutoDL price_to in yuan × 1000), §5 (Alibaba SpotPriceLimit ≤ 3 decimals).
package bid

import (
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Rule is one provider's bid rule.
type Rule struct {
	Provider string
	// Unit is what one unit of the bid buys per hour.
	Unit sluice.BidUnit
	// Places is the number of decimals sent on the wire (after Shift).
	Places int32
	// Shift moves the decimal point of the amount sent: 3 for AutoDL's
	// milli-yuan (yuan × 1000), 0 for every other provider.
	Shift int32
	// Min and Max bound the amount sent per bid unit-hour in the wire unit
	// (after Shift). MinExclusive makes Min a strict bound (EC2: > 0.001).
	// A zero Max is no upper bound.
	Min, Max     decimal.Decimal
	MinExclusive bool
	// MaxPerGPU, when non-zero, bounds the bid per GPU of the unit (Vast's
	// change-bid limit 32 × num_gpus).
	MaxPerGPU decimal.Decimal
	// Source says where the precision and bounds come from.
	Source string
}

// Rules by provider name (config.Providers names).
//
// | provider | unit     | places | bounds sent                | source                          |
// |----------|----------|--------|----------------------------|---------------------------------|
// | aws      | instance | 6      | > 0.001                    | API_SpotMarketOptions [V]; 6 dp as spotPrice is rendered [I] |
// | aliyun   | instance | 3      | > 0 (≤ 3 decimals)         | RunInstancesRequest SpotPriceLimit [V] |
// | runpod   | GPU      | 3      | > 0                        | bidPerGpu is a JSON Float; 3 dp assumed [I] |
// | vast     | machine  | 6      | 0.001 ≤ p ≤ 128, ≤ 32/GPU  | create_instance / change bid yaml [V]; 6 dp as dph/min_bid [I] |
// | autodl   | GPU      | 0 (milli-yuan integer) | ≥ 1        | price_to yuan × 1000 [3P]; per GPU-hour [I] |
var Rules = map[string]Rule{
	"aws": {Provider: "aws", Unit: sluice.BidPerInstance, Places: 6, Min: decimal.RequireFromString("0.001"), MinExclusive: true,
		Source: "EC2 SpotMarketOptions.MaxPrice: string, USD per instance-hour, must be > 0.001 (API_SpotMarketOptions)"},
	"aliyun": {Provider: "aliyun", Unit: sluice.BidPerInstance, Places: 3, Min: decimal.Zero, MinExclusive: true,
		Source: "ECS RunInstances SpotPriceLimit: per instance-hour, at most 3 decimals (RunInstancesRequest)"},
	"runpod": {Provider: "runpod", Unit: sluice.BidPerGPU, Places: 3, Min: decimal.Zero, MinExclusive: true,
		Source: "RunPod podRentInterruptable bidPerGpu: USD per GPU-hour (precision assumed 3 decimals)"},
	"vast": {Provider: "vast", Unit: sluice.BidPerMachine, Places: 6, Min: decimal.RequireFromString("0.001"),
		Max: decimal.NewFromInt(128), MaxPerGPU: decimal.NewFromInt(32),
		Source: "Vast PUT /api/v0/asks/{id}/ price: USD per machine-hour, 0.001..128 (change bid ≤ 32 × num_gpus)"},
	"autodl": {Provider: "autodl", Unit: sluice.BidPerGPU, Places: 0, Shift: 3, Min: decimal.NewFromInt(1),
		Source: "AutoDL deployment container_template.price_to: integer yuan × 1000 per GPU-hour (ceiling, not a bid)"},
}

// Limits bound one line's bid, per UNIT-hour of the offer (a unit is
// GPUsPerUnit GPUs on one node), in the offer's currency. A zero Money means
// no such limit is known.
type Limits struct {
	// MinBid is the offer's minimum bid (Offer.MinBid).
	MinBid sluice.Money
	// OnDemand is the on-demand price of the same capacity (the offer with
	// the same CapacityKey and market on-demand).
	OnDemand sluice.Money
}

// Input is one line's bid question.
type Input struct {
	Provider string
	// PerUnit is the bid decided per unit-hour (Line.Bid for spot, Line.UnitPrice
	// for an AutoDL ceiling), offer currency.
	PerUnit sluice.Money
	// GPUsPerUnit is Line.GPUs / Line.Units.
	GPUsPerUnit int
	Limits      Limits
}

// Bid is the answer: what was decided and what is sent.
type Bid struct {
	Unit sluice.BidUnit
	// Decided is the bid per bid unit-hour before the provider's rounding, in
	// the offer's currency: PerUnit / GPUsPerUnit for a per-GPU bid, rounded
	// half away from zero to DecidedScale places (exact when it divides).
	Decided sluice.Money
	// Sent is Decided rounded DOWN to the provider's precision, in the offer's
	// currency (for AutoDL still yuan, not milli-yuan).
	Sent sluice.Money
	// Text is the amount exactly as written on the wire (after Shift): "12.5",
	// "0.123", "6680".
	Text string
}

// DecidedScale is the decimals kept in Bid.Decided when a per-unit bid is
// divided into a per-GPU bid that does not divide exactly.
const DecidedScale = 10

// Decide applies the provider's rule to in. Errors wrap
// sluice.ErrBidOutOfRange (a bid that breaks a rule: at or under EC2's 0.001,
// below the minimum bid after rounding down, above the on-demand price, above
// the provider's maximum) or are plain errors for a malformed input (unknown
// provider, no GPUs, currency mismatch).
func Decide(in Input) (Bid, error) {
	r, ok := Rules[in.Provider]
	if !ok {
		return Bid{}, fmt.Errorf("bid: provider %q: no bid rule", in.Provider)
	}
	return r.Decide(in)
}

// Decide applies r to in (see the package function Decide).
func (r Rule) Decide(in Input) (Bid, error) {
	cur := in.PerUnit.Currency
	switch {
	case in.GPUsPerUnit < 1:
		return Bid{}, fmt.Errorf("bid %s: GPUs per unit %d: want ≥ 1", r.Provider, in.GPUsPerUnit)
	case !in.PerUnit.IsSet():
		return Bid{}, fmt.Errorf("bid %s: no bid amount", r.Provider)
	case in.PerUnit.Amount.IsNegative():
		return Bid{}, fmt.Errorf("bid %s: bid %s: negative: %w", r.Provider, in.PerUnit, sluice.ErrBidOutOfRange)
	case in.Limits.MinBid.IsSet() && in.Limits.MinBid.Currency != cur:
		return Bid{}, fmt.Errorf("bid %s: min bid %s not in the bid's currency %s", r.Provider, in.Limits.MinBid, cur)
	case in.Limits.OnDemand.IsSet() && in.Limits.OnDemand.Currency != cur:
		return Bid{}, fmt.Errorf("bid %s: on-demand price %s not in the bid's currency %s", r.Provider, in.Limits.OnDemand, cur)
	}
	// factor: bid units per offer unit.
	factor := int64(1)
	if r.Unit == sluice.BidPerGPU {
		factor = int64(in.GPUsPerUnit)
	}
	f := decimal.NewFromInt(factor)
	perUnit := in.PerUnit.Amount
	decided := perUnit
	if factor != 1 {
		decided = perUnit.DivRound(f, DecidedScale)
		if decided.Mul(f).Equal(perUnit) {
			decided = perUnit.Div(f) // exact quotient: keep its own digits
		}
	}
	b := Bid{Unit: r.Unit, Decided: sluice.Money{Amount: decided, Currency: cur}}
	if in.Limits.OnDemand.IsSet() && !in.Limits.OnDemand.Zero() && perUnit.GreaterThan(in.Limits.OnDemand.Amount) {
		return b, fmt.Errorf("bid %s: %s per unit-hour is above the on-demand price %s of the same capacity: %w",
			r.Provider, in.PerUnit, in.Limits.OnDemand, sluice.ErrBidOutOfRange)
	}
	// Exact floor of perUnit × 10^(Places+Shift) / factor: the integer
	// quotient of QuoRem is truncated toward zero (= down for a positive bid).
	scaled := perUnit.Shift(r.Places + r.Shift)
	q, _ := scaled.QuoRem(f, 0)
	wire := q.Shift(-r.Places) // amount in the wire unit (after Shift)
	sent := wire.Shift(-r.Shift)
	b.Sent = sluice.Money{Amount: sent, Currency: cur}
	b.Text = wire.StringFixed(r.Places)
	if min := in.Limits.MinBid; min.IsSet() && sent.Mul(f).LessThan(min.Amount) {
		return b, fmt.Errorf("bid %s: %s per %s-hour rounded down to %d places is %s, below the minimum bid %s per unit-hour: %w",
			r.Provider, b.Decided, r.Unit, r.Places+r.Shift, b.Sent, min, sluice.ErrBidOutOfRange)
	}
	if wire.LessThan(r.Min) || (r.MinExclusive && wire.Equal(r.Min)) {
		op := "≥"
		if r.MinExclusive {
			op = ">"
		}
		return b, fmt.Errorf("bid %s: %s sent %q must be %s %s (%s): %w", r.Provider, r.Unit, b.Text, op, r.Min, r.Source, sluice.ErrBidOutOfRange)
	}
	if !r.Max.IsZero() && wire.GreaterThan(r.Max) {
		return b, fmt.Errorf("bid %s: %s sent %q above the maximum %s (%s): %w", r.Provider, r.Unit, b.Text, r.Max, r.Source, sluice.ErrBidOutOfRange)
	}
	if !r.MaxPerGPU.IsZero() && wire.GreaterThan(r.MaxPerGPU.Mul(decimal.NewFromInt(int64(in.GPUsPerUnit)))) {
		return b, fmt.Errorf("bid %s: %s sent %q above %s per GPU × %d GPUs: %w", r.Provider, r.Unit, b.Text, r.MaxPerGPU, in.GPUsPerUnit, sluice.ErrBidOutOfRange)
	}
	return b, nil
}

// ForLine is Decide for a plan line: PerUnit is line.Bid (spot) or, for
// AutoDL's ceiling, line.UnitPrice; GPUsPerUnit is line.GPUs / line.Units.
// ok is false when the line sends no bid (on-demand and reserved lines of
// every provider but AutoDL).
func ForLine(line sluice.Line, lim Limits) (b Bid, ok bool, err error) {
	var per sluice.Money
	switch {
	case line.Provider == "autodl":
		per = line.UnitPrice
	case line.Market == sluice.Spot:
		if line.Bid == nil {
			return Bid{}, true, fmt.Errorf("bid %s: spot line %s carries no bid", line.Provider, line.OfferID)
		}
		per = *line.Bid
	default:
		return Bid{}, false, nil
	}
	if line.Units < 1 || line.GPUs%line.Units != 0 {
		return Bid{}, true, fmt.Errorf("bid %s: line %s: %d GPUs over %d units", line.Provider, line.OfferID, line.GPUs, line.Units)
	}
	b, err = Decide(Input{Provider: line.Provider, PerUnit: per, GPUsPerUnit: line.GPUs / line.Units, Limits: lim})
	return b, true, err
}

// LimitsFor finds the limits of offerID in a decision's offers: its MinBid
// and the unit price of the on-demand offer of the same capacity (the
// cheapest, should there be several). Zero Limits when the offer is not
// there.
func LimitsFor(offers []sluice.Offer, offerID string) Limits {
	var lim Limits
	var key sluice.CapacityKey
	found := false
	for _, o := range offers {
		if o.ID == offerID {
			lim.MinBid, key, found = o.MinBid, o.Capacity(), true
			break
		}
	}
	if !found {
		return Limits{}
	}
	for _, o := range offers {
		if o.Market == sluice.OnDemand && o.Capacity() == key &&
			(!lim.OnDemand.IsSet() || o.UnitPrice.Cmp(lim.OnDemand) < 0) {
			lim.OnDemand = o.UnitPrice
		}
	}
	return lim
}
