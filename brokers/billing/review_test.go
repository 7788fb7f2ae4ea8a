package billing

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// Dividing by 3600 is not exact (3600 = 2⁴·3²·5²): 1 USD/h for 1 s is
// 0.000277… USD. The fakes bill with Cost and the ledger records
// sluice.PerSecond; both must round at the one documented point (AccruedScale
// places, half away from zero), or a fake's bill and the ledger's accrued
// cost differ in the 11th to 16th place (decimal.Div silently rounds to 16).
func TestReviewCostRoundsWhereTheLedgerDoes(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	for _, price := range []string{"1", "32.7726", "0.35"} {
		c, s := Rules["runpod"].Cost(sluice.MustMoney(price, "USD"), t0, t0.Add(7*time.Second))
		want, ws := sluice.PerSecond(sluice.Placement{Price: sluice.MustMoney(price, "USD"), Units: 1, PlacedAt: t0}, t0.Add(7*time.Second))
		if s != ws || !c.Amount.Equal(want.Amount) {
			t.Errorf("%s USD/h for 7 s: billing %s (%d s), ledger %s (%d s)", price, c.Amount, s, want.Amount, ws)
		}
	}
}
