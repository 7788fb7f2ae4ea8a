# METADATA
# title: Budget tiers
# description: |
#   Which markets a queue's budget tier may buy from. The base tier is the
#   owned pool and is never bought; elastic buys on-demand and reserved
#   capacity; emergency buys spot, plus on-demand when data/settings.json says
#   so. The policy also returns the tier's price ceilings from data as decimal
#   strings; prices are compared in Go, never computed here.
#
#   These rules depend only on the offer's market: deny maps a market to the
#   reasons offers in it are refused.
package sluice.budget

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
markets := {market | some [_, market] in lib.offered}

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
