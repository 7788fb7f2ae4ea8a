// Package fx reads the live USD/CNY rate from the European Central Bank's
// euro foreign exchange reference rates (eurofxref-daily.xml), the reference
// live FX source (../shared/reference/providers.md §7).
//
// The ECB publishes, each TARGET business day at about 16:00 CET, how many
// units of each currency one euro buys:
//
//	<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
//		<Cube>
//			<Cube time='2026-11-27'>
//				<Cube currency='USD' rate='1.0412'/>
//				…
//				<Cube currency='CNY' rate='7.4021'/>
//
// It does not publish USD/CNY, so the rate is a cross rate via the euro:
//
//	1 USD = rate(CNY) ÷ rate(USD) CNY   (CNY per EUR ÷ USD per EUR)
//
// computed from the wire text as exact decimals (never binary floating point) and rounded
// once, with decimal.DivRound, to CrossScale (10) decimal places, half away
// from zero. The result is a sluice.FXRate (Base USD, Quote CNY) dated with
// the Cube's time and carrying Source, ready to be stored with a decision.
package fx

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// URL is the ECB's daily reference rates document.
const URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"

// Source is the provenance stored in the FXRate.
const Source = "ECB euro foreign exchange reference rates, eurofxref-daily.xml, cross rate via EUR (CNY/EUR ÷ USD/EUR)"

// CrossScale is the number of decimal places the cross rate keeps: the
// division CNY/EUR ÷ USD/EUR is rounded there, half away from zero
// (decimal.DivRound). It is the only rounding in this package.
const CrossScale = 10

// MaxBody caps the response body (1 MiB; the real document is about 1.5 KiB).
// A larger body is an error, never silently truncated.
const MaxBody = 1 << 20

// Base and Quote are the currencies of the rate returned: 1 Base = Rate Quote.
const (
	Base  = "USD"
	Quote = "CNY"
)

// DefaultTimeout bounds a Fetch made with a nil client.
const DefaultTimeout = 10 * time.Second

// contentTypes are the media types accepted (the ECB serves text/xml).
var contentTypes = []string{"text/xml", "application/xml"}

// rateRE is a plain positive decimal as the ECB writes it ("1.0412",
// "19272.67"): no sign, no exponent, at most 12 + 12 digits.
var rateRE = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,12})?$`)

// envelope is the part of the document read. Element names are matched by
// local name, so the gesmes and eurofxref namespaces need not be declared
// in a particular way.
type envelope struct {
	XMLName xml.Name `xml:"Envelope"`
	Days    []struct {
		Time  *string `xml:"time,attr"`
		Rates []struct {
			Currency string  `xml:"currency,attr"`
			Rate     *string `xml:"rate,attr"`
		} `xml:"Cube"`
	} `xml:"Cube>Cube"`
}

// Fetch GETs url (normally URL) with client (nil: a client with
// DefaultTimeout) and returns the USD/CNY cross rate. The response must be a
// 2xx with Content-Type text/xml or application/xml and a body of at most
// MaxBody bytes. Errors name the document and the field or status at fault.
func Fetch(ctx context.Context, client *http.Client, url string) (sluice.FXRate, error) {
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: %w", err)
	}
	req.Header.Set("Accept", "text/xml, application/xml")
	resp, err := client.Do(req)
	if err != nil {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: GET %s: reading body: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: GET %s: HTTP %d: %s", url, resp.StatusCode, snippet(body))
	}
	if len(body) > MaxBody {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: GET %s: body larger than %d bytes", url, MaxBody)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt != contentTypes[0] && mt != contentTypes[1] {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: GET %s: content type %q, want %v", url, ct, contentTypes)
	}
	return Parse(body)
}

// Parse reads an eurofxref-daily.xml document and returns 1 USD in CNY as
// the cross rate rate(CNY) ÷ rate(USD), rounded to CrossScale places half
// away from zero, dated with the Cube's time (a date, UTC midnight).
//
// The document must hold exactly one dated Cube, with one USD and one CNY
// Cube, each rate a plain positive decimal. Other currencies are ignored but
// must not repeat USD or CNY.
func Parse(body []byte) (sluice.FXRate, error) {
	if len(body) > MaxBody {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: body larger than %d bytes", MaxBody)
	}
	var env envelope
	dec := xml.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&env); err != nil {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: not an ECB reference rates document: %w", err)
	}
	switch len(env.Days) {
	case 0:
		return sluice.FXRate{}, errors.New("ecb eurofxref: Envelope/Cube/Cube: no dated Cube")
	case 1:
	default:
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Envelope/Cube/Cube: %d dated Cubes, want one (the daily file)", len(env.Days))
	}
	day := env.Days[0]
	if day.Time == nil {
		return sluice.FXRate{}, errors.New("ecb eurofxref: Cube@time: missing")
	}
	asOf, err := time.Parse(time.DateOnly, *day.Time)
	if err != nil {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube@time %q: want YYYY-MM-DD", clip(*day.Time))
	}
	rates := map[string]decimal.Decimal{}
	for _, c := range day.Rates {
		if c.Currency != Base && c.Currency != Quote {
			continue
		}
		if _, dup := rates[c.Currency]; dup {
			return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube[@currency=%s]: appears twice on %s", c.Currency, *day.Time)
		}
		if c.Rate == nil {
			return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube[@currency=%s]@rate: missing", c.Currency)
		}
		if !rateRE.MatchString(*c.Rate) {
			return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube[@currency=%s]@rate %q: not a plain decimal", c.Currency, clip(*c.Rate))
		}
		r, err := decimal.NewFromString(*c.Rate)
		if err != nil {
			return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube[@currency=%s]@rate %q: not a decimal", c.Currency, clip(*c.Rate))
		}
		if !r.IsPositive() {
			return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube[@currency=%s]@rate %q: not positive", c.Currency, *c.Rate)
		}
		rates[c.Currency] = r
	}
	for _, cur := range []string{Base, Quote} {
		if _, ok := rates[cur]; !ok {
			return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: Cube[@currency=%s]: missing on %s", cur, *day.Time)
		}
	}
	cross := rates[Quote].DivRound(rates[Base], CrossScale)
	if !cross.IsPositive() {
		return sluice.FXRate{}, fmt.Errorf("ecb eurofxref: cross rate %s/%s = %s ÷ %s rounds to zero at %d places",
			Base, Quote, rates[Quote], rates[Base], CrossScale)
	}
	return sluice.FXRate{Base: Base, Quote: Quote, Rate: cross, AsOf: asOf, Source: Source}, nil
}

// clip shortens attacker-sized text quoted in an error.
func clip(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func snippet(b []byte) string {
	const n = 256
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
