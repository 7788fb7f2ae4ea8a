package vast_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/vast"
)

type bundleCase struct {
	name, typ string
	body      []byte
	want      []string
	dropped   []string // "ref: reason"
}

func runBundleCases(t *testing.T, cases []bundleCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			offers, dropped, err := vast.ParseBundles(tt.body, tt.typ, now, vast.Config{})
			if err != nil {
				t.Fatal(err)
			}
			diff(t, rows(offers), tt.want)
			var got []string
			for _, d := range dropped {
				if d.Provider != "vast" {
					t.Errorf("dropped provider %q", d.Provider)
				}
				got = append(got, d.Ref+": "+d.Reason)
			}
			if !slices.Equal(got, tt.dropped) {
				t.Errorf("dropped\n got %q\nwant %q", got, tt.dropped)
			}
		})
	}
}

const (
	od1  = "vast:1:ondemand | sku=1 A100-80GB x1 | US/Georgia | on-demand | 1.33 USD | min_bid - | raw 1.33/offer-hour | units 1"
	od2  = "vast:2:ondemand | sku=2 A100-80GB x1 | US/Georgia | on-demand | 1.33 USD | min_bid - | raw 1.33/offer-hour | units 1"
	bid1 = "vast:1:bid | sku=1 A100-80GB x1 | US/Georgia | spot | 0.9 USD | min_bid 0.9 USD | raw 0.9/offer-hour | units 1"
)

// TestDuplicateAsks: an ask listed twice is kept once when both listings
// agree; when they disagree every listing is dropped, naming both values.
func TestDuplicateAsks(t *testing.T) {
	runBundleCases(t, []bundleCase{
		{
			name:    "same ask twice, same price: first kept, repeat reported",
			typ:     "ondemand",
			body:    bundles(offer(1, nil), offer(2, nil), offer(1, nil)),
			want:    []string{od1, od2},
			dropped: []string{`vast:1:ondemand: duplicate: vast:1:ondemand already seen in this response (offers[2] repeats offers[0])`},
		},
		{
			name: "same ask three times: every repeat reported",
			typ:  "bid",
			body: bundles(offer(1, nil), offer(1, map[string]string{"min_bid": "0.900"}), offer(1, nil)),
			want: []string{bid1},
			dropped: []string{
				`vast:1:bid: duplicate: vast:1:bid already seen in this response (offers[1] repeats offers[0])`,
				`vast:1:bid: duplicate: vast:1:bid already seen in this response (offers[2] repeats offers[0])`,
			},
		},
		{
			name: "dph_total disagrees: both dropped, the other ask survives",
			typ:  "ondemand",
			body: bundles(offer(1, nil), offer(2, nil), offer(1, map[string]string{"dph_total": "0.05"})),
			want: []string{od2},
			dropped: []string{
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[0] contradicts offers[2] (dph_total 1.33 vs 0.05): all 2 listings dropped`,
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[2] contradicts offers[0] (dph_total 0.05 vs 1.33): all 2 listings dropped`,
			},
		},
		{
			name: "min_bid disagrees",
			typ:  "bid",
			body: bundles(offer(1, map[string]string{"min_bid": "0.2"}), offer(1, nil)),
			dropped: []string{
				`vast:1:bid: duplicate: vast:1:bid at offers[0] contradicts offers[1] (min_bid 0.2 vs 0.9): all 2 listings dropped`,
				`vast:1:bid: duplicate: vast:1:bid at offers[1] contradicts offers[0] (min_bid 0.9 vs 0.2): all 2 listings dropped`,
			},
		},
		{
			name: "same price, different GPU count",
			typ:  "ondemand",
			body: bundles(offer(1, nil), offer(1, map[string]string{"num_gpus": "8"})),
			dropped: []string{
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[0] contradicts offers[1] (num_gpus 1 vs 8): all 2 listings dropped`,
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[1] contradicts offers[0] (num_gpus 8 vs 1): all 2 listings dropped`,
			},
		},
		{
			name: "same price, different country",
			typ:  "ondemand",
			body: bundles(offer(1, nil), offer(1, map[string]string{"geolocation": `"Shanghai, CN"`})),
			dropped: []string{
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[0] contradicts offers[1] (geolocation gives US/Georgia vs CN/Shanghai): all 2 listings dropped`,
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[1] contradicts offers[0] (geolocation gives CN/Shanghai vs US/Georgia): all 2 listings dropped`,
			},
		},
		{
			name: "one listing unusable: the usable one is not trusted either",
			typ:  "ondemand",
			body: bundles(offer(1, nil), offer(1, map[string]string{"dph_total": `"cheap"`})),
			dropped: []string{
				`vast:1:ondemand: duplicate: vast:1:ondemand at offers[0] contradicts offers[1] (offers[1] unusable: dph_total "\"cheap\"": not a JSON number): all 2 listings dropped`,
				`vast:1:ondemand: dph_total "\"cheap\"": not a JSON number`,
			},
		},
		{
			name: "two listings unusable for the same reason: each keeps its reason",
			typ:  "ondemand",
			body: bundles(offer(1, map[string]string{"gpu_ram": "8192"}), offer(1, map[string]string{"gpu_ram": "8192"})),
			dropped: []string{
				`vast:1:ondemand: gpu_ram 8192: out of range 30000..200000 MB per GPU`,
				`vast:1:ondemand: gpu_ram 8192: out of range 30000..200000 MB per GPU`,
			},
		},
	})
}

