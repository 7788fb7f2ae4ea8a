package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The drain and reconcile commands in process, with the sandbox provider's
// state in a file (SLUICE_SANDBOX_STATE) shared by burst, drain and reconcile.
func TestDrainAndReconcileCommands(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SLUICE_SANDBOX_STATE", filepath.Join(dir, "provider.json"))
	t.Setenv("SLUICE_PLACEMENT", "")
	lp := filepath.Join(dir, "ledger.db")
	if code, out, errOut := sluiceRun(t, burstArgs(lp, "../../testdata/events/alarm-sns-burst.json")...); code != 0 || !strings.Contains(out, "PLACED") {
		t.Fatalf("burst: %d\n%s%s", code, out, errOut)
	}
	common := []string{"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay", "--ledger", lp}

	// An ALARM is not drained.
	code, out, errOut := sluiceRun(t, append([]string{"drain", "--event", "../../testdata/events/alarm-sns-burst.json"}, common...)...)
	if code != 0 || !strings.Contains(out, "skipped") {
		t.Fatalf("drain of an ALARM: %d\n%s%s", code, out, errOut)
	}
	// The OK state drains both lines, the dearer first (the pinned clock
	// stands still, so nothing has accrued: 0 s billed).
	code, out, errOut = sluiceRun(t, append([]string{"drain", "--event", "../../testdata/events/alarm-sns-ok.json"}, common...)...)
	if code != 0 || !strings.Contains(out, "released  2 placement(s); pending 0") {
		t.Fatalf("drain: %d\n%s%s", code, out, errOut)
	}
	if i0, i1 := strings.Index(out, "sbx-aws-ffa9c1fd-0"), strings.Index(out, "sbx-aws-0fb7d221-0"); i1 < 0 || i0 < i1 {
		t.Fatalf("want line 1 (2 × 6.8849 USD/h) released before line 0:\n%s", out)
	}
	code, out, errOut = sluiceRun(t, append([]string{"reconcile"}, common...)...)
	if code != 0 || !strings.Contains(out, "0 orphan(s), 0 lost, 0 adopted") {
		t.Fatalf("reconcile: %d\n%s%s", code, out, errOut)
	}

	for _, bad := range [][]string{
		{"drain"},
		{"drain", "--event", "../../testdata/events/bad/does-not-exist.json"},
		{"drain", "--event", "../../testdata/events/alarm-sns-ok.json", "stray"},
		{"reconcile", "stray"},
		{"reconcile", "--config", "missing.yaml"},
	} {
		if code, _, _ := sluiceRun(t, bad...); code != 2 {
			t.Errorf("%q: exit %d, want 2", bad, code)
		}
	}
}
