package audit

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/billing"
	"github.com/sluicehq/sluice/ledger"
)

var isoCurrency = regexp.MustCompile(`^[A-Z]{3}$`)

// Recompute checks every figure of a chain (given in order) against the
// figures it was computed from, exactly, and returns the number of decisions
// and lines checked, or a *Problem naming the first record that fails and
// why. Per decision:
//
//   - every FX rate it carries has a positive rate, ISO currencies, an as-of
//     time and a source; a line's rate is one of them;
//   - per line: the offer it names is among the decision's offers, with the
//     same provider, market and unit price; GPUs = Units × GPUs per unit;
//     base_cost = unit_price × units × hours; rework_cost is 0 unless spot,
//     and units × (rework_cost / units, at sluice.ReworkScale places)
//     gives it back; expected_cost = base_cost + rework_cost;
//     expected_cost_billing = expected_cost converted at the line's rate
//     (sluice.FXTable.Convert: dividing rounds half away from zero to
//     sluice.FXScale places);
//   - slots_covered = Σ line slots; total_expected_cost = Σ
//     expected_cost_billing, in the billing currency;
//   - demand: needed = min(depth, max_slots) and slots = max(needed − live, 0)
//     for an alarm;
//   - budget: headroom = budget − spent, and spent is the tier's committed
//     spend in the budget period just before the decision, replayed from the
//     chain (decision totals trued up by failed and settled lines,
//     ledger.TrueUps).
//
// A decision with a budget was decided inside its budget period
// ([period_start, period_end)). One published rate has one value: an FX
// rate with the same pair, as-of time and source as one an earlier decision
// recorded must equal it (all of one decision's rates rewritten together
// still fail when another decision recorded the same fixing).
//
// Per placement: its line exists, with the same provider, market, units and
// slots; a placement that holds capacity names its instances and its price
// read back is within tolerance of the line (checkPlaced). Per release step:
// a settled step's accrued cost is in the placement's price currency, its
// billed seconds agree with placed_at → at at the provider's granularity,
// and the accrued cost is recomputed from them (checkAccrued). Orphan
// releases (no committed decision) are not recomputed: nothing recorded
// gives their price.
func Recompute(recs []ledger.Stored) (decisions, lines int, err error) {
	book, err := Load(recs)
	if err != nil {
		return 0, 0, err
	}
	type spend struct {
		tier      sluice.Tier
		at        time.Time
		committed decimal.Decimal
	}
	var spends []*spend
	byID := map[string]*spend{}
	var tu ledger.TrueUps
	// rates: the first rate recorded per (pair, as-of, source), and where.
	type fxKey struct {
		base, quote, source string
		asOf                int64
	}
	type fxSeen struct {
		rate decimal.Decimal
		seq  int64
	}
	rates := map[fxKey]fxSeen{}
	for _, r := range recs {
		fail := func(format string, args ...any) error {
			return &Problem{Seq: r.Seq, RecordID: r.RecordID, Reason: fmt.Sprintf(format, args...)}
		}
		switch r.Kind {
		case ledger.KindDecision:
			d := book.byID[r.RecordID]
			rec := &d.Rec
			if err := inRange(rec); err != nil {
				return decisions, lines, fail("%v", err)
			}
			if b := rec.Budget; b != nil {
				if rec.DecidedAt.Before(b.PeriodStart) || !rec.DecidedAt.Before(b.PeriodEnd) {
					return decisions, lines, fail("decided_at %s is outside the budget period [%s, %s)",
						rec.DecidedAt.UTC().Format(time.RFC3339), b.PeriodStart.UTC().Format(time.RFC3339), b.PeriodEnd.UTC().Format(time.RFC3339))
				}
				replayed := decimal.Zero
				for _, sp := range spends {
					if sp.tier == b.Tier && !sp.at.Before(b.PeriodStart) && sp.at.Before(b.PeriodEnd) {
						replayed = replayed.Add(sp.committed)
					}
				}
				if !replayed.Equal(b.Spent.Amount) {
					return decisions, lines, fail("budget spent: recorded %s, the chain before it gives %s", b.Spent.Amount, replayed)
				}
				if want := b.Budget.Amount.Sub(b.Spent.Amount); !want.Equal(b.Headroom.Amount) || b.Headroom.Currency != b.Budget.Currency {
					return decisions, lines, fail("budget headroom: recorded %s, budget − spent = %s %s", b.Headroom, want, b.Budget.Currency)
				}
			}
			n, err := checkDecision(rec)
			if err != nil {
				return decisions, lines, fail("%v", err)
			}
			for i, fx := range rec.FX {
				k := fxKey{fx.Base, fx.Quote, fx.Source, fx.AsOf.UnixNano()}
				if seen, ok := rates[k]; !ok {
					rates[k] = fxSeen{fx.Rate, r.Seq}
				} else if !seen.rate.Equal(fx.Rate) {
					return decisions, lines, fail("fx[%d] %s/%s as of %s from %q: rate %s, record seq %d recorded %s for the same as-of and source",
						i, fx.Base, fx.Quote, fx.AsOf.UTC().Format(time.RFC3339), fx.Source, fx.Rate, seen.seq, seen.rate)
				}
			}
			decisions, lines = decisions+1, lines+n
			sp := &spend{tier: rec.Profile.Tier, at: rec.DecidedAt, committed: rec.TotalExpectedCost.Amount}
			spends = append(spends, sp)
			byID[rec.DecisionID] = sp
		case ledger.KindPlacement, ledger.KindRelease:
			sp, ok := byID[r.DecisionID]
			if !ok { // an orphan release
				continue
			}
			d := book.byID[r.DecisionID]
			if err := checkFollower(r, d); err != nil {
				return decisions, lines, fail("%v", err)
			}
			linesJSON, _ := jsonOf(d.Rec.Lines)
			delta, err := tu.Add(r.Kind, r.Body, linesJSON, d.Rec.BillingCurrency)
			if err != nil {
				return decisions, lines, fail("%v", err)
			}
			sp.committed = sp.committed.Add(delta)
		}
	}
	return decisions, lines, nil
}

