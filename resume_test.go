package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/sandbox"
	"github.com/sluicehq/sluice/ledger"
)

// t0 is the alarm's state-change time; decisions are made 30 s later.
var t0 = time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)

// clock is a settable decision clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// zones is the residency map of the test offers' regions (policy data's role).
var zones = map[string]sluice.Zone{
	"us-east-1": sluice.ZoneOverseas, "US-CA": sluice.ZoneOverseas,
	"cn-beijing": sluice.ZoneBeijing, "beijingDC1": sluice.ZoneBeijing,
}

// zonePolicy allows an offer whose region's zone the profile's data class
// allows: cn-beijing-only → beijing; public → any.
type zonePolicy struct{}

func (zonePolicy) Revision() string { return "test-policy" }
func (zonePolicy) Evaluate(_ context.Context, p sluice.QueueProfile, offers []sluice.Offer, _ time.Time) ([]sluice.Verdict, error) {
	out := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		z := zones[o.Region]
		allow := p.DataClass == "public" || z == sluice.ZoneBeijing
		v := sluice.Verdict{OfferID: o.ID, Allow: allow, Zone: z}
		if !allow {
			v.Reasons = []sluice.Reason{{Code: sluice.ReasonResidency, Message: string(z) + " not allowed for " + p.DataClass}}
		}
		out[i] = v
	}
	return out, nil
}

type quotes []sluice.Offer

func (q quotes) Collect(context.Context) ([]sluice.Offer, []sluice.SourceReport) {
	return slices.Clone(q), []sluice.SourceReport{{Provider: "test", Offers: len(q)}}
}

func offer(id, provider, region string, market sluice.Market, price string, units int) sluice.Offer {
	return sluice.Offer{ID: id, Provider: provider, SKU: id, GPUModel: "A100-80GB", GPUsPerUnit: 8, Region: region,
		Market: market, UnitPrice: sluice.MustMoney(price, "USD"), Basis: sluice.PerInstanceHour, RawPrice: price,
		UnitsAvailable: units, FetchedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), Source: "test"}
}

// market: overseas spot at 10 USD/h (cheapest), overseas on-demand at 14,
// Beijing on-demand at 16 (aliyun) and 18 (autodl). Each unit is one 8-GPU slot.
var market = quotes{
	offer("aws-spot", "aws", "us-east-1", sluice.Spot, "10", 2),
	offer("runpod-od", "runpod", "US-CA", sluice.OnDemand, "14", 2),
	offer("aliyun-od", "aliyun", "cn-beijing", sluice.OnDemand, "16", 2),
	offer("autodl-od", "autodl", "beijingDC1", sluice.OnDemand, "18", 2),
}

func profile(q string) (sluice.QueueProfile, error) {
	p := sluice.QueueProfile{Queue: q, GPUModels: []string{"A100-80GB"}, GPUsPerSlot: 8,
		HoursPerSlot: sluice.MustMoney("4", "USD").Amount, MaxSlots: 2, Checkpointable: true, CheckpointIntervalMinutes: 30,
		DataClass: "public", ExportApproved: true, Tier: sluice.TierEmergency, Team: "research",
		MaxPricePerGPUHour: sluice.MustMoney("3", "USD")}
	switch q {
	case "train-overseas":
	case "train-beijing":
		p.DataClass = "cn-beijing-only"
	default:
		return p, fmt.Errorf("unknown queue %q", q)
	}
	return p, nil
}

// world is one test's shared state: a ledger file and a sandbox provider
// state file, as separate processes would share them.
type world struct {
	dir, ledgerPath, statePath string
	clock                      *clock

	mu    sync.Mutex
	procs int
	dead  map[string]bool // process names that "died" (see decideCrashing)
}

// alive says whether the process named in a line claim's owner
// ("proc-<n>/<seq>") is still running.
func (w *world) alive(owner string) bool {
	name, _, _ := strings.Cut(owner, "/")
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.dead[name]
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	return &world{dir: dir, ledgerPath: filepath.Join(dir, "ledger.db"), statePath: filepath.Join(dir, "provider.json"),
		clock: &clock{t: t0.Add(30 * time.Second)}}
}

