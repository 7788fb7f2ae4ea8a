package audit

import (
	"encoding/csv"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// FOCUSCostPlaces is the places each part of a split cost is rounded to
// (half away from zero): sluice.AccruedScale, the places of an accrued cost.
// The last part takes the remainder, so the parts sum exactly to the
// unsplit amount.
const FOCUSCostPlaces = 10

// overlaps says whether the charge period [start, end) has a part whose
// ChargePeriodStart can fall in [from, to): its start is before to and its
// end after from (or it is empty and starts in the range).
func overlaps(start, end, from, to time.Time) bool {
	if !end.After(start) {
		return !start.Before(from) && start.Before(to)
	}
	return start.Before(to) && end.After(from)
}

// writeParts writes the parts of row v (splitByMonth) whose ChargePeriodStart
// is in [from, to), returning how many it wrote.
func writeParts(cw *csv.Writer, v map[string]string, start, end, from, to time.Time) (int, error) {
	parts, err := splitByMonth(v, start, end)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range parts {
		ps, _ := time.Parse(FOCUSTime, p["ChargePeriodStart"])
		if ps.Before(from) || !ps.Before(to) {
			continue
		}
		row := make([]string, len(FOCUSColumns))
		for i, c := range FOCUSColumns {
			row[i] = p[c]
		}
		if err := cw.Write(row); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// splitByMonth splits the FOCUS row v, whose charge period is start–end, at
// every UTC month boundary inside the period (FOCUS 1.2: a row's charge
// period lies inside its billing period, opa-and-audit.md §E1). A period
// inside one month gives v back unchanged.
//
// Each part i covers [start_i, end_i), with seconds s_i of the S seconds of
// the whole period (times truncated to the second, as written). Its
// BillingPeriod is its month; its ChargeDescription names the part. Money
// and quantity are apportioned by seconds, each with one rounding point:
//
//   - BilledCost, EffectiveCost, PricingCurrencyEffectiveCost: amount × s_i ÷
//     S rounded half away from zero to FOCUSCostPlaces (10) places;
//   - PricingQuantity: quantity × s_i ÷ S rounded half away from zero to
//     HoursPlaces (6) places;
//   - ListCost and ContractedCost: ListUnitPrice (ContractedUnitPrice) × the
//     part's PricingQuantity, exact, so FOCUS's identity holds on every part;
//     a row with no unit price (an orphan) apportions them like BilledCost.
//
// The last part takes the remainder (amount − the sum of the other parts),
// so every column's parts sum exactly to the unsplit value.
func splitByMonth(v map[string]string, start, end time.Time) ([]map[string]string, error) {
	start, end = start.UTC().Truncate(time.Second), end.UTC().Truncate(time.Second)
	bounds := []time.Time{start}
	for b := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0); b.Before(end); b = b.AddDate(0, 1, 0) {
		bounds = append(bounds, b)
	}
	if len(bounds) == 1 {
		return []map[string]string{v}, nil
	}
	bounds = append(bounds, end)
	n := len(bounds) - 1
	secs := make([]int64, n)
	for i := range n {
		secs[i] = int64(bounds[i+1].Sub(bounds[i]) / time.Second)
	}
	parts := make([]map[string]string, n)
	for i := range n {
		p := make(map[string]string, len(v))
		for k, x := range v {
			p[k] = x
		}
		month := time.Date(bounds[i].Year(), bounds[i].Month(), 1, 0, 0, 0, 0, time.UTC)
		p["ChargePeriodStart"], p["ChargePeriodEnd"] = bounds[i].Format(FOCUSTime), bounds[i+1].Format(FOCUSTime)
		p["BillingPeriodStart"], p["BillingPeriodEnd"] = month.Format(FOCUSTime), month.AddDate(0, 1, 0).Format(FOCUSTime)
		p["ChargeDescription"] = fmt.Sprintf("%s; part %d of %d (charge period %s to %s split at month end)",
			v["ChargeDescription"], i+1, n, start.Format(FOCUSTime), end.Format(FOCUSTime))
		parts[i] = p
	}
	type column struct {
		name   string
		places int32
	}
	cols := []column{{"BilledCost", FOCUSCostPlaces}, {"EffectiveCost", FOCUSCostPlaces},
		{"PricingCurrencyEffectiveCost", FOCUSCostPlaces}, {"PricingQuantity", HoursPlaces}}
	if v["ListUnitPrice"] == "" {
		cols = append(cols, column{"ListCost", FOCUSCostPlaces}, column{"ContractedCost", FOCUSCostPlaces})
	}
	for _, c := range cols {
		if v[c.name] == "" {
			continue
		}
		total, err := decimal.NewFromString(v[c.name])
		if err != nil {
			return nil, fmt.Errorf("splitting %s %q at month end: %w", c.name, v[c.name], err)
		}
		for i, x := range Apportion(total, secs, c.places) {
			parts[i][c.name] = x.String()
		}
	}
	if v["ListUnitPrice"] != "" {
		for _, c := range [][2]string{{"ListCost", "ListUnitPrice"}, {"ContractedCost", "ContractedUnitPrice"}} {
			unit, err := decimal.NewFromString(v[c[1]])
			if err != nil {
				return nil, fmt.Errorf("splitting %s: %s %q: %w", c[0], c[1], v[c[1]], err)
			}
			for _, p := range parts {
				qty, err := decimal.NewFromString(p["PricingQuantity"])
				if err != nil {
					return nil, fmt.Errorf("splitting %s: PricingQuantity %q: %w", c[0], p["PricingQuantity"], err)
				}
				p[c[0]] = unit.Mul(qty).String()
			}
		}
	}
	return parts, nil
}

// Apportion splits total by weights (seconds): part i = total × w_i ÷ Σw
// rounded half away from zero to places, the last part the remainder (total
// − the others), so the parts sum exactly to total. With no weights it
// returns nil; when Σw is 0 the last part takes everything.
func Apportion(total decimal.Decimal, weights []int64, places int32) []decimal.Decimal {
	if len(weights) == 0 {
		return nil
	}
	var sum int64
	for _, w := range weights {
		sum += w
	}
	out := make([]decimal.Decimal, len(weights))
	for i := range out {
		out[i] = decimal.Zero
	}
	rest := total
	if sum == 0 {
		out[len(out)-1] = total
		return out
	}
	for i, w := range weights[:len(weights)-1] {
		out[i] = total.Mul(decimal.NewFromInt(w)).DivRound(decimal.NewFromInt(sum), places)
		rest = rest.Sub(out[i])
	}
	out[len(weights)-1] = rest
	return out
}
