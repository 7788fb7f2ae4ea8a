// Package chart draws an audit report as SVG with github.com/go-analyze/charts.
// It is the one place ledger amounts become binary floating point: the
// charting library plots float64, so each day's exact decimal spend is
// converted (decimal.InexactFloat64) only to place a bar; every figure a
// person reads as a number comes from the exact report (audit.Report).
package chart

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/go-analyze/charts"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger/audit"
)

// Width and Height of the SVG in pixels.
const (
	Width  = 960
	Height = 480
)

// NoSpend is the one series of an empty month's chart: every day 0, so the
// month still draws (axes, days, a total of 0) like the table and CSV.
const NoSpend = "(no spend)"

// DailySpendByTier draws r's daily committed spend as stacked bars, one
// series per budget tier (sorted by name), one bar per day of the month. A
// month with no spend draws one all-zero series named NoSpend.
func DailySpendByTier(r *audit.Report) ([]byte, error) {
	var tiers []sluice.Tier
	for t := range r.Daily {
		tiers = append(tiers, t)
	}
	slices.Sort(tiers)
	if len(tiers) == 0 {
		tiers = []sluice.Tier{NoSpend}
	}
	values := make([][]float64, len(tiers))
	names := make([]string, len(tiers))
	for i, t := range tiers {
		names[i] = string(t)
		values[i] = make([]float64, r.Days)
		for d, v := range r.Daily[t] {
			values[i][d] = v.InexactFloat64()
		}
	}
	days := make([]string, r.Days)
	for d := range days {
		days[d] = strconv.Itoa(d + 1)
	}
	opt := charts.NewBarChartOptionWithData(values)
	opt.StackSeries = charts.Ptr(true)
	opt.CategoryAxis.Labels = days
	opt.Legend.SeriesNames = names
	opt.Legend.Symbol = charts.SymbolSquare
	opt.Title.Text = fmt.Sprintf("Sluice daily committed spend by budget tier, %s (%s)", r.Month, r.Currency)
	opt.Title.Subtext = fmt.Sprintf("total %s %s", r.Total.Spend.String(), r.Currency)
	for i := range opt.SeriesList {
		opt.SeriesList[i].Label.Show = charts.Ptr(false)
	}
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputSVG, Width: Width, Height: Height})
	if err := p.BarChart(opt); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	return p.Bytes()
}