// process is what one `sluice burst` process holds: its own ledger handle,
// broker and in-process caches.
type process struct {
	name   string
	world  *world
	ledger *ledger.SQLite
	broker *sandbox.Broker
	burst  *sluice.Burst
}

func (w *world) process(t *testing.T) *process {
	t.Helper()
	l, err := ledger.OpenSQLite(t.Context(), w.ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b := &sandbox.Broker{Now: w.clock.Now, StatePath: w.statePath}
	w.mu.Lock()
	w.procs++
	name := fmt.Sprintf("proc-%d", w.procs)
	w.mu.Unlock()
	return &process{name: name, world: w, ledger: l, broker: b, burst: &sluice.Burst{
		Profiles: profile, Quotes: market, Policy: zonePolicy{}, Ledger: l, Broker: b, Clock: w.clock,
		BillingCurrency: "USD", CodeVersion: "test",
		Budgets: map[sluice.Tier]sluice.Money{sluice.TierEmergency: sluice.MustMoney("5000", "USD")},
		Owner:   name, OwnerAlive: w.alive,
	}}
}

func trigger(queue string) sluice.Trigger {
	return sluice.Trigger{AlarmName: queue + "-depth", AlarmARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + queue + "-depth",
		State: sluice.StateAlarm, StateChangeTime: t0, Region: "us-east-1", Queue: queue, Depth: 2,
		DepthSource: "alarm-datapoint", Delivery: "sns"}
}

// agree checks that the provider and the ledger agree: every running order is
// an open placement of the ledger (0 orphans, 0 unrecorded), no line has two
// orders (0 duplicates), and every open placement is running. It returns the
// number of running orders.
func agree(t *testing.T, p *process) int {
	t.Helper()
	running, err := p.broker.Running()
	if err != nil {
		t.Fatal(err)
	}
	open, err := p.ledger.OpenPlacements(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, op := range open {
		recorded[op.ClientToken] = true
	}
	seen := map[string]bool{}
	for _, o := range running {
		if seen[o.ClientToken] {
			t.Errorf("duplicate order for %s", o.ClientToken)
		}
		seen[o.ClientToken] = true
		if !recorded[o.ClientToken] {
			t.Errorf("running order %s has no open placement in the ledger", o.ClientToken)
		}
	}
	for _, op := range open {
		if !seen[op.ClientToken] {
			t.Errorf("open placement %s is not running at the provider", op.ClientToken)
		}
	}
	if _, err := p.ledger.Verify(t.Context()); err != nil {
		t.Errorf("ledger chain: %v", err)
	}
	return len(running)
}

func TestSameAlarmFiveTimesConcurrently(t *testing.T) {
	w := newWorld(t)
	procs := make([]*process, 5)
	for i := range procs {
		procs[i] = w.process(t)
	}
	recs := make([]sluice.DecisionRecord, 5)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { recs[i], _, errs[i] = p.burst.Decide(context.Background(), trigger("train-overseas")) })
	}
	wg.Wait()
	for i := range recs {
		if errs[i] != nil {
			t.Fatalf("delivery %d: %v", i, errs[i])
		}
		if recs[i].DecisionID != recs[0].DecisionID {
			t.Fatalf("delivery %d decided %s, want %s", i, recs[i].DecisionID, recs[0].DecisionID)
		}
	}
	if n := agree(t, procs[0]); n != 1 {
		t.Fatalf("%d orders at the provider, want 1 (one aws spot line of 2 units)", n)
	}
	st, _ := procs[0].broker.Snapshot()
	if len(st.Orders) != 1 || len(st.Orders[0].Placement.ExternalIDs) != 2 {
		t.Fatalf("provider orders: %+v", st.Orders)
	}
	if live, _ := procs[0].ledger.LiveSlots(t.Context(), "train-overseas"); live != 2 {
		t.Fatalf("live %d, want 2", live)
	}
	// A sixth delivery later: nothing to do, replayed.
	rec, replayed, err := w.process(t).burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil || !replayed || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("redelivery: replayed=%v outcome=%s err=%v", replayed, rec.Outcome, err)
	}
}