func TestNumGPUsAndRAM(t *testing.T) {
	n := func(v string) map[string]string { return map[string]string{"num_gpus": v} }
	ram := func(v string) map[string]string { return map[string]string{"gpu_ram": v} }
	row := func(id, model, gpus string) string {
		return "vast:" + id + ":ondemand | sku=" + id + " " + model + " x" + gpus + " | US/Georgia | on-demand | 1.33 USD | min_bid - | raw 1.33/offer-hour | units 1"
	}
	runBundleCases(t, []bundleCase{
		{
			name: "num_gpus bounds",
			typ:  "ondemand",
			body: bundles(offer(1, n("1")), offer(2, n("16")), offer(3, n("17")), offer(4, n("9999")), offer(5, n("0")), offer(6, n("-1")), offer(7, n("2.0")), offer(8, n(`"4"`))),
			want: []string{row("1", "A100-80GB", "1"), row("2", "A100-80GB", "16")},
			dropped: []string{
				`vast:3:ondemand: num_gpus 17: out of range 1..16`,
				`vast:4:ondemand: num_gpus 9999: out of range 1..16`,
				`vast:5:ondemand: num_gpus 0: not a positive integer`,
				`vast:6:ondemand: num_gpus -1: not a positive integer`,
				`vast:7:ondemand: num_gpus 2.0: not a positive integer`,
				`vast:8:ondemand: num_gpus "4": not a positive integer`,
			},
		},
		{
			name: "gpu_ram bands and bounds",
			typ:  "ondemand",
			body: bundles(
				offer(1, ram("30000")), offer(2, ram("40960")), offer(3, ram("50000")),
				offer(4, ram("70000")), offer(5, ram("81920")), offer(6, ram("90000")),
				offer(7, ram("29999")), offer(8, ram("50001")), offer(9, ram("90001")),
				offer(10, ram("200001")), offer(11, ram("1e9")), offer(12, ram("0")), offer(13, ram(`"81920"`)),
			),
			want: []string{
				row("1", "A100-40GB", "1"), row("2", "A100-40GB", "1"), row("3", "A100-40GB", "1"),
				row("4", "A100-80GB", "1"), row("5", "A100-80GB", "1"), row("6", "A100-80GB", "1"),
			},
			dropped: []string{
				`vast:7:ondemand: gpu_ram 29999: out of range 30000..200000 MB per GPU`,
				`vast:8:ondemand: gpu_ram 50001: not an A100 size (MB per GPU: 70000–90000 for 80GB, 30000–50000 for 40GB)`,
				`vast:9:ondemand: gpu_ram 90001: not an A100 size (MB per GPU: 70000–90000 for 80GB, 30000–50000 for 40GB)`,
				`vast:10:ondemand: gpu_ram 200001: out of range 30000..200000 MB per GPU`,
				`vast:11:ondemand: gpu_ram 1e9: out of range 30000..200000 MB per GPU`,
				`vast:12:ondemand: gpu_ram 0: out of range 30000..200000 MB per GPU`,
				`vast:13:ondemand: gpu_ram "\"81920\"": not a JSON number`,
			},
		},
	})
}

