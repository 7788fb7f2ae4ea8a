// Command sluice is Sluice's CLI. Subcommands:
//
//	sluice burst --event FILE [--config FILE] [--replay DIR] [--ledger PATH] [--json]
//	sluice quotes [--config FILE] [--replay DIR]
//	sluice drain --event FILE ...      (drain.go)
//	sluice reconcile ...               (reconcile.go)
//	sluice policy explain|check ...    (policy.go)
//	sluice audit verify|export|report  (audit.go)
//	sluice simulate ...                (simulate.go)
//
// Exit status: 0 when a decision is made (also "nothing to do"), 2 for a bad
// event or config (stderr names the problem), 1 otherwise.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: sluice <command> [flags]

commands:
  burst      turn a queue-depth alarm into a priced, policy-checked placement decision
  quotes     fetch every enabled source's offers once and list them (no ledger, nothing placed)
  drain      release a queue's placements when its alarm returns to OK
  reconcile  match each provider's Sluice-tagged instances against the ledger
  policy     explain a decision's verdicts, or check a policy directory
  audit      verify the ledger, export FOCUS CSV, report spend
  simulate   what-if: owned pool size and burst strategies over a job trace
             (simulate breakeven: the utilisation above which owning beats renting)

Run "sluice <command> -h" for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "burst":
		return burst(ctx, args[1:], stdout, stderr)
	case "quotes":
		return quotes(ctx, args[1:], stdout, stderr)
	case "drain":
		return drain(ctx, args[1:], stdout, stderr)
	case "reconcile":
		return reconcile(ctx, args[1:], stdout, stderr)
	case "policy":
		return policyCmd(ctx, args[1:], stdout, stderr)
	case "audit":
		return audit(ctx, args[1:], stdout, stderr)
	case "simulate":
		return simulate(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
