package main

import (
	"os"
	"strings"
	"testing"
)

const simDir = "../../testdata/sim/"

func simArgs(trace, prices string, extra ...string) []string {
	return append([]string{"simulate", "--trace", simDir + trace, "--config", "../../testdata/sluice.yaml",
		"--prices", prices}, extra...)
}

// TestSimulateWeekend: the CLI prints the same table the sim package's golden pins.
func TestSimulateWeekend(t *testing.T) {
	code, out, errs := sluiceRun(t, simArgs("weekend.csv", simDir+"prices-weekend", "--fixed-gpus", "8")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want, err := os.ReadFile(simDir + "golden/weekend.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, string(want)) {
		t.Errorf("output does not end with golden/weekend.txt:\n%s", out)
	}
	if !strings.HasPrefix(out, "trace weekend.csv: 64 jobs from 2026-11-27T08:00:00Z; owned A100-80GB at 1000 USD per GPU-month (730 h); seed 1;") {
		t.Errorf("header: %s", strings.SplitN(out, "\n", 2)[0])
	}
}

// TestSimulateReplay reads prices from the recorded provider answers
// through the real quote sources, and is deterministic for a seed.
func TestSimulateReplay(t *testing.T) {
	args := simArgs("diurnal.csv", "../../testdata/replay", "--fixed-gpus", "32", "--format", "csv", "--seed", "7")
	code, a, errs := sluiceRun(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, b, _ := sluiceRun(t, args...)
	if a != b {
		t.Error("same seed, different output")
	}
	args[len(args)-1] = "8"
	_, c, _ := sluiceRun(t, args...)
	if a == c {
		t.Error("seeds 7 and 8 gave the same output")
	}
	if !strings.Contains(a, "summary,spot,32,USD,") || !strings.Contains(a, "elastic,tiered,32,USD,") {
		t.Errorf("csv lacks the spot summary or tiered cost lines:\n%s", a)
	}
}

func TestSimulateSweepAndSVG(t *testing.T) {
	code, out, errs := sluiceRun(t, simArgs("deadline.csv", simDir+"prices-spike", "--sweep", "0:32:16", "--wait-target", "72h")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Every row's owned pool is charged over one window: the first submit to
	// the latest finish of any strategy and size (spot with no owned GPUs,
	// 540h50m). Tiered at 16 GPUs: 16 × 1000 × 540⅚ h ÷ 730 =
	// 11853.8812785388 owned + 4691.2625333333 elastic.
	if !strings.Contains(out, "owned pool charged for 540h50m on every row: first submit to the latest finish of any strategy and size\n") ||
		!strings.Contains(out, "cheapest owned-pool size with p95 wait ≤ 72h00m:") || !strings.Contains(out, "  tiered             16 GPUs, total 16545.1438118721 USD, p95 wait 72h00m") {
		t.Errorf("sweep table:\n%s", out)
	}
	for _, args := range [][]string{
		simArgs("deadline.csv", simDir+"prices-spike", "--sweep", "0:32:16", "--format", "svg"),
		simArgs("weekend.csv", simDir+"prices-weekend", "--fixed-gpus", "8", "--format", "svg", "--strategy", "owned-only", "--strategy", "on-demand"),
	} {
		code, out, errs := sluiceRun(t, args...)
		if code != 0 || !strings.HasPrefix(out, "<svg") || !strings.Contains(out, "on-demand") {
			t.Errorf("%v: exit %d, %s: %.200s", args, code, errs, out)
		}
	}
}

func TestSimulateBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--prices", simDir + "prices-weekend", "--fixed-gpus", "8"}, "--trace is required"},
		{simArgs("weekend.csv", simDir+"prices-weekend"), "one of --fixed-gpus"},
		{simArgs("weekend.csv", simDir+"prices-weekend", "--fixed-gpus", "8", "--sweep", "0:8:4"), "exclude each other"},
		{simArgs("weekend.csv", simDir+"prices-weekend", "--sweep", "8:0:4"), "A ≤ B"},
		{simArgs("weekend.csv", simDir+"prices-weekend", "--fixed-gpus", "8", "--format", "png"), "--format"},
		{simArgs("weekend.csv", simDir+"prices-weekend", "--fixed-gpus", "8", "--strategy", "yolo"), "unknown"},
		{simArgs("weekend.csv", simDir, "--fixed-gpus", "8"), "no price list"},
		{simArgs("nope.csv", simDir+"prices-weekend", "--fixed-gpus", "8"), "nope.csv"},
	} {
		code, _, errs := sluiceRun(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestSimulateBreakeven(t *testing.T) {
	code, out, errs := sluiceRun(t, "simulate", "breakeven", "--gpu-month-cost", "480", "--elastic-price", "2", "--hours-per-month", "720")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "break-even utilisation  0.3333333333 of the day (8 hours a day)\n") {
		t.Errorf("output:\n%s", out)
	}
	code, _, errs = sluiceRun(t, "simulate", "breakeven", "--gpu-month-cost", "x", "--elastic-price", "2")
	if code != 2 || !strings.Contains(errs, "--gpu-month-cost") {
		t.Errorf("bad cost: exit %d, %s", code, errs)
	}
}
