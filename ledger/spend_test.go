package ledger

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// The first second of a month belongs to that month, also with fractional
// seconds, and a non-UTC decided_at lands in its UTC month.
func TestTierSpendMonthEdges(t *testing.T) {
	s, _ := newLedger(t)
	march := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	april := march.AddDate(0, 1, 0)
	for i, at := range []time.Time{
		april.Add(500 * time.Millisecond),                                 // April
		time.Date(2025, 4, 1, 7, 59, 0, 0, time.FixedZone("CST", 8*3600)), // 2025-03-31T23:59Z: March
		march.Add(-time.Millisecond),                                      // February
	} {
		rec := sampleDecision("dec-edge-"+string(rune('a'+i)), "q-edge")
		rec.DecidedAt = at
		rec.Budget = nil
		rec.TotalExpectedCost = sluice.MustMoney("1", "CNY")
		appendDecision(t, s, &rec)
	}
	got, err := s.TierSpend(t.Context(), sluice.TierEmergency, march, april)
	if err != nil || got.String() != "1" {
		t.Fatalf("March spend = %s (%v), want 1 (only the CST decision)", got, err)
	}
	got, _ = s.TierSpend(t.Context(), sluice.TierEmergency, april, april.AddDate(0, 1, 0))
	if got.String() != "1" {
		t.Fatalf("April spend = %s, want 1", got)
	}
}
