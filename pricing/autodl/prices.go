package autodl

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// PriceList is a dated copy of AutoDL's published per-GPU-hour prices: AutoDL
// has no price API (providers.md §4), so prices come from configuration.
type PriceList struct {
	// AsOf is the day the prices were read from AutoDL; it is shown in every
	// offer's Source.
	AsOf time.Time
	// Source says where the prices were read (page, screenshot, contract),
	// shown in every offer's Source.
	Source string
	Prices []Price
}

// Price is the list price of one AutoDL GPU name.
type Price struct {
	// GPUName is the gpu_name exactly as AutoDL sends it, e.g. "A100-SXM4-80GB".
	GPUName string
	// GPUModel is the canonical model ("A100-80GB" or "A100-40GB"). It may be
	// left empty; when set it must agree with the memory size in GPUName
	// (see GPUModel).
	GPUModel string
	// PerGPUHour is the price of one GPU for one hour in CNY, in yuan — not
	// AutoDL's API unit of milli-yuan: ¥6.68/h is 6.68 (Yuan("6.68")), not 6680
	// (MilliYuan("6680") converts that form).
	PerGPUHour sluice.Money
}

// DateLayout is the layout of PriceList.AsOf in offers' Source.
const DateLayout = "2006-01-02"

// MaxPerGPUHour bounds a list price: 1000 CNY per GPU-hour is far above any
// A100 rental, and is what a milli-yuan figure put in the yuan field looks
// like (¥6.68/h written as 6680).
var MaxPerGPUHour = decimal.NewFromInt(1000)

// Yuan reads a price in yuan (CNY), the unit of PriceList, from decimal text
// such as "6.68". It fails on text that is not a plain non-negative decimal
// (bounds as pricing.TextAmount).
func Yuan(text string) (sluice.Money, error) {
	d, err := pricing.TextAmount(strings.TrimSpace(text))
	if err != nil {
		return sluice.Money{}, fmt.Errorf("yuan %q: %v", text, err)
	}
	return sluice.Money{Amount: d, Currency: Currency}, nil
}

// MilliYuan reads a price in AutoDL's API unit, yuan × 1000 per hour (the
// price_from / price_to filters and the container list's "price"), and
// returns it in yuan, exactly: MilliYuan("6680") is 6.68 CNY. Decimal text is
// accepted ("6680.0", the container price is a JSON float).
func MilliYuan(text string) (sluice.Money, error) {
	d, err := pricing.TextAmount(strings.TrimSpace(text))
	if err != nil {
		return sluice.Money{}, fmt.Errorf("milli-yuan %q: %v", text, err)
	}
	return sluice.Money{Amount: d.Shift(-3), Currency: Currency}, nil
}

// NewPrice is a Price for gpuName (model may be "") at yuanPerGPUHour, decimal
// yuan text such as "6.68". The price is checked as by PriceList.Validate.
func NewPrice(gpuName, model, yuanPerGPUHour string) (Price, error) {
	m, err := Yuan(yuanPerGPUHour)
	if err != nil {
		return Price{}, fmt.Errorf("price of %q: %w", gpuName, err)
	}
	p := Price{GPUName: gpuName, GPUModel: model, PerGPUHour: m}
	if _, err := p.check(); err != nil {
		return Price{}, err
	}
	return p, nil
}

// check validates one price and returns the GPU model of its name.
func (p Price) check() (string, error) {
	if p.GPUName == "" {
		return "", errors.New("list price with no GPU name")
	}
	model, err := GPUModel(p.GPUName)
	if err != nil {
		return "", fmt.Errorf("list price for %s: %w", p.GPUName, err)
	}
	switch {
	case p.GPUModel != "" && p.GPUModel != model:
		return "", fmt.Errorf("list price for %s: model %q, but the name says %s", p.GPUName, p.GPUModel, model)
	case p.PerGPUHour.Currency != Currency:
		return "", fmt.Errorf("list price for %s: currency %q, want %s (AutoDL bills in yuan)", p.GPUName, p.PerGPUHour.Currency, Currency)
	case !p.PerGPUHour.Amount.IsPositive():
		return "", fmt.Errorf("list price for %s: %s: not positive", p.GPUName, p.PerGPUHour)
	case p.PerGPUHour.Amount.GreaterThanOrEqual(MaxPerGPUHour):
		return "", fmt.Errorf("list price for %s: %s per GPU-hour is implausible (milli-yuan in the yuan field? ¥6.68/h is 6.68)", p.GPUName, p.PerGPUHour)
	}
	return model, nil
}

