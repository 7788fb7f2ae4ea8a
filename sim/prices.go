package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
)

// Prices is a price history: snapshots of offers, each valid from its time
// until the next. Before the first snapshot the first one holds.
type Prices struct {
	// Epochs are sorted by From; each holds every offer known at From, sorted by offer id.
	Epochs []Epoch
	// Skipped lists files in a price directory that were not read, with why.
	Skipped []string
}

// Epoch is the offers valid from From on.
type Epoch struct {
	From   time.Time
	Offers []sluice.Offer
}

// At returns the index of the epoch valid at t.
func (p *Prices) At(t time.Time) int {
	i, found := slices.BinarySearchFunc(p.Epochs, t, func(e Epoch, t time.Time) int { return e.From.Compare(t) })
	if found {
		return i
	}
	return max(i-1, 0)
}

// row is one dated offer read from a file.
type row struct {
	from  time.Time
	offer sluice.Offer
}

// NewPrices builds a history from dated offers: at each distinct time, each
// offer id keeps its latest price at or before that time.
func newPrices(rows []row) (*Prices, error) {
	if len(rows) == 0 {
		return nil, errors.New("prices: no offers")
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.from.Compare(b.from) })
	p := &Prices{}
	cur := map[string]sluice.Offer{}
	for i, r := range rows {
		cur[r.offer.ID] = r.offer
		if i+1 < len(rows) && rows[i+1].from.Equal(r.from) {
			continue
		}
		offers := make([]sluice.Offer, 0, len(cur))
		for _, o := range cur {
			offers = append(offers, o)
		}
		slices.SortFunc(offers, func(a, b sluice.Offer) int { return cmp.Compare(a.ID, b.ID) })
		p.Epochs = append(p.Epochs, Epoch{From: r.from, Offers: offers})
	}
	return p, nil
}

// Snapshot makes a one-epoch history from offers collected once (e.g. from
// the replay recordings through app.Quotes). Quote times are cleared: in a
// simulation an offer is as fresh as the decision that reads it, and a
// capacity block is assumed purchasable whenever the decision is made.
func Snapshot(offers []sluice.Offer) (*Prices, error) {
	rows := make([]row, len(offers))
	for i, o := range offers {
		o.FetchedAt, o.ExpiresAt, o.AvailableFrom, o.AvailableUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		rows[i] = row{offer: o}
	}
	return newPrices(rows)
}

// PriceListHeader is the header of Sluice's own price-list CSV.
var PriceListHeader = []string{"from", "provider", "sku", "region", "market", "gpu_model", "gpus_per_unit", "unit_price", "currency", "units", "term_hours"}

// karpenterHeader is aws_ondemand_karpenter_history.csv's header
// (../shared/data/prices/README.md §1): the AWS Price List on-demand Linux
// price per instance-hour, as Karpenter embedded it, dated by generated_at.
var karpenterHeader = []string{"source_table", "commit", "commit_date", "generated_at", "region", "instance_type", "on_demand_price_per_hour", "currency"}

// ec2GPUs are the A100 instance types in AWS's history (pricing/ec2 uses the same facts).
var ec2GPUs = map[string]struct {
	model string
	gpus  int
}{"p4d.24xlarge": {"A100-40GB", 8}, "p4de.24xlarge": {"A100-80GB", 8}}

// LoadPriceDir reads every *.csv file in dir that is a price list
// (PriceListHeader) or the AWS on-demand history (karpenter format); other
// CSVs are listed in Skipped. unitsFor gives the units assumed available for
// a provider whose file has no count (config providers.<p>.max_units).
func LoadPriceDir(dir string, unitsFor func(provider string) int) (*Prices, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var rows []row
	var skipped []string
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("prices: %w", err)
		}
		rs, why, err := readPriceFile(f, name, unitsFor)
		f.Close()
		if err != nil {
			return nil, err
		}
		if why != "" {
			skipped = append(skipped, filepath.Base(name)+": "+why)
			continue
		}
		rows = append(rows, rs...)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("prices %s: no price list or known price history among %d CSV files", dir, len(names))
	}
	p, err := newPrices(rows)
	if err != nil {
		return nil, err
	}
	p.Skipped = skipped
	return p, nil
}

// ParsePrices reads one price CSV (a price list or the AWS on-demand
// history) into a history; name is used in errors. A CSV of another format
// is an error.
func ParsePrices(r io.Reader, name string, unitsFor func(provider string) int) (*Prices, error) {
	rows, why, err := readPriceFile(r, name, unitsFor)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return nil, fmt.Errorf("prices %s: %s", name, why)
	}
	return newPrices(rows)
}

