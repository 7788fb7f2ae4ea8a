package boot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
)

// This file joins the functions to app's drain and reconcile.

func smClient(cfg aws.Config) *sm.Client { return sm.NewFromConfig(cfg) }

// wire sets the drain hook: App.Drain on the trigger's queue. Releases the
// provider has not confirmed yet are not an error here: they are recorded
// release-pending and retried by reconcile, so the OK alarm is not redelivered.
func wire(a *app.App, h *app.Handler) {
	h.Drain = func(ctx context.Context, t sluice.Trigger) (any, error) {
		rep, err := a.Drain(ctx, t)
		if h.Metrics != nil && (err == nil || errors.Is(err, sluice.ErrReleasePending)) {
			_ = h.Metrics.Drain(h.Function, rep)
		}
		if errors.Is(err, sluice.ErrReleasePending) {
			slog.WarnContext(ctx, "releases pending: reconcile retries them", "queue", t.Queue, "pending", len(rep.Pending), "error", err)
			return rep, nil
		}
		return rep, err
	}
}

// reconcileHandler answers the reconcile schedule (an EventBridge "Scheduled
// Event", whose payload is ignored) with App.Reconcile's report. A failing
// provider listing is in the report (and logged); a ledger error is returned,
// so the invocation fails and the next schedule tries again.
func reconcileHandler(h *app.Handler) func(ctx context.Context, raw json.RawMessage) (sluice.ReconcileReport, error) {
	return func(ctx context.Context, raw json.RawMessage) (sluice.ReconcileReport, error) {
		rep, err := h.App.Reconcile(ctx)
		if err != nil && !errors.Is(err, sluice.ErrReleasePending) {
			slog.ErrorContext(ctx, "reconcile failed", "error", err)
			return rep, err
		}
		if h.Metrics != nil {
			_ = h.Metrics.Reconcile(h.Function, rep)
		}
		slog.InfoContext(ctx, "reconciled", "listed", rep.Listed, "orphans", len(rep.Orphans), "lost", len(rep.Lost),
			"adopted", len(rep.Adopted), "released", len(rep.Released), "pending", len(rep.Pending))
		return rep, nil
	}
}
