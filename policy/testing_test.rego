# METADATA
# title: Test helpers
# description: |
#   Shared by the *_test.rego files. A test case changes only what it is
#   about: the queue and offer below fill in everything else.
package sluice.testing

import rego.v1

import data.sluice.decision

# base_queue is a queue that any offer could serve: public data with export
# approval, checkpoints every 30 minutes, emergency tier (spot and on-demand).
base_queue := {
	"queue": "test-queue",
	"team": "test-team",
	"data_class": "public",
	"export_approved": true,
	"checkpointable": true,
	"checkpoint_interval_minutes": 30,
	"budget_tier": "emergency",
	"gpu_models": ["A100-80GB"],
}

# base_offer is an on-demand offer in Alibaba Cloud Beijing at 2.50 USD per
# GPU-hour (within every tier's ceiling).
base_offer := {
	"key": "case",
	"provider": "aliyun",
	"region": "cn-beijing",
	"city": "",
	"market": "on-demand",
	"gpu_model": "A100-80GB",
	"currency": "USD",
	"price_per_gpu_hour": 2.50,
}

# decide(c) is the decision for a case: {"queue": {...}, "offer": {...}}
# (both optional) merged over base_queue and base_offer.
decide(c) := result if {
	result := decision.result with input as {
		"profile": object.union(base_queue, object.get(c, "queue", {})),
		"offers": [object.union(base_offer, object.get(c, "offer", {}))],
	}
}

# verdict(c) is the verdict for the case's one offer.
verdict(c) := decide(c).verdicts.case

# rules(c, code) are the rules with this code that refuse the case's offer.
rules(c, code) := {reason.rule | some reason in verdict(c).reasons; reason.code == code}

# expected(c) is the case's "refused_by" list as a set.
expected(c) := {rule | some rule in c.refused_by}
