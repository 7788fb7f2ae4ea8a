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

# Price cases: the offer's price per GPU-hour (worked out by Sluice, a
# number) against the tier's ceiling in data/settings.json
# (elastic 40.00 CNY / 5.50 USD, emergency 22.00 CNY / 3.00 USD).
price_cases := {
	"emergency, 2.99 USD: allowed": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"currency": "USD", "price_per_gpu_hour": 2.99},
		"refused_by": [],
	},
	"emergency, exactly the ceiling 3.00 USD: allowed": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"currency": "USD", "price_per_gpu_hour": 3},
		"refused_by": [],
	},
	"emergency, 3.000000000001 USD: refused": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"currency": "USD", "price_per_gpu_hour": 3.000000000001},
		"refused_by": ["budget_tier.above_tier_price"],
	},
	"emergency, 34.742 CNY: refused": {
		"queue": {"budget_tier": "emergency"},
		"offer": {"currency": "CNY", "price_per_gpu_hour": 34.742},
		"refused_by": ["budget_tier.above_tier_price"],
	},
	"elastic, 34.742 CNY: allowed": {
		"queue": {"budget_tier": "elastic"},
		"offer": {"currency": "CNY", "price_per_gpu_hour": 34.742},
		"refused_by": [],
	},
	"elastic, price in EUR (no ceiling in EUR): refused": {
		"queue": {"budget_tier": "elastic"},
		"offer": {"currency": "EUR", "price_per_gpu_hour": 1.00},
		"refused_by": ["budget_tier.no_ceiling_in_currency"],
	},
}

test_price[name] if {
	some name, c in price_cases
	testing.rules(c, "budget-tier") == testing.expected(c)
}

test_price_message_names_the_values if {
	c := {"queue": {"budget_tier": "emergency"}, "offer": {"currency": "USD", "price_per_gpu_hour": 3.5}}
	some reason in testing.verdict(c).reasons
	reason.message == "price per GPU-hour is above the emergency tier's ceiling of 3.00 USD"
	reason.title == "Price above the budget tier's ceiling"
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
	testing.decide({"queue": {"budget_tier": "elastic"}}).limits == {"max_price_per_gpu_hour": {"CNY": "40.00", "USD": "5.50"}}
}

test_limits_emergency if {
	testing.decide({"queue": {"budget_tier": "emergency"}}).limits == {"max_price_per_gpu_hour": {"CNY": "22.00", "USD": "3.00"}}
}

test_limits_base_none if {
	testing.decide({"queue": {"budget_tier": "base"}}).limits == {}
}
