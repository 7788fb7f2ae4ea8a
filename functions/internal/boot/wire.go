package boot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sluicehq/sluice/app"
)

// This file joins the functions to parts of app that land in other issues
// (the DynamoDB ledger option, App.Drain, App.Reconcile); each hook says what
// it does until then.

func smClient(cfg aws.Config) *sm.Client { return sm.NewFromConfig(cfg) }

// setLedgerTable selects the DynamoDB ledger table in o; false while app has
// no such option (the function then uses SQLite at SLUICE_LEDGER).
func setLedgerTable(o *app.Options, table string) bool { return false }

// wire sets the handler's drain hook from the App (none yet: the drain
// function then refuses OK alarms with "drain is not available in this
// build", as an error, so the alarm stays retryable).
func wire(a *app.App, h *app.Handler) {}

// reconcileHandler answers the reconcile schedule (an EventBridge
// "Scheduled Event", whose payload is ignored).
func reconcileHandler(h *app.Handler) func(ctx context.Context, raw json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		slog.ErrorContext(ctx, "reconcile is not available in this build")
		return nil, errors.New("reconcile is not available in this build")
	}
}
