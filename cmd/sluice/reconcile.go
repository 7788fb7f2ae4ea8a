package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
)

// reconcile is "sluice reconcile": list each placement provider's
// Sluice-tagged instances and match them with the ledger. Exit 0 when every
// provider answered and nothing stays pending, 1 otherwise (or on a ledger
// error), 2 for a bad config.
func reconcile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"reconcile", stderr}
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	configPath := configFlag(fs)
	replayDir := fs.String("replay", "", replayPlacementUsage)
	ledgerPath := ledgerFlag(fs)
	adoptAfter := fs.Duration("adopt-after", sluice.DefaultAdoptAfter, "adopt a committed line's unrecorded instance once its decision is this old (0 = at once)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, ok := c.parseFlagsOnly(fs, args); !ok {
		return code
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return c.fail(exitBad, "%v", err)
	}
	o := releaseOptions(cfg, *replayDir, *ledgerPath)
	o.AdoptAfter = *adoptAfter
	if o.AdoptAfter == 0 {
		o.AdoptAfter = -1 // at once
	}
	a, code := c.openApp(ctx, o)
	if a == nil {
		return code
	}
	defer a.Close()
	rep, err := a.Reconcile(ctx)
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return c.fail(exitErr, "%v", err)
		}
	} else {
		printReconcile(stdout, rep)
	}
	if len(rep.Errors) > 0 || len(rep.Pending) > 0 {
		return exitErr
	}
	for _, o := range rep.Orphans {
		if o.State == sluice.ReleasePending {
			return exitErr
		}
	}
	return exitOK
}

func printReconcile(w io.Writer, rep sluice.ReconcileReport) {
	var listed []string
	for p, n := range rep.Listed {
		listed = append(listed, fmt.Sprintf("%s %d", p, n))
	}
	slices.Sort(listed)
	fmt.Fprintf(w, "listed    %s tagged running instance(s)\n", strings.Join(listed, ", "))
	fmt.Fprintf(w, "found     %d orphan(s), %d lost, %d adopted, %d pending release(s) confirmed, %d still pending, %d too new to judge\n",
		len(rep.Orphans), len(rep.Lost), len(rep.Adopted), len(rep.Released), len(rep.Pending), len(rep.Unlisted))
	var rs []sluice.Release
	rs = append(rs, rep.Orphans...)
	rs = append(rs, rep.Lost...)
	rs = append(rs, rep.Released...)
	rs = append(rs, rep.Pending...)
	printReleases(w, rs)
	for _, p := range rep.Adopted {
		fmt.Fprintf(w, "adopted   %s line %d at %s: %s (placed %s)\n", p.DecisionID, p.Line, p.Provider,
			strings.Join(p.ExternalIDs, ","), p.PlacedAt.UTC().Format(time.RFC3339))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error     %s\n", e)
	}
}
