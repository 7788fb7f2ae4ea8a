package audit

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Report groupings.
const (
	ByTier     = "tier"
	ByTeam     = "team"
	ByProvider = "provider"
	ByZone     = "zone"
)

// Rounding points of a report (everything else is exact):
const (
	// CostPerGPUHourPlaces: spend / GPU-hours, rounded half away from zero.
	CostPerGPUHourPlaces = 4
	// SharePlaces: budget share in percent, rounded half away from zero.
	SharePlaces = 2
	// HoursPlaces: billed seconds ÷ 3600 as hours (FOCUS PricingQuantity,
	// report GPU-hours), rounded half away from zero once, after any
	// multiplication by units or GPUs.
	HoursPlaces = 6
)

// Row is one group of a month's report. Spend is committed spend in the
// billing currency (LineState.Committed: expected cost while planned or
// open, accrued cost once settled, nothing for failed lines), the figure
// budgets are held to.
//
// Decisions: by tier or team, every decision of the month in the group
// (NOTHING-TO-DO and NO-OFFER included); by provider or zone, the decisions
// with at least one line in the group, so those rows can sum to more (a
// decision buying from two providers) or less (decisions with no line) than
// TOTAL. TOTAL's Decisions is always every decision decided in the month,
// whatever the grouping.
type Row struct {
	Key       string
	Decisions int
	Lines     int // lines bought or planned (failed lines excluded)
	// Orphans counts settled orphan releases (Orphan) whose accrued cost is
	// in Spend; they add no decisions, lines or GPU-hours.
	Orphans     int
	orphanSpend decimal.Decimal
	// GPU-hours before finish: planned lines' exact GPU-hours and settled
	// lines' GPU-seconds, summed exactly; finish rounds once.
	plannedGPUHours, gpuSeconds decimal.Decimal
	Spend                       decimal.Decimal
	GPUHours                    decimal.Decimal
	// CostPerGPUHour = Spend / GPUHours (CostPerGPUHourPlaces); ok=false when GPUHours is 0.
	CostPerGPUHour    decimal.Decimal
	HasCostPerGPUHr   bool
	waits             []time.Duration
	WaitMean, WaitMax time.Duration // trigger → first successful placement, mean rounded to the second
	Waits             int
	// WaitsExcluded counts waits left out of the mean and max because they
	// cannot be a queue wait: negative (the alarm's StateChangeTime after
	// the placement) or longer than MaxWait (an implausible alarm time, or a
	// duration that saturated).
	WaitsExcluded int
}

// MaxWait is the longest trigger → placement time a report believes (one
// year); longer ones, and negative ones, are excluded from the wait columns
// and counted in Row.WaitsExcluded.
const MaxWait = 366 * 24 * time.Hour

// TierBudget is a tier's committed spend against its monthly budget.
type TierBudget struct {
	Tier   sluice.Tier
	Spend  decimal.Decimal
	Budget sluice.Money
	// Share = Spend / Budget × 100 (SharePlaces).
	Share decimal.Decimal
}

// Report is one month of a ledger, grouped.
type Report struct {
	Month    string // YYYY-MM
	By       string
	Currency string
	Rows     []Row
	Total    Row
	Tiers    []TierBudget
	// Days is the number of days in the month; Daily[tier][d] the spend of
	// decisions decided on day d+1 (UTC).
	Days  int
	Daily map[sluice.Tier][]decimal.Decimal
}

// MonthReport is MonthReportIn with the currency taken from the month's
// decisions, else from budgets (the config keeps them in its billing
// currency).
func MonthReport(book *Book, month time.Time, by string, budgets map[sluice.Tier]sluice.Money) (*Report, error) {
	return MonthReportIn(book, month, by, budgets, "")
}

