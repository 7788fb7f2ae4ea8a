# METADATA
# title: Data residency
# description: |
#   Where a queue's data may be processed. Every offer's location (provider,
#   region, city) is mapped to one residency zone (beijing, east-china,
#   cn-other, overseas) by data/cities.json when the provider gives a city
#   that table knows (Vast.ai hosts in China), else by data/regions.json. The
#   queue's data class then decides which zones are allowed. A region that is
#   not in the map is refused, never guessed.
#
#   The rules look at each distinct location once: deny maps a location
#   [provider, region, city] to the reasons offers there are refused.
package sluice.residency

import rego.v1

import data.data.sluice.city_zones
import data.data.sluice.regions
import data.sluice.lib

# allowed_zones lists, for each data class, the zones its data may go to.
allowed_zones := {
	"cn-beijing-only": {"beijing"},
	"cn-domestic": {"beijing", "east-china", "cn-other"},
	"public": {"beijing", "east-china", "cn-other", "overseas"},
}

# data_class is the queue's data class ("" if the profile has none).
data_class := object.get(input.profile, "data_class", "")

# locations are the distinct locations [provider, region, city] of the offers.
locations := lib.locations

# zones maps each location to its residency zone: from the city table
# (data/cities.json) when it knows the provider, region and city, else from
# the region map (data/regions.json). Unmapped locations are not in it.
zones := {location: zone |
	city_table := city_zones
	region_table := regions
	some location in locations
	[provider, region, city] := location
	zone := object.get(city_table, [provider, region, lower(trim_space(city))], object.get(region_table, [provider, region], "unmapped"))
	zone != "unmapped"
}

# unmapped are the locations with no zone; offered_zones the zones the
# mapped locations fall in. (Worked out once with set operations, so the
# rules below look only at the locations they refuse.)
unmapped := locations - object.keys(zones)

offered_zones := {zone | some zone in zones}

# METADATA
# title: Unknown data class
# description: The queue's data class is not one of cn-beijing-only, cn-domestic or public, so no zone can be allowed.
# custom:
#   code: residency
#   rule: residency.unknown_data_class
deny[location] contains lib.reason(rego.metadata.rule(), message) if {
	not allowed_zones[data_class]
	some location in locations
	message := sprintf("data class %q is not known (known: %s)", [data_class, concat(", ", sort(object.keys(allowed_zones)))])
}

# METADATA
# title: Region not mapped
# description: The offer's provider region is not in data/regions.json (nor its city in data/cities.json). Unmapped regions are refused, never defaulted.
# custom:
#   code: residency
#   rule: residency.unmapped
deny[location] contains lib.reason(rego.metadata.rule(), message) if {
	some location in unmapped
	[provider, region, city] := location
	message := sprintf("%s of provider %s is not mapped to a residency zone (policy/data/regions.json); unmapped regions are refused", [lib.where(region, city), provider])
}

# METADATA
# title: Zone not allowed for the data class
# description: The offer's zone is not one the queue's data class allows.
# custom:
#   code: residency
#   rule: residency.zone_not_allowed
deny[location] contains lib.reason(rego.metadata.rule(), message) if {
	allowed := allowed_zones[data_class]

	# The offered zones the data class does not allow, then their locations.
	refused_zones := offered_zones - allowed
	count(refused_zones) > 0
	some location, z in zones
	z in refused_zones
	[_, region, city] := location
	message := sprintf("%s maps to %s; data class %s allows %s", [lib.where(region, city), z, data_class, concat(", ", sort(allowed))])
}

# METADATA
# title: Overseas without export approval
# description: The data class allows overseas zones, but only for a queue whose profile has export_approved set.
# custom:
#   code: residency
#   rule: residency.export_not_approved
deny[location] contains lib.reason(rego.metadata.rule(), message) if {
	not input.profile.export_approved
	"overseas" in allowed_zones[data_class]
	"overseas" in offered_zones
	some location, z in zones
	z == "overseas"
	[_, region, city] := location
	message := sprintf("%s maps to overseas; data class %s may go overseas only with export approval, and the queue has none", [lib.where(region, city), data_class])
}
