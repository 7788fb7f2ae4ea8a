package audit

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// withOrphan appends a settled orphan release (as reconcile records it: no
// decision id, the tag in Error) of inst-9 at vast, 30 s billed,
// accrued 0.1 USD (price unknown to the ledger), released at 10:00:00Z.
func withOrphan(t *testing.T, recs []ledger.Stored, tag string) []ledger.Stored {
	t.Helper()
	at := time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)
	r := sluice.Release{Kind: ledger.KindRelease, Provider: "vast", ExternalIDs: []string{"inst-9"}, State: sluice.ReleaseReleased,
		Reason: sluice.ReleaseOrphan, RequestedAt: at, At: at, BilledSeconds: 30, AccruedCost: sluice.MustMoney("0.1", "USD"),
		Error: `tagged decision "` + tag + `" line 0: no open placement in the ledger`}
	rb, _ := json.Marshal(ledger.ReleaseRecord{Release: r})
	return append(recs, ledger.Stored{Seq: int64(len(recs) + 1), Kind: ledger.KindRelease, RecordID: ledger.ReleaseRecordID(r), Hash: "orphanhash", Body: rb})
}

func focusRows(t *testing.T, recs []ledger.Stored) []map[string]string {
	t.Helper()
	book, err := Load(recs)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	from := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := WriteFOCUS(&sb, book, from, from.AddDate(0, 1, 0), FOCUSOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(sb.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, c := range rows[0] {
			m[c] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// M2: an orphan's accrued cost reaches finance — a FOCUS row with
// x_DecisionId from its tag, and the report's spend of the tagged tier.
func TestOrphanInFOCUSAndReport(t *testing.T) {
	const id = "dec-0123456789abcdef0123456789abcdef"
	recs := withOrphan(t, settledChain(t, nil, nil, nil), id)
	if _, _, err := Recompute(recs); err != nil {
		t.Fatal(err)
	}
	rows := focusRows(t, recs)
	if len(rows) != 2 {
		t.Fatalf("%d FOCUS rows, want the line and the orphan", len(rows))
	}
	o := rows[1]
	// By hand: 0.1 USD × 7.1072 (the tagged decision's USD/CNY rate) = 0.71072 CNY.
	for col, want := range map[string]string{
		"BilledCost": "0.71072", "EffectiveCost": "0.71072", "ListCost": "0.71072", "BillingCurrency": "CNY",
		"x_DecisionId": id, "x_PlanLine": "0", "x_ChargeStatus": "orphan", "x_BudgetTier": "emergency", "x_Queue": "train-a",
		"ResourceId": "inst-9", "ProviderName": "Vast.ai", "PricingCurrency": "USD", "PricingCurrencyEffectiveCost": "0.1",
		"PricingQuantity": "0.008333", "ChargePeriodStart": "2025-03-14T09:59:30Z", "ChargePeriodEnd": "2025-03-14T10:00:00Z",
		"x_FXRate": "USD/CNY=7.1072", "x_RecordHash": "orphanhash",
	} {
		if o[col] != want {
			t.Errorf("orphan row %s = %q, want %q", col, o[col], want)
		}
	}
	book, _ := Load(recs)
	r, err := MonthReportIn(book, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), ByTier, nil, "CNY")
	if err != nil {
		t.Fatal(err)
	}
	// 438.7160454342656384 (the open line's expected cost) + 0.71072.
	if got := r.Total.Spend.String(); got != "439.4267654342656384" || r.Total.Orphans != 1 || r.Total.Decisions != 1 || r.Total.Lines != 1 {
		t.Fatalf("total spend %s, %d orphans, %d decisions, %d lines; want 439.4267654342656384, 1, 1, 1", got, r.Total.Orphans, r.Total.Decisions, r.Total.Lines)
	}
	if len(r.Tiers) != 1 || r.Tiers[0].Spend.String() != "439.4267654342656384" {
		t.Fatalf("tier spend %+v", r.Tiers)
	}
	var sb strings.Builder
	r.WriteTable(&sb)
	if !strings.Contains(sb.String(), "spend includes 1 orphan release(s) (reason reconcile-orphan") || !strings.Contains(sb.String(), "0.71072 CNY") {
		t.Fatalf("table lacks the orphan note:\n%s", sb.String())
	}
	// A tag naming no recorded decision: group "(orphan)", converted at
	// the latest earlier decision's rate.
	recs = withOrphan(t, settledChain(t, nil, nil, nil), "dec-never-committed")
	book, _ = Load(recs)
	r, err = MonthReportIn(book, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), ByTier, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Rows[0].Key != OrphanGroup || r.Rows[0].Spend.String() != "0.71072" {
		t.Fatalf("rows %+v", r.Rows)
	}
	if rows := focusRows(t, recs); rows[1]["x_DecisionId"] != "dec-never-committed" || rows[1]["x_BudgetTier"] != "" {
		t.Fatalf("untracked orphan row %v", rows[1])
	}
}

// M3: a wait that is negative (alarm time after the placement) or
// saturated (an alarm time in year 1) is excluded and counted, never
// printed; L1: an empty month names the configured currency.
func TestReportWaitsAndEmptyMonth(t *testing.T) {
	month := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, trigger string
		waits, excl   int
		mean          time.Duration
	}{
		// By hand: 09:26:53.589 → 09:27:00 = 6.411 s, rounded to 6 s.
		{"normal", "2025-03-14T09:26:53.589Z", 1, 0, 6 * time.Second},
		{"alarm in the future", "9999-12-31T23:59:59.999Z", 0, 1, 0},
		{"alarm in year 1", "0001-01-01T00:00:00Z", 0, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := settledChain(t, func(m map[string]any) { m["trigger"].(map[string]any)["state_change_time"] = c.trigger }, nil, nil)
			book, err := Load(recs)
			if err != nil {
				t.Fatal(err)
			}
			for _, by := range []string{ByTier, ByProvider} {
				r, err := MonthReportIn(book, month, by, nil, "CNY")
				if err != nil {
					t.Fatal(err)
				}
				if g := r.Total; g.Waits != c.waits || g.WaitsExcluded != c.excl || g.WaitMean != c.mean || g.WaitMax < 0 {
					t.Fatalf("by %s: waits %d excluded %d mean %v max %v", by, g.Waits, g.WaitsExcluded, g.WaitMean, g.WaitMax)
				}
				var sb strings.Builder
				r.WriteTable(&sb)
				if strings.Contains(sb.String(), "-9223372036") || (c.excl > 0 && !strings.Contains(sb.String(), "1 wait(s) excluded")) {
					t.Fatalf("table:\n%s", sb.String())
				}
			}
		})
	}
	book, _ := Load(settledChain(t, nil, nil, nil))
	r, err := MonthReportIn(book, time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC), ByTier, map[sluice.Tier]sluice.Money{"elastic": sluice.MustMoney("20000", "USD")}, "USD")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	r.WriteTable(&sb)
	for _, want := range []string{"by tier (USD;", "Budgets 2025-07 (USD)", "elastic", "no decisions or orphan costs in 2025-07"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("empty month table lacks %q:\n%s", want, sb.String())
		}
	}
}

