// Command burst is the Lambda function for a queue-depth alarm in ALARM: it
// runs the same core as `sluice burst` under lambda.Start (provided.al2023,
// handler "bootstrap").
//
// Environment: SLUICE_CONFIG (config file in the deployment package, default
// "sluice.yaml"), SLUICE_LEDGER (SQLite path, default "/tmp/sluice.db"; the
// DynamoDB ledger replaces it in production), SLUICE_REPLAY (optional
// recorded-responses directory, for the runtime interface emulator),
// SLUICE_FX_URL (live FX source, default the ECB daily rates; "off" = the
// config's rates), SLUICE_SECRET_PREFIX (Secrets Manager name prefix for
// provider credentials, default "sluice/").
// Provider credentials come from the variables the config names.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/secrets"
)

func main() {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stdout, nil)))
	ctx := context.Background()
	o := app.Options{
		ConfigPath: env("SLUICE_CONFIG", "sluice.yaml"),
		LedgerPath: env("SLUICE_LEDGER", "/tmp/sluice.db"),
		ReplayDir:  os.Getenv("SLUICE_REPLAY"),
		FXURL:      os.Getenv("SLUICE_FX_URL"), // "" = ECB, "off" = config rates only
	}
	if o.ReplayDir == "" {
		// Credentials: a variable of the same name wins (local runs, the
		// emulator); otherwise the secret SLUICE_SECRET_PREFIX+name
		// (default "sluice/RUNPOD_API_KEY", …) from Secrets Manager.
		sm, err := secrets.NewSecretsManager(ctx, env("SLUICE_SECRET_PREFIX", "sluice/"))
		if err != nil {
			slog.Error("init failed", "error", err)
			os.Exit(1)
		}
		o.Secrets = secrets.Chain{secrets.Env{}, sm}
	}
	// Prepared once per execution environment (policy compiled, ledger opened,
	// credentials and FX resolved), outside the handler, so warm invocations
	// pay only for the decision.
	a, err := app.Open(ctx, o)
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
