package billing

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestCost(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	tests := []struct {
		provider string
		ran      time.Duration
		price    string
		seconds  int64
		cost     string
	}{
		{"aws", 10 * time.Second, "32.7726", 60, "0.54621"},              // 60 s minimum
		{"aws", 90*time.Second + 300*time.Millisecond, "36", 91, "0.91"}, // rounded up to the second
		{"runpod", 10 * time.Second, "3.6", 10, "0.01"},
		{"vast", time.Hour, "1.234567", 3600, "1.234567"},
		{"aliyun", 0, "10", 0, "0"},
	}
	for _, tc := range tests {
		r, err := For(tc.provider)
		if err != nil {
			t.Fatal(err)
		}
		c, s := r.Cost(sluice.MustMoney(tc.price, "USD"), t0, t0.Add(tc.ran))
		if s != tc.seconds || c.Amount.String() != tc.cost {
			t.Errorf("%s %s at %s: %d s %s, want %d s %s", tc.provider, tc.ran, tc.price, s, c.Amount, tc.seconds, tc.cost)
		}
	}
	if _, err := For("lambda"); err == nil {
		t.Error("unknown provider accepted")
	}
	if got := Upfront(sluice.MustMoney("30.5", "USD"), 24).Amount.String(); got != "732" {
		t.Errorf("upfront = %s", got)
	}
}
