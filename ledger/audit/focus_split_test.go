package audit

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

var updateSplit = flag.Bool("update-split", false, "rewrite testdata/golden/focus-split-*.csv")

// crossChain is reviewChain with the placement made at placed; rel == nil
// leaves the line open (projected for its planned 2.5 h).
func crossChain(t *testing.T, placed time.Time, rel *sluice.Release) []ledger.Stored {
	t.Helper()
	recs := reviewChain(t, sluice.Release{State: sluice.ReleaseReleased, At: placed})
	var pr ledger.PlacementRecord
	if err := json.Unmarshal(recs[1].Body, &pr); err != nil {
		t.Fatal(err)
	}
	pr.Placement.PlacedAt = placed
	recs[1].Body, _ = json.Marshal(pr)
	if rel == nil {
		return recs[:2]
	}
	p := pr.Placement
	r := *rel
	r.Kind, r.DecisionID, r.Line, r.Queue, r.Provider = ledger.KindRelease, p.DecisionID, p.Line, p.Queue, p.Provider
	r.ExternalIDs, r.Slots = p.ExternalIDs, p.Slots
	recs[2].Body, _ = json.Marshal(ledger.ReleaseRecord{Release: r})
	recs[2].RecordID = ledger.ReleaseRecordID(r)
	return recs
}

func focusCSV(t *testing.T, recs []ledger.Stored, from, to time.Time) (string, []map[string]string) {
	t.Helper()
	book, err := Load(recs)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	n, err := WriteFOCUS(&sb, book, from, to, FOCUSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(sb.String())).ReadAll()
	if err != nil || len(rows) != n+1 {
		t.Fatalf("%d rows for %d written: %v", len(rows), n, err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, c := range rows[0] {
			m[c] = r[i]
		}
		out = append(out, m)
	}
	return sb.String(), out
}

var (
	nov1 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	dec1 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	jan1 = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Finding #13: a line from 2026-11-30T22:00:00Z to 2026-12-01T02:00:00Z is
// two FOCUS rows, one per billing period, each charge period inside its
// billing period, money and quantity apportioned by seconds (2 h : 2 h), the
// parts summing exactly to the unsplit row.
func TestFOCUSSplitsAtMonthEnd(t *testing.T) {
	placed := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	// By hand: 12.345678901234 USD × 2 units × 14400 s ÷ 3600 =
	// 98.765431209872, rounded to AccruedScale (10): 98.7654312099.
	settled := &sluice.Release{State: sluice.ReleaseReleased, Reason: sluice.ReleaseDrain, RequestedAt: at, At: at,
		BilledSeconds: 14400, AccruedCost: sluice.MustMoney("98.7654312099", "USD")}
	for _, c := range []struct {
		name  string
		rel   *sluice.Release
		whole string // the unsplit charge period's end
	}{
		{"settled", settled, "2026-12-01T02:00:00Z"},
		{"open", nil, "2026-12-01T00:30:00Z"}, // planned 2.5 h
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := crossChain(t, placed, c.rel)
			text, rows := focusCSV(t, recs, nov1, jan1)
			golden := filepath.Join("testdata", "golden", "focus-split-"+c.name+".csv")
			if *updateSplit {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-split)", err)
			}
			if text != string(want) {
				t.Errorf("FOCUS CSV differs from %s:\n%s", golden, text)
			}
			if len(rows) != 2 {
				t.Fatalf("%d rows, want 2 (one per month)", len(rows))
			}
			for i, r := range rows {
				cs, _ := time.Parse(FOCUSTime, r["ChargePeriodStart"])
				ce, _ := time.Parse(FOCUSTime, r["ChargePeriodEnd"])
				bs, _ := time.Parse(FOCUSTime, r["BillingPeriodStart"])
				be, _ := time.Parse(FOCUSTime, r["BillingPeriodEnd"])
				if cs.Before(bs) || ce.After(be) || !ce.After(cs) {
					t.Errorf("row %d: charge %s–%s outside billing %s–%s", i, cs, ce, bs, be)
				}
				for _, lc := range [][2]string{{"ListCost", "ListUnitPrice"}, {"ContractedCost", "ContractedUnitPrice"}} {
					want := dec(t, r[lc[1]]).Mul(dec(t, r["PricingQuantity"]))
					if !dec(t, r[lc[0]]).Equal(want) {
						t.Errorf("row %d: %s %s ≠ %s × PricingQuantity = %s", i, lc[0], r[lc[0]], lc[1], want)
					}
				}
			}
			if rows[0]["ChargePeriodStart"] != "2026-11-30T22:00:00Z" || rows[0]["ChargePeriodEnd"] != "2026-12-01T00:00:00Z" ||
				rows[1]["ChargePeriodStart"] != "2026-12-01T00:00:00Z" || rows[1]["ChargePeriodEnd"] != c.whole {
				t.Errorf("charge periods %s–%s, %s–%s", rows[0]["ChargePeriodStart"], rows[0]["ChargePeriodEnd"],
					rows[1]["ChargePeriodStart"], rows[1]["ChargePeriodEnd"])
			}

			// The parts sum exactly to the unsplit row (the row as it was
			// written before splitting: focusRow).
			book, err := Load(recs)
			if err != nil {
				t.Fatal(err)
			}
			d := book.Decisions[0]
			whole, err := focusRow(d, d.Lines[0], denyReasons(&d.Rec), FOCUSOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, col := range []string{"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingQuantity", "PricingCurrencyEffectiveCost"} {
				sum := dec(t, rows[0][col]).Add(dec(t, rows[1][col]))
				if sum.String() != whole[col] {
					t.Errorf("%s: %s + %s = %s, unsplit %s", col, rows[0][col], rows[1][col], sum, whole[col])
				}
			}

			// --from/--to: each month's export holds its part only.
			_, novRows := focusCSV(t, recs, nov1, dec1)
			_, decRows := focusCSV(t, recs, dec1, jan1)
			if len(novRows) != 1 || len(decRows) != 1 || novRows[0]["BilledCost"] != rows[0]["BilledCost"] ||
				decRows[0]["BilledCost"] != rows[1]["BilledCost"] {
				t.Errorf("November export %v, December export %v", novRows, decRows)
			}
		})
	}
}

