# METADATA
# title: Offer decision
# description: |
#   Gathers the refusals of every policy package. Two documents read the
#   same rules:
#
#   result (one verdict per offer; the tests and `sluice policy explain`):
#     input  {"profile": {...}, "offers": [{"key", "provider", "region", "city", "market",
#             "gpu_model", "currency", "price_per_gpu_hour" (a number)}, ...]}
#     result {"verdicts": {key: {"zone": "beijing" | ... | "", "reasons": [{"code", "rule", "title", "message"}, ...]}},
#             "limits": {"max_price_per_gpu_hour": {"USD": "4.00", ...}}}
#
#   batch (what Sluice evaluates for a decision; each distinct value once):
#     input  {"profile": {...}, "locations": [[provider, region, city], ...], "markets": [...],
#             "prices": {currency: [amount, ...]}}
#     batch  {"locations": {location: {"zone", "reasons"}}, "markets": {market: reasons},
#             "prices": {currency: {"reasons", "refused": [index in input.prices[currency], ...]}}
#             (only currencies with refused prices), "limits": {...}}
#
#   An offer's reasons are those of its location, its market and its price;
#   it is allowed when there are none. Offers are never compared with each
#   other.
package sluice.decision

import rego.v1

import data.sluice.budget
import data.sluice.interruptibility
import data.sluice.lib
import data.sluice.residency
import data.sluice.suitability

# result is one verdict per offer key, and the budget tier's limits.
result := {"verdicts": verdicts, "limits": budget.limits}

# batch is the same decision by distinct location, market and price.
batch := {"locations": by_location, "markets": by_market, "prices": by_price, "limits": budget.limits}

# verdicts maps each offer key to its verdict: its location's zone, and the
# reasons of its location, market and price together.
verdicts := {offer.key: verdict |
	at_location := by_location
	at_market := by_market
	at_price := by_price
	slots := lib.offer_price_slots
	some offer in input.offers
	v := at_location[[offer.provider, offer.region, offer.city]]

	# slots gives the place of this offer's price in lib.prices.
	[currency, i] := slots[offer.key]
	reasons := (v.reasons | at_market[offer.market]) | price_reasons(object.get(at_price, currency, {}), i)
	verdict := {"zone": v.zone, "reasons": reasons}
}

# price_reasons are the reasons of the price at place i, given its currency's
# entry in by_price ({} when no price in that currency is refused).
price_reasons(denial, i) := denial.reasons if {
	i in denial.refused
} else := set()

# by_location maps each offered location to its zone ("" when unmapped) and
# the residency and suitability reasons offers there are refused.
by_location := {location: {"zone": zone, "reasons": reasons} |
	zones := residency.zones
	residency_denials := residency.deny
	suitability_denials := suitability.deny_location
	some location in lib.locations
	zone := object.get(zones, [location], "")
	reasons := object.get(residency_denials, [location], set()) | object.get(suitability_denials, [location], set())
}

# by_market maps each offered market to the reasons that depend on the market only.
by_market := {market: reasons |
	interruptibility_denials := interruptibility.deny
	budget_denials := budget.deny
	suitability_denials := suitability.deny_market
	some market in lib.markets
	reasons := (object.get(interruptibility_denials, market, set()) | object.get(budget_denials, market, set())) | object.get(suitability_denials, market, set())
}

# by_price maps each currency with refused prices to the reasons and the
# places of those prices in lib.prices[currency].
by_price := budget.price_denials
