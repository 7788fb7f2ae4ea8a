package audit

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// reviewChain is the consistent sample decision, its placement (2 units of
// vast at 12.345678901234 USD per unit-hour, placed 09:27:00Z) and one
// release step built by rel.
func reviewChain(t *testing.T, rel sluice.Release) []ledger.Stored {
	t.Helper()
	b, err := os.ReadFile("../testdata/placement.canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var pr ledger.PlacementRecord
	if err := json.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	pb, _ := json.Marshal(pr)
	p := pr.Placement
	rel.Kind, rel.DecisionID, rel.Line, rel.Queue, rel.Provider = ledger.KindRelease, p.DecisionID, p.Line, p.Queue, p.Provider
	rel.ExternalIDs, rel.Slots = p.ExternalIDs, p.Slots
	rb, _ := json.Marshal(ledger.ReleaseRecord{Release: rel})
	return []ledger.Stored{
		stored(t, 1, consistent(t)),
		{Seq: 2, Kind: ledger.KindPlacement, RecordID: ledger.PlacementRecordID(p.DecisionID, p.Line), DecisionID: p.DecisionID, Body: pb},
		{Seq: 3, Kind: ledger.KindRelease, RecordID: ledger.ReleaseRecordID(rel), DecisionID: p.DecisionID, Body: rb},
	}
}

// A settled release's accrued cost is a figure like any other: price read
// back × units × billed seconds ÷ 3600 (sluice.PerSecond / the application's
// billing rule, rounded to sluice.AccruedScale places). Recompute must refuse
// a release whose accrued cost (or billed time) does not follow from its
// placement, or a re-chained tail with changed money passes `audit verify`.
func TestReviewRecomputeChecksAccruedCost(t *testing.T) {
	placed := time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC)
	rel := func(at time.Time, secs int64, amount string) sluice.Release {
		return sluice.Release{State: sluice.ReleaseReleased, Reason: sluice.ReleaseDrain, RequestedAt: at, At: at,
			BilledSeconds: secs, AccruedCost: sluice.Money{Amount: decimal.RequireFromString(amount), Currency: "USD"}}
	}
	// Known right by hand: 12.345678901234 × 2 × 3600 / 3600 = 24.691357802468,
	// rounded half away from zero to AccruedScale = 10 places: 24.6913578025.
	if _, _, err := Recompute(reviewChain(t, rel(placed.Add(time.Hour), 3600, "24.6913578025"))); err != nil {
		t.Fatalf("consistent release refused: %v", err)
	}
	for _, c := range []struct {
		name string
		r    sluice.Release
		want string
	}{
		{"accrued cost edited", rel(placed.Add(time.Hour), 3600, "1.00"), "accrued_cost"},
		{"billed seconds and cost cut together", rel(placed.Add(time.Hour), 60, "0.41152263"), "billed_seconds"},
	} {
		_, _, err := Recompute(reviewChain(t, c.r))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "seq 3") {
			t.Errorf("%s: %v, want a problem at seq 3 naming %s", c.name, err, c.want)
		}
	}
}

// FOCUS 1.2 (opa-and-audit.md §E1): ListCost = ListUnitPrice ×
// PricingQuantity and ContractedCost = ContractedUnitPrice ×
// PricingQuantity. A settled line billed 60 s has PricingQuantity = 2 units
// × 0.016667 h (hours rounded to 6 places); its BilledCost is the accrued
// cost, but ListCost and ContractedCost must follow the unit price and the
// quantity written on the row. (Vast bills per second with no minimum, so
// the run is 60 s: Recompute refuses more billed seconds than the provider's
// rule gives.)
func TestReviewFOCUSListCostIsUnitPriceTimesQuantity(t *testing.T) {
	placed := time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC)
	at := placed.Add(60 * time.Second)
	recs := reviewChain(t, sluice.Release{State: sluice.ReleaseReleased, Reason: sluice.ReleaseDrain, RequestedAt: at, At: at,
		BilledSeconds: 60, AccruedCost: sluice.MustMoney("0.41152263", "USD")})
	if _, _, err := Recompute(recs); err != nil {
		t.Fatal(err)
	}
	book, err := Load(recs)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if _, err := WriteFOCUS(&sb, book, placed.AddDate(0, 0, -1), placed.AddDate(0, 0, 1), FOCUSOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(sb.String())).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	col := map[string]string{}
	for i, c := range rows[0] {
		col[c] = rows[1][i]
	}
	qty := decimal.RequireFromString(col["PricingQuantity"])
	for _, c := range [][2]string{{"ListCost", "ListUnitPrice"}, {"ContractedCost", "ContractedUnitPrice"}} {
		want := decimal.RequireFromString(col[c[1]]).Mul(qty)
		if got := decimal.RequireFromString(col[c[0]]); !got.Equal(want) {
			t.Errorf("%s %s, %s %s × PricingQuantity %s = %s", c[0], got, c[1], col[c[1]], qty, want)
		}
	}
	// Found by hand: 0.41152263 USD × 7.1072 = 2.924773635936 CNY billed.
	if col["BilledCost"] != "2.924773635936" || col["BillingCurrency"] != "CNY" {
		t.Errorf("BilledCost %s %s, want 2.924773635936 CNY", col["BilledCost"], col["BillingCurrency"])
	}
}
