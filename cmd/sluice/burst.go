package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
)

func burst(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"burst", stderr}
	fs := flag.NewFlagSet("burst", flag.ContinueOnError)
	f := addEventFlags(fs, "alarm event JSON: SNS, EventBridge, the alarm's Lambda action, or an SQS batch of those",
		replayUsage, "print the decision record as JSON")
	policyDir := fs.String("policy", "", "policy directory to decide with instead of the embedded policy (it must pass its own Rego tests)")
	// Everything the caller can get wrong is checked before the ledger is opened,
	// so a bad event or config leaves the ledger as it was.
	al, code := c.parseEvent(fs, f, args)
	if al == nil {
		return code
	}
	o := options(al.cfg, *f.replay, *f.ledger)
	o.Policy = app.PolicySource{Dir: *policyDir}
	a, code := c.openApp(ctx, o)
	if a == nil {
		return code
	}
	defer a.Close()
	for _, t := range al.triggers {
		rec, replayed, err := a.Burst.Decide(ctx, t)
		if err != nil {
			return c.fail(exitCode(err), "queue %s: %v", t.Queue, err)
		}
		if *f.json {
			if err := writeJSON(stdout, rec); err != nil {
				return c.fail(exitErr, "%v", err)
			}
			continue
		}
		printDecision(stdout, rec, replayed, *f.ledger)
	}
	return exitOK
}

// printDecision writes the human summary: offers per provider, rejections by
// reason, the chosen lines and the total.
func printDecision(w io.Writer, rec sluice.DecisionRecord, replayed bool, ledgerPath string) {
	t := rec.Trigger
	fmt.Fprintf(w, "decision  %s  %s", rec.DecisionID, strings.ToUpper(rec.Outcome))
	if replayed {
		fmt.Fprint(w, "  (already recorded: this alarm was delivered before; nothing placed again)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "trigger   %s %s at %s, queue %s, depth %d (%s, via %s)\n", t.AlarmName, t.State,
		t.StateChangeTime.UTC().Format(time.RFC3339), t.Queue, t.Depth, t.DepthSource, t.Delivery)
	d := rec.Demand
	fmt.Fprintf(w, "demand    min(depth %d, max %d) − live %d = %d slots of %d GPUs × %s h  [%s, %s tier, team %s]\n",
		d.Depth, rec.Profile.MaxSlots, d.Live, d.Slots, d.GPUsPerSlot, d.Hours, rec.Profile.DataClass, rec.Profile.Tier, rec.Profile.Team)
	if len(rec.Sources) > 0 {
		var parts []string
		for _, s := range rec.Sources {
			p := fmt.Sprintf("%s %d offers", s.Provider, s.Offers)
			if len(s.Dropped) > 0 {
				p += fmt.Sprintf(" (%d dropped)", len(s.Dropped))
			}
			if s.Error != "" {
				p += " FAILED (" + s.ErrorClass + "): " + oneLine(s.Error)
			}
			parts = append(parts, p+fmt.Sprintf(" [%d ms]", s.LatencyMS))
		}
		fmt.Fprintf(w, "quotes    %s\n", strings.Join(parts, "; "))
	}
	if len(rec.Rejected) > 0 {
		counts := map[string]int{}
		for _, r := range rec.Rejected {
			for _, code := range uniqueCodes(r.Reasons) {
				counts[code]++
			}
		}
		codes := make([]string, 0, len(counts))
		for c := range counts {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		var parts []string
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("%s %d", c, counts[c]))
		}
		fmt.Fprintf(w, "rejected  %d of %d offers; offers per reason (one offer may have several): %s\n", len(rec.Rejected), len(rec.Offers), strings.Join(parts, ", "))
	}
	printLines(w, rec)
	for _, fu := range rec.FollowUps {
		fmt.Fprintf(w, "follow-up %s of %s  %s  (re-planned after the refused lines above, same quotes, policy %s)\n",
			fu.DecisionID, fu.FollowUpOf, strings.ToUpper(fu.Outcome), short(fu.PolicyRevision))
		printLines(w, fu)
	}
	if b := rec.Budget; b != nil {
		fmt.Fprintf(w, "budget    %s tier %s: %s, spent %s before this decision, headroom %s\n", b.Tier,
			b.PeriodStart.Format("2006-01"), b.Budget, b.Spent, b.Headroom)
	}
	for _, fx := range rec.FX {
		fmt.Fprintf(w, "fx        1 %s = %s %s (as of %s, %s)\n", fx.Base, fx.Rate, fx.Quote, fx.AsOf.Format(time.DateOnly), fx.Source)
	}
	fmt.Fprintf(w, "recorded  ledger %s, policy %s, code %s, hash %s\n", ledgerPath, short(rec.PolicyRevision), short(rec.CodeVersion), short(rec.Hash))
}

// printLines writes rec's chosen lines with what each placement gave (or
// why it holds nothing), then rec's total and shortfalls.
func printLines(w io.Writer, rec sluice.DecisionRecord) {
	if len(rec.Lines) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tprovider\toffer\tregion\tzone\tmarket\tunits\tGPUs\tunit price/h\tbid/h\thours\texpected cost\tin "+rec.BillingCurrency+"\tplaced as")
		for i, l := range rec.Lines {
			bid := "-"
			if l.Bid != nil {
				bid = l.Bid.String()
			}
			var placed []string
			for _, p := range rec.Placements {
				if p.Line == i {
					placed = append(placed, placedAs(p))
				}
			}
			if len(placed) == 0 {
				placed = []string{"not recorded yet (being placed, or its process died: a retry or reconcile settles it)"}
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i, l.Provider, l.OfferID, l.Region, l.Zone,
				l.Market, l.Units, l.GPUs, l.UnitPrice, bid, l.Hours, l.ExpectedCost, l.ExpectedCostBilling.Amount, strings.Join(placed, "; "))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "total     %s expected for %d of %d slots", rec.TotalExpectedCost, rec.SlotsCovered, rec.SlotsWanted)
	for _, s := range rec.Short {
		fmt.Fprintf(w, "; short (%s): %s", s.Code, s.Message)
	}
	fmt.Fprintln(w)
}

// placedAs is the "placed as" cell of one placement record: the external
// ids; "FAILED (class): error" for a refused or failed call; "RELEASED
// (class) ids" for capacity the provider gave and Sluice refused on its own
// checks (ErrorClass with an empty Error) and released at once.
func placedAs(p sluice.Placement) string {
	ids := strings.Join(p.ExternalIDs, ",")
	class := p.ErrorClass
	if class == "" {
		class = "unclassified"
	}
	switch {
	case p.Error != "":
		return "FAILED (" + class + "): " + oneLine(p.Error)
	case p.ErrorClass != "":
		return "RELEASED (" + p.ErrorClass + ") " + ids
	}
	return ids
}

func uniqueCodes(rs []sluice.Reason) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Code) {
			out = append(out, r.Code)
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// oneLine folds a multi-line provider message into one line for the table
// (the record keeps it as it was).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
