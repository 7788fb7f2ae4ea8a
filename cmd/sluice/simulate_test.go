package main

import (
	"os"
	"path/filepath"
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

// TestSimulateBadFlagsExactText pins the whole stderr line for flags and
// traces that were accepted or mis-reported (negative or absurd pool sizes,
// a negative wait target, a saturated trace span, a team forging a row).
func TestSimulateBadFlagsExactText(t *testing.T) {
	dir := t.TempDir()
	trace := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("submit,job,gpus,hours,checkpointable,data_class,tier,team\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newline := trace("newline.csv", "2026-12-01T00:00:00Z,j,1,1,true,public,base,\"x\ny\"\n")
	span := trace("span.csv", "0001-01-01T00:00:00Z,a,1,1,true,public,base,t\n9999-12-31T23:59:00Z,b,1,1,true,public,base,t\n")
	weekend := func(extra ...string) []string { return simArgs("weekend.csv", simDir+"prices-weekend", extra...) }
	withTrace := func(p string) []string {
		return []string{"simulate", "--trace", p, "--config", "../../testdata/sluice.yaml", "--prices", simDir + "prices-weekend", "--fixed-gpus", "8"}
	}
	for _, c := range []struct {
		name string
		args []string
		want string // the whole stderr
	}{
		{"negative --fixed-gpus", weekend("--fixed-gpus", "-5"),
			"sluice simulate: --fixed-gpus -5: negative (want a whole number of GPUs in 0..1000000)\n"},
		{"--fixed-gpus -1 (the old sentinel)", weekend("--fixed-gpus", "-1"),
			"sluice simulate: --fixed-gpus -1: negative (want a whole number of GPUs in 0..1000000)\n"},
		{"absurd --fixed-gpus", weekend("--fixed-gpus", "99999999999"),
			"sluice simulate: --fixed-gpus 99999999999: more than 1000000 GPUs (want 0..1000000)\n"},
		{"absurd --sweep", weekend("--sweep", "0:99999999999:1000"),
			"sluice simulate: --sweep \"0:99999999999:1000\": B 99999999999 is more than 1000000 GPUs\n"},
		{"neither", weekend(),
			"sluice simulate: one of --fixed-gpus N or --sweep A:B:STEP is required\n"},
		{"negative --wait-target", weekend("--sweep", "0:8:4", "--wait-target", "-1h"),
			"sluice simulate: --wait-target -1h0m0s: negative (want a p95 queue wait ≥ 0)\n"},
		{"team with a newline", withTrace(newline),
			"sluice simulate: trace " + newline + ": line 2: team \"x\\ny\": U+000A at byte 1: control or format character\n"},
		{"span beyond a time.Duration", withTrace(span),
			"sluice simulate: trace " + span + ": submits span 3652058d 23h 59m (0001-01-01T00:00:00Z → 9999-12-31T23:59:00Z): at most 366d 0h 0m\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := sluiceRun(t, c.args...)
			if code != 2 || errs != c.want || out != "" {
				t.Errorf("exit %d, stdout %q, stderr\n  %q\nwant exit 2 and\n  %q", code, out, errs, c.want)
			}
		})
	}
	// --fixed-gpus 0 (no owned pool) is valid.
	if code, _, errs := sluiceRun(t, weekend("--fixed-gpus", "0", "--strategy", "on-demand")...); code != 0 {
		t.Errorf("--fixed-gpus 0: exit %d: %s", code, errs)
	}
}
