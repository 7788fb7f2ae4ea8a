package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/pricing/replay"
)

// Quotes collects offers once from every enabled quote source, built exactly
// as Open builds them (live clients, or the replay servers of o.ReplayDir),
// through a collector set up as Open's (deadlines, FX, clock and the same
// offer hygiene, so an offer a decision would drop is dropped here too, into
// its source's report). It opens no ledger,
// policy or broker: o.LedgerPath is ignored. The config is o.Config, else
// loaded from o.ConfigPath (errors wrap config.ErrBadConfig). Offers are
// sorted by (provider, offer id); reports follow the sources' order. A
// failing source is reported, not returned as an error.
func Quotes(ctx context.Context, o Options) ([]sluice.Offer, []sluice.SourceReport, error) {
	cfg, err := o.Config, error(nil)
	if cfg == nil {
		if cfg, err = config.Load(o.ConfigPath); err != nil {
			return nil, nil, err
		}
	}
	if o.Clock == nil {
		o.Clock = sluice.ClockFunc(time.Now)
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ReplayDir == "" { // live quotes are priced at the live rate, as Open does
		live := *cfg
		live.FX = LiveFX(ctx, cfg.FX, o.FXURL, o.Clock.Now())
		cfg = &live
	}
	a := &App{Config: cfg}
	if o.ReplayDir != "" {
		if a.Replay, err = replay.Start(o.ReplayDir); err != nil {
			return nil, nil, fmt.Errorf("starting replay servers from %s: %w", o.ReplayDir, err)
		}
		defer a.Replay.Close()
	}
	c := a.collector(ctx, o)
	offers, reports := c.Collect(ctx)
	return offers, reports, nil
}