// L3: GPU-hours multiply before rounding: 16 GPUs × 1 billed second =
// 16/3600 = 0.00444444… → 0.004444 (not 16 × 0.000278 = 0.004448), and the
// FOCUS quantity 2 units × 1 s = 0.000556 (not 2 × 0.000278). Two such
// lines in one row: 32/3600 = 0.008889 (not 2 × 0.004444 = 0.008888).
func TestGPUHoursRoundOnce(t *testing.T) {
	placed := time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC)
	at := placed.Add(time.Second)
	recs := settledChain(t, nil, nil, &sluice.Release{State: sluice.ReleaseReleased, Reason: sluice.ReleaseDrain, RequestedAt: at, At: at,
		BilledSeconds: 1, AccruedCost: sluice.MustMoney("0.0068587105", "USD")})
	if _, _, err := Recompute(recs); err != nil {
		t.Fatal(err)
	}
	book, _ := Load(recs)
	r, err := MonthReportIn(book, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), ByTier, nil, "CNY")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Total.GPUHours.String(); got != "0.004444" {
		t.Fatalf("gpu_hours %s, want 0.004444", got)
	}
	g := Row{gpuSeconds: decimal.NewFromInt(32)}
	finish(&g)
	if got := g.GPUHours.String(); got != "0.008889" {
		t.Fatalf("two lines' gpu_hours %s, want 0.008889", got)
	}
	row := focusRows(t, recs)[0]
	// ListCost = ListUnitPrice × PricingQuantity exactly: 12.345678901234 ×
	// 7.1072 = 87.7432090868502848 CNY, × 0.000556 = 0.0487852242522887583488.
	if row["PricingQuantity"] != "0.000556" || row["ListUnitPrice"] != "87.7432090868502848" || row["ListCost"] != "0.0487852242522887583488" {
		t.Fatalf("PricingQuantity %s ListCost %s ListUnitPrice %s", row["PricingQuantity"], row["ListCost"], row["ListUnitPrice"])
	}
}
