package sim

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice"
)

// Strategy is one way of combining the owned pool with elastic capacity.
type Strategy string

// Strategies compared by one run (README.md "Strategies").
const (
	// OwnedOnly never buys: jobs wait for the owned pool.
	OwnedOnly Strategy = "owned-only"
	// OnDemandBurst buys on-demand capacity; every non-base job is planned as budget tier elastic.
	OnDemandBurst Strategy = "on-demand"
	// SpotBurst buys spot capacity; every non-base job is planned as budget tier emergency.
	SpotBurst Strategy = "spot"
	// Tiered offers every market and keeps each job's own budget tier: the
	// budget-tier policy as configured decides what each may buy.
	Tiered Strategy = "tiered"
	// ReservationFirst buys capacity blocks (reserved) when a queue's backlog
	// covers a block's term, and bursts the rest on demand; non-base jobs are elastic.
	ReservationFirst Strategy = "reservation-first"
)

// Strategies is every strategy, in report order.
var Strategies = []Strategy{OwnedOnly, OnDemandBurst, SpotBurst, Tiered, ReservationFirst}

// ParseStrategy returns the strategy named s.
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range Strategies {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, len(Strategies))
	for i, st := range Strategies {
		names[i] = string(st)
	}
	return "", fmt.Errorf("strategy %q: unknown (known: %s)", s, strings.Join(names, ", "))
}

// marketMask is a set of markets, one bit each.
type marketMask uint8

const (
	maskOnDemand marketMask = 1 << iota
	maskSpot
	maskReserved
)

func (m marketMask) has(x sluice.Market) bool {
	switch x {
	case sluice.OnDemand:
		return m&maskOnDemand != 0
	case sluice.Spot:
		return m&maskSpot != 0
	case sluice.Reserved:
		return m&maskReserved != 0
	}
	return false
}

// markets is the offer set a strategy's ordinary (per-slot) decisions see.
func (s Strategy) markets() marketMask {
	switch s {
	case OnDemandBurst, ReservationFirst:
		return maskOnDemand
	case SpotBurst:
		return maskSpot
	case Tiered:
		return maskOnDemand | maskSpot | maskReserved
	}
	return 0
}

// tier is the budget tier a job is planned under: base stays base (the
// owned pool, never bought: policy refuses every offer), the others follow
// the strategy.
func (s Strategy) tier(t sluice.Tier) sluice.Tier {
	if t == sluice.TierBase {
		return t
	}
	switch s {
	case OnDemandBurst, ReservationFirst:
		return sluice.TierElastic
	case SpotBurst:
		return sluice.TierEmergency
	}
	return t
}
