package placement

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

func TestCheckPrice(t *testing.T) {
	tol := decimal.RequireFromString("0.02")
	usd := func(s string) sluice.Money { return sluice.MustMoney(s, "USD") }
	tests := []struct {
		market    sluice.Market
		got, want sluice.Money
		mismatch  bool
	}{
		{sluice.Spot, usd("10.2"), usd("10"), false}, // exactly +2%
		{sluice.Spot, usd("10.21"), usd("10"), true}, // above
		{sluice.Spot, usd("5"), usd("10"), false},    // spot may fall
		{sluice.OnDemand, usd("9.8"), usd("10"), false},
		{sluice.OnDemand, usd("9.79"), usd("10"), true}, // below, both ways off spot
		{sluice.OnDemand, sluice.MustMoney("10", "CNY"), usd("10"), true},
	}
	for _, tc := range tests {
		if got := CheckPrice(tc.market, tc.got, tc.want, tol) != ""; got != tc.mismatch {
			t.Errorf("%s %s vs %s: mismatch %v, want %v", tc.market, tc.got, tc.want, got, tc.mismatch)
		}
	}
}

func TestParseToken(t *testing.T) {
	const d = "dec-0123456789abcdef0123456789abcdef"
	for _, s := range []string{sluice.ClientToken(d, 7), Name(d, 7), UnitName(d, 7, 3)} {
		if dec, line, ok := ParseToken(s); !ok || dec != d || line != 7 {
			t.Errorf("%q: %q %d %v", s, dec, line, ok)
		}
	}
	for _, s := range []string{"", "sluice-", "dec-xyz-l1", "sluice-" + d, d + "-l", "my-pod"} {
		if _, _, ok := ParseToken(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
	if n := len(sluice.ClientToken(d, 999999)); n > 64 {
		t.Errorf("client token %d chars: EC2 and ECS allow 64", n)
	}
}

func TestErrorClass(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("x: %w", sluice.ErrInsufficientCapacity): "capacity", fmt.Errorf("x: %w", sluice.ErrQuota): "quota",
		sluice.ErrCapabilityUnavailable: "capability", sluice.ErrTransient: "transient", sluice.ErrPriceMismatch: "price-mismatch",
		sluice.ErrBidOutOfRange: "bid-range", errors.New("other"): "",
	} {
		if got := ErrorClass(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}

func TestLocks(t *testing.T) {
	var l Locks
	u := l.Lock("a")
	u2 := l.Lock("b") // another token is not blocked
	u2()
	u()
	if len(l.locks) != 0 {
		t.Fatalf("locks kept: %d", len(l.locks))
	}
}
