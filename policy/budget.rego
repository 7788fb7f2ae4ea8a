# METADATA
# title: Budget tiers
# description: |
#   Which markets a queue's budget tier may buy from. The base tier is the
#   owned pool and is never bought; elastic buys on-demand and reserved
#   capacity; emergency buys spot, plus on-demand when data/settings.json says
#   so. Each tier has a price ceiling per GPU-hour and currency in data; an
#   offer's price per GPU-hour is compared with it (Sluice works the price per
#   GPU-hour out in Go; the policy compares, never computes, money).
#
#   The market rules depend only on the offer's market: deny maps a market to
#   the reasons offers in it are refused. The price rules depend only on the
#   price: deny_price_above and deny_price_no_ceiling map a currency to the
#   reasons and the places in lib.prices[currency] of the prices refused.
package sluice.budget

import rego.v1

import data.data.sluice.settings
import data.sluice.lib

# tier_markets lists, for each budget tier, the markets it may buy from.
tier_markets := {
	"base": set(),
	"elastic": {"on-demand", "reserved"},
	"emergency": emergency_markets,
}

# emergency_markets is spot, plus on-demand when emergency_allows_on_demand is true.
emergency_markets := {"spot", "on-demand"} if {
	settings.budget.emergency_allows_on_demand == true
} else := {"spot"}

# markets are the distinct markets of the offers.
markets := lib.markets

# tier is the queue's budget tier ("" if the profile has none).
tier := object.get(input.profile, "budget_tier", "")

# limits are the tier's ceilings from data/settings.json, e.g.
# {"max_price_per_gpu_hour": {"USD": "4.00", "CNY": "30.00"}}; empty when none.
default limits := {}

limits := {"max_price_per_gpu_hour": settings.budget.tiers[tier].max_price_per_gpu_hour}

# METADATA
# title: Unknown budget tier
# description: The queue's budget tier is not one of base, elastic or emergency, so no market can be allowed.
# custom:
#   code: budget-tier
#   rule: budget_tier.unknown_tier
deny[market] contains lib.reason(rego.metadata.rule(), message) if {
	not tier_markets[tier]
	some market in markets
	message := sprintf("budget tier %q is not known (known: %s)", [tier, concat(", ", sort(object.keys(tier_markets)))])
}

# METADATA
# title: Base tier is never bought
# description: The base tier is the team's owned pool; Sluice never buys capacity for it.
# custom:
#   code: budget-tier
#   rule: budget_tier.base_never_bought
deny[market] contains lib.reason(rego.metadata.rule(), message) if {
	tier == "base"
	some market in markets
	message := sprintf("budget tier base is the owned pool and is never bought (offer market %s)", [market])
}

# METADATA
# title: Market not allowed for the budget tier
# description: The offer's market (on-demand, spot, reserved) is not one the queue's budget tier may buy from.
# custom:
#   code: budget-tier
#   rule: budget_tier.market_not_allowed
deny[market] contains lib.reason(rego.metadata.rule(), message) if {
	tier != "base"
	allowed := tier_markets[tier]
	some market in markets
	not market in allowed
	message := sprintf("market %s is not allowed for budget tier %s (allowed: %s)", [market, tier, concat(", ", sort(allowed))])
}

# ceilings are the tier's price ceilings per GPU-hour as numbers, by currency.
ceilings := {currency: to_number(amount) | some currency, amount in limits.max_price_per_gpu_hour}

# METADATA
# title: Price above the budget tier's ceiling
# description: The offer's price per GPU-hour is above the ceiling data/settings.json sets for the queue's budget tier in the offer's currency.
# custom:
#   code: budget-tier
#   rule: budget_tier.above_tier_price
deny_price_above[currency] := {"reasons": {reason}, "refused": refused} if {
	limit_of := ceilings
	some currency, amounts in lib.prices
	ceiling := limit_of[currency]

	# Each price is compared once; the reason is built once per currency
	# (the offer's own price is in the offer).
	refused := [i | some i, amount in amounts; amount > ceiling]
	count(refused) > 0
	reason := lib.reason(rego.metadata.rule(), sprintf("price per GPU-hour is above the %s tier's ceiling of %s %s", [tier, limits.max_price_per_gpu_hour[currency], currency]))
}

# METADATA
# title: No price ceiling in the offer's currency
# description: The queue's budget tier has price ceilings, but none in the offer's currency, so the price cannot be checked and the offer is refused.
# custom:
#   code: budget-tier
#   rule: budget_tier.no_ceiling_in_currency
deny_price_no_ceiling[currency] := {"reasons": {lib.reason(rego.metadata.rule(), message)}, "refused": refused} if {
	limit_of := ceilings
	count(limit_of) > 0
	some currency, amounts in lib.prices
	not limit_of[currency]
	refused := [i | some i, _ in amounts]
	message := sprintf("budget tier %s has no price ceiling in %s (data/settings.json has %s)", [tier, currency, concat(", ", sort(object.keys(limit_of)))])
}

# price_denials maps each currency with refused prices to
# {"reasons": {...}, "refused": [place in lib.prices[currency], ...]} (a
# currency has a ceiling or not, so the two rules never share a currency).
price_denials := object.union(deny_price_above, deny_price_no_ceiling)
