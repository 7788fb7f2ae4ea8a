package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/ledger"
	"github.com/sluicehq/sluice/policy"
)

const policyUsage = `usage:
  sluice policy explain --event FILE [--config FILE] [--replay DIR] [--offer ID] [--policy DIR] [--json]
      every offer the alarm's queue would see, allowed or refused, with reason codes and rule titles;
      with --offer, the rules that fired for that offer and what the policy was given
  sluice policy explain --decision ID --ledger PATH [--offer ID] [--policy DIR] [--json]
      a recorded decision's offers re-evaluated under the policy revision it recorded
      (only when that is the policy in use; otherwise says which revision is needed)
  sluice policy check [DIR]
      opa fmt, opa check --strict and opa test --coverage (threshold 90%) on DIR (default policy/),
      in process, in the sandbox Sluice evaluates in
`

// policyCmd is "sluice policy".
func policyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return dispatch(ctx, "sluice policy", policyUsage, map[string]subcommand{
		"explain": policyExplain, "check": policyCheck,
	}, args, stdout, stderr)
}

func policyExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"policy explain", stderr}
	fs := flag.NewFlagSet("policy explain", flag.ContinueOnError)
	eventPath := fs.String("event", "", "alarm event JSON: explain the offers its queue would see now")
	configPath := fs.String("config", "sluice.yaml", "configuration file (with --event)")
	replayDir := fs.String("replay", "", "serve recorded provider responses from DIR on loopback (with --event)")
	decisionID := fs.String("decision", "", "explain this recorded decision (with --ledger)")
	ledgerPath := fs.String("ledger", "", "SQLite ledger file (with --decision)")
	offerID := fs.String("offer", "", "show the rules that fired for this offer, and their inputs")
	policyDir := fs.String("policy", "", "policy directory to use instead of the embedded policy")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if code, ok := c.noArgs(fs); !ok {
		return code
	}
	if (*eventPath == "") == (*decisionID == "") {
		return c.fail(exitBad, "give --event FILE or --decision ID (one of them)")
	}
	if *decisionID != "" && *ledgerPath == "" {
		return c.fail(exitBad, "--decision needs --ledger PATH")
	}
	ev, err := app.OpenPolicy(ctx, app.PolicySource{Dir: *policyDir}, nil)
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}

	var xs []policy.Explanation
	var queues []string
	if *eventPath != "" {
		al, code := c.loadEvent(*eventPath, *configPath)
		if al == nil {
			return code
		}
		offers, _, err := app.Quotes(ctx, options(al.cfg, *replayDir, ""))
		if err != nil {
			return c.fail(exitErr, "%v", err)
		}
		now := clock.Now().UTC()
		for _, p := range al.profiles {
			x, err := ev.Explain(ctx, p, offers, now)
			if err != nil {
				return c.fail(exitErr, "queue %s: %v", p.Queue, err)
			}
			xs, queues = append(xs, x), append(queues, p.Queue)
		}
	} else {
		l, err := ledger.OpenSQLite(ctx, *ledgerPath)
		if err != nil {
			return c.fail(exitErr, "opening ledger %s: %v", *ledgerPath, err)
		}
		defer l.Close()
		rec, ok, err := l.Decision(ctx, *decisionID)
		if err != nil {
			return c.fail(exitErr, "reading decision %s: %v", *decisionID, err)
		}
		if !ok {
			return c.fail(exitErr, "decision %s is not in ledger %s", *decisionID, *ledgerPath)
		}
		recorded := policy.ContentRevisionOf(rec.PolicyRevision)
		if recorded != ev.ContentRevision() {
			return c.fail(exitErr, "decision %s was decided under policy revision %s; the policy in use is %s.\n"+
				"Re-evaluate it under its own revision: check out the policy files whose revision is %s\n"+
				"(policy/README.md, \"Revision\") and run\n  sluice policy explain --decision %s --ledger %s --policy DIR",
				rec.DecisionID, rec.PolicyRevision, ev.Revision(), recorded, rec.DecisionID, *ledgerPath)
		}
		x, err := ev.Explain(ctx, rec.Profile, rec.Offers, rec.DecidedAt)
		if err != nil {
			return c.fail(exitErr, "decision %s: %v", rec.DecisionID, err)
		}
		// The re-evaluation must give what was recorded.
		var differ []string
		for i, o := range x.Offers {
			var got sluice.Verdict
			if i < len(rec.Verdicts) {
				got = rec.Verdicts[i]
			}
			want := sluice.Verdict{OfferID: o.Offer.ID, Allow: o.Allow, Zone: o.Zone}
			for _, r := range o.Reasons {
				want.Reasons = append(want.Reasons, r.Reason)
			}
			if !reflect.DeepEqual(got, want) {
				differ = append(differ, o.Offer.ID)
			}
		}
		if len(differ) > 0 || len(rec.Verdicts) != len(x.Offers) {
			fmt.Fprintf(stderr, "sluice policy explain: warning: %d verdicts differ from the record: %s\n", len(differ), strings.Join(differ, ", "))
		}
		fmt.Fprintf(stdout, "decision  %s, decided %s, queue %s; policy revision %s (the one in use); %d recorded verdicts re-evaluated, %d differ\n",
			rec.DecisionID, rec.DecidedAt.UTC().Format("2006-01-02T15:04:05Z"), rec.Profile.Queue, rec.PolicyRevision, len(x.Offers), len(differ))
		xs, queues = append(xs, x), append(queues, rec.Profile.Queue)
	}

	for i, x := range xs {
		if *offerID != "" {
			found := false
			for _, o := range x.Offers {
				if o.Offer.ID == *offerID {
					found = true
					if *asJSON {
						if err := writeJSON(stdout, o); err != nil {
							return c.fail(exitErr, "%v", err)
						}
						continue
					}
					printOfferExplanation(stdout, ev, x, o, queues[i])
				}
			}
			if !found {
				return c.fail(exitBad, "queue %s: no offer %q", queues[i], *offerID)
			}
			continue
		}
		if *asJSON {
			if err := writeJSON(stdout, x); err != nil {
				return c.fail(exitErr, "%v", err)
			}
			continue
		}
		printExplanation(stdout, x, queues[i])
	}
	return exitOK
}