// crash makes Step panic at step, standing in for the process dying there
// (the real-process crash test is in cmd/sluice).
type crashed string

func crashAt(step string) func(string) {
	return func(s string) {
		if s == step {
			panic(crashed(s))
		}
	}
}

func decideCrashing(t *testing.T, p *process, tr sluice.Trigger) (died bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			died = true
			p.world.mu.Lock()
			if p.world.dead == nil {
				p.world.dead = map[string]bool{}
			}
			p.world.dead[p.name] = true
			p.world.mu.Unlock()
		}
	}()
	_, _, err := p.burst.Decide(context.Background(), tr)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return false
}

func TestCrashAtEveryStepThenRerun(t *testing.T) {
	// Line 0 (aws spot) is refused for capacity, so the chain has a follow-up
	// (runpod on-demand) and two provider calls.
	for _, step := range []string{sluice.StepAfterIntent, sluice.StepAfterPlace(1), sluice.StepAfterFollowUpIntent,
		sluice.StepAfterPlace(2), sluice.StepBeforeOutcome} {
		t.Run(step, func(t *testing.T) {
			w := newWorld(t)
			first := w.process(t)
			if err := first.broker.AddFault(sandbox.Fault{Op: sandbox.OpPlace, OfferID: "aws-spot", Class: sandbox.FaultCapacity}); err != nil {
				t.Fatal(err)
			}
			first.burst.Step = crashAt(step)
			if !decideCrashing(t, first, trigger("train-overseas")) {
				t.Fatalf("did not reach %s", step)
			}
			second := w.process(t)
			rec, _, err := second.burst.Decide(context.Background(), trigger("train-overseas"))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Outcome != sluice.StatusPlaced || len(rec.FollowUps) != 1 || rec.FollowUps[0].Lines[0].OfferID != "runpod-od" {
				t.Fatalf("outcome %s, follow-ups %d", rec.Outcome, len(rec.FollowUps))
			}
			if n := agree(t, second); n != 1 {
				t.Fatalf("%d orders running, want 1", n)
			}
			st, _ := second.broker.Snapshot()
			if len(st.Orders) != 1 {
				t.Fatalf("%d orders ever created, want 1: %+v", len(st.Orders), st.Orders)
			}
			if live, _ := second.ledger.LiveSlots(t.Context(), "train-overseas"); live != 2 {
				t.Fatalf("live %d, want 2", live)
			}
		})
	}
}

func TestTimeoutAfterCreateIsAdopted(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	if err := p.broker.AddFault(sandbox.Fault{Op: sandbox.OpPlace, Class: sandbox.FaultTimeoutAfterCreate, Times: 1}); err != nil {
		t.Fatal(err)
	}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != sluice.StatusPlaced || len(rec.Placements) != 1 || len(rec.Placements[0].ExternalIDs) != 2 {
		t.Fatalf("outcome %s placements %+v", rec.Outcome, rec.Placements)
	}
	st, _ := p.broker.Snapshot()
	want := []string{"place aws " + rec.DecisionID + "-l0", "find aws " + rec.DecisionID + "-l0"}
	if len(st.Orders) != 1 || !slices.Equal(st.Calls, want) {
		t.Fatalf("orders %d, calls %q; want 1 order, %q (adopted, not bought again)", len(st.Orders), st.Calls, want)
	}
	agree(t, p)
}

func TestLostAnswerUnresolvedThenRetryAdopts(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	// Created but the answer is lost; the look-up and the second try are
	// throttled: the line stays unresolved, with no record.
	for _, f := range []sandbox.Fault{
		{Op: sandbox.OpPlace, Class: sandbox.FaultTimeoutAfterCreate, Times: 1},
		{Op: sandbox.OpFind, Class: sandbox.FaultTransient, Times: 1},
		{Op: sandbox.OpPlace, Class: sandbox.FaultTransient, Times: 1},
	} {
		if err := p.broker.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if !errors.Is(err, sluice.ErrUnresolved) || len(rec.Placements) != 0 {
		t.Fatalf("err %v, placements %+v; want ErrUnresolved and no record", err, rec.Placements)
	}
	// The retry (another process) looks the line up first and adopts it.
	q := w.process(t)
	rec, replayed, err := q.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil || replayed || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("retry: replayed=%v outcome=%s err=%v", replayed, rec.Outcome, err)
	}
	st, _ := q.broker.Snapshot()
	token := rec.DecisionID + "-l0"
	want := []string{"place aws " + token, "find aws " + token, "place aws " + token, "find aws " + token}
	if len(st.Orders) != 1 || !slices.Equal(st.Calls, want) {
		t.Fatalf("orders %d, calls %q; want 1 order and %q (adopted, not bought again)", len(st.Orders), st.Calls, want)
	}
	agree(t, q)
}

