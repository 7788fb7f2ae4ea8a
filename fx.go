package sluice

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// FXScale is the number of decimal places kept when a conversion divides
// (quote → base currency). It is the only rounding point in FX conversion;
// rounding is half away from zero (decimal.DivRound). Multiplication (base →
// quote) is exact.
const FXScale = 10

// FXRate is one dated exchange rate: 1 Base = Rate Quote, e.g. 1 USD = 7.1072 CNY
// (the way CFETS publishes the central parity). It is stored with every decision that used it.
type FXRate struct {
	Base   string          `json:"base"`
	Quote  string          `json:"quote"`
	Rate   decimal.Decimal `json:"rate"`
	AsOf   time.Time       `json:"as_of"`
	Source string          `json:"source"`
}

// FXTable is the set of rates a decision may use.
type FXTable []FXRate

// Convert returns m in currency to, and the rate used (nil when no conversion
// was needed). base→quote multiplies exactly; quote→base divides, rounded to
// FXScale places. An error names the missing pair.
func (t FXTable) Convert(m Money, to string) (Money, *FXRate, error) {
	if m.Currency == to {
		return m, nil, nil
	}
	for i := range t {
		r := &t[i]
		switch {
		case r.Base == m.Currency && r.Quote == to:
			return Money{m.Amount.Mul(r.Rate), to}, r, nil
		case r.Quote == m.Currency && r.Base == to:
			return Money{m.Amount.DivRound(r.Rate, FXScale), to}, r, nil
		}
	}
	return Money{}, nil, fmt.Errorf("no FX rate between %s and %s", m.Currency, to)
}