// printExplanation writes one line per offer: allowed or refused, and the
// rules that refused it with their titles.
func printExplanation(w io.Writer, x policy.Explanation, queue string) {
	allowed := 0
	for _, o := range x.Offers {
		if o.Allow {
			allowed++
		}
	}
	fmt.Fprintf(w, "queue     %s  %s\n", queue, profileLine(x.Profile))
	fmt.Fprintf(w, "policy    revision %s\n", x.Revision)
	var ceilings []string
	for _, m := range x.Limits.MaxPricePerGPUHour {
		ceilings = append(ceilings, m.Amount.StringFixed(2)+" "+m.Currency)
	}
	if len(ceilings) == 0 {
		ceilings = []string{"none"}
	}
	fmt.Fprintf(w, "ceilings  price per GPU-hour for the %v tier: %s\n", x.Profile["budget_tier"], strings.Join(ceilings, ", "))
	fmt.Fprintf(w, "offers    %d allowed, %d refused, of %d\n\n", allowed, len(x.Offers)-allowed, len(x.Offers))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "offer\tprovider\tregion\tzone\tmarket\tprice/GPU-h\tverdict\treason codes\trules (titles)")
	for _, o := range x.Offers {
		verdict, zone := "ALLOW", string(o.Zone)
		if !o.Allow {
			verdict = "DENY"
		}
		if zone == "" {
			zone = "unmapped"
		}
		region := o.Offer.Region
		if o.Offer.City != "" {
			region += " (" + o.Offer.City + ")"
		}
		var codes, rules []string
		for _, r := range o.Reasons {
			if len(codes) == 0 || codes[len(codes)-1] != r.Code {
				codes = append(codes, r.Code)
			}
			rule := r.Rule
			if r.Title != "" {
				rule += " (" + r.Title + ")"
			}
			rules = append(rules, rule)
		}
		price := fmt.Sprint(o.Input["price_per_gpu_hour"])
		if _, ok := o.Input["price_per_gpu_hour"]; !ok {
			price = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s %s\t%s\t%s\t%s\n", o.Offer.ID, o.Offer.Provider, region, zone, o.Offer.Market,
			price, o.Offer.UnitPrice.Currency, verdict, dash(strings.Join(codes, ", ")), dash(strings.Join(rules, "; ")))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// profileLine is the policy's view of the queue, key=value in key order.
func profileLine(p map[string]any) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		b, _ := json.Marshal(p[k])
		parts = append(parts, k+"="+string(b))
	}
	return strings.Join(parts, " ")
}

