package sim_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/internal/moneytest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sim/tracegen"
)

var update = flag.Bool("update", false, "rewrite testdata/sim/golden/*")

const dir = "../testdata/sim"

func TestNoFloat(t *testing.T) { moneytest.NoFloat(t) }

var (
	evOnce sync.Once
	ev     *policy.Evaluator
	evErr  error
)

// evaluator is the production policy, embedded and prepared once.
func evaluator(t testing.TB) *policy.Evaluator {
	evOnce.Do(func() { ev, evErr = policy.New(context.Background()) })
	if evErr != nil {
		t.Fatal(evErr)
	}
	return ev
}

func loadConfig(t testing.TB) *config.Config {
	cfg, err := config.Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func loadTrace(t testing.TB, name string) []sim.Job {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := sim.ParseTrace(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// replayPrices reads the recorded provider answers through the real quote
// sources (loopback servers), as `sluice simulate --prices testdata/replay` does.
func replayPrices(t testing.TB, cfg *config.Config) *sim.Prices {
	offers, reports, err := app.Quotes(context.Background(), app.Options{Config: cfg, ReplayDir: "../testdata/replay", FXURL: "off"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if r.Error != "" {
			t.Fatalf("replay source %s: %s", r.Provider, r.Error)
		}
	}
	p, err := sim.Snapshot(offers)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dirPrices(t testing.TB, cfg *config.Config, name string) *sim.Prices {
	p, err := sim.LoadPriceDir(filepath.Join(dir, name), func(p string) int { return cfg.Providers[p].MaxUnits })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newSim(t testing.TB, cfg *config.Config, jobs []sim.Job, prices *sim.Prices, seed uint64) *sim.Simulator {
	st, err := sim.LoadSettings(filepath.Join(dir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Params{Jobs: jobs, Prices: prices, Settings: st, Policy: evaluator(t),
		BillingCurrency: cfg.BillingCurrency, FX: cfg.FX, InterruptionsPerHour: cfg.InterruptionsPerHour,
		Budgets: cfg.Budgets, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runAll compares every strategy with owned GPUs, as `sluice simulate`
// does: the owned pool is charged over the common window.
func runAll(t testing.TB, s *sim.Simulator, owned int) []sim.Result {
	out, err := s.Compare(context.Background(), sim.Strategies, []int{owned})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func byStrategy(rs []sim.Result, st sim.Strategy) sim.Result {
	for _, r := range rs {
		if r.Strategy == st {
			return r
		}
	}
	panic("no result for " + st)
}

func team(r sim.Result, name string) sim.TeamSpan {
	for _, t := range r.Teams {
		if t.Team == name {
			return t
		}
	}
	panic("no team " + name)
}

// TestWeekend pins the seed's weekend scenario: an 8-GPU owned A100 pool at
// 80 % load, 36 LoRA jobs of 4 GPUs × 4 h on Friday 18:00; owned-only
// against bursting to 48 elastic A100 at USD 2 per GPU-hour.
func TestWeekend(t *testing.T) {
	cfg := loadConfig(t)
	s := newSim(t, cfg, loadTrace(t, "weekend.csv"), dirPrices(t, cfg, "prices-weekend"), 1)
	rs := runAll(t, s, 8)
	owned, burst := byStrategy(rs, sim.OwnedOnly), byStrategy(rs, sim.OnDemandBurst)

	// Owned only: the 36 LoRA jobs queue behind each other on 2 slots of 4 GPUs.
	if got := team(owned, "applied"); got.Makespan != 76*time.Hour || got.WaitP95 != 69*time.Hour+30*time.Minute {
		t.Errorf("owned-only LoRA makespan %s, p95 wait %s; want 76h, 69h30m", got.Makespan, got.WaitP95)
	}
	if owned.Makespan != 131*time.Hour+30*time.Minute || owned.TotalCost.Amount.String() != "1441.095890411" || !owned.ElasticCost.Zero() {
		t.Errorf("owned-only: makespan %s, total %s, elastic %s", owned.Makespan, owned.TotalCost, owned.ElasticCost)
	}
	// Burst: 48 elastic GPUs = 12 jobs at a time, reused as jobs finish; 4 of
	// the 36 run on the owned pool, 32 elastic: 32 × 4 GPUs × 4 h = 512
	// GPU-hours × USD 2 = USD 1,024, and the batch is done in 12 hours.
	if got := team(burst, "applied"); got.Makespan != 12*time.Hour || got.WaitP95 != 8*time.Hour {
		t.Errorf("burst LoRA makespan %s, p95 wait %s; want 12h, 8h", got.Makespan, got.WaitP95)
	}
	if burst.ElasticCost.Amount.String() != "1024" || burst.ElasticGPUHours.String() != "512" || burst.JobsElastic != 32 {
		t.Errorf("burst: elastic %s for %s GPU-h, %d jobs; want 1024, 512, 32", burst.ElasticCost, burst.ElasticGPUHours, burst.JobsElastic)
	}
	// The owned pool is paid by the calendar, busy or idle: every strategy
	// is charged over the same window, first submit (Friday 08:00) to the
	// latest finish of any strategy (owned-only's, Wednesday 19:30) = 131h30m:
	// 8 GPUs × USD 1,000 × 131.5 h ÷ 730 h = 1052000 ÷ 730 =
	// 1441.09589041095… → 1441.0958904110 at CostScale. Bursting adds
	// exactly its elastic cost: 1441.095890411 + 1024 = 2465.095890411.
	for _, r := range rs {
		if r.OwnedWindow != 131*time.Hour+30*time.Minute || r.OwnedCost.Amount.String() != "1441.095890411" {
			t.Errorf("%s: owned %s over %s; want 1441.095890411 over 131h30m", r.Strategy, r.OwnedCost, sim.Hours(r.OwnedWindow))
		}
	}
	if burst.Makespan != 71*time.Hour+30*time.Minute || burst.TotalCost.Amount.String() != "2465.095890411" {
		t.Errorf("burst: makespan %s, total %s; want 71h30m, 2465.095890411", burst.Makespan, burst.TotalCost)
	}
	if got := burst.TierShare[sluice.TierBase].String() + "/" + burst.TierShare[sluice.TierElastic].String(); got != "58.46/41.54" {
		t.Errorf("burst base/elastic shares %s; want 58.46/41.54", got)
	}
	// Base-tier jobs are never bought (policy budget_tier.base_never_bought).
	if len(burst.Elastic) != 1 || burst.Elastic[0].Tier != sluice.TierElastic {
		t.Errorf("burst cost lines %+v: want one elastic line", burst.Elastic)
	}
	// "USD 768 and 8 hours" cannot both hold: 768 / 2 = 384 GPU-hours = 24
	// jobs elastic, leaving 12 jobs for the owned pool, which can do at most
	// 2 at a time: 12 / 2 × 4 h = 24 h, not 8. All 36 elastic is 576 GPU-h = USD 1,152.
	all := decimal.NewFromInt(36 * 4 * 4 * 2)
	if all.String() != "1152" || burst.ElasticCost.Amount.GreaterThan(all) {
		t.Errorf("the whole batch elastic costs %s; the simulator's burst %s must not exceed it", all, burst.ElasticCost)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(dir, "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n%s", name, got)
	}
}

// TestGolden runs every strategy over the three bundled traces and compares
// the table and CSV with testdata/sim/golden.
func TestGolden(t *testing.T) {
	cfg := loadConfig(t)
	cases := []struct {
		name, trace string
		prices      func() *sim.Prices
		owned       int
		// window: the latest finish of any strategy (owned-only's in all
		// three); ownedCost: GPUs × USD 1,000 × window hours ÷ 730, by
		// hand, rounded to CostScale (10 places) half away from zero.
		window    time.Duration
		ownedCost string
	}{
		// 8 × 1000 × 131.5 ÷ 730 = 1441.09589041095…
		{"weekend", "weekend.csv", func() *sim.Prices { return dirPrices(t, cfg, "prices-weekend") }, 8, 131*time.Hour + 30*time.Minute, "1441.095890411"},
		// 32 × 1000 × 793.75 ÷ 730 = 34794.52054794520…
		{"diurnal", "diurnal.csv", func() *sim.Prices { return replayPrices(t, cfg) }, 32, 793*time.Hour + 45*time.Minute, "34794.5205479452"},
		// 16 × 1000 × 381 ÷ 730 = 8350.68493150684…
		{"deadline", "deadline.csv", func() *sim.Prices { return dirPrices(t, cfg, "prices-spike") }, 16, 381 * time.Hour, "8350.6849315068"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := runAll(t, newSim(t, cfg, loadTrace(t, c.trace), c.prices(), 1), c.owned)
			for _, r := range rs {
				if r.OwnedWindow != c.window || r.OwnedCost.Amount.String() != c.ownedCost || !r.TotalCost.Amount.Equal(r.OwnedCost.Amount.Add(r.ElasticCost.Amount)) {
					t.Errorf("%s: owned %s over %s, total %s, elastic %s; want owned %s over %s, total = owned + elastic",
						r.Strategy, r.OwnedCost.Amount, sim.Hours(r.OwnedWindow), r.TotalCost.Amount, r.ElasticCost.Amount, c.ownedCost, sim.Hours(c.window))
				}
			}
			var table, csv bytes.Buffer
			if err := sim.WriteTable(&table, rs, cfg.BillingCurrency); err != nil {
				t.Fatal(err)
			}
			if err := sim.WriteCSV(&csv, rs, cfg.BillingCurrency); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".txt", table.Bytes())
			golden(t, c.name+".csv", csv.Bytes())
		})
	}
}

// TestDeterminism: the same seed gives byte-identical output; another seed
// draws other interruptions.
func TestDeterminism(t *testing.T) {
	cfg := loadConfig(t)
	jobs := loadTrace(t, "deadline.csv")
	prices := dirPrices(t, cfg, "prices-spike")
	out := func(seed uint64) ([]byte, sim.Result) {
		rs := runAll(t, newSim(t, cfg, jobs, prices, seed), 16)
		var b bytes.Buffer
		if err := sim.WriteCSV(&b, rs, "USD"); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), byStrategy(rs, sim.SpotBurst)
	}
	a, spotA := out(1)
	b, _ := out(1)
	c, spotC := out(2)
	if !bytes.Equal(a, b) {
		t.Error("seed 1 twice: outputs differ")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 1 and 2: identical outputs")
	}
	if spotA.Interruptions == 0 || spotA.ReworkGPUHours.Equal(spotC.ReworkGPUHours) && spotA.Interruptions == spotC.Interruptions {
		t.Errorf("spot interruptions seed 1: %d (%s GPU-h rework), seed 2: %d (%s): want some, and different",
			spotA.Interruptions, spotA.ReworkGPUHours, spotC.Interruptions, spotC.ReworkGPUHours)
	}
}

// TestReworkIsPaid: one checkpointed 1-GPU job on spot only, at a high
// interruption rate. Every billed GPU-minute is either the job's own work
// or work lost since a checkpoint and redone: billed = work + rework.
func TestReworkIsPaid(t *testing.T) {
	cfg := loadConfig(t)
	cfg.InterruptionsPerHour = map[string]decimal.Decimal{"runpod": decimal.NewFromInt(3)}
	jobs, err := sim.ParseTrace(strings.NewReader("submit,job,gpus,hours,checkpointable,data_class,tier,team\n"+
		"2026-12-01T00:00:00Z,j1,4,6,true,public,emergency,research\n"), "one")
	if err != nil {
		t.Fatal(err)
	}
	prices, err := sim.LoadPriceDir(filepath.Join(dir, "prices-spike"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		r, err := newSim(t, cfg, jobs, prices, seed).Run(context.Background(), sim.SpotBurst, 0)
		if err != nil {
			t.Fatal(err)
		}
		work := decimal.NewFromInt(24)
		if r.Interruptions == 0 || !r.ElasticGPUHours.Equal(work.Add(r.ReworkGPUHours)) {
			t.Errorf("seed %d: %d interruptions, billed %s GPU-h, rework %s: want billed = 24 + rework", seed, r.Interruptions, r.ElasticGPUHours, r.ReworkGPUHours)
		}
		// At most one checkpoint interval (30 min × 4 GPUs = 2 GPU-h) is lost per interruption.
		if max := decimal.NewFromInt(int64(2 * r.Interruptions)); r.ReworkGPUHours.GreaterThan(max) {
			t.Errorf("seed %d: rework %s > %s", seed, r.ReworkGPUHours, max)
		}
	}
}

// TestPolicyCache: verdicts are evaluated once per (profile, offer set),
// not once per decision.
func TestPolicyCache(t *testing.T) {
	cfg := loadConfig(t)
	s := newSim(t, cfg, loadTrace(t, "diurnal.csv"), replayPrices(t, cfg), 1)
	rs := runAll(t, s, 32)
	decisions := 0
	for _, r := range rs {
		decisions += r.Decisions
	}
	if s.PolicyEvaluations == 0 || s.PolicyEvaluations > 20 || decisions < 1000 {
		t.Errorf("%d policy evaluations for %d decisions", s.PolicyEvaluations, decisions)
	}
}

func TestBreakeven(t *testing.T) {
	d := decimal.RequireFromString
	for _, c := range []struct {
		month, price, hours, util, perDay string
		never                             bool
	}{
		{"480", "2", "720", "0.3333333333", "8", false},              // the rule of thumb: 8 hours a day
		{"730", "2", "730", "0.5", "12", false},                      // half the day
		{"1460", "2", "730", "1", "24", false},                       // exactly around the clock
		{"1000", "2", "730", "0.6849315068", "16.4383561644", false}, // the bundled sim.yaml at USD 2
		{"2000", "1.5", "730", "1.8264840183", "43.8356164384", true},
	} {
		b, err := sim.ComputeBreakeven(d(c.month), d(c.price), d(c.hours))
		if err != nil {
			t.Fatal(err)
		}
		if b.Utilisation.String() != c.util || b.HoursPerDay.String() != c.perDay || b.OwningNeverPays != c.never {
			t.Errorf("%s/%s/%s: %s, %s h/day, never %t; want %s, %s, %t", c.month, c.price, c.hours,
				b.Utilisation, b.HoursPerDay, b.OwningNeverPays, c.util, c.perDay, c.never)
		}
	}
	if _, err := sim.ComputeBreakeven(d("0"), d("2"), d("730")); err == nil {
		t.Error("zero month cost accepted")
	}
}

func TestParseTraceErrors(t *testing.T) {
	head := "submit,job,gpus,hours,checkpointable,data_class,tier,team\n"
	for _, c := range []struct{ name, body, want string }{
		{"header", "a,b\n", "header"},
		{"seconds", head + "2026-12-01T00:00:30Z,j,1,1,true,public,base,t\n", "submit"},
		{"gpus", head + "2026-12-01T00:00:00Z,j,9,1,true,public,base,t\n", "gpus"},
		{"minutes", head + "2026-12-01T00:00:00Z,j,1,0.001,true,public,base,t\n", "whole minutes"},
		{"negative hours", head + "2026-12-01T00:00:00Z,j,1,-1,true,public,base,t\n", "hours"},
		{"exponent", head + "2026-12-01T00:00:00Z,j,1,1e999999999,true,public,base,t\n", "plain decimal"},
		{"ckpt", head + "2026-12-01T00:00:00Z,j,1,1,yes,public,base,t\n", "checkpointable"},
		{"class", head + "2026-12-01T00:00:00Z,j,1,1,true,secret,base,t\n", "data_class"},
		{"tier", head + "2026-12-01T00:00:00Z,j,1,1,true,public,gold,t\n", "tier"},
		{"dup", head + "2026-12-01T00:00:00Z,j,1,1,true,public,base,t\n2026-12-01T00:00:00Z,j,1,1,true,public,base,t\n", "repeated"},
		{"empty", head, "no jobs"},
		{"span", head + "2026-12-01T00:00:00Z,a,1,1,true,public,base,t\n9999-12-01T00:00:00Z,b,1,1,true,public,base,t\n", "at most"},
	} {
		_, err := sim.ParseTrace(strings.NewReader(c.body), "x.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.csv") {
			t.Errorf("%s: error %v, want one naming x.csv and %q", c.name, err, c.want)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join(dir, "weekend.csv"))
	f.Add(string(b))
	f.Add("submit,job,gpus,hours,checkpointable,data_class,tier,team\n2026-12-01T00:00:00Z,j,1,1.5,true,public,base,t\n")
	f.Add("submit,job,gpus,hours,checkpointable,data_class,tier,team\n2026-12-01T00:00:00Z,j,1,1e999999999,true,public,base,t\n")
	f.Fuzz(func(t *testing.T, s string) {
		jobs, err := sim.ParseTrace(strings.NewReader(s), "fuzz")
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.Minutes <= 0 || j.GPUs < 1 || j.GPUs > 8 || !j.Hours.Mul(decimal.NewFromInt(60)).Equal(decimal.NewFromInt(j.Minutes)) {
				t.Fatalf("accepted bad job %+v", j)
			}
		}
	})
}

func FuzzPriceList(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join(dir, "prices-spike", "spike.csv"))
	f.Add(string(b))
	f.Fuzz(func(t *testing.T, s string) {
		p, err := sim.ParsePrices(strings.NewReader(s), "fuzz", nil)
		if err != nil {
			return
		}
		for _, e := range p.Epochs {
			for _, o := range e.Offers {
				if !o.UnitPrice.Amount.IsPositive() || o.GPUsPerUnit < 1 || !o.Market.Valid() {
					t.Fatalf("accepted bad offer %+v", o)
				}
			}
		}
	})
}

// TestSharedPriceHistory reads ../shared/data/prices when it is there: the
// AWS on-demand history is a real dated series (p4d.24xlarge us-east-1 was
// 32.7726 USD per instance-hour until the table generated 2025-06-23, then
// 21.957642); the other CSVs are skipped with a reason.
func TestSharedPriceHistory(t *testing.T) {
	const shared = "/work/shared/data/prices"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("no shared price data on this machine")
	}
	p, err := sim.LoadPriceDir(shared, func(string) int { return 2 })
	if err != nil {
		t.Fatal(err)
	}
	price := func(at time.Time) string {
		for _, o := range p.Epochs[p.At(at)].Offers {
			if o.ID == "aws:us-east-1:p4d.24xlarge:on-demand" {
				return o.UnitPrice.String()
			}
		}
		return "none"
	}
	if got := price(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); got != "32.7726 USD" {
		t.Errorf("p4d us-east-1 on 2025-01-01: %s", got)
	}
	if got := price(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)); got != "21.957642 USD" {
		t.Errorf("p4d us-east-1 on 2026-08-01: %s", got)
	}
	if len(p.Skipped) < 5 {
		t.Errorf("skipped %v: want the skypilot, spot and claims files listed", p.Skipped)
	}
}

// TestTracesRegenerate: the bundled diurnal and deadline traces are exactly
// what sim/tracegen writes (-update rewrites them).
func TestTracesRegenerate(t *testing.T) {
	for name, gen := range map[string]func(*bytes.Buffer){
		"diurnal.csv":  func(b *bytes.Buffer) { tracegen.Diurnal(b, 1) },
		"deadline.csv": func(b *bytes.Buffer) { tracegen.Deadline(b) },
	} {
		var b bytes.Buffer
		gen(&b)
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from sim/tracegen's output (run with -update)", name)
		}
	}
}

// TestUnservableJobEnds: an 8-GPU job, a 4-GPU owned pool and only 4-GPU
// elastic units (the planner refuses them: unit-too-small). The alarm stops
// re-evaluating once nothing else can change, the run ends, and the job is
// reported as unfinished rather than waited for forever.
func TestUnservableJobEnds(t *testing.T) {
	cfg := loadConfig(t)
	jobs, err := sim.ParseTrace(strings.NewReader("submit,job,gpus,hours,checkpointable,data_class,tier,team\n"+
		"2026-12-01T00:00:00Z,big,8,2,true,public,elastic,research\n"+
		"2026-12-01T00:10:00Z,small,4,1,true,public,elastic,research\n"), "two")
	if err != nil {
		t.Fatal(err)
	}
	r, err := newSim(t, cfg, jobs, dirPrices(t, cfg, "prices-weekend"), 1).Run(context.Background(), sim.OnDemandBurst, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r.Unfinished != 1 || r.Jobs != 1 || r.Makespan != 70*time.Minute || r.JobsElastic != 0 {
		t.Errorf("unfinished %d, jobs %d, makespan %s, elastic %d; want 1, 1, 1h10m, 0", r.Unfinished, r.Jobs, r.Makespan, r.JobsElastic)
	}
	// A lone Run is charged over its own makespan: 4 × 1000 × 70 min ÷
	// (730 × 60) = 6.39269406392…
	if r.OwnedWindow != 70*time.Minute || r.OwnedCost.Amount.String() != "6.3926940639" {
		t.Errorf("owned %s over %s; want 6.3926940639 over 1h10m", r.OwnedCost, sim.Hours(r.OwnedWindow))
	}
}

// TestCommonWindow: a sweep's results are charged over the latest finish
// of any strategy and size, and a window shorter than a result's makespan
// is refused.
func TestCommonWindow(t *testing.T) {
	cfg := loadConfig(t)
	s := newSim(t, cfg, loadTrace(t, "weekend.csv"), dirPrices(t, cfg, "prices-weekend"), 1)
	rs, err := s.Compare(context.Background(), []sim.Strategy{sim.OwnedOnly, sim.OnDemandBurst}, []int{8, 16})
	if err != nil {
		t.Fatal(err)
	}
	var longest time.Duration
	for _, r := range rs {
		longest = max(longest, r.Makespan)
	}
	// Owned-only with 8 GPUs finishes last (131h30m); every result pays
	// over it: 16 × 1000 × 131.5 ÷ 730 = 2882.19178082191… (rounded once,
	// so not twice the rounded 8-GPU figure 1441.095890411).
	if longest != 131*time.Hour+30*time.Minute || sim.CommonWindow(rs) != longest {
		t.Errorf("longest makespan %s, common window %s; want both 131h30m", longest, sim.CommonWindow(rs))
	}
	for _, r := range rs {
		want := map[int]string{8: "1441.095890411", 16: "2882.1917808219"}[r.OwnedGPUs]
		if r.OwnedWindow != longest || r.OwnedCost.Amount.String() != want {
			t.Errorf("%s/%d: owned %s over %s; want %s over 131h30m", r.Strategy, r.OwnedGPUs, r.OwnedCost.Amount, sim.Hours(r.OwnedWindow), want)
		}
	}
	short := rs[0]
	if err := s.ChargeOwned(&short, short.Makespan-time.Minute); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("window shorter than the makespan: error %v", err)
	}
}

// TestReservationFirst: in the deadline spike the backlog covers a capacity
// block's 24-hour term, so reservation-first buys blocks (billed whole terms:
// 13.80 USD × 24 h per block), which the on-demand strategy never does.
func TestReservationFirst(t *testing.T) {
	cfg := loadConfig(t)
	rs := runAll(t, newSim(t, cfg, loadTrace(t, "deadline.csv"), dirPrices(t, cfg, "prices-spike"), 1), 16)
	var reserved sim.CostLine
	for _, l := range byStrategy(rs, sim.ReservationFirst).Elastic {
		if l.Market == sluice.Reserved {
			reserved = l
		}
	}
	blocks := reserved.GPUHours.Div(decimal.NewFromInt(8 * 24))
	if !blocks.IsInteger() || !blocks.IsPositive() || !reserved.Cost.Amount.Equal(blocks.Mul(decimal.RequireFromString("331.2"))) {
		t.Errorf("reserved line %+v: want whole 24-hour blocks at 331.2 USD each", reserved)
	}
	for _, l := range byStrategy(rs, sim.OnDemandBurst).Elastic {
		if l.Market != sluice.OnDemand {
			t.Errorf("on-demand strategy bought %s", l.Market)
		}
	}
}

// TestVerdictCacheChangesNothing: evaluating policy at every decision gives
// byte-identical results to the cached verdicts.
func TestVerdictCacheChangesNothing(t *testing.T) {
	cfg := loadConfig(t)
	st, err := sim.LoadSettings(filepath.Join(dir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, prices := loadTrace(t, "deadline.csv"), dirPrices(t, cfg, "prices-spike")
	out := func(noCache bool) ([]byte, int) {
		s, err := sim.New(sim.Params{Jobs: jobs, Prices: prices, Settings: st, Policy: evaluator(t),
			BillingCurrency: cfg.BillingCurrency, FX: cfg.FX, InterruptionsPerHour: cfg.InterruptionsPerHour,
			Budgets: cfg.Budgets, Seed: 1, NoVerdictCache: noCache})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := sim.WriteCSV(&b, runAll(t, s, 16), "USD"); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), s.PolicyEvaluations
	}
	cached, n1 := out(false)
	uncached, n2 := out(true)
	if !bytes.Equal(cached, uncached) || n2 <= n1 {
		t.Errorf("cached (%d evaluations) and uncached (%d) runs differ", n1, n2)
	}
}

// TestPolicyDecides: what may be bought is the production policy's answer.
// Beijing-only data gets only Beijing capacity (residency); a job that
// cannot checkpoint never gets spot (interruptibility).
func TestPolicyDecides(t *testing.T) {
	cfg := loadConfig(t)
	prices := replayPrices(t, cfg)
	var b strings.Builder
	b.WriteString("submit,job,gpus,hours,checkpointable,data_class,tier,team\n")
	for i := range 6 {
		fmt.Fprintf(&b, "2026-11-02T09:00:00Z,bj-%d,4,6,true,cn-beijing-only,elastic,risk-models\n", i)
		fmt.Fprintf(&b, "2026-11-02T09:00:00Z,nockpt-%d,4,3,false,public,emergency,applied\n", i)
	}
	jobs, err := sim.ParseTrace(strings.NewReader(b.String()), "policy")
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(t, cfg, jobs, prices, 1)
	od, err := s.Run(context.Background(), sim.OnDemandBurst, 0)
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]bool{}
	for _, l := range od.Elastic {
		providers[l.Provider] = true
	}
	// Six Beijing-only jobs: the Beijing offers (Alibaba cn-beijing, AutoDL
	// beijingDC*) cover them; the public jobs may go anywhere.
	if !providers["aliyun"] && !providers["autodl"] {
		t.Errorf("on-demand providers %v: the Beijing-only jobs got no Beijing capacity", providers)
	}
	if od.Unfinished != 0 || od.JobsElastic != 12 {
		t.Errorf("on-demand: %d elastic, %d unfinished; want 12, 0", od.JobsElastic, od.Unfinished)
	}
	spot, err := s.Run(context.Background(), sim.SpotBurst, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Spot only: the 6 non-checkpointable jobs are refused every offer and,
	// with no owned pool, never run.
	if spot.Unfinished != 6 || spot.JobsElastic != 6 {
		t.Errorf("spot: %d elastic, %d unfinished; want 6, 6", spot.JobsElastic, spot.Unfinished)
	}
	for _, l := range spot.Elastic {
		if l.Provider != "aliyun" { // the only Beijing spot offers: Alibaba cn-beijing
			t.Errorf("spot line %+v: Beijing-only jobs bought capacity outside Beijing", l)
		}
	}
}

// TestBadTraceExactText pins the whole message for a team or job id that
// would forge table or CSV rows, and for a span beyond what a time.Duration
// holds (it printed as the saturated 2562047h47m16.854775807s).
func TestBadTraceExactText(t *testing.T) {
	head := "submit,job,gpus,hours,checkpointable,data_class,tier,team\n"
	row := "2026-12-01T00:00:00Z,j,1,1,true,public,base,"
	for _, c := range []struct{ name, body, want string }{
		{"team with a newline", head + row + "\"x\ny\"\n", `trace x.csv: line 2: team "x\ny": U+000A at byte 1: control or format character`},
		{"team with a terminal escape", head + "# c\n" + row + "\x1b[31mred\n", `trace x.csv: line 3: team "\x1b[31mred": U+001B at byte 0: control or format character`},
		{"team with a zero-width space", head + row + "ml\u200bops\n", `trace x.csv: line 2: team "ml\u200bops": U+200B at byte 2: control or format character`},
		{"team with invalid UTF-8", head + row + "ml\xffops\n", `trace x.csv: line 2: team "ml\xffops": invalid UTF-8`},
		{"job id with a carriage return", head + "2026-12-01T00:00:00Z,\"j\r\",1,1,true,public,base,t\n", `trace x.csv: line 2: job "j\r": U+000D at byte 1: control or format character`},
		{"span 0001 to 9999", head + "0001-01-01T00:00:00Z,a,1,1,true,public,base,t\n9999-12-31T23:59:00Z,b,1,1,true,public,base,t\n",
			"trace x.csv: submits span 3652058d 23h 59m (0001-01-01T00:00:00Z → 9999-12-31T23:59:00Z): at most 366d 0h 0m"},
		{"span a minute too long", head + "2026-12-01T00:00:00Z,a,1,1,true,public,base,t\n2027-12-02T00:01:00Z,b,1,1,true,public,base,t\n",
			"trace x.csv: submits span 366d 0h 1m (2026-12-01T00:00:00Z → 2027-12-02T00:01:00Z): at most 366d 0h 0m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := sim.ParseTrace(strings.NewReader(c.body), "x.csv")
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v\nwant  %s", err, c.want)
			}
		})
	}
	// A span of exactly 366 days, and a team with spaces and non-ASCII letters, are fine.
	if _, err := sim.ParseTrace(strings.NewReader(head+row+"ML 训练\n2027-12-02T00:00:00Z,k,1,1,true,public,base,t\n"), "x.csv"); err != nil {
		t.Errorf("366-day trace: %v", err)
	}
}
