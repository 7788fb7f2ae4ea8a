package app

import (
	"context"

	"github.com/sluicehq/sluice"
)

// Drain releases the open placements of t's queue when t is the alarm's OK
// state (or reports depth 0), most expensive first, each recorded
// release-pending, then released with its accrued cost at the provider's
// billing granularity once the provider confirms. The error wraps
// sluice.ErrReleasePending when some terminates were not confirmed (they are
// retried by the next drain or reconcile), or is a ledger error. For the
// drain function (functions/drain) and `sluice drain`.
func (a *App) Drain(ctx context.Context, t sluice.Trigger) (sluice.DrainReport, error) {
	d := &sluice.Drainer{Ledger: a.Ledger, Broker: a.Placer, Clock: a.Burst.Clock, Cost: a.cost,
		IdleWindow: a.Config.Placement.Drain.IdleWindow}
	return d.Drain(ctx, t)
}

// Reconcile lists every placement provider's Sluice-tagged instances and
// matches them with the ledger (sluice.Reconciler): orphans are terminated
// and recorded, placements the provider no longer has are recorded lost,
// pending releases are retried, unrecorded lines of committed decisions are
// settled after sluice.DefaultAdoptAfter (Options.AdoptAfter) by resuming the
// decision (Burst.Resume: the same claims and checks as a redelivery). For the
// reconcile function (functions/reconcile) and `sluice reconcile`.
func (a *App) Reconcile(ctx context.Context) (sluice.ReconcileReport, error) {
	c := &sluice.Reconciler{Ledger: a.Ledger, Broker: a.Placer, Clock: a.Burst.Clock, Cost: a.cost,
		Providers: a.placementProviders(), AdoptAfter: a.adoptAfter, Resume: a.Burst.Resume}
	return c.Reconcile(ctx)
}
