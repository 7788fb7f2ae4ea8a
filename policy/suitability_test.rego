package sluice.suitability_test

import rego.v1

import data.sluice.testing

# Suitability cases: what kind of job the queue runs, where the offer is,
# and which suitability rules must refuse it ([] = allowed).
cases := {
	"tensor-parallel across nodes over NVLink, on-demand: refused": {
		"queue": {"cross_node_nvlink": true},
		"offer": {"market": "on-demand"},
		"refused_by": ["suitability.cross_node_nvlink"],
	},
	"tensor-parallel across nodes over NVLink, reserved: refused": {
		"queue": {"cross_node_nvlink": true, "budget_tier": "elastic"},
		"offer": {"market": "reserved"},
		"refused_by": ["suitability.cross_node_nvlink"],
	},
	"single-node job: allowed": {
		"queue": {"cross_node_nvlink": false},
		"offer": {"market": "on-demand"},
		"refused_by": [],
	},
	"data on local storage in Beijing, Alibaba Beijing: allowed": {
		"queue": {"local_storage_only": true, "storage_zone": "beijing"},
		"offer": {"provider": "aliyun", "region": "cn-beijing"},
		"refused_by": [],
	},
	"data on local storage in Beijing, Alibaba Hangzhou: refused": {
		"queue": {"local_storage_only": true, "storage_zone": "beijing"},
		"offer": {"provider": "aliyun", "region": "cn-hangzhou"},
		"refused_by": ["suitability.remote_from_local_storage"],
	},
	"data on local storage in Beijing, Vast host in Beijing: allowed": {
		"queue": {"local_storage_only": true, "storage_zone": "beijing"},
		"offer": {"provider": "vast", "region": "CN", "city": "Beijing"},
		"refused_by": [],
	},
	"data on local storage in east-china, RunPod Kansas: refused": {
		"queue": {"local_storage_only": true, "storage_zone": "east-china"},
		"offer": {"provider": "runpod", "region": "US-KS-2"},
		"refused_by": ["suitability.remote_from_local_storage"],
	},
	"data on local storage with no storage zone: refused": {
		"queue": {"local_storage_only": true, "storage_zone": ""},
		"offer": {"provider": "aliyun", "region": "cn-beijing"},
		"refused_by": ["suitability.storage_zone_unknown"],
	},
	"data not tied to local storage, Alibaba Hangzhou: allowed": {
		"queue": {"local_storage_only": false, "storage_zone": "beijing"},
		"offer": {"provider": "aliyun", "region": "cn-hangzhou"},
		"refused_by": [],
	},
	"data on local storage, unmapped region: left to residency.unmapped": {
		"queue": {"local_storage_only": true, "storage_zone": "beijing"},
		"offer": {"provider": "aliyun", "region": "cn-qingdao"},
		"refused_by": [],
	},
}

test_suitability[name] if {
	some name, c in cases
	testing.rules(c, "suitability") == testing.expected(c)
}

test_message_names_the_values if {
	c := {"queue": {"local_storage_only": true, "storage_zone": "beijing"}, "offer": {"provider": "aliyun", "region": "cn-hangzhou"}}
	some reason in testing.verdict(c).reasons
	reason.message == "region cn-hangzhou maps to east-china; the queue's data stays on local storage in beijing"
	reason.title == "Data on local storage, offer in a remote zone"
}

test_nvlink_message if {
	c := {"queue": {"cross_node_nvlink": true}, "offer": {"market": "spot"}}
	some reason in testing.verdict(c).reasons
	reason.message == "the queue's jobs need NVLink across nodes; bought capacity (market spot) comes as separate nodes without it"
}
