package audit

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// consistent is the ledger's golden sample decision with its figures made
// consistent (the fixture's rework and billing amounts were typed, not
// computed): rework 0.000000000002 USD (2 units × 0.000000000001),
// expected 61.728394506172 USD, × 7.1072 = 438.7160454342656384 CNY.
func consistent(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../testdata/decision.canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	line := m["lines"].([]any)[0].(map[string]any)
	line["rework_cost"] = map[string]any{"amount": "0.000000000002", "currency": "USD"}
	line["expected_cost"] = map[string]any{"amount": "61.728394506172", "currency": "USD"}
	line["expected_cost_billing"] = map[string]any{"amount": "438.7160454342656384", "currency": "CNY"}
	m["total_expected_cost"] = map[string]any{"amount": "438.7160454342656384", "currency": "CNY"}
	return m
}

func stored(t *testing.T, seq int64, m map[string]any) ledger.Stored {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	id := m["decision_id"].(string)
	return ledger.Stored{Seq: seq, Kind: ledger.KindDecision, RecordID: id, DecisionID: id, Body: b}
}

func TestRecomputeSample(t *testing.T) {
	d, n, err := Recompute([]ledger.Stored{stored(t, 1, consistent(t))})
	if err != nil || d != 1 || n != 1 {
		t.Fatalf("consistent sample: %d decisions %d lines, %v", d, n, err)
	}
	// The fixture as committed does not recompute: its billing amount was typed.
	b, _ := os.ReadFile("../testdata/decision.canonical.json")
	var raw map[string]any
	json.Unmarshal(b, &raw)
	if _, _, err := Recompute([]ledger.Stored{stored(t, 1, raw)}); err == nil || !strings.Contains(err.Error(), "rework_cost") {
		t.Fatalf("fixture: %v, want a rework_cost problem", err)
	}
}

// Each edit of one figure is caught, naming the record and the figure.
func TestRecomputeFindsEdits(t *testing.T) {
	line := func(m map[string]any) map[string]any { return m["lines"].([]any)[0].(map[string]any) }
	money := func(a, c string) map[string]any { return map[string]any{"amount": a, "currency": c} }
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unit price", func(m map[string]any) { line(m)["unit_price"] = money("12.345678901235", "USD") }, "unit_price: recorded 12.345678901235 USD"},
		{"units", func(m map[string]any) { line(m)["units"] = 3 }, "gpus: recorded 16, units 3"},
		{"hours", func(m map[string]any) { line(m)["hours"] = "2.6" }, "base_cost: recorded 61.72839450617 USD, unit_price × units × hours = 64.1975302864168 USD"},
		{"base cost", func(m map[string]any) { line(m)["base_cost"] = money("61.72839450618", "USD") }, "base_cost"},
		{"rework", func(m map[string]any) { line(m)["rework_cost"] = money("0.000000000003", "USD") }, "rework_cost 0.000000000003 USD is not units ×"},
		{"expected", func(m map[string]any) { line(m)["expected_cost"] = money("61.728394506173", "USD") }, "expected_cost: recorded 61.728394506173 USD, base + rework = 61.728394506172 USD"},
		{"fx rate on the line", func(m map[string]any) { line(m)["fx_rate"].(map[string]any)["rate"] = "7.1073" }, "fx_rate USD/CNY 7.1073 is not among the decision's rates"},
		{"fx rate everywhere", func(m map[string]any) {
			line(m)["fx_rate"].(map[string]any)["rate"] = "7.1073"
			m["fx"].([]any)[0].(map[string]any)["rate"] = "7.1073"
		}, "expected_cost_billing: recorded 438.7160454342656384 CNY, expected_cost at the line's rate = 438.7222182737162556 CNY"},
		{"fx source", func(m map[string]any) {
			line(m)["fx_rate"].(map[string]any)["source"] = ""
			m["fx"].([]any)[0].(map[string]any)["source"] = ""
		}, "fx[0] USD/CNY: no source"},
		{"billing", func(m map[string]any) { line(m)["expected_cost_billing"] = money("438.7160454342656385", "CNY") }, "expected_cost_billing"},
		{"total", func(m map[string]any) { m["total_expected_cost"] = money("438.71604543426564", "CNY") }, "total_expected_cost: recorded 438.71604543426564 CNY, Σ expected_cost_billing = 438.7160454342656384 CNY"},
		{"slots", func(m map[string]any) { m["slots_covered"] = 3 }, "slots_covered: recorded 3, Σ line slots = 2"},
		{"headroom", func(m map[string]any) {
			m["budget"].(map[string]any)["headroom"] = money("120000.126", "CNY")
		}, "budget headroom"},
		{"spent", func(m map[string]any) {
			m["budget"].(map[string]any)["spent"] = money("1", "CNY")
			m["budget"].(map[string]any)["headroom"] = money("119999.125", "CNY")
		}, "budget spent: recorded 1, the chain before it gives 0"},
		{"demand", func(m map[string]any) { m["demand"].(map[string]any)["slots"] = 1 }, "demand: needed 2 slots 1 recorded"},
		{"offer swapped", func(m map[string]any) { line(m)["offer_id"] = "vast:9:bid" }, "offer not among the decision's offers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := consistent(t)
			c.edit(m)
			_, _, err := Recompute([]ledger.Stored{stored(t, 7, m)})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "record seq 7 (dec-0123456789abcdef0123456789abcdef)") {
				t.Fatalf("got %v\nwant %q naming seq 7", err, c.want)
			}
		})
	}
}