// printOfferExplanation writes, for one offer, what the policy was given and
// every rule that fired, with its title, description and source line.
func printOfferExplanation(w io.Writer, ev *policy.Evaluator, x policy.Explanation, o policy.OfferVerdict, queue string) {
	verdict := "ALLOWED"
	if !o.Allow {
		verdict = "REFUSED"
	}
	zone := string(o.Zone)
	if zone == "" {
		zone = "unmapped"
	}
	fmt.Fprintf(w, "offer     %s: %s (zone %s) for queue %s\n", o.Offer.ID, verdict, zone, queue)
	fmt.Fprintf(w, "policy    revision %s\n", x.Revision)
	fmt.Fprintln(w, "inputs    what the rules read (input.offers[_] and input.profile):")
	keys := make([]string, 0, len(o.Input))
	for k := range o.Input {
		if k != "key" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, _ := json.Marshal(o.Input[k])
		fmt.Fprintf(w, "            offer.%s = %s\n", k, b)
	}
	pkeys := make([]string, 0, len(x.Profile))
	for k := range x.Profile {
		pkeys = append(pkeys, k)
	}
	sort.Strings(pkeys)
	for _, k := range pkeys {
		b, _ := json.Marshal(x.Profile[k])
		fmt.Fprintf(w, "            profile.%s = %s\n", k, b)
	}
	if o.Allow {
		fmt.Fprintln(w, "rules     none fired: every rule allows this offer")
		return
	}
	fmt.Fprintf(w, "rules     %d fired:\n", len(o.Reasons))
	for _, r := range o.Reasons {
		fmt.Fprintf(w, "  - %s  [%s]  %s\n", r.Rule, r.Code, r.Title)
		if info, ok := ev.Rule(r.Rule); ok {
			fmt.Fprintf(w, "      where:   %s:%d\n", info.File, info.Line)
			fmt.Fprintf(w, "      what:    %s\n", oneLine(info.Description))
		}
		fmt.Fprintf(w, "      because: %s\n", r.Message)
	}
}

func policyCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"policy check", stderr}
	fs := flag.NewFlagSet("policy check", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "list the runtime lines no test reaches")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return c.fail(exitBad, "one directory at most, got %q", fs.Args())
	}
	dir := "policy"
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return c.fail(exitBad, "%s: not a directory", dir)
	}
	res, err := policy.Check(ctx, os.DirFS(dir))
	if err != nil {
		return c.fail(exitErr, "%s: %v", dir, err)
	}
	mark := func(ok bool) string {
		if ok {
			return "ok  "
		}
		return "FAIL"
	}
	fmt.Fprintf(stdout, "%s fmt      %s\n", mark(len(res.Unformatted) == 0), countOr(len(res.Unformatted), "every .rego file formatted (opa fmt)", "file(s) need `go tool opa fmt -w`: "+strings.Join(res.Unformatted, ", ")))
	fmt.Fprintf(stdout, "%s check    %s\n", mark(len(res.Problems) == 0), countOr(len(res.Problems), "compiles in strict mode in the sandbox (opa check --strict, forbidden builtins refused)", "problem(s):"))
	for _, p := range res.Problems {
		fmt.Fprintf(stdout, "         %s\n", p)
	}
	if len(res.Problems) == 0 {
		t := res.Tests
		fmt.Fprintf(stdout, "%s test     %d passed, %d failed, %d errors, %d skipped (%s)\n", mark(t.OK()), t.Passed, t.Failed, t.Errored, t.Skipped, t.Duration.Round(1e6))
		for _, f := range t.Failures {
			fmt.Fprintf(stdout, "         %s\n", f)
		}
		fmt.Fprintf(stdout, "%s coverage %.2f%% of lines (threshold %.0f%%); policy files without tests: %.2f%%\n", mark(t.Coverage >= policy.CoverageThreshold), t.Coverage, policy.CoverageThreshold, t.RuleCoverage)
		if *verbose {
			for _, l := range t.NotCovered {
				fmt.Fprintf(stdout, "         not covered: %s\n", l)
			}
		}
	}
	fmt.Fprintf(stdout, "revision %s (%s)\n", res.Revision, dir)
	if !res.OK() {
		fmt.Fprintf(stdout, "FAIL %s\n", dir)
		return exitErr
	}
	fmt.Fprintf(stdout, "PASS %s\n", dir)
	return exitOK
}

func countOr(n int, ok, bad string) string {
	if n == 0 {
		return ok
	}
	return fmt.Sprintf("%d %s", n, bad)
}
