package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
)

// reconcile is "sluice reconcile": list each placement provider's
// Sluice-tagged instances and match them with the ledger. Exit 0 when every
// provider answered and nothing stays pending, 1 otherwise (or on a ledger
// error), 2 for a bad config.
func reconcile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "sluice.yaml", "configuration file")
	replayDir := fs.String("replay", "", "serve recorded provider responses from DIR on loopback (quotes); placement as the environment says (SLUICE_PLACEMENT)")
	ledgerPath := fs.String("ledger", "sluice.db", "SQLite ledger file")
	adoptAfter := fs.Duration("adopt-after", sluice.DefaultAdoptAfter, "adopt a committed line's unrecorded instance once its decision is this old (0 = at once)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice reconcile: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "sluice reconcile: %v\n", err)
		return 2
	}
	after := *adoptAfter
	if after == 0 {
		after = -1 // at once
	}
	a, code := openApp(ctx, "reconcile", cfg, *replayDir, *ledgerPath, app.Options{AdoptAfter: after}, stderr)
	if a == nil {
		return code
	}
	defer a.Close()
	rep, err := a.Reconcile(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "sluice reconcile: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "sluice reconcile: %v\n", err)
			return 1
		}
	} else {
		printReconcile(stdout, rep)
	}
	if len(rep.Errors) > 0 || len(rep.Pending) > 0 {
		return 1
	}
	for _, o := range rep.Orphans {
		if o.State == sluice.ReleasePending {
			return 1
		}
	}
	return 0
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
