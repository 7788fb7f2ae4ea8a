package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/motoserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}

// chainStore is what the conformance suite needs of a store; release steps
// are exercised when the store is also a sluice.ReleaseLedger.
type chainStore interface {
	sluice.Ledger
	Records(ctx context.Context) ([]Stored, error)
	Verify(ctx context.Context) (int, error)
}

// stores opens one empty store of each kind.
func stores(t *testing.T) map[string]chainStore {
	t.Helper()
	sq, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	return map[string]chainStore{"sqlite": sq, "dynamodb": newDynamo(t)}
}

// newDynamo creates a fresh table on the shared moto_server.
func newDynamo(t *testing.T) *DynamoDB {
	t.Helper()
	cfg := motoserver.Config(t)
	table := motoserver.Unique("ledger")
	if err := CreateDynamoTable(t.Context(), cfg, table); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDynamoDB(t.Context(), cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	d.SerialTransactions = true // moto does not isolate transactions (see the field)
	return d
}

// refreshAny is refresh for any store: Demand.Live and Budget.Spent as the
// store holds them now.
func refreshAny(ctx context.Context, s sluice.Ledger, rec *sluice.DecisionRecord) error {
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

func mustAppend(t *testing.T, s sluice.Ledger, rec *sluice.DecisionRecord) {
	t.Helper()
	if err := refreshAny(t.Context(), s, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendDecision(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
}

// conformanceScript is one sequence of appends, run against every store; it
// returns the chain's hashes so the stores can be compared record for record.
func conformanceScript(t *testing.T, s chainStore) []string {
	ctx := t.Context()
	recs := func() []Stored {
		r, err := s.Records(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// 1. A decision on an empty ledger chains from genesis.
	a := sampleDecision("dec-c1", "train-a")
	splitLine(&a)
	mustAppend(t, s, &a)
	if a.PrevHash != GenesisHash || len(a.Hash) != 64 {
		t.Fatalf("first decision prev %s hash %q", a.PrevHash, a.Hash)
	}
	got, ok, err := s.Decision(ctx, "dec-c1")
	if err != nil || !ok || got.Hash != a.Hash || got.TotalExpectedCost.Amount.String() != sampleTotal {
		t.Fatalf("Decision: ok %v err %v hash %s total %s", ok, err, got.Hash, got.TotalExpectedCost)
	}
	if _, ok, err := s.Decision(ctx, "dec-none"); ok || err != nil {
		t.Fatalf("unknown decision: ok %v err %v", ok, err)
	}

	// 2. The same id again is a duplicate and changes nothing.
	dup := sampleDecision("dec-c1", "train-a")
	if err := refreshAny(ctx, s, &dup); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendDecision(ctx, &dup); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("duplicate decision: %v", err)
	}

	// 3. Stale live slots and stale spend are refused.
	b := sampleDecision("dec-c2", "train-a")
	if err := refreshAny(ctx, s, &b); err != nil {
		t.Fatal(err)
	}
	if b.Demand.Live != 2 || b.Budget.Spent.Amount.String() != sampleTotal {
		t.Fatalf("after one decision: live %d spent %s", b.Demand.Live, b.Budget.Spent.Amount)
	}
	staleLive, staleSpend := b, b
	staleLive.Demand.Live = 0
	spent := *b.Budget
	spent.Spent = cny("0")
	staleSpend.Budget = &spent
	for name, r := range map[string]sluice.DecisionRecord{"live": staleLive, "spend": staleSpend} {
		if err := s.AppendDecision(ctx, &r); !errors.Is(err, sluice.ErrStale) {
			t.Fatalf("stale %s: %v, want ErrStale", name, err)
		}
	}
	mustAppend(t, s, &b)

	// 4. Placements: unknown decision, wrong queue, duplicate line.
	if err := s.AppendPlacement(ctx, samplePlacement("dec-none", "train-a", 0, 1)); !errors.Is(err, ErrNoDecision) {
		t.Fatalf("placement of an unknown decision: %v", err)
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-c1", "train-b", 0, 1)); err == nil {
		t.Fatal("placement in another queue accepted")
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-c1", "train-a", 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-c1", "train-a", 0, 1)); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("duplicate placement: %v", err)
	}

	// 5. A failed line gives its slot and its expected cost back.
	if err := s.AppendPlacement(ctx, failedPlacement("dec-c1", "train-a", 1, 1, "capacity")); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.LiveSlots(ctx, "train-a"); n != 3 {
		t.Fatalf("live after a failed line: %d, want 3", n)
	}
	wantSpend := dec(sampleTotal).Mul(decimal.NewFromInt(2)).Sub(dec("219.35801229705"))
	if d, err := s.TierSpend(ctx, sluice.TierEmergency, march, april); err != nil || !d.Equal(wantSpend) {
		t.Fatalf("spend after a failed line: %s (%v), want %s", d, err, wantSpend)
	}

	// 6. Release steps, where the store has them.
	var openSeen []string
	if rl, ok := s.(sluice.ReleaseLedger); ok {
		// dec-c2 (train-a) is placed at a higher hourly burn than dec-c1's line 0.
		p2 := samplePlacement("dec-c2", "train-a", 0, 2)
		p2.Units = 2
		if err := s.AppendPlacement(ctx, p2); err != nil {
			t.Fatal(err)
		}
		rel := sluice.Release{DecisionID: "dec-c1", Line: 0, Queue: "train-a", Provider: "vast",
			ExternalIDs: []string{"inst-0"}, State: sluice.ReleasePending, Reason: sluice.ReleaseDrain, Slots: 1,
			RequestedAt: time.Date(2025, 3, 14, 11, 0, 0, 0, time.UTC), At: time.Date(2025, 3, 14, 11, 0, 0, 0, time.UTC)}
		if err := rl.AppendRelease(ctx, rel); err != nil {
			t.Fatal(err)
		}
		open, err := rl.OpenPlacements(ctx, "")
		if err != nil || len(open) != 2 || open[0].DecisionID != "dec-c2" || open[1].ReleaseState != sluice.ReleasePending {
			t.Fatalf("open placements while pending: %+v (%v)", open, err)
		}
		for _, o := range open {
			openSeen = append(openSeen, fmt.Sprintf("open %s/%d %s", o.DecisionID, o.Line, o.ReleaseState))
		}
		if q, _ := rl.OpenPlacements(ctx, "train-b"); len(q) != 0 {
			t.Fatalf("open placements of train-b: %+v", q)
		}
		rel.State, rel.AccruedCost, rel.BilledSeconds = sluice.ReleaseReleased, usd("20.5761316687233"), 6000
		rel.At = time.Date(2025, 3, 14, 10, 47, 0, 0, time.UTC)
		if err := rl.AppendRelease(ctx, rel); err != nil {
			t.Fatal(err)
		}
		lost := rel
		lost.State = sluice.ReleaseLost
		if err := rl.AppendRelease(ctx, lost); !errors.Is(err, ErrAlreadyReleased) {
			t.Fatalf("a second final step: %v, want ErrAlreadyReleased", err)
		}
		if open, _ := rl.OpenPlacements(ctx, "train-a"); len(open) != 1 || open[0].DecisionID != "dec-c2" || open[0].ReleaseState != "" {
			t.Fatalf("open placements after release: %+v", open)
		}
		if n, _ := s.LiveSlots(ctx, "train-a"); n != 2 {
			t.Fatalf("live after release: %d, want 2", n)
		}
		// 20.5761316687233 USD × 7.1072 = 146.23868299595023776 CNY replaces 219.35801229705.
		wantSpend = wantSpend.Sub(dec("219.35801229705")).Add(dec("146.23868299595023776"))
		if d, _ := s.TierSpend(ctx, sluice.TierEmergency, march, april); !d.Equal(wantSpend) {
			t.Fatalf("spend after release: %s, want %s", d, wantSpend)
		}
	}

	// 7. Every answer agrees with the chain replayed in Go, and it verifies.
	all := recs()
	live, err := LiveSlotsFromRecords(all)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range live {
		if n, _ := s.LiveSlots(ctx, q); n != want {
			t.Errorf("LiveSlots(%s) = %d, chain says %d", q, n, want)
		}
	}
	fromChain, err := SpendFromRecords(all, sluice.TierEmergency, march, april)
	if err != nil || !fromChain.Equal(wantSpend) {
		t.Errorf("spend from the chain %s (%v), want %s", fromChain, err, wantSpend)
	}
	if n, err := s.Verify(ctx); err != nil || n != len(all) {
		t.Fatalf("Verify: %d, %v (want %d)", n, err, len(all))
	}
	if n, err := VerifyStored(all); err != nil || n != len(all) {
		t.Fatalf("VerifyStored: %d, %v", n, err)
	}
	hashes := openSeen
	for _, r := range all {
		hashes = append(hashes, r.Kind+" "+r.RecordID+" "+r.Hash)
	}
	return hashes
}

// Both stores run the same script and end with the same chain, hash for hash.
func TestConformance(t *testing.T) {
	got := map[string][]string{}
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) { got[name] = conformanceScript(t, s) })
	}
	sq, dy := got["sqlite"], got["dynamodb"]
	if len(sq) == 0 || len(sq) != len(dy) {
		t.Fatalf("chains differ in length: sqlite %d, dynamodb %d", len(sq), len(dy))
	}
	for i := range sq {
		if sq[i] != dy[i] {
			t.Errorf("record %d: sqlite %s, dynamodb %s", i+1, sq[i], dy[i])
		}
	}
}
