package main

import (
	"context"
	"fmt"
	"io"
)

// audit is the "sluice audit" subcommand (not built yet).
func audit(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice audit: not implemented yet")
	return 2
}
