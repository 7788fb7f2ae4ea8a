package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sim/chart"
)

// strategyFlag collects repeated --strategy values.
type strategyFlag []sim.Strategy

func (s *strategyFlag) String() string { return fmt.Sprint(*s) }
func (s *strategyFlag) Set(v string) error {
	st, err := sim.ParseStrategy(v)
	if err != nil {
		return err
	}
	*s = append(*s, st)
	return nil
}

// replayProviders are the subdirectories that mark a replay directory.
var replayProviders = []string{"runpod", "vast", "aliyun", "aws-ec2", "aws-pricing", "autodl"}

// simulate is "sluice simulate": a what-if run of every burst strategy over
// a job trace, through the production decision code (sim/README.md).
func simulate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "breakeven" {
		return breakeven(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tracePath := fs.String("trace", "", "job trace CSV (sim/README.md)")
	configPath := fs.String("config", "sluice.yaml", "Sluice configuration (billing currency, FX, budgets, interruption rates)")
	simPath := fs.String("sim", "", "simulation settings YAML (default: sim.yaml next to the trace)")
	pricesDir := fs.String("prices", "testdata/replay", "price history: a replay directory or a directory of price CSVs (sim/README.md)")
	fixed := fs.Int("fixed-gpus", -1, "owned-pool size in GPUs")
	sweep := fs.String("sweep", "", "owned-pool sizes A:B:STEP (instead of --fixed-gpus)")
	var strategies strategyFlag
	fs.Var(&strategies, "strategy", "strategy to run (repeatable; default all): "+strategyNames())
	seed := fs.Uint64("seed", 1, "seed of the spot interruptions")
	format := fs.String("format", "table", "output: table, csv or svg")
	waitTarget := fs.Duration("wait-target", 4*time.Hour, "p95 queue wait the sweep's cheapest size must meet")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "sluice simulate: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected arguments %q", fs.Args())
	}
	if *tracePath == "" {
		return fail(2, "--trace is required")
	}
	if *format != "table" && *format != "csv" && *format != "svg" {
		return fail(2, "--format %q: want table, csv or svg", *format)
	}
	fixedSet := false
	fs.Visit(func(f *flag.Flag) { fixedSet = fixedSet || f.Name == "fixed-gpus" })
	sizes, err := poolSizes(*fixed, fixedSet, *sweep)
	if err != nil {
		return fail(2, "%v", err)
	}
	if *waitTarget < 0 {
		return fail(2, "--wait-target %s: negative (want a p95 queue wait ≥ 0)", *waitTarget)
	}
	if len(strategies) == 0 {
		strategies = sim.Strategies
	}
	f, err := os.Open(*tracePath)
	if err != nil {
		return fail(2, "%v", err)
	}
	jobs, err := sim.ParseTrace(f, *tracePath)
	f.Close()
	if err != nil {
		return fail(2, "%v", err)
	}
	if *simPath == "" {
		*simPath = filepath.Join(filepath.Dir(*tracePath), "sim.yaml")
	}
	settings, err := sim.LoadSettings(*simPath)
	if err != nil {
		return fail(2, "%v", err)
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return fail(2, "%v", err)
	}
	prices, err := loadPrices(ctx, cfg, *pricesDir, stderr)
	if err != nil {
		return fail(2, "%v", err)
	}
	for _, s := range prices.Skipped {
		fmt.Fprintf(stderr, "sluice simulate: prices: skipped %s\n", s)
	}
	ev, err := policy.New(ctx)
	if err != nil {
		return fail(1, "preparing policy: %v", err)
	}
	s, err := sim.New(sim.Params{Jobs: jobs, Prices: prices, Settings: settings, Policy: ev,
		BillingCurrency: cfg.BillingCurrency, FX: cfg.FX, InterruptionsPerHour: cfg.InterruptionsPerHour,
		Budgets: cfg.Budgets, Seed: *seed})
	if err != nil {
		return fail(2, "%v", err)
	}
	// Every result's owned pool is charged over one window: the first
	// submit to the latest finish of any strategy and size (sim.Compare).
	results, err := s.Compare(ctx, strategies, sizes)
	if err != nil {
		return fail(1, "%v", err)
	}
	cur := cfg.BillingCurrency
	switch *format {
	case "csv":
		err = sim.WriteCSV(stdout, results, cur)
	case "svg":
		var b []byte
		title := "sluice simulate " + filepath.Base(*tracePath)
		if *sweep != "" {
			b, err = chart.Sweep(results, *waitTarget, cur, title)
		} else {
			b, err = chart.Strategies(results, cur, fmt.Sprintf("%s, %d owned GPUs", title, sizes[0]))
		}
		if err == nil {
			_, err = stdout.Write(b)
		}
	default:
		fmt.Fprintf(stdout, "trace %s: %d jobs from %s; owned %s at %s %s per GPU-month (%s h); seed %d; prices %s (%d epochs)\n",
			filepath.Base(*tracePath), len(jobs), jobs[0].Submit.Format(time.RFC3339), settings.OwnedGPUModel,
			settings.OwnedGPUMonthCost.Amount, settings.OwnedGPUMonthCost.Currency, settings.HoursPerMonth, *seed,
			filepath.Base(*pricesDir), len(prices.Epochs))
		of := "any strategy"
		if *sweep != "" {
			of = "any strategy and size"
		}
		fmt.Fprintf(stdout, "owned pool charged for %s on every row: first submit to the latest finish of %s\n\n",
			sim.Hours(sim.CommonWindow(results)), of)
		if err = sim.WriteTable(stdout, results, cur); err == nil && *sweep != "" {
			sim.WriteCheapest(stdout, results, *waitTarget, cur)
		}
	}
	if err != nil {
		return fail(1, "writing output: %v", err)
	}
	return 0
}

