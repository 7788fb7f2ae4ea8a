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
)

// Row is one group of a month's report. Spend is committed spend in the
// billing currency (LineState.Committed: expected cost while planned or
// open, accrued cost once settled, nothing for failed lines), the figure
// budgets are held to.
type Row struct {
	Key       string
	Decisions int // decisions with at least one line in the group (tier/team: every decision)
	Lines     int // lines bought or planned (failed lines excluded)
	Spend     decimal.Decimal
	GPUHours  decimal.Decimal
	// CostPerGPUHour = Spend / GPUHours (CostPerGPUHourPlaces); ok=false when GPUHours is 0.
	CostPerGPUHour    decimal.Decimal
	HasCostPerGPUHr   bool
	waits             []time.Duration
	WaitMean, WaitMax time.Duration // trigger → first successful placement, mean rounded to the second
	Waits             int
}

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

// MonthReport groups the decisions decided in month (its first instant,
// UTC) by by (ByTier, ByTeam, ByProvider, ByZone). budgets are the monthly
// budgets per tier (config); a tier without one is reported without a share.
// It fails when the month's decisions mix billing currencies.
func MonthReport(book *Book, month time.Time, by string, budgets map[sluice.Tier]sluice.Money) (*Report, error) {
	switch by {
	case ByTier, ByTeam, ByProvider, ByZone:
	default:
		return nil, fmt.Errorf("report: --by %q: want tier, team, provider or zone", by)
	}
	from := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	r := &Report{Month: from.Format("2006-01"), By: by, Days: to.Add(-time.Hour).Day(), Daily: map[sluice.Tier][]decimal.Decimal{}}
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
			g.GPUHours = g.GPUHours.Add(l.GPUHours())
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
	total := Row{Key: "TOTAL", Spend: decimal.Zero, GPUHours: decimal.Zero}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		g := rows[k]
		finish(g)
		r.Rows = append(r.Rows, *g)
		total.Decisions += g.Decisions
		total.Lines += g.Lines
		total.Spend = total.Spend.Add(g.Spend)
		total.GPUHours = total.GPUHours.Add(g.GPUHours)
		total.waits = append(total.waits, g.waits...)
	}
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

func finish(g *Row) {
	if g.GPUHours.IsPositive() {
		g.CostPerGPUHour, g.HasCostPerGPUHr = g.Spend.DivRound(g.GPUHours, CostPerGPUHourPlaces), true
	}
	g.Waits = len(g.waits)
	if g.Waits == 0 {
		return
	}
	var sum time.Duration
	for _, w := range g.waits {
		sum += w
		g.WaitMax = max(g.WaitMax, w)
	}
	g.WaitMean = (sum / time.Duration(g.Waits)).Round(time.Second)
}

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
