package sluice.interruptibility_test

import rego.v1

import data.sluice.testing

# Interruptibility cases: the queue's checkpointing and the offer's market,
# and which interruptibility rules must refuse it ([] = allowed). The limit
# is max_checkpoint_interval_minutes in data/settings.json (60).
cases := {
	"checkpoints every 30 min, spot: allowed": {
		"queue": {"checkpointable": true, "checkpoint_interval_minutes": 30},
		"offer": {"market": "spot"},
		"refused_by": [],
	},
	"checkpoints every 60 min (the limit), spot: allowed": {
		"queue": {"checkpointable": true, "checkpoint_interval_minutes": 60},
		"offer": {"market": "spot"},
		"refused_by": [],
	},
	"checkpoints every 61 min, spot: refused": {
		"queue": {"checkpointable": true, "checkpoint_interval_minutes": 61},
		"offer": {"market": "spot"},
		"refused_by": ["interruptibility.checkpoint_interval_too_long"],
	},
	"checkpoints every 240 min, on-demand: allowed": {
		"queue": {"checkpointable": true, "checkpoint_interval_minutes": 240},
		"offer": {"market": "on-demand"},
		"refused_by": [],
	},
	"not checkpointable, spot: refused": {
		"queue": {"checkpointable": false, "checkpoint_interval_minutes": 0},
		"offer": {"market": "spot"},
		"refused_by": ["interruptibility.not_checkpointable"],
	},
	"not checkpointable, on-demand: allowed": {
		"queue": {"checkpointable": false, "checkpoint_interval_minutes": 0},
		"offer": {"market": "on-demand"},
		"refused_by": [],
	},
	"not checkpointable, reserved: allowed": {
		"queue": {"checkpointable": false, "checkpoint_interval_minutes": 0, "budget_tier": "elastic"},
		"offer": {"market": "reserved"},
		"refused_by": [],
	},
	"checkpointable but no interval, spot: refused": {
		"queue": {"checkpointable": true, "checkpoint_interval_minutes": 0},
		"offer": {"market": "spot"},
		"refused_by": ["interruptibility.checkpoint_interval_unset"],
	},
	"long-lived inference, checkpoints every 30 min, spot: refused": {
		"queue": {"workload": "long-lived-inference", "checkpointable": true, "checkpoint_interval_minutes": 30},
		"offer": {"market": "spot"},
		"refused_by": ["interruptibility.never_spot_workload"],
	},
	"long-lived inference, on-demand: allowed": {
		"queue": {"workload": "long-lived-inference", "checkpointable": false, "checkpoint_interval_minutes": 0},
		"offer": {"market": "on-demand"},
		"refused_by": [],
	},
	"batch inference, checkpoints every 30 min, spot: allowed": {
		"queue": {"workload": "batch-inference", "checkpointable": true, "checkpoint_interval_minutes": 30},
		"offer": {"market": "spot"},
		"refused_by": [],
	},
}

test_interruptibility[name] if {
	some name, c in cases
	testing.rules(c, "interruptibility") == testing.expected(c)
}

test_never_spot_workloads_come_from_data if {
	c := {"queue": {"workload": "batch-inference"}, "offer": {"market": "spot"}}
	testing.rules(c, "interruptibility") == set()
	testing.rules(c, "interruptibility") == {"interruptibility.never_spot_workload"} with data.data.sluice.settings.interruptibility.never_spot_workloads as ["batch-inference"]
}

test_limit_comes_from_data if {
	c := {"queue": {"checkpointable": true, "checkpoint_interval_minutes": 90}, "offer": {"market": "spot"}}
	testing.rules(c, "interruptibility") == {"interruptibility.checkpoint_interval_too_long"}
	testing.rules(c, "interruptibility") == set() with data.data.sluice.settings.interruptibility.max_checkpoint_interval_minutes as 120
}

test_message_names_the_values if {
	c := {"queue": {"checkpointable": true, "checkpoint_interval_minutes": 90}, "offer": {"market": "spot"}}
	some reason in testing.verdict(c).reasons
	reason.message == "market spot allows a checkpoint interval of at most 60 minutes; the queue checkpoints every 90 minutes"
}