// A second decision of the tier must have seen the first one's committed
// spend, trued up by its failed line.
func TestRecomputeBudgetReplay(t *testing.T) {
	first := consistent(t)
	second := consistent(t)
	second["decision_id"] = "dec-second"
	second["decided_at"] = "2025-03-15T00:00:00Z"
	failed := map[string]any{"kind": "placement", "prev_hash": "", "hash": "", "placement": map[string]any{
		"decision_id": "dec-0123456789abcdef0123456789abcdef", "line": 0, "queue": "train-a", "provider": "vast",
		"offer_id": "vast:1234:bid", "client_token": "x", "external_ids": nil, "market": "spot", "units": 2, "slots": 2,
		"price": nil, "placed_at": "2025-03-14T09:27:00Z", "error": "capacity"}}
	fb, _ := json.Marshal(failed)
	pl := ledger.Stored{Seq: 2, Kind: ledger.KindPlacement, RecordID: "dec-0123456789abcdef0123456789abcdef/placement/0",
		DecisionID: "dec-0123456789abcdef0123456789abcdef", Body: fb}
	// After the failed line, the first decision commits nothing: spent 0 is right.
	if _, _, err := Recompute([]ledger.Stored{stored(t, 1, first), pl, stored(t, 3, second)}); err != nil {
		t.Fatal(err)
	}
	// Without the failure, the second decision should have seen 438.7160454342656384 spent.
	_, _, err := Recompute([]ledger.Stored{stored(t, 1, first), stored(t, 3, second)})
	if err == nil || !strings.Contains(err.Error(), "record seq 3 (dec-second): budget spent: recorded 0, the chain before it gives 438.7160454342656384") {
		t.Fatalf("got %v", err)
	}
}

// randomAmount is a decimal with up to 19 significant digits and 0–18 places.
func randomAmount(r *rand.Rand) decimal.Decimal {
	return decimal.New(r.Int64N(1e18), -int32(r.IntN(19)))
}

// Money stays exact: the sum of line costs does not depend on the order the
// lines are added in, digit for digit, for 500 random sets of up to 200
// lines with mixed scales (a float64 sum changes with the order).
func TestSumOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for range 500 {
		lines := make([]sluice.Line, 1+r.IntN(200))
		for i := range lines {
			lines[i].ExpectedCostBilling = sluice.Money{Amount: randomAmount(r), Currency: "USD"}
		}
		sum := func() string {
			total := sluice.Money{Amount: decimal.Zero, Currency: "USD"}
			for _, l := range lines {
				total = total.Add(l.ExpectedCostBilling)
			}
			return total.Amount.String()
		}
		want := sum()
		for range 5 {
			r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
			if got := sum(); got != want {
				t.Fatalf("sum %s in one order, %s in another", want, got)
			}
		}
	}
}

// FuzzSumOrder: any two amounts and a third add to the same string in every order.
func FuzzSumOrder(f *testing.F) {
	f.Add("0.1", "0.2", "0.3")
	f.Add("438.7160245941", "0.0000000001", "12")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var ds []decimal.Decimal
		for _, s := range []string{a, b, c} {
			d, err := decimal.NewFromString(s)
			if err != nil || len(s) > 40 {
				return
			}
			ds = append(ds, d)
		}
		x, y, z := ds[0], ds[1], ds[2]
		orders := []decimal.Decimal{x.Add(y).Add(z), x.Add(z).Add(y), y.Add(x).Add(z), y.Add(z).Add(x), z.Add(x).Add(y), z.Add(y).Add(x)}
		for _, o := range orders[1:] {
			if o.String() != orders[0].String() {
				t.Fatalf("%s+%s+%s: %s vs %s", a, b, c, orders[0], o)
			}
		}
	})
}

// FuzzRecompute: any body, as a decision and as a placement after it, is
// either recomputed or refused with a Problem; never a panic.
func FuzzRecompute(f *testing.F) {
	b, err := os.ReadFile("../testdata/decision.canonical.json")
	if err != nil {
		f.Fatal(err)
	}
	p, _ := os.ReadFile("../testdata/placement-failed.canonical.json")
	f.Add(b, p)
	f.Add([]byte(`{"decision_id":"d","lines":[{"units":0}]}`), []byte(`{"placement":{"decision_id":"d","line":0,"error":"x"}}`))
	f.Fuzz(func(t *testing.T, body, follower []byte) {
		var m struct {
			DecisionID string `json:"decision_id"`
		}
		json.Unmarshal(body, &m)
		recs := []ledger.Stored{
			{Seq: 1, Kind: ledger.KindDecision, RecordID: m.DecisionID, DecisionID: m.DecisionID, Body: body},
			{Seq: 2, Kind: ledger.KindPlacement, RecordID: m.DecisionID + "/placement/0", DecisionID: m.DecisionID, Body: follower},
		}
		_, _, err := Recompute(recs)
		var pr *Problem
		if err != nil && !errorsAs(err, &pr) {
			t.Fatalf("error is not a *Problem: %v", err)
		}
	})
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
