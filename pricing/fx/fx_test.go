package fx

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

const recorded = "../../testdata/fx/eurofxref-daily.xml"

func readRecorded(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(recorded)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseRecorded checks the cross rate exactly. Hand-computed with
// Python's decimal module (default 28-digit context, then quantized):
//
//	>>> from decimal import Decimal, ROUND_HALF_UP
//	>>> Decimal("7.4021") / Decimal("1.0412")
//	Decimal('7.109200922013061851709565886')
//	>>> _.quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
//	Decimal('7.1092009220')
//
// (ROUND_HALF_UP in Python is half away from zero, as decimal.DivRound.)
func TestParseRecorded(t *testing.T) {
	r, err := Parse(readRecorded(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Base != "USD" || r.Quote != "CNY" {
		t.Errorf("pair %s/%s, want USD/CNY", r.Base, r.Quote)
	}
	if got := r.Rate.StringFixed(CrossScale); got != "7.1092009220" {
		t.Errorf("rate %s, want 7.1092009220", got)
	}
	if !r.Rate.Equal(decimal.RequireFromString("7.109200922")) {
		t.Errorf("rate %s is not exactly 7.109200922", r.Rate)
	}
	if !r.AsOf.Equal(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("as of %s, want 2026-11-27", r.AsOf)
	}
	if r.Source != Source {
		t.Errorf("source %q", r.Source)
	}
}

// TestRoundingHalfAwayFromZero pins the rounding at CrossScale places on a
// quotient whose 11th decimal is exactly 5: 1.00000000005 ÷ 1 → 1.0000000001.
func TestRoundingHalfAwayFromZero(t *testing.T) {
	r, err := Parse(doc("2026-11-27", `<Cube currency='USD' rate='2'/><Cube currency='CNY' rate='2.0000000001'/>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Rate.String(); got != "1.0000000001" { // 2.0000000001 / 2 = 1.00000000005 → up
		t.Errorf("rate %s, want 1.0000000001", got)
	}
}

func doc(time, cubes string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
<gesmes:subject>Reference rates</gesmes:subject><Cube><Cube time='` + time + `'>` + cubes + `</Cube></Cube></gesmes:Envelope>`)
}

func TestParseErrors(t *testing.T) {
	usd, cny := `<Cube currency='USD' rate='1.0412'/>`, `<Cube currency='CNY' rate='7.4021'/>`
	tests := []struct {
		name string
		body []byte
		want string // substring of the error
	}{
		{"not xml", []byte(`{"rates":{}}`), "not an ECB reference rates document"},
		{"wrong root", []byte(`<html><Cube/></html>`), "not an ECB reference rates document"},
		{"empty", nil, "not an ECB reference rates document"},
		{"no dated cube", []byte(`<gesmes:Envelope xmlns:gesmes="x"><Cube></Cube></gesmes:Envelope>`), "no dated Cube"},
		{"two days", []byte(`<Envelope><Cube><Cube time='2026-11-26'>` + usd + cny + `</Cube><Cube time='2026-11-27'>` + usd + cny + `</Cube></Cube></Envelope>`), "2 dated Cubes"},
		{"missing time", []byte(`<Envelope><Cube><Cube>` + usd + cny + `</Cube></Cube></Envelope>`), "Cube@time: missing"},
		{"bad time", doc("27/11/2026", usd+cny), `Cube@time "27/11/2026"`},
		{"missing USD", doc("2026-11-27", cny), "Cube[@currency=USD]: missing"},
		{"missing CNY", doc("2026-11-27", usd), "Cube[@currency=CNY]: missing"},
		{"duplicate CNY", doc("2026-11-27", usd+cny+cny), "Cube[@currency=CNY]: appears twice"},
		{"missing rate", doc("2026-11-27", usd+`<Cube currency='CNY'/>`), "Cube[@currency=CNY]@rate: missing"},
		{"zero rate", doc("2026-11-27", `<Cube currency='USD' rate='0.0000'/>`+cny), `Cube[@currency=USD]@rate "0.0000": not positive`},
		{"negative rate", doc("2026-11-27", `<Cube currency='USD' rate='-1.04'/>`+cny), `Cube[@currency=USD]@rate "-1.04": not a plain decimal`},
		{"exponent", doc("2026-11-27", usd+`<Cube currency='CNY' rate='7.4e0'/>`), `Cube[@currency=CNY]@rate "7.4e0": not a plain decimal`},
		{"text rate", doc("2026-11-27", usd+`<Cube currency='CNY' rate='n/a'/>`), `Cube[@currency=CNY]@rate "n/a": not a plain decimal`},
		{"too large", append(doc("2026-11-27", usd+cny), make([]byte, MaxBody)...), "larger than"},
		{"rounds to zero", doc("2026-11-27", `<Cube currency='USD' rate='999999999999'/><Cube currency='CNY' rate='0.000000000001'/>`), "rounds to zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	body := readRecorded(t)
	var gotPath, gotAccept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAccept = r.URL.Path, r.Header.Get("Accept")
		w.Header().Set("Content-Type", "text/xml")
		w.Write(body)
	}))
	defer srv.Close()
	r, err := Fetch(context.Background(), srv.Client(), srv.URL+"/stats/eurofxref/eurofxref-daily.xml")
	if err != nil {
		t.Fatal(err)
	}
	if r.Rate.String() != "7.109200922" || r.AsOf.Format(time.DateOnly) != "2026-11-27" {
		t.Errorf("got %s as of %s", r.Rate, r.AsOf)
	}
	if gotPath != "/stats/eurofxref/eurofxref-daily.xml" || !strings.Contains(gotAccept, "xml") {
		t.Errorf("request path %q accept %q", gotPath, gotAccept)
	}
}

func TestFetchErrors(t *testing.T) {
	body := readRecorded(t)
	tests := []struct {
		name   string
		status int
		ctype  string
		body   []byte
		want   string
	}{
		{"404", 404, "text/html", []byte("<html>Not Found</html>"), "HTTP 404"},
		{"503", 503, "text/plain", []byte("maintenance"), "HTTP 503: maintenance"},
		{"html", 200, "text/html; charset=utf-8", body, `content type "text/html; charset=utf-8"`},
		{"no content type", 200, "", body, "content type"},
		{"too large", 200, "text/xml", append(append([]byte{}, body...), make([]byte, MaxBody)...), "body larger than 1048576 bytes"},
		{"application/xml ok", 200, "application/xml; charset=UTF-8", body, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tt.ctype}
				w.WriteHeader(tt.status)
				w.Write(tt.body)
			}))
			defer srv.Close()
			_, err := Fetch(context.Background(), srv.Client(), srv.URL)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestFetchHonoursContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Fetch(ctx, nil, srv.URL); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("error %v, want a deadline error", err)
	}
}

// FuzzParse: Parse never panics, and whatever it accepts is a positive
// USD/CNY rate with at most CrossScale places, dated at UTC midnight.
func FuzzParse(f *testing.F) {
	f.Add(readRecorded(f))
	f.Add(doc("2026-11-27", `<Cube currency='USD' rate='1'/><Cube currency='CNY' rate='7'/>`))
	f.Add(doc("2026-02-30", `<Cube currency='USD' rate='0'/>`))
	f.Add([]byte(`<Envelope><Cube><Cube time="2026-11-27"><Cube currency="CNY" rate="1"/><Cube currency="USD" rate="3"/></Cube></Cube></Envelope>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "aaaa">]><Envelope>&a;</Envelope>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			return
		}
		if r.Base != "USD" || r.Quote != "CNY" || !r.Rate.IsPositive() || r.Rate.Exponent() < -CrossScale {
			t.Fatalf("accepted %+v", r)
		}
		if r.AsOf.Location() != time.UTC || r.AsOf.Hour() != 0 || r.Source != Source {
			t.Fatalf("accepted date %v source %q", r.AsOf, r.Source)
		}
	})
}
