package ledger

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// TestReleaseReasonConformance: both stores give OpenPlacements the reason of
// the latest release step (finding #10: a retried pending release kept only
// its state, so reconcile recorded it as a drain).
func TestReleaseReasonConformance(t *testing.T) {
	at := time.Date(2025, 3, 14, 11, 0, 0, 0, time.UTC)
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			rl := s.(sluice.ReleaseLedger)
			a := sampleDecision("dec-r1", "train-a")
			splitLine(&a)
			mustAppend(t, s, &a)
			for line := range 2 {
				if err := s.AppendPlacement(ctx, samplePlacement("dec-r1", "train-a", line, 1)); err != nil {
					t.Fatal(err)
				}
			}
			list := func() string {
				open, err := rl.OpenPlacements(ctx, "train-a")
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, o := range open {
					out = append(out, fmt.Sprintf("%s/%d %q %q", o.DecisionID, o.Line, o.ReleaseState, o.ReleaseReason))
				}
				return strings.Join(out, "; ")
			}
			if got, want := list(), `dec-r1/0 "" ""; dec-r1/1 "" ""`; got != want {
				t.Fatalf("before any release: %s, want %s", got, want)
			}
			rel := sluice.Release{DecisionID: "dec-r1", Line: 1, Queue: "train-a", Provider: "vast",
				ExternalIDs: []string{"inst-1"}, State: sluice.ReleasePending, Reason: sluice.ReleasePriceMismatch,
				Slots: 1, RequestedAt: at, At: at, Error: "price read back 2.10 USD, quoted 1.00 USD"}
			if err := rl.AppendRelease(ctx, rel); err != nil {
				t.Fatal(err)
			}
			if got, want := list(), `dec-r1/0 "" ""; dec-r1/1 "release-pending" "price-mismatch"`; got != want {
				t.Fatalf("pending price-mismatch: %s, want %s", got, want)
			}
			// The released step keeps the pending step's reason; the line is
			// then no longer open.
			rel.State, rel.At, rel.Error = sluice.ReleaseReleased, at.Add(30*time.Second), ""
			rel.AccruedCost, rel.BilledSeconds = usd("0"), 0
			if err := rl.AppendRelease(ctx, rel); err != nil {
				t.Fatal(err)
			}
			if got, want := list(), `dec-r1/0 "" ""`; got != want {
				t.Fatalf("after release: %s, want %s", got, want)
			}
		})
	}
}
