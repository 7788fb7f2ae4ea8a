// Command burst is the Lambda function for a queue-depth alarm in ALARM: it
// runs the same core as `sluice burst` under lambda.Start (provided.al2023,
// handler "bootstrap").
//
// Environment: SLUICE_CONFIG (config file in the deployment package, default
// "sluice.yaml"), SLUICE_LEDGER (SQLite path, default "/tmp/sluice.db"; the
// DynamoDB ledger replaces it in production), SLUICE_REPLAY (optional
// recorded-responses directory, for the runtime interface emulator).
// Provider credentials come from the variables the config names.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/app"
)

func main() {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stdout, nil)))
	// Prepared once per execution environment (policy compiled, ledger opened),
	// outside the handler, so warm invocations pay only for the decision.
	a, err := app.Open(context.Background(), app.Options{
		ConfigPath: env("SLUICE_CONFIG", "sluice.yaml"),
		LedgerPath: env("SLUICE_LEDGER", "/tmp/sluice.db"),
		ReplayDir:  os.Getenv("SLUICE_REPLAY"),
	})
	if err != nil {
		slog.Error("init failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(a.Handle)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