// MonthReportIn groups the decisions decided in month (its first instant,
// UTC) by by (ByTier, ByTeam, ByProvider, ByZone), and the settled orphan
// releases (Book.OrphanCosts) released in the month: their accrued cost
// (Book.orphanBilled) is spend of the tagged decision's tier, team and
// line zone when the chain holds it, else of the group "(orphan)"; by
// provider, of their provider. budgets are the monthly budgets per tier
// (config); a tier without one is reported without a share. currency is the
// report's billing currency (the config's billing_currency; "" = the
// month's decisions', else the budgets'), so an empty month still names
// it. It fails when a decision of the month is in another billing currency,
// or an orphan's accrued cost cannot be converted with a recorded rate.
func MonthReportIn(book *Book, month time.Time, by string, budgets map[sluice.Tier]sluice.Money, currency string) (*Report, error) {
	switch by {
	case ByTier, ByTeam, ByProvider, ByZone:
	default:
		return nil, fmt.Errorf("report: --by %q: want tier, team, provider or zone", by)
	}
	from := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	r := &Report{Month: from.Format("2006-01"), By: by, Currency: currency, Days: to.Add(-time.Hour).Day(), Daily: map[sluice.Tier][]decimal.Decimal{}}
	decisions := 0
	rows := map[string]*Row{}
	row := func(k string) *Row {
		if rows[k] == nil {
			rows[k] = &Row{Key: k, Spend: decimal.Zero, GPUHours: decimal.Zero}
		}
		return rows[k]
	}
	tierSpend := map[sluice.Tier]decimal.Decimal{}
	for _, d := range book.Decisions {
		rec := &d.Rec
		at := rec.DecidedAt.UTC()
		if at.Before(from) || !at.Before(to) {
			continue
		}
		decisions++
		if r.Currency == "" {
			r.Currency = rec.BillingCurrency
		} else if rec.BillingCurrency != r.Currency {
			return nil, &Problem{Seq: d.Seq, RecordID: d.RecordID, Reason: fmt.Sprintf(
				"billing currency %s, earlier decisions of %s are in %s", rec.BillingCurrency, r.Month, r.Currency)}
		}
		tier := rec.Profile.Tier
		if r.Daily[tier] == nil {
			r.Daily[tier] = make([]decimal.Decimal, r.Days)
		}
		keyOf := func(l *LineState) string {
			switch by {
			case ByTier:
				return string(tier)
			case ByTeam:
				return rec.Profile.Team
			case ByProvider:
				return l.Line.Provider
			default:
				return string(l.Line.Zone)
			}
		}
		if by == ByTier || by == ByTeam {
			g := row(keyOf(nil))
			g.Decisions++
			if w, ok := decisionWait(d); ok {
				g.waits = append(g.waits, w)
			}
		}
		counted := map[string]bool{}
		for _, l := range d.Lines {
			if l.State() == LineFailed {
				continue
			}
			c, err := l.Committed()
			if err != nil {
				return nil, &Problem{Seq: d.Seq, RecordID: d.RecordID, Reason: fmt.Sprintf("line %d: %v", l.Index, err)}
			}
			g := row(keyOf(l))
			g.Lines++
			g.Spend = g.Spend.Add(c.Amount)
			if l.State() == LineSettled {
				g.gpuSeconds = g.gpuSeconds.Add(decimal.NewFromInt(int64(l.Line.GPUs)).Mul(decimal.NewFromInt(l.Final.BilledSeconds)))
			} else {
				g.plannedGPUHours = g.plannedGPUHours.Add(l.GPUHours())
			}
			if by == ByProvider || by == ByZone {
				if !counted[g.Key] {
					counted[g.Key] = true
					g.Decisions++
				}
				if l.Placement != nil && l.Placement.Error == "" {
					g.waits = append(g.waits, l.Placement.PlacedAt.Sub(rec.Trigger.StateChangeTime))
				}
			}
			tierSpend[tier] = tierSpend[tier].Add(c.Amount)
			r.Daily[tier][at.Day()-1] = r.Daily[tier][at.Day()-1].Add(c.Amount)
		}
	}
	for _, o := range book.OrphanCosts {
		at := o.Release.At.UTC()
		if at.Before(from) || !at.Before(to) {
			continue
		}
		if r.Currency == "" {
			r.Currency = book.billingOf(o)
		}
		c, _, ok := book.orphanBilled(o, r.Currency)
		if !ok {
			return nil, &Problem{Seq: o.Seq, RecordID: o.RecordID, Reason: fmt.Sprintf(
				"orphan accrued_cost %s: no recorded FX rate converts it to %s", o.Release.AccruedCost, r.Currency)}
		}
		tier, key := sluice.Tier(OrphanGroup), OrphanGroup
		if d := o.Decision; d != nil {
			tier = d.Rec.Profile.Tier
		}
		switch by {
		case ByTier:
			key = string(tier)
		case ByTeam:
			if d := o.Decision; d != nil {
				key = d.Rec.Profile.Team
			}
		case ByProvider:
			key = o.Release.Provider
		case ByZone:
			if d := o.Decision; d != nil && o.TagLine >= 0 && o.TagLine < len(d.Rec.Lines) {
				key = string(d.Rec.Lines[o.TagLine].Zone)
			}
		}
		g := row(key)
		g.Orphans++
		g.orphanSpend = g.orphanSpend.Add(c.Amount)
		g.Spend = g.Spend.Add(c.Amount)
		tierSpend[tier] = tierSpend[tier].Add(c.Amount)
		if r.Daily[tier] == nil {
			r.Daily[tier] = make([]decimal.Decimal, r.Days)
		}
		r.Daily[tier][at.Day()-1] = r.Daily[tier][at.Day()-1].Add(c.Amount)
	}
	if r.Currency == "" {
		for _, t := range slices.Sorted(maps.Keys(budgets)) {
			r.Currency = budgets[t].Currency
			break
		}
	}
	total := Row{Key: "TOTAL", Spend: decimal.Zero, GPUHours: decimal.Zero}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		g := rows[k]
		finish(g)
		r.Rows = append(r.Rows, *g)
		total.Lines += g.Lines
		total.Orphans += g.Orphans
		total.Spend = total.Spend.Add(g.Spend)
		total.plannedGPUHours = total.plannedGPUHours.Add(g.plannedGPUHours)
		total.gpuSeconds = total.gpuSeconds.Add(g.gpuSeconds)
		total.waits = append(total.waits, g.waits...)
	}
	total.Decisions = decisions
	finish(&total)
	r.Total = total
	tiers := map[sluice.Tier]bool{}
	for t := range budgets {
		tiers[t] = true
	}
	for t := range tierSpend {
		tiers[t] = true
	}
	for _, t := range slices.Sorted(maps.Keys(tiers)) {
		tb := TierBudget{Tier: t, Spend: tierSpend[t], Budget: budgets[t]}
		if tb.Budget.IsSet() && tb.Budget.Amount.IsPositive() {
			tb.Share = tb.Spend.Mul(decimal.NewFromInt(100)).DivRound(tb.Budget.Amount, SharePlaces)
		}
		r.Tiers = append(r.Tiers, tb)
	}
	return r, nil
}