// readPriceFile reads one CSV; why is set (and rows nil) for a format it does not read.
func readPriceFile(r io.Reader, name string, unitsFor func(string) int) (rows []row, why string, err error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	head, err := cr.Read()
	if err != nil {
		return nil, "", fmt.Errorf("prices %s: header: %w", name, err)
	}
	var parse func(rec []string) (row, bool, error)
	switch {
	case slices.Equal(head, PriceListHeader):
		parse = parseListRow
	case slices.Equal(head, karpenterHeader):
		parse = func(rec []string) (row, bool, error) { return parseKarpenterRow(rec, unitsFor) }
	default:
		return nil, "header not a price list or a known price history", nil
	}
	cr.FieldsPerRecord = len(head)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, "", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("prices %s: %w", name, err)
		}
		r, keep, err := parse(rec)
		if err != nil {
			line, _ := cr.FieldPos(0)
			return nil, "", fmt.Errorf("prices %s: line %d: %w", name, line, err)
		}
		if keep {
			rows = append(rows, r)
		}
	}
}

func parseListRow(rec []string) (row, bool, error) {
	var r row
	var err error
	if r.from, err = time.Parse(time.RFC3339, rec[0]); err != nil {
		return r, false, fmt.Errorf("from %q: want RFC 3339", rec[0])
	}
	o := sluice.Offer{Provider: rec[1], SKU: rec[2], Region: rec[3], Market: sluice.Market(rec[4]), GPUModel: rec[5]}
	if o.Provider == "" || o.SKU == "" || o.Region == "" {
		return r, false, errors.New("provider, sku and region must not be empty")
	}
	if !o.Market.Valid() {
		return r, false, fmt.Errorf("market %q: want on-demand, spot or reserved", rec[4])
	}
	if o.GPUsPerUnit, err = strconv.Atoi(rec[6]); err != nil || o.GPUsPerUnit < 1 || o.GPUsPerUnit > sluice.MaxGPUsPerUnit {
		return r, false, fmt.Errorf("gpus_per_unit %q: want 1..%d", rec[6], sluice.MaxGPUsPerUnit)
	}
	if _, err := parseDecimal(rec[7]); err != nil {
		return r, false, fmt.Errorf("unit_price: %v", err)
	}
	if o.UnitPrice, err = sluice.NewMoney(rec[7], rec[8]); err != nil || !o.UnitPrice.Amount.IsPositive() {
		return r, false, fmt.Errorf("unit_price %q %s: want a positive decimal and an ISO 4217 currency", rec[7], rec[8])
	}
	if o.UnitsAvailable, err = strconv.Atoi(rec[9]); err != nil || o.UnitsAvailable < 0 || o.UnitsAvailable > 10000 {
		return r, false, fmt.Errorf("units %q: want 0..10000", rec[9])
	}
	if rec[10] != "" {
		if o.TermHours, err = strconv.Atoi(rec[10]); err != nil || o.TermHours <= 0 || o.TermHours > 24*366 {
			return r, false, fmt.Errorf("term_hours %q: want 1..8784", rec[10])
		}
	}
	if (o.Market == sluice.Reserved) != (o.TermHours > 0) {
		return r, false, fmt.Errorf("term_hours %q: a reserved offer needs a term, other markets none", rec[10])
	}
	o.Basis, o.RawPrice = sluice.PerInstanceHour, rec[7]
	o.ID = fmt.Sprintf("%s:%s:%s:%d:%s", o.Provider, o.Region, o.SKU, o.GPUsPerUnit, o.Market)
	o.Source = "price list"
	r.offer = o
	return r, true, nil
}

func parseKarpenterRow(rec []string, unitsFor func(string) int) (row, bool, error) {
	var r row
	it, ok := ec2GPUs[rec[5]]
	if !ok {
		return r, false, nil // p5 and the China GPU families: not A100
	}
	// A price holds from when AWS was queried (generated_at); the oldest
	// tables carry no such header, and then the commit that published them
	// dates the price.
	at, field := rec[3], "generated_at"
	if at == "" {
		at, field = rec[2], "commit_date"
	}
	var err error
	if r.from, err = time.Parse(time.RFC3339, at); err != nil {
		return r, false, fmt.Errorf("%s %q: want RFC 3339", field, at)
	}
	r.from = r.from.UTC()
	if _, err := parseDecimal(rec[6]); err != nil {
		return r, false, fmt.Errorf("on_demand_price_per_hour: %v", err)
	}
	price, err := sluice.NewMoney(rec[6], rec[7])
	if err != nil || !price.Amount.IsPositive() {
		return r, false, fmt.Errorf("on_demand_price_per_hour %q %s: want a positive decimal and a currency", rec[6], rec[7])
	}
	units := 1
	if unitsFor != nil {
		units = max(unitsFor("aws"), 1)
	}
	r.offer = sluice.Offer{
		ID:       "aws:" + rec[4] + ":" + rec[5] + ":on-demand",
		Provider: "aws", SKU: rec[5], GPUModel: it.model, GPUsPerUnit: it.gpus, Region: rec[4],
		Market: sluice.OnDemand, UnitPrice: price, Basis: sluice.PerInstanceHour, RawPrice: rec[6],
		UnitsAvailable: units, Source: "karpenter-provider-aws " + strings.TrimPrefix(rec[0], "aws_") + " table, commit " + rec[1],
	}
	return r, true, nil
}
