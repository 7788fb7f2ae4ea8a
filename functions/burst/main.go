// Command burst is the Lambda function for a queue-depth alarm in ALARM
// (provided.al2023, arm64, handler "bootstrap"): it accepts the alarm through
// SNS, EventBridge, the alarm's own Lambda action or an SQS batch of those,
// re-reads the queue's depth, and runs the same decision core as
// `sluice burst`. Environment: see package functions/internal/boot.
package main

import (
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/functions/internal/boot"
)

func main() { boot.Run(app.FunctionBurst) }