// decisionWait is trigger → first successful placement of the decision.
func decisionWait(d *Decision) (time.Duration, bool) {
	var first time.Time
	for _, l := range d.Lines {
		if p := l.Placement; p != nil && p.Error == "" && (first.IsZero() || p.PlacedAt.Before(first)) {
			first = p.PlacedAt
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return first.Sub(d.Rec.Trigger.StateChangeTime), true
}

// finish computes a row's GPU-hours (planned GPU-hours + settled
// GPU-seconds ÷ 3600 rounded half away from zero to HoursPlaces: one
// rounding per row), cost per GPU-hour and waits. Waits outside [0,
// MaxWait] are counted in WaitsExcluded, not averaged; the mean is summed
// exactly (decimal nanoseconds: no int64 overflow) and rounded half away
// from zero to the second.
func finish(g *Row) {
	g.GPUHours = g.plannedGPUHours.Add(g.gpuSeconds.DivRound(decimal.NewFromInt(3600), HoursPlaces))
	if g.GPUHours.IsPositive() {
		g.CostPerGPUHour, g.HasCostPerGPUHr = g.Spend.DivRound(g.GPUHours, CostPerGPUHourPlaces), true
	}
	sum := decimal.Zero
	g.Waits, g.WaitsExcluded, g.WaitMax = 0, 0, 0
	for _, w := range g.waits {
		if w < 0 || w > MaxWait {
			g.WaitsExcluded++
			continue
		}
		g.Waits++
		sum = sum.Add(decimal.NewFromInt(int64(w)))
		g.WaitMax = max(g.WaitMax, w)
	}
	if g.Waits == 0 {
		g.WaitMean = 0
		return
	}
	g.WaitMean = time.Duration(sum.DivRound(decimal.NewFromInt(int64(g.Waits)*int64(time.Second)), 0).IntPart()) * time.Second
}

// OrphanGroup is the report group of orphan costs whose tag names no
// decision in the chain.
const OrphanGroup = "(orphan)"

func (g Row) cells() []string {
	cpg, mean, maxw := "", "", ""
	if g.HasCostPerGPUHr {
		cpg = g.CostPerGPUHour.StringFixed(CostPerGPUHourPlaces)
	}
	if g.Waits > 0 {
		mean, maxw = strconv.FormatInt(int64(g.WaitMean/time.Second), 10), strconv.FormatInt(int64(g.WaitMax.Round(time.Second)/time.Second), 10)
	}
	return []string{g.Key, strconv.Itoa(g.Decisions), strconv.Itoa(g.Lines), g.Spend.String(), g.GPUHours.String(), cpg, mean, maxw}
}

var reportHeader = []string{"decisions", "lines", "spend", "gpu_hours", "cost_per_gpu_hour", "wait_mean_s", "wait_max_s"}

// WriteTable writes the report as aligned text: the groups with a TOTAL
// line, then each tier's spend against its budget.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Sluice spend %s by %s (%s; spend = committed: expected until settled, accrued after)\n\n", r.Month, r.By, r.Currency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	write := func(cells []string) {
		for _, c := range cells {
			fmt.Fprint(tw, c, "\t")
		}
		fmt.Fprintln(tw)
	}
	write(append([]string{r.By}, reportHeader...))
	for _, g := range r.Rows {
		write(g.cells())
	}
	write(r.Total.cells())
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes() {
		fmt.Fprintf(w, "\nNote: %s", n)
	}
	fmt.Fprintf(w, "\nBudgets %s (%s)\n\n", r.Month, r.Currency)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	write([]string{"tier", "spend", "budget", "share"})
	for _, t := range r.Tiers {
		budget, share := "-", "-"
		if t.Budget.IsSet() {
			budget, share = t.Budget.Amount.String(), t.Share.StringFixed(SharePlaces)+"%"
		}
		write([]string{string(t.Tier), t.Spend.String(), budget, share})
	}
	return tw.Flush()
}

