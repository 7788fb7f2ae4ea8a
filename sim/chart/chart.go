// Package chart draws the simulator's results as SVG with
// github.com/go-analyze/charts. It is the only place a result becomes
// binary floating point, and only to place marks on a picture: every figure
// in a chart's labels is also in the table and CSV output as an exact decimal.
package chart

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/go-analyze/charts"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice/sim"
)

// outputFormat is SVG; the package tests may render PNG to look at.
var outputFormat = charts.ChartOutputSVG

// Size of the charts, in pixels.
const (
	Width  = 900
	Height = 520
)

func f(d decimal.Decimal) float64 { v, _ := d.Float64(); return v }

func hours(d time.Duration) float64 {
	return f(decimal.NewFromInt(int64(d / time.Minute)).Div(decimal.NewFromInt(60)))
}

// Strategies draws total cost (bars, left axis) against p95 queue wait
// (line, right axis) for each strategy of one run.
func Strategies(results []sim.Result, currency, title string) ([]byte, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("chart: no results")
	}
	labels := make([]string, len(results))
	cost := make([]float64, len(results))
	wait := make([]float64, len(results))
	for i, r := range results {
		labels[i] = string(r.Strategy)
		cost[i] = f(r.TotalCost.Amount)
		wait[i] = hours(r.WaitP95)
	}
	bars := charts.NewSeriesListBar([][]float64{cost})
	bars[0].Name = "total cost (" + currency + ")"
	bars[0].Label.Show = charts.Ptr(true)
	lines := charts.NewSeriesListLine([][]float64{wait})
	lines[0].Name = "p95 queue wait (hours)"
	lines[0].YAxisIndex = 1
	lines[0].Label.Show = charts.Ptr(true)
	opt := charts.ChartOption{
		OutputFormat: outputFormat,
		Width:        Width, Height: Height,
		Title:      charts.TitleOption{Text: title, Subtext: "total cost against p95 queue wait, per strategy"},
		Legend:     charts.LegendOption{SeriesNames: []string{bars[0].Name, lines[0].Name}, Offset: charts.OffsetRight},
		XAxis:      charts.XAxisOption{Labels: labels, LabelCount: len(labels)},
		YAxis:      []charts.YAxisOption{{Title: "total cost (" + currency + ")"}, {Title: "p95 wait (h)"}},
		SeriesList: append(bars.ToGenericSeriesList(), lines.ToGenericSeriesList()...),
		Padding:    charts.NewBoxEqual(20),
	}
	p, err := charts.Render(opt)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	return p.Bytes()
}

// Sweep draws two stacked panels against owned-pool size: each strategy's
// total cost, with a diamond on the cheapest size whose p95 wait meets
// target, and each strategy's p95 wait. The exact figures are in the table
// and CSV output.
func Sweep(results []sim.Result, target time.Duration, currency, title string) ([]byte, error) {
	var sizes []int
	var order []sim.Strategy
	for _, r := range results {
		if !slices.Contains(sizes, r.OwnedGPUs) {
			sizes = append(sizes, r.OwnedGPUs)
		}
		if !slices.Contains(order, r.Strategy) {
			order = append(order, r.Strategy)
		}
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("chart: no results")
	}
	slices.Sort(sizes)
	labels := make([]string, len(sizes))
	for i, n := range sizes {
		labels[i] = fmt.Sprint(n)
	}
	costs, waits, marks, names := sweepSeries(results, sizes, order, target)
	cl := charts.NewSeriesListLine(costs)
	ml := charts.NewSeriesListScatter(marks)
	wl := charts.NewSeriesListLine(waits)
	for k := range order {
		cl[k].Name, wl[k].Name = names[k], names[k]
		ml[k].Name = names[k] + " ◆"
		ml[k].Symbol = charts.Symbol{Shape: charts.SymbolDiamond, Size: 12}
	}
	legend := charts.LegendOption{SeriesNames: names, Offset: charts.OffsetRight}
	top := charts.ChartOption{
		OutputFormat: outputFormat, Width: Width, Height: Height,
		Title:      charts.TitleOption{Text: title, Subtext: "total cost (" + currency + "), ◆ cheapest size with p95 wait ≤ " + sim.Hours(target) + " (sizes leaving jobs unfinished: not drawn)"},
		Legend:     legend,
		XAxis:      charts.XAxisOption{Labels: labels, Title: "owned GPUs"},
		YAxis:      []charts.YAxisOption{{Title: "total cost (" + currency + ")"}},
		SeriesList: append(cl.ToGenericSeriesList(), ml.ToGenericSeriesList()...),
		Padding:    charts.NewBox(20, 40, 20, 20),
	}
	bottom := charts.ChartOption{
		OutputFormat: outputFormat, Width: Width, Height: Height,
		Title:      charts.TitleOption{Text: "p95 queue wait (hours) by owned-pool size", Subtext: "target " + sim.Hours(target)},
		Legend:     legend,
		XAxis:      charts.XAxisOption{Labels: labels, Title: "owned GPUs"},
		YAxis:      []charts.YAxisOption{{Title: "p95 wait (h)"}},
		SeriesList: wl.ToGenericSeriesList(),
		Padding:    charts.NewBox(20, 40, 20, 20),
	}
	var panels [2][]byte
	for i, opt := range []charts.ChartOption{top, bottom} {
		p, err := charts.Render(opt)
		if err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		if panels[i], err = p.Bytes(); err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
	}
	if outputFormat != charts.ChartOutputSVG {
		return panels[0], nil
	}
	// One SVG document holding both panels, one above the other.
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, Width, 2*Height, Width, 2*Height)
	for i, panel := range panels {
		panel = bytes.Replace(panel, []byte("<svg "), []byte(fmt.Sprintf(`<svg x="0" y="%d" width="%d" height="%d" `, i*Height, Width, Height)), 1)
		b.Write(panel)
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// sweepSeries is Sweep's data: per strategy (in order) and owned-pool size
// (in sizes), the total cost and the p95 wait in hours, and a mark at the
// cheapest size meeting target (sim.Cheapest); points without a value are
// charts.GetNullValue(). A size that leaves jobs unfinished has no cost or
// wait point: they describe less work than the other sizes' (the table and
// CSV still give them).
func sweepSeries(results []sim.Result, sizes []int, order []sim.Strategy, target time.Duration) (costs, waits, marks [][]float64, names []string) {
	best := sim.Cheapest(results, target)
	costs = make([][]float64, len(order))
	waits = make([][]float64, len(order))
	marks = make([][]float64, len(order))
	names = make([]string, len(order))
	for k, st := range order {
		names[k] = string(st)
		costs[k], waits[k], marks[k] = make([]float64, len(sizes)), make([]float64, len(sizes)), make([]float64, len(sizes))
		for i := range marks[k] {
			marks[k][i] = charts.GetNullValue()
		}
		for _, r := range results {
			if r.Strategy != st {
				continue
			}
			i := slices.Index(sizes, r.OwnedGPUs)
			costs[k][i], waits[k][i] = f(r.TotalCost.Amount), hours(r.WaitP95)
			if r.Unfinished > 0 {
				costs[k][i], waits[k][i] = charts.GetNullValue(), charts.GetNullValue()
			}
		}
		if b, ok := best[st]; ok {
			marks[k][slices.Index(sizes, b.OwnedGPUs)] = f(b.TotalCost.Amount)
		}
	}
	return costs, waits, marks, names
}
