# METADATA
# title: Shared helpers
# description: Helpers used by every Sluice policy package.
package sluice.lib

import rego.v1

# locations are the distinct offer locations [provider, region, city], and
# markets the distinct markets ("on-demand", "spot", "reserved"). They come
# from input.offers (one entry per offer, as in the tests and in `sluice
# policy explain`) and from input.locations / input.markets (Sluice sends each
# distinct value once). Rules look at each location and market once, however
# many offers share it.
locations := {[offer.provider, offer.region, offer.city] | some offer in input.offers} | {location | some location in input.locations}

markets := {offer.market | some offer in input.offers} | {market | some market in input.markets}

# prices are the prices per GPU-hour the price rules check, by currency:
# {currency: [amount, ...]}. Sluice sends input.prices (each distinct price
# once, so the rules compare each once); for input.offers they are the
# offers' prices in each currency, in offer order (offer_price_slots says
# which is whose). Sluice works the amount out in Go (the unit price divided
# by the GPUs per unit, rounded up at 12 decimal places) and sends it as a
# number; the policy only compares it (Rego compares decimal numbers exactly).
prices := object.get(input, "prices", offer_prices)

# offer_currencies are the currencies of input.offers ("" when an offer has none).
offer_currencies := {object.get(offer, "currency", "") | some offer in input.offers}

# offers_in maps each currency to the offers priced in it, in offer order.
offers_in := {currency: [offer | some offer in input.offers; object.get(offer, "currency", "") == currency] |
	some currency in offer_currencies
}

# offer_prices are the prices of input.offers by currency, in offer order
# (null when an offer has none).
offer_prices := {currency: [object.get(offer, "price_per_gpu_hour", null) | some offer in offers] |
	some currency, offers in offers_in
}

# offer_price_slots maps each offer key to the place of its price in
# offer_prices: [currency, index].
offer_price_slots := {offer.key: [currency, i] |
	some currency, offers in offers_in
	some i, offer in offers
}

# reason builds one refusal from the METADATA of the deny rule that fired:
# the code, rule and title come from the rule's METADATA block, the message
# names the values that made the rule fire. Call it as
#   reason(rego.metadata.rule(), message)
# A rule without custom.code or custom.rule still refuses (with code
# "unlabelled"): a missing label must never turn a refusal into an allow.
reason(meta, message) := {
	"code": object.get(meta, ["custom", "code"], "unlabelled"),
	"rule": object.get(meta, ["custom", "rule"], "unlabelled"),
	"title": object.get(meta, "title", ""),
	"message": message,
}

# where names a location for messages: "region cn-hangzhou", or
# "region CN (city Shanghai)" when the provider gives a city.
where(region, city) := sprintf("region %s (city %s)", [region, city]) if {
	city != ""
} else := sprintf("region %s", [region])
