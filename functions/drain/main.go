// Command drain is the Lambda function for a queue-depth alarm back in OK
// (provided.al2023, arm64, handler "bootstrap"): it releases the queue's
// placements, most expensive first. It accepts the same deliveries as burst.
// Environment: see package functions/internal/boot.
package main

import (
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/functions/internal/boot"
)

func main() { boot.Run(app.FunctionDrain) }