func TestUnresolvedLineIsNotRecordedAndRetryResumes(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	// Throttled twice (nothing created): the line stays unresolved.
	if err := p.broker.AddFault(sandbox.Fault{Op: sandbox.OpPlace, Class: sandbox.FaultTransient, Times: 2}); err != nil {
		t.Fatal(err)
	}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if !errors.Is(err, sluice.ErrUnresolved) || len(rec.Placements) != 0 || rec.Outcome != sluice.StatusPlacing {
		t.Fatalf("err %v, placements %d, outcome %s; want ErrUnresolved, none, placing", err, len(rec.Placements), rec.Outcome)
	}
	if live, _ := p.ledger.LiveSlots(t.Context(), "train-overseas"); live != 2 {
		t.Fatalf("live %d: an unresolved line must keep its slots", live)
	}
	rec, replayed, err := w.process(t).burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil || replayed || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("retry: replayed=%v outcome=%s err=%v", replayed, rec.Outcome, err)
	}
	if n := agree(t, p); n != 1 {
		t.Fatalf("%d orders", n)
	}
}

func TestFallThrough(t *testing.T) {
	tests := []struct {
		name, queue, refused, class string
		want                        string // offer of the follow-up line
	}{
		{"capacity moves to the next cheapest", "train-overseas", "aws-spot", sandbox.FaultCapacity, "runpod-od"},
		{"capability is like capacity", "train-overseas", "aws-spot", sandbox.FaultCapability, "runpod-od"},
		// A quota refusal falls through within the refused line's zone.
		{"quota stays in the zone (overseas)", "train-overseas", "aws-spot", sandbox.FaultQuota, "runpod-od"},
		{"capacity in Beijing", "train-beijing", "aliyun-od", sandbox.FaultCapacity, "autodl-od"},
		{"quota in Beijing stays in Beijing", "train-beijing", "aliyun-od", sandbox.FaultQuota, "autodl-od"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.process(t)
			if err := p.broker.AddFault(sandbox.Fault{Op: sandbox.OpPlace, OfferID: tc.refused, Class: tc.class}); err != nil {
				t.Fatal(err)
			}
			rec, _, err := p.burst.Decide(context.Background(), trigger(tc.queue))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Placements) != 1 || rec.Placements[0].ErrorClass != tc.class || rec.Placements[0].Error == "" {
				t.Fatalf("first placement: %+v", rec.Placements)
			}
			if len(rec.FollowUps) != 1 {
				t.Fatalf("%d follow-ups", len(rec.FollowUps))
			}
			fu := rec.FollowUps[0]
			if fu.DecisionID != rec.DecisionID+"-f1" || fu.FollowUpOf != rec.DecisionID || len(fu.Lines) != 1 || fu.Lines[0].OfferID != tc.want {
				t.Fatalf("follow-up %s of %s: lines %+v", fu.DecisionID, fu.FollowUpOf, fu.Lines)
			}
			if fu.Demand.Live != 0 || fu.Demand.Slots != 2 || len(fu.Placements) != 1 || fu.Placements[0].Error != "" {
				t.Fatalf("follow-up demand %+v placements %+v", fu.Demand, fu.Placements)
			}
			unavailable := false
			for _, r := range fu.Rejected {
				for _, why := range r.Reasons {
					if r.OfferID == tc.refused && why.Code == sluice.ReasonUnavailable {
						unavailable = true
					}
				}
			}
			if !unavailable {
				t.Fatalf("the refused offer is not rejected as unavailable: %+v", fu.Rejected)
			}
			if rec.Outcome != sluice.StatusPlaced {
				t.Fatalf("outcome %s", rec.Outcome)
			}
			if live, _ := p.ledger.LiveSlots(t.Context(), tc.queue); live != 2 {
				t.Fatalf("live %d, want 2", live)
			}
			agree(t, p)
			// Redelivered: the chain is read back, nothing placed.
			again, replayed, err := w.process(t).burst.Decide(context.Background(), trigger(tc.queue))
			if err != nil || !replayed || len(again.FollowUps) != 1 || again.Outcome != sluice.StatusPlaced {
				t.Fatalf("redelivery: replayed=%v follow-ups=%d outcome=%s err=%v", replayed, len(again.FollowUps), again.Outcome, err)
			}
		})
	}
}

