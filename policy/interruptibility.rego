# METADATA
# title: Interruptibility
# description: |
#   Spot capacity can be taken back by the provider at any time. A queue may
#   run on spot only when its jobs can resume from a checkpoint, and lose at
#   most max_checkpoint_interval_minutes of work (data/settings.json). A
#   queue whose workload is listed in never_spot_workloads (long-lived
#   inference services) never runs on spot.
#
#   These rules depend only on the offer's market: deny maps a market to the
#   reasons offers in it are refused.
package sluice.interruptibility

import rego.v1

import data.data.sluice.settings
import data.sluice.lib

# max_interval is the longest checkpoint interval, in minutes, allowed on spot.
max_interval := settings.interruptibility.max_checkpoint_interval_minutes

# never_spot are the workloads that never run on spot, e.g. "long-lived-inference".
never_spot := {workload | some workload in settings.interruptibility.never_spot_workloads}

# METADATA
# title: Spot for a queue that cannot checkpoint
# description: The offer is spot and the queue's jobs are not checkpointable.
# custom:
#   code: interruptibility
#   rule: interruptibility.not_checkpointable
deny.spot contains lib.reason(rego.metadata.rule(), message) if {
	not input.profile.checkpointable
	message := "market spot can be interrupted, and the queue's jobs are not checkpointable"
}

# METADATA
# title: Spot for a queue with no checkpoint interval
# description: The queue says it is checkpointable but gives no checkpoint interval (zero or less), so the work lost to an interruption is unknown.
# custom:
#   code: interruptibility
#   rule: interruptibility.checkpoint_interval_unset
deny.spot contains lib.reason(rego.metadata.rule(), message) if {
	input.profile.checkpointable
	not input.profile.checkpoint_interval_minutes > 0
	message := sprintf("market spot needs a checkpoint interval; the queue is checkpointable but its interval is %v minutes", [object.get(input.profile, "checkpoint_interval_minutes", null)])
}

# METADATA
# title: Checkpoint interval too long for spot
# description: The queue checkpoints less often than data/settings.json allows for spot.
# custom:
#   code: interruptibility
#   rule: interruptibility.checkpoint_interval_too_long
deny.spot contains lib.reason(rego.metadata.rule(), message) if {
	input.profile.checkpointable
	input.profile.checkpoint_interval_minutes > max_interval
	message := sprintf("market spot allows a checkpoint interval of at most %v minutes; the queue checkpoints every %v minutes", [max_interval, input.profile.checkpoint_interval_minutes])
}

# METADATA
# title: Spot for a long-lived inference service
# description: The queue's workload (e.g. long-lived-inference) is listed in never_spot_workloads in data/settings.json; a service that must stay up is never put on spot, however often it checkpoints.
# custom:
#   code: interruptibility
#   rule: interruptibility.never_spot_workload
deny.spot contains lib.reason(rego.metadata.rule(), message) if {
	workload := object.get(input.profile, "workload", "")
	workload in never_spot
	message := sprintf("market spot can be interrupted, and the queue's workload %s never runs on spot", [workload])
}
