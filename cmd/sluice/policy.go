package main

import (
	"context"
	"fmt"
	"io"
)

// policyCmd is the "sluice policy" subcommand (not built yet).
func policyCmd(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice policy: not implemented yet")
	return 2
}
