package sluice.budget_test

import rego.v1

import data.sluice.testing

# Budget-tier cases: the queue's tier and the offer's market, and which
# budget-tier rules must refuse it ([] = allowed).
cases := {
	"base tier, on-demand: refused": {
		"queue": {"budget_tier": "base"},
		"offer": {"market": "on-demand"},
		"refused_by": ["budget_tier.base_never_bought"],
	},
	"base tier, spot: refused": {
		"queue": {"budget_tier": "base"},
		"offer": {"market": "spot"},
		"refused_by": ["budget_tier.base_never_bought"],
	},
	"base tier, reserved: refused": {
		"queue": {"budget_tier": "base"},
		"offer": {"market": "reserved"},
		"refused_by": ["budget_tier.base_never_bought"],
	},
	"elastic tier, on-demand: allowed": {
		"queue": {"budget_tier": "elastic"},
		"offer": {"market": "on-demand"},
		"refused_by": [],
	},
	"elastic tier, reserved: allowed": {
		"queue": {"budget_tier": "elastic"},
		"offer": {"market": "reserved"},
		"refused_by": [],
	},
	"elastic tier, spot: refused": {
		"queue": {"budget_tier": "elastic"},
		"offer": {"market": "spot"},
		"refused_by": ["budget_tier.market_not_allowed"],
	},
	"emergency tier, spot: allowed": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"market": "spot"},
		"refused_by": [],
	},
	"emergency tier, on-demand (allowed by data/settings.json): allowed": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"market": "on-demand"},
		"refused_by": [],
	},
	"emergency tier, reserved: refused": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"market": "reserved"},
		"refused_by": ["budget_tier.market_not_allowed"],
	},
	"unknown tier: refused": {
		"queue": {"budget_tier": "gold"},
		"offer": {"market": "on-demand"},
		"refused_by": ["budget_tier.unknown_tier"],
	},
	"unknown market: refused": {
		"queue": {"budget_tier": "elastic"},
		"offer": {"market": "preemptible"},
		"refused_by": ["budget_tier.market_not_allowed"],
	},
}

test_budget_tier[name] if {
	some name, c in cases
	testing.rules(c, "budget-tier") == testing.expected(c)
}

test_emergency_on_demand_follows_the_data_flag if {
	c := {"queue": {"budget_tier": "emergency"}, "offer": {"market": "on-demand"}}
	testing.rules(c, "budget-tier") == set()
	testing.rules(c, "budget-tier") == {"budget_tier.market_not_allowed"} with data.data.sluice.settings.budget.emergency_allows_on_demand as false
}

test_message_names_the_values if {
	c := {"queue": {"budget_tier": "elastic"}, "offer": {"market": "spot"}}
	some reason in testing.verdict(c).reasons
	reason.message == "market spot is not allowed for budget tier elastic (allowed: on-demand, reserved)"
}

# Limits: the tier's price ceilings, as decimal strings from data/settings.json.
test_limits_elastic if {
	testing.decide({"queue": {"budget_tier": "elastic"}}).limits == {"max_price_per_gpu_hour": {"CNY": "30.00", "USD": "4.00"}}
}

test_limits_emergency if {
	testing.decide({"queue": {"budget_tier": "emergency"}}).limits == {"max_price_per_gpu_hour": {"CNY": "22.00", "USD": "3.00"}}
}

test_limits_base_none if {
	testing.decide({"queue": {"budget_tier": "base"}}).limits == {}
}
