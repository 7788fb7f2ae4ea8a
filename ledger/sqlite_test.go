package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func usd(a string) sluice.Money { return sluice.MustMoney(a, "USD") }
func cny(a string) sluice.Money { return sluice.MustMoney(a, "CNY") }

// Budget period of every sample decision: March 2025, UTC.
var (
	march = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	april = time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)
	may   = time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
)

// sampleTotal is the billing-currency total of sampleDecision's plan.
const sampleTotal = "438.7160245941"

// sampleDecision is a fixed, fully populated decision record for queue, as
// planned on an empty ledger: the queue has no live slots (Demand.Live 0,
// depth 2, so 2 slots wanted) and the emergency tier has spent nothing in
// March 2025 (Budget.Spent 0). Its plan covers the 2 slots with one line
// costing sampleTotal CNY. On a ledger that is not empty the record is stale
// until refresh (or appendDecision) sets Live and Spent to what the ledger holds.
func sampleDecision(id, queue string) sluice.DecisionRecord {
	cst := time.FixedZone("CST", 8*3600)
	t0 := time.Date(2025, 3, 14, 9, 26, 53, 589000000, time.UTC)
	fx := sluice.FXRate{Base: "USD", Quote: "CNY", Rate: dec("7.1072"), AsOf: time.Date(2025, 3, 14, 9, 15, 0, 0, cst), Source: "CFETS central parity"}
	bid := usd("1.05")
	profile := sluice.QueueProfile{
		Queue: queue, GPUModels: []string{"A100-80GB", "A100-40GB"}, GPUsPerSlot: 8, HoursPerSlot: dec("2.5"),
		MaxSlots: 4, Checkpointable: true, CheckpointIntervalMinutes: 30, DataClass: "public",
		Tier: sluice.TierEmergency, Team: "vision", MaxPricePerGPUHour: cny("14.2144"),
	}
	return sluice.DecisionRecord{
		Kind:       "decision",
		DecisionID: id,
		Status:     sluice.StatusPlanned,
		DecidedAt:  t0.Add(1500 * time.Millisecond),
		Trigger: sluice.Trigger{
			AlarmName: queue + "-depth", AlarmARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + queue + "-depth",
			State: sluice.StateAlarm, StateChangeTime: t0, Region: "us-east-1", Queue: queue, Depth: 2,
			DepthSource: "alarm-datapoint", Delivery: "sns",
		},
		Profile: profile,
		Demand:  sluice.NewDemand(profile, 2, 0),
		Sources: []sluice.SourceReport{{Provider: "vast", Offers: 1, LatencyMS: 212},
			{Provider: "runpod", Error: "context deadline exceeded", LatencyMS: 2000}},
		Offers: []sluice.Offer{{
			ID: "vast:1234:bid", Provider: "vast", SKU: "1234", GPUModel: "A100-80GB", GPUsPerUnit: 8,
			Region: "US", City: "Austin, TX", Market: sluice.Spot, UnitPrice: usd("12.345678901234"),
			Basis: sluice.PerOfferHour, RawPrice: "12.345678901234", MinBid: usd("1.05"), UnitsAvailable: 2,
			FetchedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), Source: "GET https://console.vast.ai/api/v0/bundles/",
		}},
		Verdicts: []sluice.Verdict{{OfferID: "vast:1234:bid", Allow: true, Zone: sluice.ZoneOverseas,
			Reasons: []sluice.Reason{{Code: "note", Rule: "residency.export", Message: "export approved <public> & logged"}}}},
		BillingCurrency: "CNY",
		Budget: &sluice.BudgetState{Tier: sluice.TierEmergency, PeriodStart: march, PeriodEnd: april,
			Budget: cny("120000.125"), Spent: cny("0"), Headroom: cny("120000.125")},
		Plan: sluice.Plan{
			Lines: []sluice.Line{{
				OfferID: "vast:1234:bid", Provider: "vast", SKU: "1234", Region: "US", Zone: sluice.ZoneOverseas,
				Market: sluice.Spot, GPUModel: "A100-80GB", Units: 2, GPUs: 16, Slots: 2,
				UnitPrice: usd("12.345678901234"), Bid: &bid, Hours: dec("2.5"),
				BaseCost: usd("61.72839450617"), ReworkCost: usd("0.000000000001"), ExpectedCost: usd("61.728394506171"),
				ExpectedCostBilling: cny(sampleTotal), FX: &fx,
			}},
			SlotsWanted: 2, SlotsCovered: 2, TotalExpectedCost: cny(sampleTotal),
			Rejected: []sluice.Rejection{{Provider: "aliyun", OfferID: "aliyun:ecs.gn7e:cn-beijing", Reasons: []sluice.Reason{
				{Code: sluice.ReasonPrice, Message: "price 15.00 CNY > ceiling 14.2144 CNY"}}}},
		},
		FX:             []sluice.FXRate{fx},
		PolicyRevision: "sha256:9f2c",
		CodeVersion:    "v0.0.0-test",
	}
}

// splitLine replaces rec's single 2-unit line by two 1-unit lines of the same
// offer (lines 0 and 1, one slot each); the totals are unchanged.
func splitLine(rec *sluice.DecisionRecord) {
	l := rec.Lines[0]
	l.Units, l.GPUs, l.Slots = 1, 8, 1
	l.BaseCost, l.ReworkCost, l.ExpectedCost = usd("30.864197253085"), usd("0.0000000000005"), usd("30.8641972530855")
	l.ExpectedCostBilling = cny("219.35801229705")
	rec.Lines = []sluice.Line{l, l}
}

func samplePlacement(decisionID, queue string, line, slots int) sluice.Placement {
	return sluice.Placement{
		DecisionID: decisionID, Line: line, Queue: queue, Provider: "vast", OfferID: "vast:1234:bid",
		ClientToken: sluice.ClientToken(decisionID, line), ExternalIDs: []string{"inst-" + strconv.Itoa(line)},
		Market: sluice.Spot, Units: slots, Slots: slots, Price: usd("12.345678901234"),
		PlacedAt: time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC),
	}
}

// failedPlacement is the record the burst core writes when a line could not
// be placed: no external ids, no price, Error set; it gives slots back.
func failedPlacement(decisionID, queue string, line, slots int, why string) sluice.Placement {
	return sluice.Placement{
		DecisionID: decisionID, Line: line, Queue: queue, Provider: "vast", OfferID: "vast:1234:bid",
		ClientToken: sluice.ClientToken(decisionID, line), Market: sluice.Spot, Units: slots, Slots: slots,
		PlacedAt: time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC), Error: why,
	}
}