func strategyNames() string {
	names := make([]string, len(sim.Strategies))
	for i, s := range sim.Strategies {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// maxPoolGPUs bounds an owned-pool size: beyond it a size is a typo, not a
// plan (and its cost figures stop meaning anything).
const maxPoolGPUs = 1_000_000

// poolSizes reads --fixed-gpus (fixedSet: given on the command line) or
// --sweep A:B:STEP; every size is in 0..maxPoolGPUs.
func poolSizes(fixed int, fixedSet bool, sweep string) ([]int, error) {
	if fixedSet && fixed < 0 {
		return nil, fmt.Errorf("--fixed-gpus %d: negative (want a whole number of GPUs in 0..%d)", fixed, maxPoolGPUs)
	}
	if fixedSet && fixed > maxPoolGPUs {
		return nil, fmt.Errorf("--fixed-gpus %d: more than %d GPUs (want 0..%d)", fixed, maxPoolGPUs, maxPoolGPUs)
	}
	if sweep == "" {
		if !fixedSet {
			return nil, errors.New("one of --fixed-gpus N or --sweep A:B:STEP is required")
		}
		return []int{fixed}, nil
	}
	if fixedSet {
		return nil, errors.New("--fixed-gpus and --sweep exclude each other")
	}
	parts := strings.Split(sweep, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("--sweep %q: want A:B:STEP", sweep)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--sweep %q: %q is not a whole number ≥ 0", sweep, p)
		}
		v[i] = n
	}
	if v[1] > maxPoolGPUs {
		return nil, fmt.Errorf("--sweep %q: B %d is more than %d GPUs", sweep, v[1], maxPoolGPUs)
	}
	if v[2] == 0 || v[1] < v[0] || (v[1]-v[0])/v[2] > 200 {
		return nil, fmt.Errorf("--sweep %q: want A ≤ B, STEP > 0 and at most 200 sizes", sweep)
	}
	var out []int
	for n := v[0]; n <= v[1]; n += v[2] {
		out = append(out, n)
	}
	return out, nil
}

// loadPrices reads a replay directory through the real quote sources
// (app.Quotes: one snapshot; a failed source is written to warn) or a
// directory of price CSVs.
func loadPrices(ctx context.Context, cfg *config.Config, dir string, warn io.Writer) (*sim.Prices, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--prices: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--prices %s: not a directory", dir)
	}
	for _, p := range replayProviders {
		if fi, err := os.Stat(filepath.Join(dir, p)); err == nil && fi.IsDir() {
			offers, reports, err := app.Quotes(ctx, app.Options{Config: cfg, ReplayDir: dir, FXURL: "off"})
			if err != nil {
				return nil, err
			}
			// As in a decision, a failed source is reported, not fatal.
			for _, r := range reports {
				if r.Error != "" {
					fmt.Fprintf(warn, "sluice simulate: prices: source %s failed: %s\n", r.Provider, r.Error)
				}
			}
			return sim.Snapshot(offers)
		}
	}
	return sim.LoadPriceDir(dir, func(p string) int { return cfg.Providers[p].MaxUnits })
}

// breakeven is "sluice simulate breakeven": the daily utilisation above
// which owning a GPU beats renting one.
func breakeven(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate breakeven", flag.ContinueOnError)
	fs.SetOutput(stderr)
	month := fs.String("gpu-month-cost", "", "amortised cost of one owned GPU per month (decimal)")
	price := fs.String("elastic-price", "", "elastic price per GPU-hour, same currency (decimal)")
	hours := fs.String("hours-per-month", "730", "hours in a month")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice simulate breakeven: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var vals [3]decimal.Decimal
	for i, f := range []struct{ name, text string }{{"gpu-month-cost", *month}, {"elastic-price", *price}, {"hours-per-month", *hours}} {
		d, err := decimal.NewFromString(f.text)
		if err != nil {
			fmt.Fprintf(stderr, "sluice simulate breakeven: --%s %q: not a decimal\n", f.name, f.text)
			return 2
		}
		vals[i] = d
	}
	b, err := sim.ComputeBreakeven(vals[0], vals[1], vals[2])
	if err != nil {
		fmt.Fprintf(stderr, "sluice simulate breakeven: --%v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "break-even utilisation  %s of the day (%s hours a day)\n", b.Utilisation, b.HoursPerDay)
	fmt.Fprintf(stdout, "formula                 gpu-month-cost ÷ (elastic-price × hours-per-month) = %s ÷ (%s × %s)\n", vals[0], vals[1], vals[2])
	if b.OwningNeverPays {
		fmt.Fprintln(stdout, "verdict                 renting around the clock costs less than owning: owning never pays at this price")
	} else {
		fmt.Fprintln(stdout, "verdict                 owning is cheaper for a GPU busy more than that; renting below it")
	}
	return 0
}