func TestQuotaNeverCrossesZones(t *testing.T) {
	// A public queue may use every zone. aws (overseas, 10) is refused, then
	// runpod (overseas, 14) for capacity. After a capacity refusal of aws the
	// chain moves on to Beijing (aliyun, 16); after a quota refusal of aws it
	// does not: a quota problem never moves work across residency zones.
	tests := []struct {
		awsClass string
		want     string // offer of the second follow-up ("" = no offer)
	}{
		{sandbox.FaultCapacity, "aliyun-od"},
		{sandbox.FaultQuota, ""},
	}
	for _, tc := range tests {
		t.Run(tc.awsClass, func(t *testing.T) {
			w := newWorld(t)
			p := w.process(t)
			for _, f := range []sandbox.Fault{
				{Op: sandbox.OpPlace, OfferID: "aws-spot", Class: tc.awsClass},
				{Op: sandbox.OpPlace, OfferID: "runpod-od", Class: sandbox.FaultCapacity},
			} {
				if err := p.broker.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.FollowUps) != 2 {
				t.Fatalf("%d follow-ups", len(rec.FollowUps))
			}
			second := rec.FollowUps[1]
			if tc.want == "" {
				if len(second.Lines) != 0 || second.Status != sluice.StatusNoOffer || rec.Outcome != sluice.StatusPartial {
					t.Fatalf("second follow-up %s lines %+v, outcome %s", second.Status, second.Lines, rec.Outcome)
				}
				if n := agree(t, p); n != 0 {
					t.Fatalf("%d orders", n)
				}
				return
			}
			if len(second.Lines) != 1 || second.Lines[0].OfferID != tc.want || rec.Outcome != sluice.StatusPlaced {
				t.Fatalf("second follow-up lines %+v, outcome %s", second.Lines, rec.Outcome)
			}
			if n := agree(t, p); n != 1 {
				t.Fatalf("%d orders", n)
			}
		})
	}
}

