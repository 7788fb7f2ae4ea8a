package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/sandbox"
)

var updateBurst = flag.Bool("update-burst", false, "rewrite testdata/golden/burst-follow-up.txt")

// The table of a burst whose second line the provider refuses for capacity:
// the failed placement with its class, then the follow-up decision that
// re-plans the refused slots, its lines and placements, and its total.
// Latencies and the policy revision vary and are masked.
func TestBurstTablePrintsFollowUps(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "provider.json")
	t.Setenv("SLUICE_SANDBOX_STATE", state)
	t.Setenv("SLUICE_PLACEMENT", "")
	t.Setenv("SLUICE_PLACEMENT_ENDPOINTS", "")
	t.Setenv("SLUICE_CRASH_AT", "")
	b := &sandbox.Broker{StatePath: state}
	if err := b.AddFault(sandbox.Fault{Op: sandbox.OpPlace, OfferID: "aws:us-west-2:us-west-2c:p4de.24xlarge:spot",
		Class: sandbox.FaultCapacity, Times: 1}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sluiceRun(t, burstArgs(filepath.Join(dir, "ledger.db"), "../../testdata/events/alarm-sns-burst.json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	start, end := strings.Index(out, "decision "), strings.Index(out, "\nbudget ")
	if start < 0 || end < start {
		t.Fatalf("unexpected output:\n%s", out)
	}
	got := out[start : end+1]
	got = regexp.MustCompile(`\[\d+ ms\]`).ReplaceAllString(got, "[N ms]")
	got = regexp.MustCompile(`policy [0-9a-f]{12}\)`).ReplaceAllString(got, "policy REVISION)")

	path := "../../testdata/golden/burst-follow-up.txt"
	if *updateBurst {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/sluice -run TestBurstTablePrintsFollowUps -update-burst)", err)
	}
	if got != string(want) {
		t.Errorf("differs from %s (-update-burst to accept):\n%s", path, got)
	}
	// The values the golden file must hold, independent of its layout.
	for _, s := range []string{
		"FAILED (capacity): ",
		"follow-up dec-4b76346f860e6d9731342e327b690995-f1 of dec-4b76346f860e6d9731342e327b690995  PLACED",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
}

func TestPlacedAs(t *testing.T) {
	for _, tc := range []struct {
		p    sluice.Placement
		want string
	}{
		{sluice.Placement{ExternalIDs: []string{"i-1", "i-2"}}, "i-1,i-2"},
		{sluice.Placement{ErrorClass: sluice.ClassCapacity, Error: "aws: InsufficientInstanceCapacity:\n no p4de in us-west-2c"},
			"FAILED (capacity): aws: InsufficientInstanceCapacity: no p4de in us-west-2c"},
		{sluice.Placement{Error: "boom"}, "FAILED (unclassified): boom"},
		{sluice.Placement{ExternalIDs: []string{"i-9"}, ErrorClass: sluice.ClassPriceMismatch}, "RELEASED (price-mismatch) i-9"},
		{sluice.Placement{ExternalIDs: []string{"pod-1"}, ErrorClass: sluice.ClassPolicy}, "RELEASED (policy) pod-1"},
	} {
		if got := placedAs(tc.p); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