// TestOneSearchFails: the searches run independently; when one fails, Offers
// returns the other's offers and drops together with the error.
func TestOneSearchFails(t *testing.T) {
	fixture := func(name string) string {
		b, err := os.ReadFile("../../testdata/replay/vast/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ondemand, bid := fixture("bundles.ondemand.json"), fixture("bundles.bid.json")
	withDrop := `{"offers":[` + offer(1, map[string]string{"dph_total": "-1"}) + `,` + offer(2, nil) + `]}`
	type answer struct {
		status int
		body   string
		ct     string // Content-Type, default application/json
	}
	throttled := answer{429, `{"detail":"API requests too frequent endpoint threshold=4.5"}`, ""}
	cases := []struct {
		name        string
		answers     map[string]answer // by search type
		wantOffers  []string
		wantDropped []string
		check       func(t *testing.T, err error)
	}{
		{"bid 429, ondemand 200", map[string]answer{"ondemand": {200, ondemand, ""}, "bid": throttled},
			fixtureOnDemand, nil,
			func(t *testing.T, err error) {
				var te *vast.ThrottledError
				if !errors.As(err, &te) || te.SearchType != "bid" || te.RetryAfter != 3*time.Second {
					t.Errorf("err = %v, want a *ThrottledError for bid, retry after 3s", err)
				}
			}},
		{"ondemand 429, bid 200", map[string]answer{"ondemand": throttled, "bid": {200, bid, ""}},
			fixtureBid, nil,
			func(t *testing.T, err error) {
				var te *vast.ThrottledError
				if !errors.As(err, &te) || te.SearchType != "ondemand" {
					t.Errorf("err = %v, want a *ThrottledError for ondemand", err)
				}
			}},
		{"bid 502, ondemand 200 with a dropped offer", map[string]answer{"ondemand": {200, withDrop, ""}, "bid": {502, "<html>bad gateway</html>", "text/html"}},
			[]string{od2}, []string{`vast:1:ondemand: dph_total "-1": negative`},
			func(t *testing.T, err error) {
				var he *vast.HTTPError
				if !errors.As(err, &he) || he.Status != 502 || he.SearchType != "bid" || pricing.Classify(err) != pricing.ClassUnavailable {
					t.Errorf("err = %v, want an *HTTPError 502 for bid, unavailable", err)
				}
			}},
		{"bid 200 but not JSON", map[string]answer{"ondemand": {200, ondemand, ""}, "bid": {200, "<html>", ""}},
			fixtureOnDemand, nil,
			func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "vast: bundles search type=bid: response is not JSON") {
					t.Errorf("err = %v", err)
				}
			}},
		{"bid 200 served as text/html", map[string]answer{"ondemand": {200, ondemand, ""}, "bid": {200, bid, "text/html; charset=utf-8"}},
			fixtureOnDemand, nil,
			func(t *testing.T, err error) {
				var pe *pricing.HTTPError
				if !errors.As(err, &pe) || pricing.Classify(err) != pricing.ClassBadResponse ||
					!strings.Contains(err.Error(), `vast: bundles search type=bid: vast POST /api/v0/bundles/ type=bid: HTTP 200 (bad-response): content type "text/html; charset=utf-8", want [application/json]`) {
					t.Errorf("err = %v", err)
				}
			}},
		{"both 429", map[string]answer{"ondemand": throttled, "bid": throttled},
			nil, nil,
			func(t *testing.T, err error) {
				if err == nil || strings.Count(err.Error(), "throttled (HTTP 429)") != 2 {
					t.Errorf("err = %v, want both searches named", err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				a, ok := c.answers[gjson.GetBytes(b, "type").String()]
				if !ok || r.URL.Path != vast.BundlesPath {
					http.NotFound(w, r)
					return
				}
				if a.status == 429 {
					w.Header().Set("Retry-After", "3")
				}
				if a.ct == "" {
					a.ct = "application/json"
				}
				w.Header().Set("Content-Type", a.ct)
				w.WriteHeader(a.status)
				_, _ = io.WriteString(w, a.body)
			}))
			defer srv.Close()
			offers, dropped, err := vast.New(vast.Config{BaseURL: srv.URL, Types: []string{"ondemand", "bid"}, Now: clock}).Offers(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			c.check(t, err)
			diff(t, rows(offers), c.wantOffers)
			var got []string
			for _, d := range dropped {
				got = append(got, d.Ref+": "+d.Reason)
			}
			if !slices.Equal(got, c.wantDropped) {
				t.Errorf("dropped %q, want %q", got, c.wantDropped)
			}
		})
	}
}

// TestTypesSearchedOnce: a search type listed twice is searched once, so its
// offers do not all come back twice.
func TestTypesSearchedOnce(t *testing.T) {
	for _, tc := range []struct {
		types    []string
		requests int
	}{
		{[]string{"bid", "bid"}, 1},
		{[]string{"ondemand", "bid", "ondemand"}, 2},
	} {
		var mu sync.Mutex
		n := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, string(bundles(offer(1, nil))))
		}))
		offers, _, err := vast.New(vast.Config{BaseURL: srv.URL, Types: tc.types, Now: clock}).Offers(context.Background())
		srv.Close()
		if err != nil || n != tc.requests || len(offers) != tc.requests {
			t.Errorf("types %v: %d requests, %d offers, err %v; want %d of each", tc.types, n, len(offers), err, tc.requests)
		}
	}
}
