package sim

import (
	"errors"

	"github.com/shopspring/decimal"
)

// BreakevenScale is the number of decimal places of the break-even
// utilisation and hours per day (one division each, rounded half away from
// zero).
const BreakevenScale = 10

// Breakeven is where owning one GPU costs the same as renting it.
type Breakeven struct {
	// Utilisation is the fraction of the day (0..1 and beyond) above which owning is cheaper:
	// gpu-month cost ÷ (elastic price per GPU-hour × hours per month).
	Utilisation decimal.Decimal
	// HoursPerDay is Utilisation × 24: gpu-month cost × 24 ÷ (price × hours per month).
	HoursPerDay decimal.Decimal
	// OwningNeverPays is true when Utilisation > 1: renting around the clock is still cheaper.
	OwningNeverPays bool
}

// ComputeBreakeven returns the daily utilisation u* at which owning one GPU
// at monthCost per month costs as much as renting it at price per GPU-hour
// for u × hoursPerMonth hours: monthCost = price × u* × hoursPerMonth. Both
// amounts are in one currency; above u* owning is cheaper.
func ComputeBreakeven(monthCost, price, hoursPerMonth decimal.Decimal) (Breakeven, error) {
	switch {
	case !monthCost.IsPositive():
		return Breakeven{}, errors.New("gpu-month-cost: must be positive")
	case !price.IsPositive():
		return Breakeven{}, errors.New("elastic-price: must be positive")
	case !hoursPerMonth.IsPositive() || hoursPerMonth.GreaterThan(decimal.NewFromInt(744)):
		return Breakeven{}, errors.New("hours-per-month: want a decimal in (0, 744]")
	}
	rent := price.Mul(hoursPerMonth)
	b := Breakeven{
		Utilisation: monthCost.DivRound(rent, BreakevenScale),
		HoursPerDay: monthCost.Mul(decimal.NewFromInt(24)).DivRound(rent, BreakevenScale),
	}
	b.OwningNeverPays = monthCost.GreaterThan(rent)
	return b, nil
}
