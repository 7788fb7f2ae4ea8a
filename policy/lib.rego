# METADATA
# title: Shared helpers
# description: Helpers used by every Sluice policy package.
package sluice.lib

# places maps each offer's key to its place [location, market], where
# location is [provider, region, city]: the offer attributes the rules read.
places := {offer.key: [[offer.provider, offer.region, offer.city], offer.market] | some offer in input.offers}

# offered holds each distinct place. Rules look at each place once, however
# many offers share it.
offered := {place | some place in places}

# reason builds one refusal from the METADATA of the deny rule that fired:
# the code and rule come from the rule's "custom" block, the message names
# the values that made the rule fire. Call it as
#   reason(rego.metadata.rule(), message)
# A rule without custom.code or custom.rule still refuses (with code
# "unlabelled"): a missing label must never turn a refusal into an allow.
reason(meta, message) := {
	"code": object.get(meta, ["custom", "code"], "unlabelled"),
	"rule": object.get(meta, ["custom", "rule"], "unlabelled"),
	"message": message,
}

# where names a location for messages: "region cn-hangzhou", or
# "region CN (city Shanghai)" when the provider gives a city.
where(region, city) := sprintf("region %s (city %s)", [region, city]) if {
	city != ""
} else := sprintf("region %s", [region])
