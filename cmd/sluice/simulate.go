package main

import (
	"context"
	"fmt"
	"io"
)

// simulate is the "sluice simulate" subcommand (not built yet).
func simulate(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice simulate: not implemented yet")
	return 2
}
