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
	return dispatch(ctx, "sluice", usage, map[string]subcommand{
		"burst": burst, "quotes": quotes, "drain": drain, "reconcile": reconcile,
		"policy": policyCmd, "audit": audit, "simulate": simulate,
	}, args, stdout, stderr)
}
