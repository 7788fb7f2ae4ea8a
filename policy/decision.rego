# METADATA
# title: Offer decision
# description: |
#   Gathers the refusals of every policy package for each offer in
#   input.offers. This is the document Sluice evaluates:
#   data.sluice.decision.result.
#
#   input:  {"profile": {...}, "offers": [{"key", "provider", "region", "city", "market", "gpu_model"}, ...]}
#   result: {"verdicts": {key: {"zone": "beijing" | ... | "", "reasons": [{"code", "rule", "message"}, ...]}},
#            "limits": {"max_price_per_gpu_hour": {"USD": "4.00", ...}}}
#
#   An offer is allowed when its reasons are empty. Residency reasons are
#   worked out once per location, the others once per market, and the
#   verdict once per offered location and market; each offer then looks its
#   own up. Offers are never compared with each other.
package sluice.decision

import data.sluice.budget
import data.sluice.interruptibility
import data.sluice.lib
import data.sluice.residency

# result is what Sluice reads: one verdict per offer key, and the budget tier's limits.
result := {"verdicts": verdicts, "limits": budget.limits}

# verdicts maps each offer key to its verdict.
verdicts := {key: at[place] |
	at := verdict_at
	some key, place in lib.places
}

# verdict_at maps each offered place [location, market] to the location's
# zone ("" when its region is unmapped) and every reason offers there are
# refused (empty when allowed).
verdict_at := {place: verdict |
	at_location := by_location
	at_market := by_market
	some place in lib.offered
	[location, market] := place
	v := at_location[location]
	verdict := {"zone": v.zone, "reasons": (v.reasons | at_market[market])}
}

# by_location maps each offered location to its zone ("" when unmapped) and
# the residency reasons offers there are refused.
by_location := {location: {"zone": zone, "reasons": reasons} |
	zones := residency.zones
	denials := residency.deny
	some location in residency.locations

	# object.get takes a path: [location] is the one key location (an array).
	zone := object.get(zones, [location], "")
	reasons := object.get(denials, [location], set())
}

# by_market maps each offered market to the reasons that depend on the market only.
by_market := {market: reasons |
	some market in budget.markets
	reasons := object.get(interruptibility.deny, market, set()) | object.get(budget.deny, market, set())
}