func TestCapacityRefusalIsRememberedForTTL(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	if err := p.broker.AddFault(sandbox.Fault{Op: sandbox.OpPlace, OfferID: "aws-spot", Class: sandbox.FaultCapacity, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.burst.Decide(context.Background(), trigger("train-overseas")); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.burst.Unavailable.Until("aws", "aws-spot", w.clock.Now()); !ok {
		t.Fatal("aws-spot not marked unavailable")
	}
	drain := &sluice.Drainer{Ledger: p.ledger, Broker: p.broker, Clock: w.clock}
	// The queue drains and backs up again twice: a minute later (within the
	// TTL) aws-spot is not chosen although it is the cheapest and the provider
	// would now sell it; after the TTL it is.
	for i, tc := range []struct {
		after time.Duration
		want  string
	}{{time.Minute, "runpod-od"}, {sluice.DefaultUnavailableTTL, "aws-spot"}} {
		if _, err := drain.DrainQueue(context.Background(), "train-overseas", sluice.ReleaseDrain); err != nil {
			t.Fatal(err)
		}
		w.clock.Add(tc.after)
		tr := trigger("train-overseas")
		tr.StateChangeTime = w.clock.Now().Add(-30 * time.Second)
		market := slices.Clone(market)
		for j := range market {
			market[j].FetchedAt, market[j].ExpiresAt = w.clock.Now(), w.clock.Now().Add(5*time.Minute)
		}
		p.burst.Quotes = market
		rec, _, err := p.burst.Decide(context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Lines) != 1 || rec.Lines[0].OfferID != tc.want || len(rec.FollowUps) != 0 {
			t.Fatalf("alarm %d after %s: lines %+v follow-ups %d; want %s", i+2, tc.after, rec.Lines, len(rec.FollowUps), tc.want)
		}
	}
}

func TestReuseGoesThroughTheSameChecks(t *testing.T) {
	// The provider already holds capacity under the line's token at a price
	// far above the line's bid (another process placed an older plan): it is
	// recorded, released at once (price-mismatch) and the line falls through.
	w := newWorld(t)
	p := w.process(t)
	id := sluice.DecisionID(trigger("train-overseas"))
	dear := sluice.Line{OfferID: "aws-spot", Provider: "aws", Market: sluice.Spot, Units: 2, Slots: 2, UnitPrice: sluice.MustMoney("30", "USD")}
	if _, err := p.broker.Place(context.Background(), id, 0, dear); err != nil {
		t.Fatal(err)
	}
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Placements) != 1 || rec.Placements[0].ErrorClass != sluice.ClassPriceMismatch {
		t.Fatalf("placements %+v", rec.Placements)
	}
	if len(rec.FollowUps) != 1 || rec.FollowUps[0].Lines[0].OfferID != "runpod-od" || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("follow-ups %+v outcome %s", rec.FollowUps, rec.Outcome)
	}
	if n := agree(t, p); n != 1 {
		t.Fatalf("%d orders running, want 1 (the dear one released)", n)
	}
	if live, _ := p.ledger.LiveSlots(t.Context(), "train-overseas"); live != 2 {
		t.Fatalf("live %d, want 2", live)
	}
	if !strings.HasPrefix(rec.FollowUps[0].Placements[0].ClientToken, id+"-f1-l0") {
		t.Fatalf("token %s", rec.FollowUps[0].Placements[0].ClientToken)
	}
}

// denying is the test policy with one provider refused (a compliance change).
type denying struct {
	zonePolicy
	provider string
}

func (d denying) Revision() string { return "test-policy-deny-" + d.provider }
func (d denying) Evaluate(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) ([]sluice.Verdict, error) {
	vs, err := d.zonePolicy.Evaluate(ctx, p, offers, now)
	for i, o := range offers {
		if o.Provider == d.provider {
			vs[i].Allow = false
			vs[i].Reasons = append(vs[i].Reasons, sluice.Reason{Code: sluice.ReasonResidency, Rule: "test.deny", Message: d.provider + " refused"})
		}
	}
	return vs, err
}

func TestAdoptedCapacityIsCheckedAgainstTheCurrentPolicy(t *testing.T) {
	// The first process places line 0 at aws and dies before recording it;
	// meanwhile compliance refuses aws. The retry finds the instances, the
	// policy now refuses them: recorded (class policy), released at once
	// (reason policy-refused), and the line falls through to runpod.
	w := newWorld(t)
	first := w.process(t)
	first.burst.Step = crashAt(sluice.StepAfterPlace(1))
	if !decideCrashing(t, first, trigger("train-overseas")) {
		t.Fatal("did not crash")
	}
	second := w.process(t)
	second.burst.Policy = denying{provider: "aws"}
	rec, _, err := second.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Placements) != 1 || rec.Placements[0].ErrorClass != sluice.ClassPolicy || rec.Placements[0].Error != "" {
		t.Fatalf("placements %+v", rec.Placements)
	}
	fu := rec.FollowUps
	if len(fu) != 1 || fu[0].PolicyRevision != "test-policy-deny-aws" || fu[0].Lines[0].OfferID != "runpod-od" || rec.Outcome != sluice.StatusPlaced {
		t.Fatalf("follow-ups %+v outcome %s", fu, rec.Outcome)
	}
	if n := agree(t, second); n != 1 {
		t.Fatalf("%d orders running, want 1 (runpod; aws released)", n)
	}
	if live, _ := second.ledger.LiveSlots(t.Context(), "train-overseas"); live != 2 {
		t.Fatalf("live %d, want 2", live)
	}
	if n, err := second.ledger.Verify(t.Context()); err != nil || n != 6 {
		// decision, placement (policy), release-pending, released, follow-up, its placement
		t.Fatalf("ledger: %d records, %v", n, err)
	}
}