// WriteCSV writes one row per group and a TOTAL row; the budget and
// budget_share_pct columns are filled for tier rows that have a budget.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(append(append([]string{"month", "by", "currency", "key"}, reportHeader...), "budget", "budget_share_pct"))
	budgets := map[string]TierBudget{}
	for _, t := range r.Tiers {
		budgets[string(t.Tier)] = t
	}
	for _, g := range append(slices.Clone(r.Rows), r.Total) {
		budget, share := "", ""
		if t, ok := budgets[g.Key]; ok && r.By == ByTier && t.Budget.IsSet() {
			budget, share = t.Budget.Amount.String(), t.Share.StringFixed(SharePlaces)
		}
		cw.Write(append(append([]string{r.Month, r.By, r.Currency}, g.cells()...), budget, share))
	}
	cw.Flush()
	return cw.Error()
}

// Notes are the report's caveats, one sentence each: orphan costs included
// in spend, waits excluded, and what an empty month shows. The table prints
// them under the groups.
func (r *Report) Notes() []string {
	var notes []string
	if t := r.Total; t.Orphans > 0 {
		spend := decimal.Zero
		for _, g := range r.Rows {
			if g.Orphans > 0 {
				spend = spend.Add(g.orphanSpend)
			}
		}
		notes = append(notes, fmt.Sprintf("spend includes %d orphan release(s) (reason %s: instances reconcile terminated with no committed decision), %s %s; they add no decisions, lines or GPU-hours.\n",
			t.Orphans, sluice.ReleaseOrphan, spend, r.Currency))
	}
	if n := r.Total.WaitsExcluded; n > 0 {
		notes = append(notes, fmt.Sprintf("%d wait(s) excluded from wait_mean_s and wait_max_s: the alarm's StateChangeTime is after the placement or more than %d days before it.\n", n, int(MaxWait/(24*time.Hour))))
	}
	if r.Total.Decisions == 0 && r.Total.Orphans == 0 {
		notes = append(notes, fmt.Sprintf("no decisions or orphan costs in %s.\n", r.Month))
	}
	return notes
}