// Bounds of a believable recorded decimal: an exponent within ±MaxExponent
// and a coefficient of at most MaxCoefficientBits bits (about 77 digits).
// A tampered body with "1e999999999" would otherwise make exact addition
// build a billion-digit number; it is refused as out of range instead.
const (
	MaxExponent        = 64
	MaxCoefficientBits = 256
)

// inRange checks every decimal of a decision against the bounds above.
func inRange(rec *sluice.DecisionRecord) error {
	check := func(what string, d decimal.Decimal) error {
		if e := d.Exponent(); e > MaxExponent || e < -MaxExponent || d.Coefficient().BitLen() > MaxCoefficientBits {
			// Not d.String(): that would write out every digit.
			return fmt.Errorf("%s is out of range (exponent %d, %d-bit coefficient)", what, d.Exponent(), d.Coefficient().BitLen())
		}
		return nil
	}
	ds := map[string]decimal.Decimal{"total_expected_cost": rec.TotalExpectedCost.Amount, "demand.hours": rec.Demand.Hours}
	if b := rec.Budget; b != nil {
		ds["budget.budget"], ds["budget.spent"], ds["budget.headroom"] = b.Budget.Amount, b.Spent.Amount, b.Headroom.Amount
	}
	for i, fx := range rec.FX {
		ds[fmt.Sprintf("fx[%d].rate", i)] = fx.Rate
	}
	for i, o := range rec.Offers {
		ds[fmt.Sprintf("offers[%d].unit_price", i)] = o.UnitPrice.Amount
	}
	for i, l := range rec.Lines {
		p := fmt.Sprintf("lines[%d].", i)
		ds[p+"unit_price"], ds[p+"hours"], ds[p+"base_cost"] = l.UnitPrice.Amount, l.Hours, l.BaseCost.Amount
		ds[p+"rework_cost"], ds[p+"expected_cost"], ds[p+"expected_cost_billing"] = l.ReworkCost.Amount, l.ExpectedCost.Amount, l.ExpectedCostBilling.Amount
		if l.FX != nil {
			ds[p+"fx_rate.rate"] = l.FX.Rate
		}
		if l.Bid != nil {
			ds[p+"bid"] = l.Bid.Amount
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ds)) {
		if err := check(k, ds[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkDecision recomputes one decision's FX, lines, totals and demand; it
// returns the number of lines checked.
func checkDecision(rec *sluice.DecisionRecord) (int, error) {
	if err := inRange(rec); err != nil {
		return 0, err
	}
	for i, fx := range rec.FX {
		switch {
		case !fx.Rate.IsPositive():
			return 0, fmt.Errorf("fx[%d] %s/%s: rate %s is not positive", i, fx.Base, fx.Quote, fx.Rate)
		case !isoCurrency.MatchString(fx.Base) || !isoCurrency.MatchString(fx.Quote):
			return 0, fmt.Errorf("fx[%d]: %q/%q are not ISO 4217 codes", i, fx.Base, fx.Quote)
		case fx.AsOf.IsZero():
			return 0, fmt.Errorf("fx[%d] %s/%s: no as-of time", i, fx.Base, fx.Quote)
		case fx.Source == "":
			return 0, fmt.Errorf("fx[%d] %s/%s: no source", i, fx.Base, fx.Quote)
		}
	}
	d := rec.Demand
	if rec.Trigger.State == sluice.StateAlarm {
		needed := max(min(d.Depth, rec.Profile.MaxSlots), 0)
		if d.Needed != needed || d.Slots != max(needed-d.Live, 0) {
			return 0, fmt.Errorf("demand: needed %d slots %d recorded; depth %d, max %d, live %d give %d and %d",
				d.Needed, d.Slots, d.Depth, rec.Profile.MaxSlots, d.Live, needed, max(needed-d.Live, 0))
		}
	}
	offers := map[string]sluice.Offer{}
	for _, o := range rec.Offers {
		offers[o.ID] = o
	}
	billing := rec.BillingCurrency
	total := sluice.Money{Amount: decimal.Zero, Currency: billing}
	slots := 0
	for i, l := range rec.Lines {
		if err := checkLine(rec, offers, l); err != nil {
			return 0, fmt.Errorf("line %d (%s): %w", i, l.OfferID, err)
		}
		total = total.Add(l.ExpectedCostBilling)
		slots += l.Slots
	}
	if slots != rec.SlotsCovered {
		return 0, fmt.Errorf("slots_covered: recorded %d, Σ line slots = %d", rec.SlotsCovered, slots)
	}
	if rec.TotalExpectedCost.IsSet() || len(rec.Lines) > 0 {
		if rec.TotalExpectedCost.Currency != billing || !rec.TotalExpectedCost.Amount.Equal(total.Amount) {
			return 0, fmt.Errorf("total_expected_cost: recorded %s, Σ expected_cost_billing = %s", rec.TotalExpectedCost, total)
		}
	}
	return len(rec.Lines), nil
}

func checkLine(rec *sluice.DecisionRecord, offers map[string]sluice.Offer, l sluice.Line) error {
	o, ok := offers[l.OfferID]
	if !ok {
		return fmt.Errorf("offer not among the decision's offers")
	}
	cur := l.UnitPrice.Currency
	switch {
	case o.Provider != l.Provider || o.Market != l.Market:
		return fmt.Errorf("provider/market %s/%s, the offer says %s/%s", l.Provider, l.Market, o.Provider, o.Market)
	case !o.UnitPrice.Amount.Equal(l.UnitPrice.Amount) || o.UnitPrice.Currency != cur:
		return fmt.Errorf("unit_price: recorded %s, the offer's %s", l.UnitPrice, o.UnitPrice)
	case l.Units <= 0:
		return fmt.Errorf("units %d", l.Units)
	case l.GPUs != l.Units*o.GPUsPerUnit:
		return fmt.Errorf("gpus: recorded %d, units %d × %d GPUs per unit = %d", l.GPUs, l.Units, o.GPUsPerUnit, l.Units*o.GPUsPerUnit)
	case !l.Hours.IsPositive():
		return fmt.Errorf("hours %s", l.Hours)
	}
	units := decimal.NewFromInt(int64(l.Units))
	if want := l.UnitPrice.Amount.Mul(units).Mul(l.Hours); !want.Equal(l.BaseCost.Amount) || l.BaseCost.Currency != cur {
		return fmt.Errorf("base_cost: recorded %s, unit_price × units × hours = %s %s", l.BaseCost, want, cur)
	}
	if l.ReworkCost.Currency != cur {
		return fmt.Errorf("rework_cost currency %s, unit price in %s", l.ReworkCost.Currency, cur)
	}
	if l.Market != sluice.Spot && !l.ReworkCost.Zero() {
		return fmt.Errorf("rework_cost %s on a %s line (only spot lines carry rework)", l.ReworkCost, l.Market)
	}
	if per := l.ReworkCost.Amount.DivRound(units, sluice.ReworkScale); !per.Mul(units).Equal(l.ReworkCost.Amount) {
		return fmt.Errorf("rework_cost %s is not units × a per-unit rework at %d places", l.ReworkCost, sluice.ReworkScale)
	}
	want := l.BaseCost.Amount.Add(l.ReworkCost.Amount)
	if !want.Equal(l.ExpectedCost.Amount) || l.ExpectedCost.Currency != cur {
		return fmt.Errorf("expected_cost: recorded %s, base + rework = %s %s", l.ExpectedCost, want, cur)
	}
	billing := rec.BillingCurrency
	if cur == billing {
		if l.FX != nil {
			return fmt.Errorf("fx_rate recorded on a line already in %s", billing)
		}
	} else {
		if l.FX == nil {
			return fmt.Errorf("no fx_rate for %s → %s", cur, billing)
		}
		found := false
		for _, r := range rec.FX {
			if r.Base == l.FX.Base && r.Quote == l.FX.Quote && r.Rate.Equal(l.FX.Rate) && r.AsOf.Equal(l.FX.AsOf) && r.Source == l.FX.Source {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("fx_rate %s/%s %s is not among the decision's rates", l.FX.Base, l.FX.Quote, l.FX.Rate)
		}
	}
	conv, err := toBilling(l.ExpectedCost, l, billing)
	if err != nil {
		return fmt.Errorf("expected_cost_billing: %w", err)
	}
	if !conv.Amount.Equal(l.ExpectedCostBilling.Amount) || l.ExpectedCostBilling.Currency != billing {
		return fmt.Errorf("expected_cost_billing: recorded %s, expected_cost at the line's rate = %s", l.ExpectedCostBilling, conv)
	}
	return nil
}

// checkFollower checks a placement or release against its decision's line.
func checkFollower(r ledger.Stored, d *Decision) error {
	switch r.Kind {
	case ledger.KindPlacement:
		var pr ledger.PlacementRecord
		if err := jsonInto(r.Body, &pr); err != nil {
			return err
		}
		p := pr.Placement
		if p.Line < 0 || p.Line >= len(d.Rec.Lines) {
			return fmt.Errorf("placement of line %d: the decision has %d lines", p.Line, len(d.Rec.Lines))
		}
		l := d.Rec.Lines[p.Line]
		if p.Provider != l.Provider || p.Market != l.Market || p.Units != l.Units || p.Slots != l.Slots {
			return fmt.Errorf("placement %s/%s %d units %d slots; line %d is %s/%s %d units %d slots",
				p.Provider, p.Market, p.Units, p.Slots, p.Line, l.Provider, l.Market, l.Units, l.Slots)
		}
		if err := checkPlaced(p, l); err != nil {
			return err
		}
		if p.PlacedAt.Before(d.Rec.DecidedAt) {
			return fmt.Errorf("placed_at %s is before its decision (decided_at %s): capacity is placed only after the intent is recorded",
				p.PlacedAt.UTC().Format(time.RFC3339Nano), d.Rec.DecidedAt.UTC().Format(time.RFC3339Nano))
		}
	case ledger.KindRelease:
		var rr ledger.ReleaseRecord
		if err := jsonInto(r.Body, &rr); err != nil {
			return err
		}
		rel := rr.Release
		if a := rel.AccruedCost.Amount; a.Exponent() > MaxExponent || a.Exponent() < -MaxExponent || a.Coefficient().BitLen() > MaxCoefficientBits {
			return fmt.Errorf("accrued_cost is out of range")
		}
		if rel.BilledSeconds < 0 {
			return fmt.Errorf("billed_seconds %d", rel.BilledSeconds)
		}
		if rel.State == sluice.ReleaseReleased || rel.State == sluice.ReleaseLost {
			if rel.Line < 0 || rel.Line >= len(d.Lines) {
				return fmt.Errorf("release of line %d: the decision has %d lines", rel.Line, len(d.Lines))
			}
			p := d.Lines[rel.Line].Placement
			if rel.AccruedCost.IsSet() && p != nil && p.Price.IsSet() && rel.AccruedCost.Currency != p.Price.Currency {
				return fmt.Errorf("accrued_cost in %s, the placement's price in %s", rel.AccruedCost.Currency, p.Price.Currency)
			}
			if p != nil {
				if err := checkAccrued(rel, *p, d.Rec.Lines[rel.Line]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkPlaced checks a placement that holds capacity (no Error and no
// ErrorClass: Sluice kept it) against its line: it names the provider's
// instances (external_ids not empty), and a price read back is in the line's
// currency, positive, and at most the line's bid (spot) or unit price × (1 +
// sluice.ReusePriceTolerance), compared exactly — the limit Burst's
// checkReuse applied before keeping it (resume.go). A price below the bid is
// normal (a spot market moves) and is not refused.
func checkPlaced(p sluice.Placement, l sluice.Line) error {
	if p.Error != "" || p.ErrorClass != "" {
		return nil
	}
	if len(p.ExternalIDs) == 0 {
		return fmt.Errorf("external_ids: a placed line with no instance ids")
	}
	if !p.Price.IsSet() {
		return nil
	}
	if p.Price.Currency != l.UnitPrice.Currency {
		return fmt.Errorf("price %s, line %d is priced in %s", p.Price, p.Line, l.UnitPrice.Currency)
	}
	if !p.Price.Amount.IsPositive() {
		return fmt.Errorf("price %s is not positive", p.Price)
	}
	limit := l.UnitPrice
	if l.Bid != nil && l.Bid.Cmp(limit) > 0 {
		limit = *l.Bid
	}
	if max := limit.Mul(decimal.NewFromInt(1).Add(sluice.ReusePriceTolerance)); p.Price.Cmp(max) > 0 {
		return fmt.Errorf("price %s, above %s (line %d's bid or unit price %s + %s%%)", p.Price, max, p.Line, limit, sluice.ReusePriceTolerance.Shift(2))
	}
	return nil
}

// billedCeiling is the most a provider bills for run: run rounded up to the
// provider's billing granularity, at least its minimum (billing.Rule.Billed,
// brokers/billing.Rules); a provider without a rule is billed per second
// with no minimum. Zero when run is not positive.
func billedCeiling(provider string, start, end time.Time) int64 {
	r, err := billing.For(provider)
	if err != nil {
		r = billing.Rule{Granularity: time.Second}
	}
	return int64(r.Billed(start, end) / time.Second)
}

// checkAccrued recomputes a settled release step's accrued cost from its
// placement, as sluice.Drainer computed it: a reservation costs price ×
// units × the line's hours, billed seconds = ⌈hours × 3600⌉; anything else
// costs price × units × billed seconds ÷ 3600, the division rounded half
// away from zero to sluice.AccruedScale places (sluice.PerSecond and the
// application's per-provider rule), and its billed seconds cover at least
// the running time from placed_at to at, rounded up to the second (a
// provider's granularity and minimum only add to it) and at most that time
// rounded up to the provider's granularity, or its minimum (billedCeiling:
// the sandbox bills per second, the providers' rules may add a minimum; 0
// when at is not after placed_at). A placement with no price read back
// accrues nothing.
func checkAccrued(rel sluice.Release, p sluice.Placement, l sluice.Line) error {
	if !p.Price.IsSet() {
		if !rel.AccruedCost.Amount.IsZero() {
			return fmt.Errorf("accrued_cost %s on a placement with no price read back", rel.AccruedCost)
		}
		return nil
	}
	units := decimal.NewFromInt(int64(p.Units))
	var want decimal.Decimal
	if p.Market == sluice.Reserved {
		want = p.Price.Amount.Mul(l.Hours).Mul(units)
		if secs := l.Hours.Mul(decimal.NewFromInt(3600)).Ceil().IntPart(); rel.BilledSeconds != secs {
			return fmt.Errorf("billed_seconds %d, the reservation's term is %d s", rel.BilledSeconds, secs)
		}
	} else {
		if run := rel.At.Sub(p.PlacedAt); run > 0 {
			if secs := int64((run + time.Second - 1) / time.Second); rel.BilledSeconds < secs {
				return fmt.Errorf("billed_seconds %d, less than the %d s from placed_at %s to at %s", rel.BilledSeconds, secs,
					p.PlacedAt.UTC().Format(time.RFC3339), rel.At.UTC().Format(time.RFC3339))
			}
		}
		if most := billedCeiling(p.Provider, p.PlacedAt, rel.At); rel.BilledSeconds > most {
			return fmt.Errorf("billed_seconds %d, more than the %d s %s bills from placed_at %s to at %s", rel.BilledSeconds, most,
				p.Provider, p.PlacedAt.UTC().Format(time.RFC3339Nano), rel.At.UTC().Format(time.RFC3339Nano))
		}
		want = p.Price.Amount.Mul(units.Mul(decimal.NewFromInt(rel.BilledSeconds))).DivRound(decimal.NewFromInt(3600), sluice.AccruedScale)
	}
	if !rel.AccruedCost.Amount.Equal(want) {
		return fmt.Errorf("accrued_cost: recorded %s, price %s × %d units over %d billed seconds = %s %s",
			rel.AccruedCost, p.Price, p.Units, rel.BilledSeconds, want, p.Price.Currency)
	}
	return nil
}
