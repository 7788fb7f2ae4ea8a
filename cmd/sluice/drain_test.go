package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// burstPlaced places alarm-sns-burst.json's burst in process into a new
// ledger, with the sandbox provider's state in a file (SLUICE_SANDBOX_STATE)
// in a new directory; it returns the directory and the ledger path.
func burstPlaced(t *testing.T) (dir, lp string) {
	t.Helper()
	dir = t.TempDir()
	t.Setenv("SLUICE_SANDBOX_STATE", filepath.Join(dir, "provider.json"))
	t.Setenv("SLUICE_PLACEMENT", "")
	lp = filepath.Join(dir, "ledger.db")
	if code, out, errOut := sluiceRun(t, burstArgs(lp, "../../testdata/events/alarm-sns-burst.json")...); code != 0 || !strings.Contains(out, "PLACED") {
		t.Fatalf("burst: %d\n%s%s", code, out, errOut)
	}
	return dir, lp
}

// The drain and reconcile commands in process, with the sandbox provider's
// state in a file (SLUICE_SANDBOX_STATE) shared by burst, drain and reconcile.
func TestDrainAndReconcileCommands(t *testing.T) {
	_, lp := burstPlaced(t)
	common := []string{"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay", "--ledger", lp}

	// An ALARM is not drained.
	code, out, errOut := sluiceRun(t, append([]string{"drain", "--event", "../../testdata/events/alarm-sns-burst.json"}, common...)...)
	if code != 0 || !strings.Contains(out, "skipped") {
		t.Fatalf("drain of an ALARM: %d\n%s%s", code, out, errOut)
	}
	// The OK state (11:40) drains both lines, the dearer first; the clock
	// moves to just after it (an alarm more than sluice.MaxAlarmSkew ahead
	// of the clock is refused).
	saved := clock
	clock = sluice.ClockFunc(func() time.Time { return time.Date(2026, 11, 29, 11, 40, 30, 0, time.UTC) })
	t.Cleanup(func() { clock = saved })
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

// With placement.drain.idle_window in the config, a depth-0 OK waits until
// depth 0 has lasted the window since the alarm's state-change time
// (11:40:00 + 15m = 11:55:00 on the pinned clock), then drains.
func TestDrainWaitsForIdleWindow(t *testing.T) {
	dir, lp := burstPlaced(t)
	cfg, err := os.ReadFile("../../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfgPath, append(cfg, "\nplacement:\n  drain:\n    idle_window: 15m\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	ok, err := os.ReadFile("../../testdata/events/alarm-sns-ok.json")
	if err != nil {
		t.Fatal(err)
	}
	idle := strings.Replace(string(ok), "[4.0 (29/11/26 11:39:00)]", "[0.0 (29/11/26 11:39:00)]", 1)
	if idle == string(ok) {
		t.Fatal("alarm-sns-ok.json: datapoint not found")
	}
	eventPath := filepath.Join(dir, "idle.json")
	if err := os.WriteFile(eventPath, []byte(idle), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := clock
	t.Cleanup(func() { clock = saved })
	args := []string{"drain", "--event", eventPath, "--config", cfgPath, "--replay", "../../testdata/replay", "--ledger", lp}

	clock = sluice.ClockFunc(func() time.Time { return time.Date(2026, 11, 29, 11, 45, 0, 0, time.UTC) })
	code, out, errOut := sluiceRun(t, args...)
	want := "waits     depth 0 since 2026-11-29T11:40:00Z, idle 5m0s of the 15m0s idle window: the drain waits until 2026-11-29T11:55:00Z\n"
	if code != 0 || !strings.Contains(out, "depth 0\n") || !strings.HasSuffix(out, want) {
		t.Fatalf("within the window: %d\n%s%s", code, out, errOut)
	}
	clock = sluice.ClockFunc(func() time.Time { return time.Date(2026, 11, 29, 11, 55, 0, 0, time.UTC) })
	code, out, errOut = sluiceRun(t, args...)
	if code != 0 || !strings.Contains(out, "idle      depth 0 since 2026-11-29T11:40:00Z, past the idle window\n") ||
		!strings.Contains(out, "released  2 placement(s); pending 0") {
		t.Fatalf("after the window: %d\n%s%s", code, out, errOut)
	}
}
