// Command reconcile is the scheduled Lambda function (provided.al2023,
// arm64, handler "bootstrap") that compares each provider's Sluice-tagged
// instances with the ledger: orphans are terminated, lost placements marked,
// pending releases retried. Environment: see package functions/internal/boot.
package main

import (
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/functions/internal/boot"
)

func main() { boot.Run(app.FunctionReconcile) }