// checkList checks what the whole list needs: prices and a date.
func (l PriceList) checkList() error {
	switch {
	case len(l.Prices) == 0:
		return errors.New("autodl: no price list configured (AutoDL publishes no price API; see pricing/autodl)")
	case l.AsOf.IsZero():
		return errors.New("autodl: price list has no as-of date")
	}
	return nil
}

// Validate reports every problem of the list: no prices, no AsOf date, no
// Source, and each bad price (no name, a name whose model cannot be told,
// a model that disagrees with the name, not CNY, not positive, ≥ MaxPerGPUHour,
// or two different prices for one name). Offers refuses only a list with no
// prices or no date; a bad price there drops the offers of its GPU name.
func (l PriceList) Validate() error {
	var errs []error
	if err := l.checkList(); err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(l.Source) == "" {
		errs = append(errs, errors.New("autodl: price list has no source"))
	}
	seen := map[string]bool{}
	for _, p := range l.Prices {
		if _, err := p.check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[p.GPUName] {
			continue
		}
		seen[p.GPUName] = true
		if _, err := l.lookup(p.GPUName); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// errNoPrice is lookup's answer for a name the list does not have.
var errNoPrice = errors.New("no list price")

// lookup returns the usable price of gpuName: errNoPrice when the list has
// none; an error when an entry is bad or entries disagree.
func (l PriceList) lookup(gpuName string) (Price, error) {
	var found []Price
	for _, p := range l.Prices {
		if p.GPUName == gpuName {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return Price{}, errNoPrice
	}
	for _, p := range found {
		if _, err := p.check(); err != nil {
			return Price{}, err
		}
		if !p.PerGPUHour.Amount.Equal(found[0].PerGPUHour.Amount) {
			return Price{}, fmt.Errorf("price list has %d different prices for %s (%s, %s)", len(found), gpuName, found[0].PerGPUHour, p.PerGPUHour)
		}
	}
	return found[0], nil
}

// describe is the list as shown in Offer.Source: "price list 2026-11-01 (<source>)".
func (l PriceList) describe() string {
	s := "price list " + l.AsOf.Format(DateLayout)
	if src := strings.TrimSpace(l.Source); src != "" {
		s += " (" + src + ")"
	}
	return s
}

// memoryRE matches a memory-size token of a GPU name: "80GB", "40G".
var memoryRE = regexp.MustCompile(`^([0-9]{1,4})GB?$`)

// GPUModel tells the canonical model from an AutoDL GPU name. The rule: the
// name, upper-cased and split at every character that is not a letter or a
// digit, must have the token "A100" and exactly one memory-size token
// "<n>GB" (or "<n>G"); 80 gives "A100-80GB", 40 "A100-40GB". The model is
// never guessed from "A100" alone, since AutoDL sells both sizes:
//
//	A100-SXM4-80GB → A100-80GB    A100-PCIE-40GB → A100-40GB    A100 80G → A100-80GB
//	A100 → error (no memory size)  A800-80GB → error (not an A100)   A100-24GB → error
func GPUModel(name string) (string, error) {
	tokens := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	a100 := false
	var sizes []int
	for _, t := range tokens {
		if t == "A100" {
			a100 = true
		}
		if m := memoryRE.FindStringSubmatch(t); m != nil {
			n, _ := strconv.Atoi(m[1])
			if len(sizes) == 0 || sizes[0] != n {
				sizes = append(sizes, n)
			}
		}
	}
	switch {
	case !a100:
		return "", fmt.Errorf("gpu name %q: not an A100", name)
	case len(sizes) == 0:
		return "", fmt.Errorf("gpu name %q: no memory size (80GB or 40GB) in the name; the model is not guessed from \"A100\" alone", name)
	case len(sizes) > 1:
		return "", fmt.Errorf("gpu name %q: more than one memory size", name)
	case sizes[0] == 80:
		return "A100-80GB", nil
	case sizes[0] == 40:
		return "A100-40GB", nil
	}
	return "", fmt.Errorf("gpu name %q: memory %dGB is not an A100 size (40 or 80)", name, sizes[0])
}