func TestConcurrentResumersClaimLines(t *testing.T) {
	// A provider without idempotency tokens (every Place buys). The first
	// process dies after recording its intent; five processes then resume
	// the decision at once. The line claims let exactly one of them call
	// the provider; the others wait for its record.
	w := newWorld(t)
	first := w.process(t)
	first.burst.Step = crashAt(sluice.StepAfterIntent)
	if !decideCrashing(t, first, trigger("train-overseas")) {
		t.Fatal("did not crash")
	}
	procs := make([]*process, 5)
	for i := range procs {
		procs[i] = w.process(t)
		procs[i].broker.NoToken = true
		procs[i].broker.Latency = 50 * time.Millisecond
	}
	recs := make([]sluice.DecisionRecord, 5)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { recs[i], _, errs[i] = p.burst.Decide(context.Background(), trigger("train-overseas")) })
	}
	wg.Wait()
	for i := range recs {
		if errs[i] != nil || recs[i].Outcome != sluice.StatusPlaced {
			t.Fatalf("resumer %d: %s, %v", i, recs[i].Outcome, errs[i])
		}
	}
	st, _ := procs[0].broker.Snapshot()
	if len(st.Orders) != 1 {
		t.Fatalf("%d orders at a provider without tokens, want 1", len(st.Orders))
	}
	agree(t, procs[0])
}

func TestReservationAccruesItsWholeTerm(t *testing.T) {
	// A 24-hour capacity block at 9 USD per instance-hour, 1 unit, drained
	// after 30 minutes: paid for its term, 9 × 24 = 216 USD, 86400 s.
	w := newWorld(t)
	p := w.process(t)
	block := offer("aws-block", "aws", "us-east-1", sluice.Reserved, "9", 1)
	block.TermHours = 24
	p.burst.Quotes = quotes{block}
	tr := trigger("train-overseas")
	tr.Depth = 1
	rec, _, err := p.burst.Decide(context.Background(), tr)
	if err != nil || rec.Outcome != sluice.StatusPlaced || rec.Lines[0].Market != sluice.Reserved {
		t.Fatalf("decide: %v %s %+v", err, rec.Outcome, rec.Lines)
	}
	w.clock.Add(30 * time.Minute)
	tr.State = sluice.StateOK
	rep, err := (&sluice.Drainer{Ledger: p.ledger, Broker: p.broker, Clock: w.clock}).Drain(context.Background(), tr)
	if err != nil || len(rep.Released) != 1 {
		t.Fatalf("drain: %+v %v", rep, err)
	}
	if r := rep.Released[0]; r.AccruedCost.String() != "216 USD" || r.BilledSeconds != 86400 {
		t.Fatalf("accrued %s for %d s, want 216 USD for 86400 s", r.AccruedCost, r.BilledSeconds)
	}
}

// A provider whose clock (or time zone) is off reports a start before the
// decision; the recorded placement starts at the decision instead (intent is
// recorded before any call), so billing never counts time before it.
func TestPlacedAtNeverBeforeTheDecision(t *testing.T) {
	w := newWorld(t)
	p := w.process(t)
	p.broker.Now = func() time.Time { return w.clock.Now().Add(-8 * time.Hour) }
	rec, _, err := p.burst.Decide(context.Background(), trigger("train-overseas"))
	if err != nil || len(rec.Placements) == 0 {
		t.Fatalf("decide: %v, %d placements", err, len(rec.Placements))
	}
	for _, pl := range rec.Placements {
		if !pl.PlacedAt.Equal(rec.DecidedAt) {
			t.Errorf("line %d placed at %s; want the decision time %s", pl.Line, pl.PlacedAt, rec.DecidedAt)
		}
	}
}