func dec(t *testing.T, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return d
}

// Apportion's parts sum exactly to the total (the remainder goes to the
// last part), each other part rounded half away from zero.
func TestApportionSumsExactly(t *testing.T) {
	for _, c := range []struct {
		total   string
		weights []int64
		places  int32
		want    string
	}{
		// 1 ÷ 3 = 0.3333333333 (10 places), twice; the last 0.3333333334.
		{"1", []int64{1, 1, 1}, 10, "[0.3333333333 0.3333333333 0.3333333334]"},
		// 2 h : 2 h of 701.9490894778 CNY.
		{"701.9490894778", []int64{7200, 7200}, 10, "[350.9745447389 350.9745447389]"},
		// Half away from zero: 0.000001 × 1/2 = 0.0000005 → 0.000001, last 0.
		{"0.000001", []int64{1, 1}, 6, "[0.000001 0]"},
		{"-0.000001", []int64{1, 1}, 6, "[-0.000001 0]"},
		{"5", []int64{0, 0}, 6, "[0 5]"},
	} {
		parts := Apportion(decimal.RequireFromString(c.total), c.weights, c.places)
		var strs []string
		sum := decimal.Zero
		for _, p := range parts {
			strs = append(strs, p.String())
			sum = sum.Add(p)
		}
		if got := "[" + strings.Join(strs, " ") + "]"; got != c.want {
			t.Errorf("Apportion(%s, %v, %d) = %s, want %s", c.total, c.weights, c.places, got, c.want)
		}
		if !sum.Equal(decimal.RequireFromString(c.total)) {
			t.Errorf("Apportion(%s, %v): parts sum to %s", c.total, c.weights, sum)
		}
	}
}

// An orphan row (no unit price) crossing midnight at month end splits its
// list columns like BilledCost. By hand: 0.71072 CNY over 30 s + 30 s is
// 0.35536 + 0.35536; 0.008333 h ÷ 2 = 0.0041665, half away from zero to 6
// places 0.004167, the last part the remainder 0.004166.
func TestFOCUSSplitOrphanRow(t *testing.T) {
	v := map[string]string{"BilledCost": "0.71072", "EffectiveCost": "0.71072", "ListCost": "0.71072",
		"ContractedCost": "0.71072", "PricingQuantity": "0.008333", "PricingCurrencyEffectiveCost": "0.1",
		"ChargeDescription": "orphan"}
	start := time.Date(2026, 11, 30, 23, 59, 30, 0, time.UTC)
	parts, err := splitByMonth(v, start, start.Add(time.Minute))
	if err != nil || len(parts) != 2 {
		t.Fatalf("%d parts, %v", len(parts), err)
	}
	want := [2]map[string]string{
		{"BilledCost": "0.35536", "ListCost": "0.35536", "ContractedCost": "0.35536", "PricingQuantity": "0.004167",
			"PricingCurrencyEffectiveCost": "0.05", "BillingPeriodStart": "2026-11-01T00:00:00Z", "ChargePeriodEnd": "2026-12-01T00:00:00Z"},
		{"BilledCost": "0.35536", "ListCost": "0.35536", "ContractedCost": "0.35536", "PricingQuantity": "0.004166",
			"PricingCurrencyEffectiveCost": "0.05", "BillingPeriodStart": "2026-12-01T00:00:00Z", "ChargePeriodEnd": "2026-12-01T00:00:30Z"},
	}
	for i, w := range want {
		for col, x := range w {
			if parts[i][col] != x {
				t.Errorf("part %d %s = %q, want %q", i, col, parts[i][col], x)
			}
		}
	}
	// Inside one month: the row comes back unchanged.
	if one, _ := splitByMonth(v, start.Add(-time.Hour), start); len(one) != 1 || one[0]["BilledCost"] != "0.71072" {
		t.Errorf("a row inside November was split: %v", one)
	}
}

// FuzzApportion: the parts always sum exactly to the total, and every part
// but the last has at most places decimals.
func FuzzApportion(f *testing.F) {
	f.Add("701.94567269500128", int64(7200), int64(7200), int64(1), uint8(10))
	f.Add("-0.000001", int64(1), int64(1), int64(1), uint8(6))
	f.Fuzz(func(t *testing.T, total string, a, b, c int64, places uint8) {
		d, err := decimal.NewFromString(total)
		if err != nil || a < 0 || b < 0 || c < 0 || a > 1<<40 || b > 1<<40 || c > 1<<40 || places > 30 {
			t.Skip()
		}
		parts := Apportion(d, []int64{a, b, c}, int32(places))
		sum := decimal.Zero
		for i, p := range parts {
			sum = sum.Add(p)
			if i < len(parts)-1 && !p.Equal(p.Round(int32(places))) {
				t.Fatalf("part %d %s has more than %d places", i, p, places)
			}
		}
		if !sum.Equal(d) {
			t.Fatalf("parts %v sum to %s, total %s", parts, sum, d)
		}
	})
}
