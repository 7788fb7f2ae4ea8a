package policy

import (
	"testing"

	"github.com/sluicehq/sluice"
)

// TestAppendAmountMatchesPriceText: batchInput writes every amount into one
// shared buffer; each piece must be exactly the offer's priceText.
func TestAppendAmountMatchesPriceText(t *testing.T) {
	amounts := []string{"0", "1", "20.5", "10", "3.000000000001", "0.000000000001", "123456.789", "7.10720000", "5.8394",
		"1234567890123456789.5", "100", "0.5"}
	var buf []byte
	var ends []int
	var want []string
	for _, a := range amounts {
		for _, g := range []int{1, 3, 8} {
			o := sluice.Offer{UnitPrice: sluice.MustMoney(a, "USD"), GPUsPerUnit: g}
			k, ok := priceOf(o)
			text, ok2 := priceText(o)
			if !ok || !ok2 {
				t.Fatalf("%s / %d: no price", a, g)
			}
			buf = k.appendAmount(buf)
			ends = append(ends, len(buf))
			want = append(want, text)
		}
	}
	start := 0
	for i, end := range ends {
		if got := string(buf[start:end]); got != want[i] {
			t.Errorf("piece %d: %q, want %q", i, got, want[i])
		}
		start = end
	}
}
