package runpod_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/moneytest"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/replay"
	"github.com/sluicehq/sluice/pricing/runpod"
)

var now = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func clock() time.Time { return now }

// row is an offer in one line, every money amount as its exact decimal text.
func row(o sluice.Offer) string {
	minBid := "-"
	if o.MinBid.IsSet() {
		minBid = o.MinBid.String()
	}
	return fmt.Sprintf("%s | sku=%s %s x%d | %s/%s | %s | %s | min_bid %s | raw %s/%s | units %d",
		o.ID, o.SKU, o.GPUModel, o.GPUsPerUnit, o.Region, o.City, o.Market, o.UnitPrice, minBid, o.RawPrice, o.Basis, o.UnitsAvailable)
}

func rows(offers []sluice.Offer) []string {
	var out []string
	for _, o := range offers {
		out = append(out, row(o))
	}
	return out
}

func diff(t *testing.T, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("offers differ\n got (%d):\n  %s\nwant (%d):\n  %s", len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
}

// fixtureOffers are the offers testdata/replay/runpod/graphql.json must produce.
// Per-count prices come from the lowestPrice aliases (lp_s_<n>): the 2x/4x/8x
// PCIe pods are 1.62 per GPU-hour on demand, so 3.24/6.48/12.96 as in the
// catalog; SXM's stockStatus is Medium (2 units), PCIe's High (4).
var fixtureOffers = []string{
	"runpod:NVIDIA A100 80GB PCIe:secure:1x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | on-demand | 1.64 USD | min_bid - | raw 1.64/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:2x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x2 | global/ | on-demand | 3.24 USD | min_bid - | raw 1.62/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:4x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x4 | global/ | on-demand | 6.48 USD | min_bid - | raw 1.62/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:8x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x8 | global/ | on-demand | 12.96 USD | min_bid - | raw 1.62/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:1x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | spot | 1.19 USD | min_bid 1.19 USD | raw 1.19/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:2x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x2 | global/ | spot | 2.38 USD | min_bid 2.38 USD | raw 1.19/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:4x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x4 | global/ | spot | 4.76 USD | min_bid 4.76 USD | raw 1.19/gpu-hour | units 4",
	"runpod:NVIDIA A100 80GB PCIe:secure:8x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x8 | global/ | spot | 9.52 USD | min_bid 9.52 USD | raw 1.19/gpu-hour | units 4",
	"runpod:NVIDIA A100-SXM4-80GB:secure:1x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x1 | global/ | on-demand | 1.89 USD | min_bid - | raw 1.89/gpu-hour | units 2",
	"runpod:NVIDIA A100-SXM4-80GB:secure:2x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x2 | global/ | on-demand | 3.78 USD | min_bid - | raw 1.89/gpu-hour | units 2",
	"runpod:NVIDIA A100-SXM4-80GB:secure:4x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x4 | global/ | on-demand | 7.56 USD | min_bid - | raw 1.89/gpu-hour | units 2",
	"runpod:NVIDIA A100-SXM4-80GB:secure:8x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x8 | global/ | on-demand | 15.12 USD | min_bid - | raw 1.89/gpu-hour | units 2",
}

func TestOffersFromReplay(t *testing.T) {
	srv, err := replay.Start("../../testdata/replay")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	c := runpod.New(runpod.Config{BaseURL: srv.URL("runpod") + "/graphql", APIKey: "test-key", Now: clock})
	if c.Name() != "runpod" {
		t.Errorf("Name() = %q", c.Name())
	}
	offers, dropped, err := c.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 0 {
		t.Errorf("dropped = %v, want none", dropped)
	}
	diff(t, rows(offers), fixtureOffers)
	for _, o := range offers {
		if o.Provider != "runpod" || !strings.HasPrefix(o.Source, runpod.Source+" lp_s_") || !o.FetchedAt.Equal(now) || !o.ExpiresAt.Equal(now.Add(5*time.Minute)) {
			t.Errorf("%s: provider %q source %q fetched %v expires %v", o.ID, o.Provider, o.Source, o.FetchedAt, o.ExpiresAt)
		}
		// Every pod size and both markets of one GPU type and cloud share a pool.
		if want := "runpod:" + o.SKU + ":secure"; o.Pool != want || o.PoolGPUs != 0 {
			t.Errorf("%s: pool %q / %d GPUs, want %q / 0 (unknown)", o.ID, o.Pool, o.PoolGPUs, want)
		}
	}
	if got := offers[2].Source; got != "runpod graphql gpuTypes lp_s_4: lowestPrice(gpuCount:4, secureCloud:true)" {
		t.Errorf("Source = %q", got)
	}

	reqs := srv.Requests("runpod")
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/graphql" || r.Key != "graphql" || !slices.Equal(r.Keys, []string{"graphql.GpuTypes", "graphql"}) {
		t.Errorf("request %s %s key %q keys %v", r.Method, r.Path, r.Key, r.Keys)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	q := gjson.GetBytes(r.Body, "query").String()
	for _, want := range []string{
		`gpu0: gpuTypes(input:{id:"NVIDIA A100 80GB PCIe"})`,
		`gpu1: gpuTypes(input:{id:"NVIDIA A100-SXM4-80GB"})`,
		`lp_s_1: lowestPrice(input:{gpuCount:1, secureCloud:true}) { minimumBidPrice uninterruptablePrice stockStatus }`,
		`lp_c_1: lowestPrice(input:{gpuCount:1, secureCloud:false}) { minimumBidPrice uninterruptablePrice stockStatus }`,
		`lp_s_4: lowestPrice(input:{gpuCount:4, secureCloud:true}) { minimumBidPrice uninterruptablePrice stockStatus }`,
		`lp_c_8: lowestPrice(input:{gpuCount:8, secureCloud:false}) { minimumBidPrice uninterruptablePrice stockStatus }`,
		"securePrice communityPrice secureSpotPrice communitySpotPrice",
	} {
		if !strings.Contains(q, want) {
			t.Errorf("query lacks %q:\n%s", want, q)
		}
	}
	// 2 types × 4 counts × 2 clouds.
	if n := strings.Count(q, ": lowestPrice("); n != 16 {
		t.Errorf("%d lowestPrice aliases, want 16", n)
	}
}

// gpuType builds one GpuType JSON object; over replaces fields by their raw
// JSON ("-" deletes) and adds others (lowestPrice aliases such as "lp_s_4")
// after them, sorted. Without aliases the flat prices are used (fallback).
func gpuType(id string, over map[string]string) string {
	f := map[string]string{
		"id": fmt.Sprintf("%q", id), "displayName": `"A100"`, "memoryInGb": "80", "maxGpuCount": "8",
		"secureCloud": "true", "communityCloud": "false",
		"securePrice": "1.64", "communityPrice": "0", "secureSpotPrice": "1.19", "communitySpotPrice": "0",
	}
	for k, v := range over {
		f[k] = v
	}
	keys := []string{"id", "displayName", "memoryInGb", "maxGpuCount", "secureCloud", "communityCloud",
		"securePrice", "communityPrice", "secureSpotPrice", "communitySpotPrice"}
	var extra []string
	for k := range f {
		if !slices.Contains(keys, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	keys = append(keys, extra...)
	var parts []string
	for _, k := range keys {
		if v := f[k]; v != "-" {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

const pcie, sxm = "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"

func body(types ...string) []byte {
	return []byte(`{"data":{"gpuTypes":[` + strings.Join(types, ",") + `]}}`)
}

func TestParseGPUTypes(t *testing.T) {
	one := runpod.Config{GPUCounts: []int{1}}
	sxmOK := "runpod:NVIDIA A100-SXM4-80GB:secure:1x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x1 | global/ | on-demand | 1.89 USD | min_bid - | raw 1.89/gpu-hour | units 4"
	sxmType := gpuType(sxm, map[string]string{"securePrice": "1.89", "secureSpotPrice": "null"})
	pcieSpot1 := "runpod:NVIDIA A100 80GB PCIe:secure:1x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | spot | 1.19 USD | min_bid 1.19 USD | raw 1.19/gpu-hour | units 4"
	tests := []struct {
		name    string
		cfg     runpod.Config
		body    []byte
		want    []string
		dropped []string // "ref: reason"
	}{
		{
			name: "negative on-demand price dropped, its spot and the other type survive",
			cfg:  one,
			body: body(gpuType(pcie, map[string]string{"securePrice": "-0.5"}), sxmType),
			want: []string{pcieSpot1, sxmOK},
			dropped: []string{
				`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice "-0.5": negative`,
			},
		},
		{
			name:    "price sent as a string is not a GraphQL Float",
			cfg:     one,
			body:    body(gpuType(pcie, map[string]string{"securePrice": `"1.64"`}), sxmType),
			want:    []string{pcieSpot1, sxmOK},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice "\"1.64\"": not a JSON number`},
		},
		{
			name: "negative spot price drops spot only",
			cfg:  one,
			body: body(gpuType(pcie, map[string]string{"secureSpotPrice": "-1"})),
			want: []string{
				"runpod:NVIDIA A100 80GB PCIe:secure:1x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | on-demand | 1.64 USD | min_bid - | raw 1.64/gpu-hour | units 4",
			},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:spot: secureSpotPrice "-1": negative`},
		},
		{
			name:    "memoryInGb not an A100 size",
			cfg:     one,
			body:    body(gpuType(pcie, map[string]string{"memoryInGb": "24"}), sxmType),
			want:    []string{sxmOK},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe: memoryInGb 24: not an A100 size (40 or 80)`},
		},
		{
			name:    "maxGpuCount missing",
			cfg:     one,
			body:    body(gpuType(pcie, map[string]string{"maxGpuCount": "-"}), sxmType),
			want:    []string{sxmOK},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe: maxGpuCount missing: not a positive integer`},
		},
		{
			name:    "configured id that is not an A100",
			cfg:     runpod.Config{GPUTypeIDs: []string{"NVIDIA H100 80GB HBM3", sxm}, GPUCounts: []int{1}},
			body:    body(gpuType("NVIDIA H100 80GB HBM3", nil), sxmType),
			want:    []string{sxmOK},
			dropped: []string{`runpod:NVIDIA H100 80GB HBM3: id "NVIDIA H100 80GB HBM3": not an A100 GPU type`},
		},
		{
			name:    "non-object entry",
			cfg:     one,
			body:    body(`42`, sxmType),
			want:    []string{sxmOK},
			dropped: []string{`data.gpuTypes[0]: gpu type 42: not an object`},
		},
		{
			name: "unrequested types are ignored, even repeated",
			cfg:  runpod.Config{GPUTypeIDs: []string{sxm}, GPUCounts: []int{1}},
			body: body(gpuType(pcie, nil), sxmType, gpuType(pcie, map[string]string{"securePrice": "9"})),
			want: []string{sxmOK},
		},
		{
			name: "counts capped by maxGpuCount, stock None means no units, 40GB",
			cfg:  runpod.Config{GPUTypeIDs: []string{"NVIDIA A100-PCIE-40GB"}},
			body: body(gpuType("NVIDIA A100-PCIE-40GB", map[string]string{
				"memoryInGb": "40", "maxGpuCount": "2", "securePrice": "1.1", "secureSpotPrice": "0",
				"lp_s_1": `{"minimumBidPrice":null,"uninterruptablePrice":1.1,"stockStatus":"None"}`,
				"lp_s_2": `{"minimumBidPrice":null,"uninterruptablePrice":1.1,"stockStatus":"None"}`,
				"lp_s_4": `{"minimumBidPrice":1.0,"uninterruptablePrice":1.0,"stockStatus":"High"}`,
			})),
			want: []string{
				"runpod:NVIDIA A100-PCIE-40GB:secure:1x:on-demand | sku=NVIDIA A100-PCIE-40GB A100-40GB x1 | global/ | on-demand | 1.1 USD | min_bid - | raw 1.1/gpu-hour | units 0",
				"runpod:NVIDIA A100-PCIE-40GB:secure:2x:on-demand | sku=NVIDIA A100-PCIE-40GB A100-40GB x2 | global/ | on-demand | 2.2 USD | min_bid - | raw 1.1/gpu-hour | units 0",
			},
		},
		{
			name: "community cloud is its own offer; a cloud that is false or priced 0 gives none",
			cfg:  runpod.Config{GPUCounts: []int{2}, MaxUnits: 7},
			body: body(
				gpuType(pcie, map[string]string{"secureCloud": "false", "communityCloud": "true", "communityPrice": "0.89", "communitySpotPrice": "0.6"}),
				gpuType(sxm, map[string]string{"communityCloud": "true", "communityPrice": "0", "secureSpotPrice": "null"}),
			),
			want: []string{
				"runpod:NVIDIA A100 80GB PCIe:community:2x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x2 | global/ | on-demand | 1.78 USD | min_bid - | raw 0.89/gpu-hour | units 7",
				"runpod:NVIDIA A100 80GB PCIe:community:2x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x2 | global/ | spot | 1.2 USD | min_bid 1.2 USD | raw 0.6/gpu-hour | units 7",
				"runpod:NVIDIA A100-SXM4-80GB:secure:2x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x2 | global/ | on-demand | 3.28 USD | min_bid - | raw 1.64/gpu-hour | units 7",
			},
		},
		{
			name: "price beyond float64 precision survives exactly",
			cfg:  runpod.Config{GPUTypeIDs: []string{pcie}, GPUCounts: []int{8}},
			body: body(gpuType(pcie, map[string]string{"securePrice": "1.190000000000000000001", "secureSpotPrice": "0"})),
			want: []string{
				"runpod:NVIDIA A100 80GB PCIe:secure:8x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x8 | global/ | on-demand | 9.520000000000000000008 USD | min_bid - | raw 1.190000000000000000001/gpu-hour | units 4",
			},
		},
		{
			name:    "absurd exponent refused",
			cfg:     one,
			body:    body(gpuType(pcie, map[string]string{"securePrice": "1e40"}), sxmType),
			want:    []string{pcieSpot1, sxmOK},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice "1e40": out of range`},
		},
		{
			name: "aliased and null members of data",
			cfg:  one,
			body: []byte(`{"data":{"gpu0":null,"gpu1":[` + sxmType + `]}}`),
			want: []string{sxmOK},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offers, dropped, err := runpod.ParseGPUTypes(tt.body, now, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, rows(offers), tt.want)
			var got []string
			for _, d := range dropped {
				if d.Provider != "runpod" {
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

func TestParseGPUTypesErrors(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string // substrings of the error
	}{
		{"not JSON", `<html>502 Bad Gateway</html>`, []string{"runpod", "not JSON"}},
		{"graphql errors", `{"errors":[{"message":"Something went wrong. Please try again later or contact support."},{"message":"second"}],"data":null}`,
			[]string{"runpod", "graphql errors", "Something went wrong", "second"}},
		{"errors beside partial data", `{"errors":[{"message":"partial"}],"data":{"gpuTypes":[]}}`, []string{"partial"}},
		{"no data", `{}`, []string{"runpod", "data missing: not an object"}},
		{"data.gpuTypes not a list", `{"data":{"gpuTypes":{"id":"x"}}}`, []string{"runpod", "data.gpuTypes", "not a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runpod.ParseGPUTypes([]byte(tt.body), now, runpod.Config{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	_, _, err := runpod.ParseGPUTypes([]byte(`{"errors":[{"message":"boom"}]}`), now, runpod.Config{})
	var ge *runpod.GraphQLError
	if !errors.As(err, &ge) || !slices.Equal(ge.Messages, []string{"boom"}) {
		t.Errorf("err = %#v, want *GraphQLError{boom}", err)
	}
	// An empty errors list is no error.
	if _, _, err := runpod.ParseGPUTypes([]byte(`{"errors":[],"data":{"gpuTypes":[]}}`), now, runpod.Config{}); err != nil {
		t.Errorf("empty errors list: %v", err)
	}
}

func TestOffersHTTPErrors(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		header      map[string]string
		body        string
		class       string
		check       func(t *testing.T, err error)
	}{
		{"401", 401, "application/json", nil, `{"error":"Unauthorized"}`, pricing.ClassAuth, func(t *testing.T, err error) {
			var he *runpod.HTTPError
			if !errors.As(err, &he) || he.Status != 401 || he.Body != `{"error":"Unauthorized"}` ||
				err.Error() != `runpod: graphql HTTP 401 Unauthorized (auth): {"error":"Unauthorized"}` {
				t.Errorf("err = %v", err)
			}
			var pe *pricing.HTTPError
			if !errors.As(err, &pe) || pe.Provider != "runpod" || pe.Op != "POST graphql" {
				t.Errorf("no *pricing.HTTPError in %v", err)
			}
		}},
		{"429 with Retry-After", 429, "application/json", map[string]string{"Retry-After": "7"}, `{"errors":[{"message":"rate limited"}]}`, pricing.ClassThrottled, func(t *testing.T, err error) {
			var he *runpod.HTTPError
			if !errors.As(err, &he) || he.Status != 429 || he.RetryAfter != 7*time.Second {
				t.Errorf("err = %#v", err)
			}
		}},
		{"502 html", 502, "text/html", nil, `<html>bad gateway</html>`, pricing.ClassUnavailable, func(t *testing.T, err error) {
			var he *runpod.HTTPError
			if !errors.As(err, &he) || he.Status != 502 {
				t.Errorf("err = %v", err)
			}
		}},
		{"graphql errors in a 200: bad key", 200, "application/json", nil, `{"errors":[{"message":"Invalid API key"}]}`, pricing.ClassAuth, func(t *testing.T, err error) {
			var ge *runpod.GraphQLError
			if !errors.As(err, &ge) || err.Error() != "runpod: graphql errors: Invalid API key" {
				t.Errorf("err = %v", err)
			}
		}},
		{"graphql errors in a 200: unauthorized", 200, "application/json; charset=utf-8", nil, `{"errors":[{"message":"Unauthorized request, please check your API key."}],"data":null}`, pricing.ClassAuth, func(t *testing.T, err error) {
			var ge *runpod.GraphQLError
			if !errors.As(err, &ge) {
				t.Errorf("err = %v", err)
			}
		}},
		{"graphql errors in a 200: other", 200, "application/json", nil, `{"errors":[{"message":"Something went wrong. Please try again later or contact support."}],"data":null}`, pricing.ClassBadResponse, func(t *testing.T, err error) {
			var ge *runpod.GraphQLError
			if !errors.As(err, &ge) || !slices.Equal(ge.Messages, []string{"Something went wrong. Please try again later or contact support."}) {
				t.Errorf("err = %v", err)
			}
		}},
		{"200 with an html content type", 200, "text/html; charset=utf-8", nil, `{"data":{"gpuTypes":[]}}`, pricing.ClassBadResponse, func(t *testing.T, err error) {
			var pe *pricing.HTTPError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), `content type "text/html; charset=utf-8", want [application/json]`) {
				t.Errorf("err = %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer ts.Close()
			offers, _, err := runpod.New(runpod.Config{BaseURL: ts.URL, Now: clock}).Offers(context.Background())
			if len(offers) != 0 {
				t.Errorf("offers = %d", len(offers))
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := pricing.Classify(err); got != tt.class {
				t.Errorf("class %q, want %q (%v)", got, tt.class, err)
			}
			tt.check(t, err)
		})
	}
}

func TestOffersContextCancelled(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // lets the server notice the client going away
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := runpod.New(runpod.Config{BaseURL: ts.URL}).Offers(ctx); err == nil || !strings.Contains(err.Error(), "runpod") {
		t.Errorf("err = %v", err)
	}
}

// TestNoFloat: no non-test file of the package touches float64.
func TestNoFloat(t *testing.T) { moneytest.NoFloat(t) }

func FuzzParseGPUTypes(f *testing.F) {
	fixture, err := os.ReadFile("../../testdata/replay/runpod/graphql.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add(body(gpuType(pcie, map[string]string{"securePrice": "-0.5"})))
	f.Add(body(gpuType(pcie, map[string]string{"communityCloud": "true", "communityPrice": "1e3", "maxGpuCount": "3"})))
	f.Add([]byte(`{"errors":[{"message":"x"}]}`))
	f.Add(body(gpuType(pcie, map[string]string{"securePrice": "1e999999999", "secureSpotPrice": "1.190000000000000000001"})))
	f.Add([]byte(`{"data":{"gpuTypes":[null,1,"a",{}]}}`))
	f.Add(body(gpuType(sxm, nil), gpuType(sxm, map[string]string{"securePrice": "9"}), gpuType(sxm, nil)))
	f.Add(body(gpuType(pcie, map[string]string{"securePrice": "-", "secureSpotPrice": `"x"`})))
	f.Add(body(gpuType(pcie, map[string]string{"communityCloud": "true",
		"lp_s_2": `{"minimumBidPrice":1.19,"uninterruptablePrice":1.62,"stockStatus":"Low"}`,
		"lp_c_2": `{"minimumBidPrice":-1,"uninterruptablePrice":"x","stockStatus":"Plenty"}`,
		"lp_s_4": `7`, "lp_c_4": `null`, "lp_s_8": `{"stockStatus":null}`})))
	f.Fuzz(func(t *testing.T, b []byte) {
		offers, dropped, err := runpod.ParseGPUTypes(b, now, runpod.Config{GPUTypeIDs: []string{pcie, sxm, "NVIDIA A100-PCIE-40GB"}})
		if err != nil && (len(offers) > 0 || len(dropped) > 0) {
			t.Fatalf("error %v with %d offers", err, len(offers))
		}
		ids := map[string]bool{}
		for _, o := range offers {
			if ids[o.ID] {
				t.Fatalf("offer id %s twice", o.ID)
			}
			ids[o.ID] = true
			if o.UnitPrice.Amount.IsNegative() || o.UnitPrice.Zero() || o.UnitPrice.Currency != "USD" {
				t.Fatalf("%s: price %s", o.ID, o.UnitPrice)
			}
			if o.Market != sluice.OnDemand && o.Market != sluice.Spot {
				t.Fatalf("%s: market %q", o.ID, o.Market)
			}
			if o.GPUsPerUnit < 1 || (o.GPUModel != "A100-80GB" && o.GPUModel != "A100-40GB") {
				t.Fatalf("%s: %d × %q", o.ID, o.GPUsPerUnit, o.GPUModel)
			}
		}
	})
}
