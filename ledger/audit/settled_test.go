package audit

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// settledChain is the consistent sample decision, its placement (2 units of
// vast at 12.345678901234 USD per unit-hour, placed 09:27:00Z, line bid 1.05
// below the unit price) edited by edit, and, when rel is not nil, one
// release step.
func settledChain(t *testing.T, editDecision func(map[string]any), edit func(*sluice.Placement), rel *sluice.Release) []ledger.Stored {
	t.Helper()
	b, err := os.ReadFile("../testdata/placement.canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var pr ledger.PlacementRecord
	if err := json.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&pr.Placement)
	}
	pb, _ := json.Marshal(pr)
	p := pr.Placement
	d := consistent(t)
	if editDecision != nil {
		editDecision(d)
	}
	recs := []ledger.Stored{
		stored(t, 1, d),
		{Seq: 2, Kind: ledger.KindPlacement, RecordID: ledger.PlacementRecordID(p.DecisionID, p.Line), DecisionID: p.DecisionID, Body: pb},
	}
	if rel != nil {
		r := *rel
		r.Kind, r.DecisionID, r.Line, r.Queue, r.Provider = ledger.KindRelease, p.DecisionID, p.Line, p.Queue, p.Provider
		r.ExternalIDs, r.Slots = p.ExternalIDs, p.Slots
		rb, _ := json.Marshal(ledger.ReleaseRecord{Release: r})
		recs = append(recs, ledger.Stored{Seq: 3, Kind: ledger.KindRelease, RecordID: ledger.ReleaseRecordID(r), DecisionID: p.DecisionID, Body: rb})
	}
	return recs
}

// H3: settled money and the facts it rests on are recomputed, each edit
// refused naming the record (seq) and the field.
func TestRecomputeSettledMoney(t *testing.T) {
	placed := time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC)
	released := func(run time.Duration, secs int64, amount string) *sluice.Release {
		at := placed.Add(run)
		return &sluice.Release{State: sluice.ReleaseReleased, Reason: sluice.ReleaseDrain, RequestedAt: at, At: at,
			BilledSeconds: secs, AccruedCost: sluice.MustMoney(amount, "USD")}
	}
	// Known right by hand: 12.345678901234 × 2 × 30 ÷ 3600 = 0.20576131502056…,
	// half away from zero at 10 places: 0.2057613150. Vast bills per second,
	// no minimum (brokers/billing.Rules).
	if _, _, err := Recompute(settledChain(t, nil, nil, released(30*time.Second, 30, "0.2057613150"))); err != nil {
		t.Fatalf("consistent chain refused: %v", err)
	}
	// Up to the 2 % reuse tolerance: 12.345678901234 × 1.02 = 12.59259247925868.
	if _, _, err := Recompute(settledChain(t, nil, func(p *sluice.Placement) { p.Price = sluice.MustMoney("12.59259247925868", "USD") }, nil)); err != nil {
		t.Fatalf("price at the tolerance refused: %v", err)
	}
	// A failed line names no instances and is fine.
	if _, _, err := Recompute(settledChain(t, nil, func(p *sluice.Placement) {
		p.ExternalIDs, p.Price, p.Error, p.ErrorClass = nil, sluice.Money{}, "no capacity", sluice.ClassCapacity
	}, nil)); err != nil {
		t.Fatalf("failed placement refused: %v", err)
	}
	for _, c := range []struct {
		name     string
		decision func(map[string]any)
		edit     func(*sluice.Placement)
		rel      *sluice.Release
		seq      string
		want     string
	}{
		{"accrued cost raised by 999", nil, nil, released(30*time.Second, 30, "999.2057613150"), "seq 3",
			"accrued_cost: recorded 999.205761315 USD, price 12.345678901234 USD × 2 units over 30 billed seconds = 0.205761315 USD"},
		{"billed seconds 99999 for a 30 s run, cost to match", nil, nil, released(30*time.Second, 99999, "685.8333314583"), "seq 3",
			"billed_seconds 99999, more than the 30 s vast bills from placed_at 2025-03-14T09:27:00Z to at 2025-03-14T09:27:30Z"},
		{"billed seconds short of the run", nil, nil, released(30*time.Second, 29, "0.1989026045"), "seq 3",
			"billed_seconds 29, less than the 30 s"},
		{"placement price 10×", nil, func(p *sluice.Placement) { p.Price = sluice.MustMoney("123.45678901234", "USD") }, nil, "seq 2",
			"price 123.45678901234 USD, above 12.59259247925868 USD (line 0's bid or unit price 12.345678901234 USD + 2%)"},
		{"placement price one digit above the tolerance", nil, func(p *sluice.Placement) { p.Price = sluice.MustMoney("12.59259247925869", "USD") }, nil, "seq 2",
			"price 12.59259247925869 USD, above"},
		{"placement price in another currency", nil, func(p *sluice.Placement) { p.Price = sluice.MustMoney("12.345678901234", "CNY") }, nil, "seq 2",
			"price 12.345678901234 CNY, line 0 is priced in USD"},
		{"placed line with no external ids", nil, func(p *sluice.Placement) { p.ExternalIDs = []string{} }, nil, "seq 2",
			"external_ids: a placed line with no instance ids"},
		{"placed eight hours before its decision", nil, func(p *sluice.Placement) { p.PlacedAt = p.PlacedAt.Add(-8 * time.Hour) }, nil, "seq 2",
			"is before its decision (decided_at"},
		{"decided_at moved out of the budget period", func(m map[string]any) { m["decided_at"] = "2025-02-15T00:00:00Z" }, nil, nil, "seq 1",
			"decided_at 2025-02-15T00:00:00Z is outside the budget period [2025-03-01T00:00:00Z, 2025-04-01T00:00:00Z)"},
		{"decided_at at the period end", func(m map[string]any) { m["decided_at"] = "2025-04-01T00:00:00Z" }, nil, nil, "seq 1",
			"decided_at 2025-04-01T00:00:00Z is outside the budget period"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Recompute(settledChain(t, c.decision, c.edit, c.rel))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.seq) {
				t.Fatalf("got %v\nwant %q at %s", err, c.want, c.seq)
			}
		})
	}
}

