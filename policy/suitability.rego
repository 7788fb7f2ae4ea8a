# METADATA
# title: Suitability
# description: |
#   Jobs that bought (elastic) capacity does not fit, whatever its price:
#   multi-node tensor-parallel jobs that need NVLink between nodes (bought
#   capacity comes as separate nodes without it), and jobs whose data must
#   stay on local storage in one zone (any other zone is remote).
#
#   deny_market maps a market to the reasons offers in it are refused;
#   deny_location maps a location [provider, region, city] likewise.
package sluice.suitability

import rego.v1

import data.sluice.lib
import data.sluice.residency

# storage_zone is the zone holding the queue's local storage ("" if none).
storage_zone := object.get(input.profile, "storage_zone", "")

# zones are the residency zones a storage zone can name.
zones := {"beijing", "east-china", "cn-other", "overseas"}

# METADATA
# title: Needs NVLink across nodes
# description: The queue's jobs are tensor-parallel across several nodes and need NVLink between them (cross_node_nvlink). Bought capacity comes as separate nodes without an NVLink fabric between them, so no offer fits.
# custom:
#   code: suitability
#   rule: suitability.cross_node_nvlink
deny_market[market] contains lib.reason(rego.metadata.rule(), message) if {
	input.profile.cross_node_nvlink == true
	some market in lib.markets
	message := sprintf("the queue's jobs need NVLink across nodes; bought capacity (market %s) comes as separate nodes without it", [market])
}

# METADATA
# title: Data on local storage, offer in a remote zone
# description: The queue's data must stay on local storage (local_storage_only) in its storage_zone; an offer in any other zone is remote.
# custom:
#   code: suitability
#   rule: suitability.remote_from_local_storage
deny_location[location] contains lib.reason(rego.metadata.rule(), message) if {
	input.profile.local_storage_only == true
	storage_zone in zones
	some location, zone in residency.zones
	zone != storage_zone
	[_, region, city] := location
	message := sprintf("%s maps to %s; the queue's data stays on local storage in %s", [lib.where(region, city), zone, storage_zone])
}

# METADATA
# title: Local storage in no known zone
# description: The queue's data must stay on local storage (local_storage_only), but its storage_zone is not one of beijing, east-china, cn-other or overseas, so every zone is remote.
# custom:
#   code: suitability
#   rule: suitability.storage_zone_unknown
deny_location[location] contains lib.reason(rego.metadata.rule(), message) if {
	input.profile.local_storage_only == true
	not storage_zone in zones
	some location in lib.locations
	message := sprintf("the queue's data stays on local storage, but its storage zone %q is not a known zone (known: %s)", [storage_zone, concat(", ", sort(zones))])
}
