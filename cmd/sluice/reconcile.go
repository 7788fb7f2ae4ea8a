package main

import (
	"context"
	"fmt"
	"io"
)

// reconcile is the "sluice reconcile" subcommand (not built yet).
func reconcile(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice reconcile: not implemented yet")
	return 2
}
