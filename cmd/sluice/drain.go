package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/events"
)

// drain is "sluice drain --event FILE": on the alarm's OK state (or depth 0)
// release the queue's open placements, most expensive first. With the
// config's placement.drain.idle_window, a trigger reporting depth 0 releases
// only once depth 0 has lasted the window since the alarm's state-change
// time; before that it prints "waits" and until when (rerun the same event
// then). Exit 0 when every release is confirmed (or there was nothing to
// drain, or the drain waits), 1 when some stay pending (retried by the next
// drain or reconcile) or on a ledger error, 2 for a bad event or config.
func drain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	eventPath := fs.String("event", "", "alarm event JSON (OK state, or depth 0)")
	configPath := fs.String("config", "sluice.yaml", "configuration file")
	replayDir := fs.String("replay", "", "serve recorded provider responses from DIR on loopback (quotes); placement as the environment says (SLUICE_PLACEMENT)")
	ledgerPath := fs.String("ledger", "sluice.db", "SQLite ledger file")
	asJSON := fs.Bool("json", false, "print the drain reports as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *eventPath == "" {
		fmt.Fprintln(stderr, "sluice drain: --event is required")
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice drain: unexpected arguments %q\n", fs.Args())
		return 2
	}
	raw, err := os.ReadFile(*eventPath)
	if err != nil {
		fmt.Fprintf(stderr, "sluice drain: %v\n", err)
		return 2
	}
	triggers, err := events.Parse(raw)
	if err != nil {
		fmt.Fprintf(stderr, "sluice drain: %s: %v\n", *eventPath, err)
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "sluice drain: %v\n", err)
		return 2
	}
	for _, t := range triggers {
		if _, err := cfg.Profile(t.Queue); err != nil {
			fmt.Fprintf(stderr, "sluice drain: %s: %v\n", *eventPath, err)
			return 2
		}
	}
	a, code := openApp(ctx, "drain", cfg, *replayDir, *ledgerPath, app.Options{}, stderr)
	if a == nil {
		return code
	}
	defer a.Close()
	exit := 0
	var reports []sluice.DrainReport
	for _, t := range triggers {
		rep, err := a.Drain(ctx, t)
		reports = append(reports, rep)
		if err != nil {
			fmt.Fprintf(stderr, "sluice drain: queue %s: %v\n", t.Queue, err)
			exit = 1
			if !errors.Is(err, sluice.ErrReleasePending) {
				return 1
			}
		}
		if !*asJSON {
			printDrain(stdout, t, rep)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			fmt.Fprintf(stderr, "sluice drain: %v\n", err)
			return 1
		}
	}
	return exit
}

// openApp opens the application for a subcommand; on failure it prints the
// error and returns nil and the exit code.
func openApp(ctx context.Context, cmd string, cfg *config.Config, replayDir, ledgerPath string, o app.Options, stderr io.Writer) (*app.App, int) {
	o.Config, o.ReplayDir, o.LedgerPath, o.Clock, o.FXURL = cfg, replayDir, ledgerPath, clock, os.Getenv("SLUICE_FX_URL")
	if replayDir == "" {
		o.FXURL = "off" // releases use no FX
	}
	a, err := app.Open(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "sluice %s: %v\n", cmd, err)
		if app.IsBadInput(err) {
			return nil, 2
		}
		return nil, 1
	}
	return a, 0
}

func printDrain(w io.Writer, t sluice.Trigger, rep sluice.DrainReport) {
	fmt.Fprintf(w, "drain     queue %s, alarm %s %s at %s, depth %d\n", t.Queue, t.AlarmName, t.State,
		t.StateChangeTime.UTC().Format(time.RFC3339), t.Depth)
	if rep.WaitsUntil != nil {
		fmt.Fprintf(w, "waits     %s\n", rep.Skipped)
		return
	}
	if rep.Skipped != "" {
		fmt.Fprintf(w, "skipped   %s\n", rep.Skipped)
		return
	}
	if rep.IdleSince != nil {
		fmt.Fprintf(w, "idle      depth 0 since %s, past the idle window\n", rep.IdleSince.UTC().Format(time.RFC3339))
	}
	printReleases(w, append(append([]sluice.Release{}, rep.Released...), rep.Pending...))
	fmt.Fprintf(w, "released  %d placement(s); pending %d\n", len(rep.Released), len(rep.Pending))
}

// printReleases writes one row per release step.
func printReleases(w io.Writer, rs []sluice.Release) {
	if len(rs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "decision\tline\tprovider\tinstances\tstate\treason\tat\tbilled s\taccrued cost\terror")
	for _, r := range rs {
		cost := "-"
		if r.AccruedCost.IsSet() {
			cost = r.AccruedCost.String()
		}
		dec := r.DecisionID
		if dec == "" {
			dec = "(orphan)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", dec, r.Line, r.Provider, strings.Join(r.ExternalIDs, ","),
			r.State, r.Reason, r.At.UTC().Format(time.RFC3339), r.BilledSeconds, cost, oneLine(r.Error))
	}
	tw.Flush()
}
