package chart

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger/audit"
)

func TestDailySpendByTier(t *testing.T) {
	days := func(vals map[int]string) []decimal.Decimal {
		out := make([]decimal.Decimal, 30)
		for d, v := range vals {
			out[d-1] = decimal.RequireFromString(v)
		}
		return out
	}
	r := &audit.Report{Month: "2026-11", Currency: "USD", Days: 30, Total: audit.Row{Spend: decimal.RequireFromString("432.075844768")},
		Daily: map[sluice.Tier][]decimal.Decimal{
			sluice.TierEmergency: days(map[int]string{3: "76.3458", 12: "101.7944"}),
			sluice.TierElastic:   days(map[int]string{12: "184.9909950472"}),
		}}
	b, err := DailySpendByTier(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"<svg", "Sluice daily committed spend by budget tier, 2026-11 (USD)", "total 432.075844768 USD",
		">elastic<", ">emergency<", ">30<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// An empty month draws, like the table and CSV: one all-zero series.
	empty, err := DailySpendByTier(&audit.Report{Month: "2026-10", Currency: "USD", Days: 31, Total: audit.Row{Spend: decimal.Zero}})
	if err != nil {
		t.Fatalf("empty month: %v", err)
	}
	for _, want := range []string{"<svg", "2026-10 (USD)", "total 0 USD", ">(no spend)<", ">31<"} {
		if !strings.Contains(string(empty), want) {
			t.Errorf("empty-month SVG lacks %q", want)
		}
	}
}