func open(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newLedger(t *testing.T) (*SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	return open(t, path), path
}

// refresh sets what rec assumed about the ledger to what s holds now, as the
// burst core's plan step reads it: Demand.Live from LiveSlots of rec's queue
// and, when rec has a budget, Spent (and Headroom) from TierSpend of its
// period. The plan itself is left as it is.
func refresh(ctx context.Context, s *SQLite, rec *sluice.DecisionRecord) error {
	live, err := s.LiveSlots(ctx, queueOf(rec))
	if err != nil {
		return err
	}
	rec.Demand.Live = live
	if b := rec.Budget; b != nil {
		spent, err := s.TierSpend(ctx, b.Tier, b.PeriodStart, b.PeriodEnd)
		if err != nil {
			return err
		}
		b.Spent = sluice.Money{Amount: spent, Currency: b.Budget.Currency}
		b.Headroom = sluice.Money{Amount: b.Budget.Amount.Sub(spent), Currency: b.Budget.Currency}
	}
	return nil
}

// appendDecision refreshes rec and appends it; any error is fatal (tests
// using it append from one goroutine, so the state cannot go stale).
func appendDecision(t *testing.T, s *SQLite, rec *sluice.DecisionRecord) {
	t.Helper()
	if err := refresh(t.Context(), s, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendDecision(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
}

// appendRetrying is what the burst core does on ErrStale: read the ledger
// again and retry, at most tries attempts. It returns how many attempts were
// refused as stale. Each stale attempt means some other record changed the
// queue's live slots or the tier's spend between the read and the append, so
// a bound of (other records appended concurrently) + 1 can never be exhausted.
func appendRetrying(ctx context.Context, s *SQLite, rec *sluice.DecisionRecord, tries int) (stale int, err error) {
	for range tries {
		if err := refresh(ctx, s, rec); err != nil {
			return stale, err
		}
		err := s.AppendDecision(ctx, rec)
		if !errors.Is(err, sluice.ErrStale) {
			return stale, err
		}
		stale++
	}
	return stale, fmt.Errorf("decision %s: still stale after %d attempts", rec.DecisionID, tries)
}

func liveOf(t *testing.T, s *SQLite, queue string) int {
	t.Helper()
	n, err := s.LiveSlots(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func spendOf(t *testing.T, s *SQLite, tier sluice.Tier, from, to time.Time) decimal.Decimal {
	t.Helper()
	d, err := s.TierSpend(t.Context(), tier, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// roundTrip returns v after a JSON encode/decode, the way a record comes back.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, s *SQLite, where string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM records WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// head is the hash of the last record ("" on an empty ledger).
func head(t *testing.T, s *SQLite) string {
	t.Helper()
	var h string
	err := s.db.QueryRow(`SELECT hash FROM records ORDER BY seq DESC LIMIT 1`).Scan(&h)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return h
}

func mustVerify(t *testing.T, s *SQLite, want int) {
	t.Helper()
	n, err := s.Verify(t.Context())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n != want {
		t.Fatalf("Verify checked %d records, want %d", n, want)
	}
}

// checkGuardHeld replays the stored records in chain order with the ledger's
// rules written out again in Go (a decision adds its slots_covered to its
// queue, a failed placement takes its slots back; a decision's spend is its
// total_expected_cost, trued up by later records as TrueUps says) and checks that every decision was appended on the
// state just before it: Demand.Live is its queue's live slots and
// Budget.Spent its tier's period spend at that point. This is what the guard
// promises; two decisions planned from one snapshot would break it. It
// returns the live slots per queue and checks them against LiveSlots.
func checkGuardHeld(t *testing.T, s *SQLite) map[string]int {
	t.Helper()
	rows, err := s.db.Query(`SELECT seq, kind, queue, body FROM records ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	live := map[string]int{}
	var decided []sluice.DecisionRecord
	var tu TrueUps
	adjust := map[string]decimal.Decimal{} // decision id → true-up so far
	for rows.Next() {
		var (
			seq         int64
			kind, queue string
			body        string
		)
		if err := rows.Scan(&seq, &kind, &queue, &body); err != nil {
			t.Fatal(err)
		}
		switch kind {
		case KindDecision:
			var rec sluice.DecisionRecord
			if err := json.Unmarshal([]byte(body), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Demand.Live != live[queue] {
				t.Errorf("seq %d (%s): assumed %d live slots in %s, the ledger had %d", seq, rec.DecisionID, rec.Demand.Live, queue, live[queue])
			}
			if b := rec.Budget; b != nil {
				spent := decimal.Zero
				for _, d := range decided {
					at := d.DecidedAt
					if d.Profile.Tier == b.Tier && !at.Before(b.PeriodStart) && at.Before(b.PeriodEnd) {
						spent = spent.Add(d.TotalExpectedCost.Amount).Add(adjust[d.DecisionID])
					}
				}
				if !spent.Equal(b.Spent.Amount) {
					t.Errorf("seq %d (%s): assumed %s spent, the ledger had %s", seq, rec.DecisionID, b.Spent.Amount, spent)
				}
			}
			live[queue] += rec.SlotsCovered
			decided = append(decided, rec)
		case KindPlacement:
			var pr PlacementRecord
			if err := json.Unmarshal([]byte(body), &pr); err != nil {
				t.Fatal(err)
			}
			if pr.Placement.Error != "" {
				live[queue] -= pr.Placement.Slots
			}
			for _, d := range decided {
				if d.DecisionID == pr.Placement.DecisionID {
					lines, _ := json.Marshal(d.Lines)
					a, err := tu.Add(kind, []byte(body), lines, d.BillingCurrency)
					if err != nil {
						t.Fatal(err)
					}
					adjust[d.DecisionID] = adjust[d.DecisionID].Add(a)
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for q, n := range live {
		if got := liveOf(t, s, q); got != n {
			t.Errorf("LiveSlots(%s) = %d, replaying the records gives %d", q, got, n)
		}
	}
	return live
}

// tamper runs raw SQL on the file, as someone bypassing the ledger would:
// it drops the append-only triggers first.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append([]string{`DROP TRIGGER records_no_update`, `DROP TRIGGER records_no_delete`}, stmts...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestAppendDecisionReadBack(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)

	if _, ok, err := s.Decision(ctx, "dec-missing"); err != nil || ok {
		t.Fatalf("Decision(missing) = ok %v, err %v; want false, nil", ok, err)
	}

	rec := sampleDecision("dec-1", "train-a") // planned on an empty ledger: not stale
	rec.Kind = ""                             // the ledger sets it
	if err := s.AppendDecision(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Kind != KindDecision || rec.PrevHash != GenesisHash || len(rec.Hash) != 64 {
		t.Fatalf("after append: kind %q prev %q hash %q", rec.Kind, rec.PrevHash, rec.Hash)
	}

	got, ok, err := s.Decision(ctx, "dec-1")
	if err != nil || !ok {
		t.Fatalf("Decision = ok %v, err %v", ok, err)
	}
	if want := roundTrip(t, rec); !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		wb, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("read back differs:\ngot  %s\nwant %s", gb, wb)
	}
	for _, c := range []struct{ what, got, want string }{
		{"line unit price", got.Lines[0].UnitPrice.Amount.String(), "12.345678901234"},
		{"offer price", got.Offers[0].UnitPrice.Amount.String(), "12.345678901234"},
		{"rework cost", got.Lines[0].ReworkCost.Amount.String(), "0.000000000001"},
		{"budget", got.Budget.Budget.String(), "120000.125 CNY"},
		{"budget spent", got.Budget.Spent.String(), "0 CNY"},
		{"budget headroom", got.Budget.Headroom.String(), "120000.125 CNY"},
		{"budget period", got.Budget.PeriodStart.Format(time.RFC3339) + "/" + got.Budget.PeriodEnd.Format(time.RFC3339), "2025-03-01T00:00:00Z/2025-04-01T00:00:00Z"},
	} {
		if c.got != c.want {
			t.Errorf("%s read back as %s, want %s", c.what, c.got, c.want)
		}
	}

	// The stored body is canonical, contains the exact amount strings, and
	// hashes to the record's Hash.
	var body string
	if err := s.db.QueryRow(`SELECT body FROM records WHERE record_id = 'dec-1'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"amount":"12.345678901234","currency":"USD"}`,
		`"budget":{"budget":{"amount":"120000.125","currency":"CNY"},"headroom":{"amount":"120000.125","currency":"CNY"},"period_end":"2025-04-01T00:00:00Z","period_start":"2025-03-01T00:00:00Z","spent":{"amount":"0","currency":"CNY"},"tier":"emergency"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
	if h, err := BodyHash([]byte(body)); err != nil || h != rec.Hash {
		t.Errorf("BodyHash(stored) = %s, %v; want %s", h, err, rec.Hash)
	}
	c, err := Canonical(rec)
	if err != nil || string(c) != body {
		t.Errorf("Canonical(rec) differs from the stored body (err %v)", err)
	}
	mustVerify(t, s, 1)

	// A decision with no budget (the tier has none) stores "budget":null and
	// reads back with a nil Budget.
	nb := sampleDecision("dec-2", "train-b")
	nb.Budget = nil
	appendDecision(t, s, &nb)
	got, _, err = s.Decision(ctx, "dec-2")
	if err != nil || got.Budget != nil || !reflect.DeepEqual(got, roundTrip(t, nb)) {
		t.Fatalf("no-budget decision read back: budget %+v, err %v", got.Budget, err)
	}
	if n := count(t, s, `record_id = 'dec-2' AND body LIKE '%"budget":null%'`); n != 1 {
		t.Errorf("no-budget body does not hold \"budget\":null")
	}
	mustVerify(t, s, 2)
}

func TestAppendDecisionRejects(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	withPlacement := sampleDecision("dec-p", "q")
	withPlacement.Placements = []sluice.Placement{samplePlacement("dec-p", "q", 0, 2)}
	for name, rec := range map[string]*sluice.DecisionRecord{
		"nil":        nil,
		"no id":      {Kind: KindDecision},
		"wrong kind": {Kind: "placement", DecisionID: "dec-x"},
		"placements": &withPlacement,
	} {
		if err := s.AppendDecision(ctx, rec); err == nil {
			t.Errorf("%s: AppendDecision succeeded", name)
		}
	}
	if n := count(t, s, `1`); n != 0 {
		t.Fatalf("%d records after rejected appends", n)
	}
}

// TestStaleDecision appends decisions whose Demand.Live or Budget.Spent no
// longer hold: each is refused with ErrStale, stores nothing and leaves the
// record and the chain as they were.
func TestStaleDecision(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	first := sampleDecision("dec-first", "q")
	appendDecision(t, s, &first) // q: 2 live; emergency, March: sampleTotal spent

	stale := func(name string, rec sluice.DecisionRecord, wantInErr string) {
		t.Helper()
		before := head(t, s)
		err := s.AppendDecision(ctx, &rec)
		if !errors.Is(err, sluice.ErrStale) {
			t.Fatalf("%s: %v, want ErrStale", name, err)
		}
		if !strings.Contains(err.Error(), wantInErr) {
			t.Errorf("%s: error %q does not say %q", name, err, wantInErr)
		}
		t.Logf("%s: %v", name, err)
		if rec.Kind != KindDecision || rec.PrevHash != "" || rec.Hash != "" {
			t.Errorf("%s: refused append changed the record: kind %q prev %q hash %q", name, rec.Kind, rec.PrevHash, rec.Hash)
		}
		if _, ok, err := s.Decision(ctx, rec.DecisionID); ok || err != nil {
			t.Errorf("%s: stored after ErrStale (ok %v, err %v)", name, ok, err)
		}
		if n := count(t, s, `1`); n != 1 {
			t.Errorf("%s: %d records, want 1", name, n)
		}
		if h := head(t, s); h != before || h != first.Hash {
			t.Errorf("%s: chain head %s, want %s", name, h, first.Hash)
		}
		if n := liveOf(t, s, "q"); n != 2 {
			t.Errorf("%s: live %d, want 2", name, n)
		}
		if d := spendOf(t, s, sluice.TierEmergency, march, april); !d.Equal(dec(sampleTotal)) {
			t.Errorf("%s: spend %s, want %s", name, d, sampleTotal)
		}
	}

	// Planned on the empty ledger, as `first` was: both Live 0 and Spent 0 are stale.
	stale("live and spend", sampleDecision("dec-2", "q"), "queue q has 2 live slots, the decision assumed 0")

	// Live is current, the spend is not.
	rec := sampleDecision("dec-2", "q")
	rec.Demand.Live = 2
	stale("spend", rec, "tier emergency spent 438.7160245941 this period, the decision assumed 0")

	// Spend is current, live is not; and live is checked for equality, a
	// count above the ledger's is refused too.
	for _, l := range []int{0, 1, 3} {
		rec := sampleDecision("dec-2", "q")
		rec.Demand.Live = l
		rec.Budget.Spent = cny(sampleTotal)
		stale("live "+strconv.Itoa(l), rec, fmt.Sprintf("has 2 live slots, the decision assumed %d", l))
	}

	// Another queue in the same tier: its own live (0) is current, but the
	// tier's spend moved; the budget is shared, so it is stale.
	other := sampleDecision("dec-other", "r")
	stale("other queue, same tier", other, "tier emergency spent 438.7160245941")

	// Current values succeed, chained right after `first`. Spent is compared
	// as a number: trailing zeros do not matter.
	ok := sampleDecision("dec-2", "q")
	ok.Demand.Live = 2
	ok.Budget.Spent = sluice.Money{Amount: dec("438.71602459410"), Currency: "CNY"}
	if err := s.AppendDecision(ctx, &ok); err != nil {
		t.Fatal(err)
	}
	if ok.PrevHash != first.Hash {
		t.Errorf("PrevHash %s, want %s", ok.PrevHash, first.Hash)
	}
	// No budget: only live is checked (the tier's spend is not ErrStale then).
	nb := sampleDecision("dec-3", "q")
	nb.Budget, nb.Demand.Live = nil, 4
	if err := s.AppendDecision(ctx, &nb); err != nil {
		t.Fatal(err)
	}
	if n, d := liveOf(t, s, "q"), spendOf(t, s, sluice.TierEmergency, march, april); n != 6 || d.String() != "1316.1480737823" {
		t.Errorf("live %d, spend %s; want 6, 1316.1480737823", n, d)
	}
	checkGuardHeld(t, s)
	mustVerify(t, s, 3)
}

func TestDuplicateDecision(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	first := sampleDecision("dec-dup", "q")
	appendDecision(t, s, &first)
	again := sampleDecision("dec-dup", "q")
	again.Status = sluice.StatusPlaced // a different body, same id
	if err := refresh(ctx, s, &again); err != nil {
		t.Fatal(err)
	}
	err := s.AppendDecision(ctx, &again)
	if !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("second append: %v, want ErrDuplicate", err)
	}
	if again.Hash != "" || again.PrevHash != "" {
		t.Errorf("failed append changed the record: prev %q hash %q", again.PrevHash, again.Hash)
	}
	if n := count(t, s, `kind = 'decision'`); n != 1 {
		t.Fatalf("%d decisions stored, want 1", n)
	}
	if n := liveOf(t, s, "q"); n != 2 {
		t.Errorf("live %d after a refused duplicate, want 2", n)
	}
	got, _, _ := s.Decision(ctx, "dec-dup")
	if got.Status != sluice.StatusPlanned || got.Hash != first.Hash {
		t.Errorf("stored decision changed: status %q hash %s", got.Status, got.Hash)
	}
	mustVerify(t, s, 1)
}

func TestPlacementsAndLiveSlots(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	live := func(q string) int { t.Helper(); return liveOf(t, s, q) }

	// Three decisions covering 2 slots each. dec-a1 and dec-a2 buy them as two
	// 1-slot lines, dec-b1 as one 2-slot line.
	for _, d := range []struct {
		id, queue string
		split     bool
	}{{"dec-a1", "train-a", true}, {"dec-a2", "train-a", true}, {"dec-b1", "train-b", false}} {
		rec := sampleDecision(d.id, d.queue)
		if d.split {
			splitLine(&rec)
		}
		appendDecision(t, s, &rec)
	}
	// Intent: the slots are live as soon as the decisions are recorded.
	if a, b, c := live("train-a"), live("train-b"), live("train-c"); a != 4 || b != 2 || c != 0 {
		t.Fatalf("live after the decisions: a %d b %d c %d; want 4 2 0", a, b, c)
	}

	// Successful placements add nothing (out of line order on purpose:
	// Decision returns them sorted by line).
	for _, p := range []sluice.Placement{
		samplePlacement("dec-a1", "train-a", 1, 1),
		samplePlacement("dec-a1", "train-a", 0, 1),
		samplePlacement("dec-a2", "train-a", 0, 1),
		samplePlacement("dec-b1", "train-b", 0, 2),
	} {
		if err := s.AppendPlacement(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := live("train-a"), live("train-b"); a != 4 || b != 2 {
		t.Fatalf("live after successful placements: a %d b %d; want 4 2", a, b)
	}

	// A line that failed to place gives its slot back.
	if err := s.AppendPlacement(ctx, failedPlacement("dec-a2", "train-a", 1, 1, "capacity")); err != nil {
		t.Fatal(err)
	}
	if a, b, c := live("train-a"), live("train-b"), live("train-c"); a != 3 || b != 2 || c != 0 {
		t.Fatalf("live after a failed placement: a %d b %d c %d; want 3 2 0", a, b, c)
	}

	// Same decision + line again (successful or failed): duplicate, LiveSlots unchanged.
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "train-b", 0, 7)); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("duplicate placement: %v, want ErrDuplicate", err)
	}
	if err := s.AppendPlacement(ctx, failedPlacement("dec-a2", "train-a", 1, 1, "capacity")); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("duplicate failed placement: %v, want ErrDuplicate", err)
	}
	// Unknown decision, wrong queue, bad input: refused, nothing stored.
	if err := s.AppendPlacement(ctx, samplePlacement("dec-none", "train-a", 0, 1)); !errors.Is(err, ErrNoDecision) {
		t.Fatalf("placement of unknown decision: %v, want ErrNoDecision", err)
	}
	if err := s.AppendPlacement(ctx, failedPlacement("dec-none", "train-a", 0, 1, "capacity")); !errors.Is(err, ErrNoDecision) {
		t.Fatalf("failed placement of unknown decision: %v, want ErrNoDecision", err)
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "train-a", 1, 1)); err == nil {
		t.Fatal("placement in the wrong queue accepted")
	}
	if err := s.AppendPlacement(ctx, failedPlacement("dec-b1", "train-a", 1, 1, "capacity")); err == nil {
		t.Fatal("failed placement in the wrong queue accepted")
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "", 1, 1)); err == nil {
		t.Fatal("placement without queue accepted")
	}
	for _, slots := range []int{-1, 1<<20 + 1} {
		if err := s.AppendPlacement(ctx, failedPlacement("dec-b1", "train-b", 1, slots, "capacity")); err == nil {
			t.Fatalf("placement with %d slots accepted", slots)
		}
	}
	if a, b := live("train-a"), live("train-b"); a != 3 || b != 2 {
		t.Fatalf("live after refused appends: a %d b %d; want 3 2", a, b)
	}
	if n := count(t, s, `kind = 'placement'`); n != 5 {
		t.Fatalf("%d placements stored, want 5", n)
	}

	got, ok, err := s.Decision(ctx, "dec-a1")
	if err != nil || !ok {
		t.Fatalf("Decision: ok %v err %v", ok, err)
	}
	want := []sluice.Placement{samplePlacement("dec-a1", "train-a", 0, 1), samplePlacement("dec-a1", "train-a", 1, 1)}
	if !reflect.DeepEqual(got.Placements, roundTrip(t, want)) {
		t.Fatalf("placements:\ngot  %+v\nwant %+v", got.Placements, want)
	}
	// The decision's hash covers the record as appended, without placements.
	got.Placements = nil
	if c, _ := Canonical(got); hashOf(t, c) != got.Hash {
		t.Error("decision hash does not recompute once placements are cleared")
	}
	// A failed placement reads back with its error.
	got, _, err = s.Decision(ctx, "dec-a2")
	want = []sluice.Placement{samplePlacement("dec-a2", "train-a", 0, 1), failedPlacement("dec-a2", "train-a", 1, 1, "capacity")}
	if err != nil || !reflect.DeepEqual(got.Placements, roundTrip(t, want)) {
		t.Fatalf("placements of dec-a2 (err %v):\ngot  %+v\nwant %+v", err, got.Placements, want)
	}

	// The slot given back is demand again: the next train-a decision must
	// assume 3 live slots, not the 4 its plan would have seen before the failure.
	next := sampleDecision("dec-a3", "train-a")
	next.Demand.Live = 4
	// Spend is trued up too: the failed 1-slot line of dec-a2 gives its
	// expected cost (219.35801229705 CNY, splitLine) back.
	next.Budget.Spent = sluice.Money{Amount: dec(sampleTotal).Mul(decimal.NewFromInt(3)).Sub(dec("219.35801229705")), Currency: "CNY"}
	if err := s.AppendDecision(ctx, &next); !errors.Is(err, sluice.ErrStale) {
		t.Fatalf("decision assuming 4 live: %v, want ErrStale", err)
	}
	next.Demand.Live = 3
	if err := s.AppendDecision(ctx, &next); err != nil {
		t.Fatal(err)
	}
	if a := live("train-a"); a != 5 {
		t.Fatalf("live a %d after dec-a3, want 5", a)
	}
	checkGuardHeld(t, s)
	mustVerify(t, s, 9)
}

func TestTierSpend(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	// at returns a decision of tier decided at the given time (UTC, as the
	// burst core records it), budgeted on the month of that time, with the
	// plan's total set to total.
	at := func(id string, tier sluice.Tier, decided time.Time, total sluice.Money) sluice.DecisionRecord {
		rec := sampleDecision(id, "q-"+string(tier))
		rec.DecidedAt = decided
		rec.Profile.Tier = tier
		from := time.Date(decided.Year(), decided.Month(), 1, 0, 0, 0, 0, time.UTC)
		rec.Budget.Tier, rec.Budget.PeriodStart, rec.Budget.PeriodEnd = tier, from, from.AddDate(0, 1, 0)
		rec.TotalExpectedCost = total
		return rec
	}
	for _, rec := range []sluice.DecisionRecord{
		at("dec-m1", sluice.TierEmergency, time.Date(2025, 3, 14, 9, 26, 55, 89000000, time.UTC), cny("438.7160245941")),
		at("dec-m2", sluice.TierEmergency, time.Date(2025, 3, 31, 23, 59, 59, 999000000, time.UTC), cny("0.0000000001")),
		at("dec-m3", sluice.TierEmergency, march, cny("12")),                                                    // first instant of the period: in
		at("dec-a1", sluice.TierEmergency, april, cny("1000")),                                                  // first instant of the next: out
		at("dec-e1", sluice.TierElastic, time.Date(2025, 3, 20, 12, 0, 0, 0, time.UTC), cny("77.77")),           // other tier: out
		at("dec-f1", sluice.TierEmergency, time.Date(2025, 2, 28, 23, 59, 59, 0, time.UTC), cny("5.000000001")), // previous month: out
	} {
		appendDecision(t, s, &rec)
	}
	for _, c := range []struct {
		tier     sluice.Tier
		from, to time.Time
		want     string
	}{
		{sluice.TierEmergency, march, april, "450.7160245942"},
		{sluice.TierEmergency, april, may, "1000"},
		{sluice.TierElastic, march, april, "77.77"},
		{sluice.TierElastic, april, may, "0"},
		{sluice.TierBase, march, april, "0"},
		{sluice.TierEmergency, march.AddDate(0, -1, 0), may, "1455.7160245952"},
	} {
		if got := spendOf(t, s, c.tier, c.from, c.to); got.String() != c.want {
			t.Errorf("TierSpend(%s, %s, %s) = %s, want %s", c.tier, c.from.Format("2006-01"), c.to.Format("2006-01"), got, c.want)
		}
	}
	// Each decision was appended with the spend of its own tier and period.
	for id, want := range map[string]string{"dec-m1": "0", "dec-m2": "438.7160245941", "dec-m3": "438.7160245942",
		"dec-a1": "0", "dec-e1": "0", "dec-f1": "0"} {
		got, _, err := s.Decision(ctx, id)
		if err != nil || got.Budget.Spent.Amount.String() != want {
			t.Errorf("%s: Budget.Spent %s (err %v), want %s", id, got.Budget.Spent.Amount, err, want)
		}
	}
	checkGuardHeld(t, s)

	// A decision billed in another currency in the same period: the sum is refused.
	usdRec := at("dec-m4", sluice.TierEmergency, time.Date(2025, 3, 20, 0, 0, 0, 0, time.UTC), usd("1"))
	usdRec.BillingCurrency = "USD"
	appendDecision(t, s, &usdRec)
	if d, err := s.TierSpend(ctx, sluice.TierEmergency, march, april); err == nil || !strings.Contains(err.Error(), "decisions in both") {
		t.Fatalf("TierSpend over CNY and USD = %s, %v; want a mixed-currency error", d, err)
	}
	// Other periods and tiers are unaffected.
	if d := spendOf(t, s, sluice.TierEmergency, april, may); d.String() != "1000" {
		t.Errorf("April spend %s, want 1000", d)
	}
	// The guard cannot check a budgeted decision against a mixed-currency
	// period: it fails (not ErrStale, retrying will not help) and stores nothing.
	more := at("dec-m5", sluice.TierEmergency, time.Date(2025, 3, 21, 0, 0, 0, 0, time.UTC), cny("1"))
	more.Demand.Live = liveOf(t, s, queueOf(&more))
	before := head(t, s)
	if err := s.AppendDecision(ctx, &more); err == nil || errors.Is(err, sluice.ErrStale) {
		t.Fatalf("append into a mixed-currency period: %v, want a non-stale error", err)
	}
	if head(t, s) != before {
		t.Error("refused append moved the chain head")
	}
	mustVerify(t, s, 7)
}

// hashOf recomputes the hash of a canonical record with its hash field.
func hashOf(t *testing.T, canonical []byte) string {
	t.Helper()
	h, err := BodyHash(canonical)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestChainLinks(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	r1, r2 := sampleDecision("dec-1", "q"), sampleDecision("dec-2", "q")
	appendDecision(t, s, &r1)
	if err := s.AppendPlacement(ctx, samplePlacement("dec-1", "q", 0, 2)); err != nil {
		t.Fatal(err)
	}
	appendDecision(t, s, &r2)
	if r1.PrevHash != GenesisHash {
		t.Errorf("first PrevHash = %s, want genesis", r1.PrevHash)
	}
	var pPrev, pHash string
	if err := s.db.QueryRow(`SELECT prev_hash, hash FROM records WHERE kind = 'placement'`).Scan(&pPrev, &pHash); err != nil {
		t.Fatal(err)
	}
	if pPrev != r1.Hash || r2.PrevHash != pHash {
		t.Errorf("links: placement prev %s (want %s), second decision prev %s (want %s)", pPrev, r1.Hash, r2.PrevHash, pHash)
	}

	// Decisions only, no placement between: 2nd PrevHash = 1st Hash.
	s2, _ := newLedger(t)
	a, b := sampleDecision("dec-a", "q"), sampleDecision("dec-b", "q")
	appendDecision(t, s2, &a)
	appendDecision(t, s2, &b)
	if b.PrevHash != a.Hash || a.Hash == b.Hash {
		t.Errorf("second PrevHash %s, first Hash %s", b.PrevHash, a.Hash)
	}
	if b.Demand.Live != 2 || b.Budget.Spent.Amount.String() != sampleTotal {
		t.Errorf("second decision appended with live %d, spent %s", b.Demand.Live, b.Budget.Spent.Amount)
	}
	mustVerify(t, s, 3)
	mustVerify(t, s2, 2)
}

// chain5 makes a ledger of 5 records on queue q: dec-0..dec-2 (2 slots each)
// with successful placements (line 0, 2 slots) of dec-0 and dec-1:
// seq 1 dec-0, 2 its placement, 3 dec-1, 4 its placement, 5 dec-2. q has 6 live slots.
func chain5(t *testing.T) (*SQLite, string) {
	t.Helper()
	ctx := t.Context()
	s, path := newLedger(t)
	for i := range 3 {
		rec := sampleDecision(fmt.Sprintf("dec-%d", i), "q")
		appendDecision(t, s, &rec)
		if i < 2 {
			if err := s.AppendPlacement(ctx, samplePlacement(rec.DecisionID, "q", 0, 2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustVerify(t, s, 5)
	if n := liveOf(t, s, "q"); n != 6 {
		t.Fatalf("chain5: live %d, want 6", n)
	}
	return s, path
}

func wantVerifyError(t *testing.T, s *SQLite, seq int64, problem string, good int) *VerifyError {
	t.Helper()
	n, err := s.Verify(t.Context())
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("Verify = %d, %v; want a *VerifyError", n, err)
	}
	if ve.Seq != seq || ve.Problem != problem || n != good {
		t.Fatalf("Verify = %d, %v; want seq %d, %q, %d good", n, err, seq, problem, good)
	}
	t.Logf("Verify: %v", err)
	return ve
}

func TestAppendOnlyTriggers(t *testing.T) {
	s, _ := chain5(t)
	if _, err := s.db.Exec(`UPDATE records SET queue = 'x' WHERE seq = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("UPDATE: %v, want append-only error", err)
	}
	if _, err := s.db.Exec(`DELETE FROM records WHERE seq = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("DELETE: %v, want append-only error", err)
	}
	mustVerify(t, s, 5)
}

func TestVerifyTamperedBody(t *testing.T) {
	s, path := chain5(t)
	tamper(t, path, `UPDATE records SET body = replace(body, '12.345678901234', '12.345678901235') WHERE seq = 3`)
	ve := wantVerifyError(t, s, 3, ProblemHashMismatch, 2)
	if ve.RecordID != "dec-1" {
		t.Errorf("record id %q, want dec-1", ve.RecordID)
	}
	if !strings.Contains(ve.Error(), "seq 3") || !strings.Contains(ve.Error(), "hash mismatch") {
		t.Errorf("message %q does not name seq 3 and the problem", ve.Error())
	}
}

func TestVerifyRehashedBody(t *testing.T) {
	// A tamperer who also fixes the record's own hash breaks the next link.
	// Here a successful placement is rewritten as a failed one, which would
	// give its 2 slots back to the queue's demand so they could be bought again.
	s, path := chain5(t)
	var body string
	if err := s.db.QueryRow(`SELECT body FROM records WHERE seq = 2`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	obj, err := decodeObject([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	obj["placement"].(map[string]any)["error"] = "capacity"
	newBody, newHash, err := seal(obj, obj["prev_hash"].(string))
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, path, fmt.Sprintf(`UPDATE records SET body = '%s', hash = '%s' WHERE seq = 2`, newBody, newHash))
	if n := liveOf(t, s, "q"); n != 4 {
		t.Fatalf("tampered live slots %d, want 4", n)
	}
	wantVerifyError(t, s, 3, ProblemBrokenLink, 2)
}

func TestVerifyDeletedRow(t *testing.T) {
	s, path := chain5(t)
	tamper(t, path, `DELETE FROM records WHERE seq = 3`)
	ve := wantVerifyError(t, s, 4, ProblemBrokenLink, 2)
	if ve.RecordID != PlacementRecordID("dec-1", 0) {
		t.Errorf("record id %q", ve.RecordID)
	}
}

func TestVerifyTamperedColumn(t *testing.T) {
	// The queue column is outside the hash but feeds LiveSlots: Verify checks it against the body.
	s, path := chain5(t)
	tamper(t, path, `UPDATE records SET queue = 'other' WHERE seq = 3`)
	if n := liveOf(t, s, "q"); n != 4 {
		t.Fatalf("tampered live slots %d, want 4", n)
	}
	wantVerifyError(t, s, 3, ProblemColumns, 2)
}

func TestVerifyNotCanonical(t *testing.T) {
	s, path := chain5(t)
	tamper(t, path, `UPDATE records SET body = ' ' || body WHERE seq = 5`)
	wantVerifyError(t, s, 5, ProblemNotCanonical, 4)
}

// TestConcurrentAppends runs decisions for three queues of one tier from
// goroutines on two handles (two connection pools on one file), each followed
// by a placement, every third of which fails. A decision whose live slots or
// tier spend went stale is refused and retried, as the burst core does.
func TestConcurrentAppends(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	h1, h2 := open(t, path), open(t, path)
	const goroutines, perG, queues = 8, 6, 3
	const records = goroutines * perG * 2
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		staleTotal int
		failed     = map[string]int{} // failed placements per queue
		decided    = map[string]int{} // decisions per queue
	)
	errs := make(chan error, records)
	for g := range goroutines {
		s := h1
		if g%2 == 1 {
			s = h2
		}
		wg.Go(func() {
			for i := range perG {
				id := fmt.Sprintf("dec-g%d-%d", g, i)
				q := fmt.Sprintf("q%d", (g+i)%queues)
				rec := sampleDecision(id, q)
				stale, err := appendRetrying(ctx, s, &rec, records)
				mu.Lock()
				staleTotal += stale
				mu.Unlock()
				if err != nil {
					errs <- err
					continue
				}
				p := samplePlacement(id, q, 0, 2)
				if i%3 == 2 {
					p = failedPlacement(id, q, 0, 2, "capacity: 0 units left")
				}
				if err := s.AppendPlacement(ctx, p); err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				decided[q]++
				if p.Error != "" {
					failed[q]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d stale attempts retried", staleTotal)
	mustVerify(t, h1, records)
	mustVerify(t, h2, records)
	if n := count(t, h1, `kind = 'decision'`); n != goroutines*perG {
		t.Fatalf("%d decisions, want %d", n, goroutines*perG)
	}
	if n := count(t, h1, `kind = 'placement'`); n != goroutines*perG {
		t.Fatalf("%d placements, want %d", n, goroutines*perG)
	}
	replayed := checkGuardHeld(t, h1)
	total := 0
	for q := range queues {
		name := fmt.Sprintf("q%d", q)
		n := liveOf(t, h2, name)
		if want := 2*decided[name] - 2*failed[name]; n != want || replayed[name] != want {
			t.Errorf("live %s = %d (replayed %d), want 2×%d decided − 2×%d failed = %d", name, n, replayed[name], decided[name], failed[name], want)
		}
		total += n
	}
	if want := 2 * goroutines * perG * 2 / 3; total != want { // a third of the placements failed
		t.Errorf("live slots %d in all, want %d", total, want)
	}
	// A failed placement gives its line's expected cost back (TrueUps).
	wantSpend := dec(sampleTotal).Mul(decimal.NewFromInt(goroutines * perG * 2 / 3))
	if d := spendOf(t, h1, sluice.TierEmergency, march, april); !d.Equal(wantSpend) {
		t.Errorf("spend %s, want %s", d, wantSpend)
	}
}

// eightSlots is a decision for queue "big" (8 slots wanted, none live) whose
// plan buys all 8 slots, as two writers would plan it from the same snapshot.
// Its tier's budget is 2000 CNY, enough for one such plan, not two.
func eightSlots(id, queue string, depth, live int) sluice.DecisionRecord {
	rec := sampleDecision(id, queue)
	rec.Trigger.Depth = depth
	rec.Profile.MaxSlots = 8
	rec.Demand = sluice.NewDemand(rec.Profile, depth, live)
	rec.Budget.Budget, rec.Budget.Headroom = cny("2000"), cny("2000")
	l := &rec.Lines[0]
	l.Units, l.GPUs, l.Slots = 8, 64, 8
	l.BaseCost, l.ReworkCost, l.ExpectedCost = usd("246.91357802468"), usd("0.000000000004"), usd("246.913578024684")
	l.ExpectedCostBilling = cny("1754.8640983764")
	rec.Offers[0].UnitsAvailable = 8
	rec.SlotsWanted, rec.SlotsCovered, rec.TotalExpectedCost = 8, 8, cny("1754.8640983764")
	return rec
}

// replan is the loser's second plan after ErrStale: it re-reads the ledger.
// With live slots already covering the demand it wants nothing; with the
// budget spent it buys nothing ("budget" short).
func replan(t *testing.T, s *SQLite, rec *sluice.DecisionRecord) {
	t.Helper()
	if err := refresh(t.Context(), s, rec); err != nil {
		t.Fatal(err)
	}
	rec.Demand = sluice.NewDemand(rec.Profile, rec.Trigger.Depth, rec.Demand.Live)
	rec.Plan = sluice.Plan{Lines: []sluice.Line{}, SlotsWanted: rec.Demand.Slots, Short: []sluice.Reason{},
		TotalExpectedCost: cny("0"), Rejected: []sluice.Rejection{}}
	rec.Status = sluice.StatusNothingToDo
	if rec.Demand.Slots > 0 {
		if rec.Budget.Headroom.Amount.LessThan(dec("1754.8640983764")) {
			rec.Short = []sluice.Reason{{Code: sluice.ReasonBudget, Message: "headroom " + rec.Budget.Headroom.String() + " < 1754.8640983764 CNY"}}
		}
		rec.Status = sluice.StatusNoOffer
	}
}

// TestConcurrentSameSnapshot is why the guard exists: two alarms decided at
// the same time both read "nothing live, nothing spent" and plan the same
// purchase. Exactly one append succeeds; the other gets ErrStale and, planning
// again, buys nothing. Without the guard both would be recorded and the
// slots (or the budget) bought twice.
func TestConcurrentSameSnapshot(t *testing.T) {
	for _, c := range []struct {
		name           string
		queueA, queueB string
		wantErr        string // in the loser's error
	}{
		// Same queue: 8 slots wanted, 0 live; both plan 8.
		{"same queue", "big", "big", "queue big has 8 live slots, the decision assumed 0"},
		// Two queues of one tier: each queue's live is current, the shared
		// budget (2000, each plan 1754.86…) is not.
		{"same tier", "big", "other", "tier emergency spent 1754.8640983764 this period, the decision assumed 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "ledger.db")
			h := []*SQLite{open(t, path), open(t, path)}
			recs := []sluice.DecisionRecord{eightSlots("dec-alarm-a", c.queueA, 8, 0), eightSlots("dec-alarm-b", c.queueB, 8, 0)}
			// Both snapshots are taken before either append.
			for i := range recs {
				if err := refresh(ctx, h[i], &recs[i]); err != nil {
					t.Fatal(err)
				}
				if recs[i].Demand.Live != 0 || !recs[i].Budget.Spent.Zero() || recs[i].Demand.Slots != 8 {
					t.Fatalf("snapshot %d: live %d spent %s slots %d", i, recs[i].Demand.Live, recs[i].Budget.Spent, recs[i].Demand.Slots)
				}
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, 2)
			for i := range recs {
				wg.Go(func() {
					<-start
					errs[i] = h[i].AppendDecision(ctx, &recs[i])
				})
			}
			close(start)
			wg.Wait()
			win, lose := 0, 1
			if errs[0] != nil {
				win, lose = 1, 0
			}
			if errs[win] != nil || !errors.Is(errs[lose], sluice.ErrStale) {
				t.Fatalf("appends: %v, %v; want one nil and one ErrStale", errs[0], errs[1])
			}
			if !strings.Contains(errs[lose].Error(), c.wantErr) {
				t.Errorf("loser: %v, want %q", errs[lose], c.wantErr)
			}
			t.Logf("winner %s; loser %s: %v", recs[win].DecisionID, recs[lose].DecisionID, errs[lose])
			if n := count(t, h[0], `1`); n != 1 {
				t.Fatalf("%d records after the race, want 1", n)
			}

			// The loser re-reads the ledger and plans again: nothing to buy.
			loser := &recs[lose]
			replan(t, h[lose], loser)
			if err := h[lose].AppendDecision(ctx, loser); err != nil {
				t.Fatal(err)
			}
			if loser.SlotsCovered != 0 || !loser.TotalExpectedCost.Zero() {
				t.Fatalf("loser's second plan covers %d slots for %s", loser.SlotsCovered, loser.TotalExpectedCost)
			}
			if c.queueA == c.queueB && (loser.Status != sluice.StatusNothingToDo || loser.Demand.Live != 8) {
				t.Errorf("same queue: loser status %q live %d, want nothing-to-do, 8", loser.Status, loser.Demand.Live)
			}
			if c.queueA != c.queueB && (loser.Status != sluice.StatusNoOffer || len(loser.Short) != 1 || loser.Budget.Headroom.String() != "245.1359016236 CNY") {
				t.Errorf("same tier: loser status %q short %v headroom %s, want no-offer, budget, 245.1359016236 CNY", loser.Status, loser.Short, loser.Budget.Headroom)
			}
			if a, b := liveOf(t, h[0], recs[win].Trigger.Queue), liveOf(t, h[1], loser.Trigger.Queue); a != 8 || (c.queueA == c.queueB && b != 8) || (c.queueA != c.queueB && b != 0) {
				t.Errorf("live: winner's queue %d, loser's queue %d", a, b)
			}
			if d := spendOf(t, h[1], sluice.TierEmergency, march, april); d.String() != "1754.8640983764" {
				t.Errorf("spend %s, want 1754.8640983764 (bought once)", d)
			}
			checkGuardHeld(t, h[0])
			mustVerify(t, h[0], 2)
		})
	}
}

const helperEnv = "SLUICE_LEDGER_TEST_HELPER" // "path|prefix|n|tries"

// TestHelperAppender is not a test: TestTwoProcesses runs the test binary
// again with helperEnv set, and this appends to the named ledger file,
// retrying stale decisions like the burst core.
func TestHelperAppender(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	tries, _ := strconv.Atoi(parts[3])
	s := open(t, parts[0])
	stale := 0
	for i := range n {
		rec := sampleDecision(fmt.Sprintf("%s-%d", parts[1], i), "q")
		k, err := appendRetrying(t.Context(), s, &rec, tries)
		if err != nil {
			t.Fatal(err)
		}
		stale += k
	}
	t.Logf("%d stale attempts retried", stale)
}

func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path)
	const perProc = 25
	const tries = 3*perProc + 1 // see appendRetrying
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperAppender$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|dec-proc%d|%d|%d", helperEnv, path, p, perProc, tries))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("helper %d: %v\n%s", p, err, out)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "stale attempts") {
					t.Logf("helper %d: %s", p, strings.TrimSpace(l))
				}
			}
		})
	}
	stale := 0
	for i := range perProc { // and this process at the same time
		rec := sampleDecision(fmt.Sprintf("dec-main-%d", i), "q")
		k, err := appendRetrying(ctx, s, &rec, tries)
		if err != nil {
			t.Error(err)
		}
		stale += k
	}
	wg.Wait()
	t.Logf("main: %d stale attempts retried", stale)
	mustVerify(t, s, 3*perProc)
	if live := checkGuardHeld(t, s); live["q"] != 2*3*perProc {
		t.Errorf("live %d, want %d", live["q"], 2*3*perProc)
	}
	want := dec(sampleTotal).Mul(decimal.NewFromInt(3 * perProc))
	if d := spendOf(t, s, sluice.TierEmergency, march, april); !d.Equal(want) {
		t.Errorf("spend %s, want %s", d, want)
	}
}

func TestOpenRejectsBadPath(t *testing.T) {
	for _, p := range []string{"", ":memory:", "x.db?mode=ro"} {
		if s, err := OpenSQLite(t.Context(), p); err == nil {
			s.Close()
			t.Errorf("OpenSQLite(%q) succeeded", p)
		}
	}
}

func TestReopenKeepsChain(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s1, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := sampleDecision("dec-a", "q")
	if err := s1.AppendDecision(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, path)
	// The reopened file still knows dec-a's slots and spend: the same
	// snapshot-of-empty decision is stale, a refreshed one chains after dec-a.
	b := sampleDecision("dec-b", "q")
	if err := s2.AppendDecision(ctx, &b); !errors.Is(err, sluice.ErrStale) {
		t.Fatalf("after reopen, stale append: %v, want ErrStale", err)
	}
	appendDecision(t, s2, &b)
	if b.PrevHash != a.Hash {
		t.Fatalf("after reopen PrevHash %s, want %s", b.PrevHash, a.Hash)
	}
	var mode string
	if err := s2.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
	mustVerify(t, s2, 2)
}

func TestCanonical(t *testing.T) {
	type inner struct {
		Z string `json:"z"`
		A string `json:"a"`
	}
	c, err := Canonical(map[string]any{
		"b": inner{Z: "<&>", A: "x"},
		"a": json.Number("12.345678901234"),
		"m": sluice.MustMoney("0.10", "USD"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":12.345678901234,"b":{"a":"x","z":"<&>"},"m":{"amount":"0.1","currency":"USD"}}`
	if string(c) != want {
		t.Fatalf("Canonical = %s\nwant        %s", c, want)
	}
	again, err := Canonical(json.RawMessage(c))
	if err != nil || string(again) != string(c) {
		t.Fatalf("Canonical not idempotent: %s, %v", again, err)
	}
	if _, err := Canonical(json.RawMessage(`{"a":1} {"b":2}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

// TestGolden pins the canonical bytes and the hash of a fixed decision record,
// a placement record and a failed placement record. Run with -update to
// rewrite testdata/.
func TestGolden(t *testing.T) {
	rec := sampleDecision("dec-0123456789abcdef0123456789abcdef", "train-a")
	rec.PrevHash, rec.Hash = GenesisHash, ""
	pl := PlacementRecord{Kind: KindPlacement, Placement: samplePlacement(rec.DecisionID, "train-a", 0, 2),
		PrevHash: strings.Repeat("ab", 32)}
	failed := PlacementRecord{Kind: KindPlacement, Placement: failedPlacement(rec.DecisionID, "train-a", 1, 2,
		"vast: create instance: 409 <no_such_ask> & retry later"), PrevHash: strings.Repeat("cd", 32)}
	for _, g := range []struct {
		name string
		v    any
	}{{"decision", rec}, {"placement", pl}, {"placement-failed", failed}} {
		t.Run(g.name, func(t *testing.T) {
			c, err := Canonical(g.v)
			if err != nil {
				t.Fatal(err)
			}
			hash := HashRecord(c) // "hash" is "" in c: this is the record hash
			if h, err := BodyHash(c); err != nil || h != hash {
				t.Fatalf("BodyHash = %s, %v; want %s", h, err, hash)
			}
			jsonPath := filepath.Join("testdata", g.name+".canonical.json")
			hashPath := filepath.Join("testdata", g.name+".hash")
			if *update {
				if err := os.WriteFile(jsonPath, c, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(hashPath, []byte(hash+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantJSON, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatalf("%v (run go test ./ledger -run TestGolden -update)", err)
			}
			wantHash, err := os.ReadFile(hashPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(c) != string(wantJSON) {
				t.Errorf("canonical JSON differs from %s:\ngot  %s\nwant %s", jsonPath, c, wantJSON)
			}
			if hash != strings.TrimSpace(string(wantHash)) {
				t.Errorf("hash %s, golden %s", hash, strings.TrimSpace(string(wantHash)))
			}
		})
	}
}