// AWS bills at least 60 s (brokers/billing.Rules["aws"]); the sandbox bills
// per second. Both are accepted for a 10 s run; 61 s is not.
func TestRecomputeBilledSecondsMinimum(t *testing.T) {
	if got := billedCeiling("aws", time.Unix(0, 0), time.Unix(10, 0)); got != 60 {
		t.Fatalf("aws ceiling for 10 s: %d, want 60", got)
	}
	if got := billedCeiling("vast", time.Unix(0, 0), time.Unix(10, 1)); got != 11 {
		t.Fatalf("vast ceiling for 10.000000001 s: %d, want 11", got)
	}
	if got := billedCeiling("no-such-provider", time.Unix(0, 0), time.Unix(10, 0)); got != 10 {
		t.Fatalf("unknown provider ceiling: %d, want 10 (per second)", got)
	}
}

// The same fixing (pair, as-of, source) has one rate across decisions: a
// second decision whose rates and conversions were all rewritten together
// (7.1072 → 14.2144) is refused, naming the first decision's record.
func TestRecomputeFXSameFixing(t *testing.T) {
	second := func(rate, billing string) map[string]any {
		m := consistent(t)
		m["decision_id"] = "dec-second"
		m["decided_at"] = "2025-03-15T00:00:00Z"
		m["budget"].(map[string]any)["spent"] = map[string]any{"amount": "438.7160454342656384", "currency": "CNY"}
		m["budget"].(map[string]any)["headroom"] = map[string]any{"amount": "119561.4089545657343616", "currency": "CNY"}
		m["fx"].([]any)[0].(map[string]any)["rate"] = rate
		line := m["lines"].([]any)[0].(map[string]any)
		line["fx_rate"].(map[string]any)["rate"] = rate
		line["expected_cost_billing"] = map[string]any{"amount": billing, "currency": "CNY"}
		m["total_expected_cost"] = map[string]any{"amount": billing, "currency": "CNY"}
		return m
	}
	if _, _, err := Recompute([]ledger.Stored{stored(t, 1, consistent(t)), stored(t, 2, second("7.1072", "438.7160454342656384"))}); err != nil {
		t.Fatalf("same rate twice refused: %v", err)
	}
	// By hand: 61.728394506172 × 14.2144 = 877.4320908685312768.
	_, _, err := Recompute([]ledger.Stored{stored(t, 1, consistent(t)), stored(t, 2, second("14.2144", "877.4320908685312768"))})
	if err == nil || !strings.Contains(err.Error(), `record seq 2 (dec-second): fx[0] USD/CNY as of 2025-03-14T01:15:00Z from "CFETS central parity": rate 14.2144, record seq 1 recorded 7.1072`) {
		t.Fatalf("got %v", err)
	}
}
