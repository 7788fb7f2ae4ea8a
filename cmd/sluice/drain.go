package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
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
	c := command{"drain", stderr}
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	f := addEventFlags(fs, "alarm event JSON (OK state, or depth 0)", replayPlacementUsage, "print the drain reports as JSON")
	al, code := c.parseEvent(fs, f, args)
	if al == nil {
		return code
	}
	a, code := c.openApp(ctx, releaseOptions(al.cfg, *f.replay, *f.ledger))
	if a == nil {
		return code
	}
	defer a.Close()
	exit := exitOK
	var reports []sluice.DrainReport
	for _, t := range al.triggers {
		rep, err := a.Drain(ctx, t)
		reports = append(reports, rep)
		if err != nil {
			c.fail(exitErr, "queue %s: %v", t.Queue, err)
			exit = exitErr
			if !errors.Is(err, sluice.ErrReleasePending) {
				return exitErr
			}
		}
		if !*f.json {
			printDrain(stdout, t, rep)
		}
	}
	if *f.json {
		if err := writeJSON(stdout, reports); err != nil {
			return c.fail(exitErr, "%v", err)
		}
	}
	return exit
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
