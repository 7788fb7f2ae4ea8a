package sluice.decision_test

import rego.v1

import data.sluice.decision

queue := {
	"queue": "train-a",
	"team": "research",
	"data_class": "cn-beijing-only",
	"export_approved": false,
	"checkpointable": false,
	"checkpoint_interval_minutes": 0,
	"budget_tier": "elastic",
	"gpu_models": ["A100-80GB"],
}

offers := [
	{"key": "beijing-on-demand", "provider": "aliyun", "region": "cn-beijing", "city": "", "market": "on-demand", "gpu_model": "A100-80GB", "currency": "CNY", "price_per_gpu_hour": 20},
	{"key": "beijing-spot", "provider": "aliyun", "region": "cn-beijing", "city": "", "market": "spot", "gpu_model": "A100-80GB", "currency": "CNY", "price_per_gpu_hour": 20},
	{"key": "hangzhou-spot", "provider": "aliyun", "region": "cn-hangzhou", "city": "", "market": "spot", "gpu_model": "A100-40GB", "currency": "CNY", "price_per_gpu_hour": 12.5},
	{"key": "unmapped", "provider": "vast", "region": "QA", "city": "Doha", "market": "reserved", "gpu_model": "A100-80GB", "currency": "CNY", "price_per_gpu_hour": 20},
]

result := r if {
	r := decision.result with input as {"profile": queue, "offers": offers}
}

rules(key) := {reason.rule | some reason in result.verdicts[key].reasons}

test_every_offer_gets_a_verdict if {
	object.keys(result.verdicts) == {"beijing-on-demand", "beijing-spot", "hangzhou-spot", "unmapped"}
}

test_allowed_offer_has_no_reasons if {
	result.verdicts["beijing-on-demand"] == {"zone": "beijing", "reasons": set()}
}

test_reasons_of_every_policy_are_gathered if {
	rules("beijing-spot") == {"interruptibility.not_checkpointable", "budget_tier.market_not_allowed"}
	rules("hangzhou-spot") == {"residency.zone_not_allowed", "interruptibility.not_checkpointable", "budget_tier.market_not_allowed"}
}

test_unmapped_has_no_zone if {
	result.verdicts.unmapped.zone == ""
	rules("unmapped") == {"residency.unmapped"}
}

test_every_reason_has_code_rule_and_message if {
	every verdict in result.verdicts {
		every reason in verdict.reasons {
			is_string(reason.code)
			reason.code != "unlabelled"
			is_string(reason.rule)
			reason.rule != "unlabelled"
			is_string(reason.message)
			reason.message != ""
		}
	}
}

test_codes_match_rules if {
	every verdict in result.verdicts {
		every reason in verdict.reasons {
			startswith(reason.rule, replace(reason.code, "-", "_"))
		}
	}
}

test_offer_without_a_price_is_refused if {
	offer := {"key": "no-price", "provider": "aliyun", "region": "cn-beijing", "city": "", "market": "on-demand", "gpu_model": "A100-80GB"}
	r := decision.result with input as {"profile": queue, "offers": [offer]}
	{reason.rule | some reason in r.verdicts["no-price"].reasons} == {"budget_tier.no_ceiling_in_currency"}
}

test_no_offers if {
	r := decision.result with input as {"profile": queue, "offers": []}
	r.verdicts == {}
}

test_limits_are_returned if {
	result.limits.max_price_per_gpu_hour.USD == "5.50"
}
