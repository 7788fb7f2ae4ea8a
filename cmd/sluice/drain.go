package main

import (
	"context"
	"fmt"
	"io"
)

// drain is the "sluice drain" subcommand (not built yet).
func drain(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice drain: not implemented yet")
	return 2
}
