package autodl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/moneytest"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/autodl"
	"github.com/sluicehq/sluice/pricing/replay"
)

var now = time.Date(2026, 11, 29, 10, 5, 3, 0, time.UTC)

func clock() time.Time { return now }

const (
	sxm  = "A100-SXM4-80GB"
	pcie = "A100-PCIE-40GB"
	// listSource is the Source of the test price list (the figures are the
	// illustrative ones suggested for testdata/sluice.yaml).
	listSource = "illustrative, not AutoDL's price: replace with AutoDL's published price list of the day"
)

func priceList() autodl.PriceList {
	return autodl.PriceList{
		AsOf:   time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Source: listSource,
		Prices: []autodl.Price{
			{GPUName: sxm, GPUModel: "A100-80GB", PerGPUHour: sluice.MustMoney("6.68", "CNY")},
			{GPUName: pcie, GPUModel: "A100-40GB", PerGPUHour: sluice.MustMoney("4.98", "CNY")},
		},
	}
}

// row is an offer in one line, every money amount as its exact decimal text.
func row(o sluice.Offer) string {
	return fmt.Sprintf("%s | sku=%s %s x%d | %s | %s | %s | raw %s/%s | units %d",
		o.ID, o.SKU, o.GPUModel, o.GPUsPerUnit, o.Region, o.Market, o.UnitPrice, o.RawPrice, o.Basis, o.UnitsAvailable)
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

func dropRows(dropped []sluice.DroppedOffer) []string {
	var out []string
	for _, d := range dropped {
		out = append(out, d.Ref+": "+d.Reason)
	}
	return out
}

// fixtureOffers are the offers testdata/replay/autodl/gpu_stock.*.json give
// with priceList(), in region order (beijingDC1, beijingDC2, yangzhouDC1, westDC2).
var fixtureOffers = []string{
	"autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | beijingDC1 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units 12",
	"autodl:beijingDC1:A100-SXM4-80GB:2x:on-demand | sku=A100-SXM4-80GB A100-80GB x2 | beijingDC1 | on-demand | 13.36 CNY | raw 6.68/gpu-hour | units 6",
	"autodl:beijingDC1:A100-SXM4-80GB:4x:on-demand | sku=A100-SXM4-80GB A100-80GB x4 | beijingDC1 | on-demand | 26.72 CNY | raw 6.68/gpu-hour | units 3",
	"autodl:beijingDC1:A100-SXM4-80GB:8x:on-demand | sku=A100-SXM4-80GB A100-80GB x8 | beijingDC1 | on-demand | 53.44 CNY | raw 6.68/gpu-hour | units 1",
	"autodl:beijingDC1:A100-PCIE-40GB:1x:on-demand | sku=A100-PCIE-40GB A100-40GB x1 | beijingDC1 | on-demand | 4.98 CNY | raw 4.98/gpu-hour | units 3",
	"autodl:beijingDC1:A100-PCIE-40GB:2x:on-demand | sku=A100-PCIE-40GB A100-40GB x2 | beijingDC1 | on-demand | 9.96 CNY | raw 4.98/gpu-hour | units 1",
	"autodl:beijingDC2:A100-PCIE-40GB:1x:on-demand | sku=A100-PCIE-40GB A100-40GB x1 | beijingDC2 | on-demand | 4.98 CNY | raw 4.98/gpu-hour | units 2",
	"autodl:beijingDC2:A100-PCIE-40GB:2x:on-demand | sku=A100-PCIE-40GB A100-40GB x2 | beijingDC2 | on-demand | 9.96 CNY | raw 4.98/gpu-hour | units 1",
	"autodl:westDC2:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | westDC2 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units 7",
	"autodl:westDC2:A100-SXM4-80GB:2x:on-demand | sku=A100-SXM4-80GB A100-80GB x2 | westDC2 | on-demand | 13.36 CNY | raw 6.68/gpu-hour | units 3",
	"autodl:westDC2:A100-SXM4-80GB:4x:on-demand | sku=A100-SXM4-80GB A100-80GB x4 | westDC2 | on-demand | 26.72 CNY | raw 6.68/gpu-hour | units 1",
}

func TestOffersFromReplay(t *testing.T) {
	srv, err := replay.Start("../../testdata/replay")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	c := autodl.New(autodl.Config{BaseURL: srv.URL("autodl"), Token: "test-token", PriceList: priceList(), Now: clock})
	if c.Name() != "autodl" {
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
	// Every size of one GPU in one data centre draws on the same idle cards.
	idle := map[string]int{"autodl:beijingDC1:A100-SXM4-80GB": 12, "autodl:beijingDC1:A100-PCIE-40GB": 3,
		"autodl:beijingDC2:A100-PCIE-40GB": 2, "autodl:westDC2:A100-SXM4-80GB": 7}
	for _, o := range offers {
		if want := "autodl:" + o.Region + ":" + o.SKU; o.Pool != want || o.PoolGPUs != idle[want] {
			t.Errorf("%s: pool %q / %d GPUs, want %q / %d", o.ID, o.Pool, o.PoolGPUs, want, idle[want])
		}
	}
	for _, o := range offers {
		wantSource := "autodl gpu_stock " + o.Region + " + price list 2026-11-01 (" + listSource + ")"
		if o.Provider != "autodl" || o.Source != wantSource || !o.FetchedAt.Equal(now) || !o.ExpiresAt.Equal(now.Add(5*time.Minute)) || o.MinBid.IsSet() || o.TermHours != 0 {
			t.Errorf("%s: provider %q source %q fetched %v expires %v min bid %v", o.ID, o.Provider, o.Source, o.FetchedAt, o.ExpiresAt, o.MinBid)
		}
	}

	reqs := srv.Requests("autodl")
	var keys []string
	for _, r := range reqs {
		keys = append(keys, r.Key)
		if r.Method != "POST" || r.Path != autodl.StockPath {
			t.Errorf("request %s %s", r.Method, r.Path)
		}
		if got := r.Header.Get("Authorization"); got != "test-token" {
			t.Errorf("Authorization = %q, want the raw token", got)
		}
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		var body autodl.StockRequest
		if err := json.Unmarshal(r.Body, &body); err != nil || "gpu_stock."+body.RegionSign != r.Key || !slices.Equal(body.GPUNameSet, []string{sxm, pcie}) {
			t.Errorf("body %s (key %s): %v", r.Body, r.Key, err)
		}
	}
	slices.Sort(keys)
	if want := []string{"gpu_stock.beijingDC1", "gpu_stock.beijingDC2", "gpu_stock.westDC2", "gpu_stock.yangzhouDC1"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
}

// stockServer is a fake gpu_stock endpoint that checks each request as the
// real API would see it and answers per region_sign.
type stockServer struct {
	t      *testing.T
	token  string
	bodies map[string]string // region → body (200, application/json)
	status map[string]int    // region → HTTP status instead
	hang   map[string]bool   // region → hold until the client gives up

	mu    sync.Mutex
	calls []string
}

func (s *stockServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req autodl.StockRequest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.t.Errorf("request body %s: %v", b, err)
	}
	s.mu.Lock()
	s.calls = append(s.calls, req.RegionSign)
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/api/v1/dev/machine/region/gpu_stock":
		s.t.Errorf("request %s %s", r.Method, r.URL.Path)
	case r.Header.Get("Authorization") != s.token:
		s.t.Errorf("Authorization %q, want %q", r.Header.Get("Authorization"), s.token)
	case r.Header.Get("Content-Type") != "application/json":
		s.t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	if s.hang[req.RegionSign] {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if st := s.status[req.RegionSign]; st != 0 {
		w.WriteHeader(st)
		_, _ = w.Write([]byte(`{"code":"InternalError","msg":"x"}`))
		return
	}
	body, ok := s.bodies[req.RegionSign]
	if !ok {
		body = `{"code":"RequestParameterIsWrong","msg":"region_sign"}`
	}
	_, _ = w.Write([]byte(body))
}

func (s *stockServer) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := slices.Clone(s.calls)
	slices.Sort(c)
	return c
}

func stock(entries ...string) string {
	return `{"code":"Success","msg":"","data":[` + strings.Join(entries, ",") + `]}`
}

func entry(name string, idle, total int) string {
	return fmt.Sprintf(`{%q:{"idle_gpu_num":%d,"total_gpu_num":%d,"chip_corp":"nvidia","cpu_arch":"x86"}}`, name, idle, total)
}

// TestRealAPI: the request is what AutoDL's API expects (path, raw token,
// JSON body), regions and GPU names are asked once each, GPU counts outside
// 1..16 are ignored.
func TestRealAPI(t *testing.T) {
	s := &stockServer{t: t, token: "eyJhbGciOi.token", bodies: map[string]string{
		"beijingDC1": stock(entry(sxm, 5, 10)),
		"westDC2":    stock(entry(sxm, 1, 1)),
	}}
	ts := httptest.NewServer(s)
	defer ts.Close()
	c := autodl.New(autodl.Config{
		BaseURL: ts.URL + "/", Token: "eyJhbGciOi.token", Now: clock, PriceList: priceList(),
		Regions:   []string{"beijingDC1", "westDC2", "beijingDC1", ""},
		GPUNames:  []string{sxm, sxm},
		GPUCounts: []int{4, 0, 1, 4, 17, -2},
	})
	offers, dropped, err := c.Offers(context.Background())
	if err != nil || len(dropped) != 0 {
		t.Fatalf("err %v dropped %v", err, dropped)
	}
	diff(t, rows(offers), []string{
		"autodl:beijingDC1:A100-SXM4-80GB:4x:on-demand | sku=A100-SXM4-80GB A100-80GB x4 | beijingDC1 | on-demand | 26.72 CNY | raw 6.68/gpu-hour | units 1",
		"autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | beijingDC1 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units 5",
		"autodl:westDC2:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | westDC2 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units 1",
	})
	if got := s.called(); !slices.Equal(got, []string{"beijingDC1", "westDC2"}) {
		t.Errorf("calls %v", got)
	}
}

// TestEnvelopeErrors: AutoDL answers errors with HTTP 200 and code ≠ Success;
// each is an *APIError with its class, and the region is dropped.
func TestEnvelopeErrors(t *testing.T) {
	tests := []struct {
		body, class, msg string
	}{
		{`{"code":"BadRequest","msg":"无当前资源访问权限","data":null}`, pricing.ClassAuth,
			"autodl gpu_stock beijingDC1: code BadRequest (auth): 无当前资源访问权限"},
		{`{"code":"BadRequest","msg":"登录超时，请重新登录"}`, pricing.ClassAuth,
			"autodl gpu_stock beijingDC1: code BadRequest (auth): 登录超时，请重新登录"},
		{`{"code":"AuthorizationFailed","msg":""}`, pricing.ClassAuth, "code AuthorizationFailed (auth)"},
		{`{"code":"RequestParameterIsWrong","msg":"参数错误"}`, pricing.ClassBadResponse,
			"autodl gpu_stock beijingDC1: code RequestParameterIsWrong (bad-response): 参数错误"},
		{`{"code":"BadRequest","msg":"bad gpu_name_set"}`, pricing.ClassBadResponse, "code BadRequest (bad-response)"},
		{`{"code":"TooManyRequests","msg":"请求过于频繁"}`, pricing.ClassThrottled, "(throttled)"},
		{`{"code":"InternalError","msg":"系统繁忙"}`, pricing.ClassUnavailable, "(unavailable)"},
		{`{"msg":"no code"}`, pricing.ClassBadResponse, "autodl gpu_stock beijingDC1: code missing: not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			ts := httptest.NewServer(&stockServer{t: t, token: "tok", bodies: map[string]string{"beijingDC1": tt.body}})
			defer ts.Close()
			offers, dropped, err := autodl.New(autodl.Config{BaseURL: ts.URL, Token: "tok", Regions: []string{"beijingDC1"}, PriceList: priceList(), Now: clock}).Offers(context.Background())
			if len(offers) != 0 || err == nil {
				t.Fatalf("offers %v err %v", offers, err)
			}
			if got := pricing.Classify(err); got != tt.class {
				t.Errorf("class %q, want %q (%v)", got, tt.class, err)
			}
			if !strings.Contains(err.Error(), "autodl: every region failed: ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err %q lacks %q", err, tt.msg)
			}
			var ae *autodl.APIError
			if strings.Contains(tt.body, `"code"`) && (!errors.As(err, &ae) || ae.Region != "beijingDC1") {
				t.Errorf("err %v is not an *APIError for beijingDC1", err)
			}
			if len(dropped) != 1 || dropped[0].Ref != "autodl:beijingDC1" || !strings.Contains(dropped[0].Reason, tt.msg) {
				t.Errorf("dropped %+v", dropped)
			}
		})
	}
}

// TestHTTPErrors: non-2xx answers and wrong content types are *pricing.HTTPError,
// classed by status; a region that fails leaves the others' offers.
func TestHTTPErrors(t *testing.T) {
	for _, tt := range []struct {
		status int
		class  string
	}{
		{500, pricing.ClassUnavailable}, {502, pricing.ClassUnavailable}, {401, pricing.ClassAuth},
		{403, pricing.ClassAuth}, {429, pricing.ClassThrottled}, {404, pricing.ClassBadResponse},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			ts := httptest.NewServer(&stockServer{t: t, token: "tok", status: map[string]int{"beijingDC1": tt.status, "westDC2": tt.status}})
			defer ts.Close()
			_, dropped, err := autodl.New(autodl.Config{BaseURL: ts.URL, Token: "tok", Regions: []string{"beijingDC1", "westDC2"}, PriceList: priceList(), Now: clock}).Offers(context.Background())
			var he *pricing.HTTPError
			if !errors.As(err, &he) || he.Status != tt.status || pricing.Classify(err) != tt.class {
				t.Fatalf("err %v (class %q), want HTTP %d %s", err, pricing.Classify(err), tt.status, tt.class)
			}
			want := fmt.Sprintf("autodl gpu_stock beijingDC1: HTTP %d (%s): ", tt.status, tt.class)
			if len(dropped) != 2 || !strings.HasPrefix(dropped[0].Reason, want) || dropped[1].Ref != "autodl:westDC2" {
				t.Errorf("dropped %+v, want first reason %q…", dropped, want)
			}
		})
	}

	t.Run("one region 500, others stand", func(t *testing.T) {
		ts := httptest.NewServer(&stockServer{t: t, token: "tok", status: map[string]int{"beijingDC2": 500},
			bodies: map[string]string{"beijingDC1": stock(entry(pcie, 1, 1)), "westDC2": stock(entry(sxm, 1, 2))}})
		defer ts.Close()
		offers, dropped, err := autodl.New(autodl.Config{BaseURL: ts.URL, Token: "tok", Regions: []string{"beijingDC1", "beijingDC2", "westDC2"},
			GPUCounts: []int{1}, PriceList: priceList(), Now: clock}).Offers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		diff(t, rows(offers), []string{
			"autodl:beijingDC1:A100-PCIE-40GB:1x:on-demand | sku=A100-PCIE-40GB A100-40GB x1 | beijingDC1 | on-demand | 4.98 CNY | raw 4.98/gpu-hour | units 1",
			"autodl:westDC2:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | westDC2 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units 1",
		})
		if got := dropRows(dropped); len(got) != 1 || !strings.HasPrefix(got[0], "autodl:beijingDC2: autodl gpu_stock beijingDC2: HTTP 500 (unavailable)") {
			t.Errorf("dropped %q", got)
		}
	})

	t.Run("200 with text/html", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>login</html>"))
		}))
		defer ts.Close()
		_, _, err := autodl.New(autodl.Config{BaseURL: ts.URL, Regions: []string{"beijingDC1"}, PriceList: priceList()}).Offers(context.Background())
		if pricing.Classify(err) != pricing.ClassBadResponse || !strings.Contains(err.Error(), `content type "text/html"`) {
			t.Errorf("err %v", err)
		}
	})
}

// hangTransport never answers calls for the regions in hang and ignores the
// request's context, until release is closed.
type hangTransport struct {
	hang    map[string]bool
	release chan struct{}
}

func (h hangTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	var req autodl.StockRequest
	_ = json.Unmarshal(b, &req)
	if h.hang[req.RegionSign] {
		<-h.release
		return nil, errors.New("released")
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(strings.NewReader(string(b)))
	return http.DefaultTransport.RoundTrip(r2)
}

// TestDeadlineKeepsFinishedRegions: a region that hangs past the deadline is
// named in the error; Offers returns right after the deadline with the other
// regions' offers, whether the hung call honours its context or not.
func TestDeadlineKeepsFinishedRegions(t *testing.T) {
	const deadline = 300 * time.Millisecond
	bodies := map[string]string{
		"beijingDC1":  stock(entry(sxm, 2, 8)),
		"beijingDC2":  stock(entry(pcie, 1, 8)),
		"yangzhouDC1": stock(),
		"westDC2":     stock(entry(sxm, 8, 8)),
	}
	want := []string{
		"autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | beijingDC1 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units 2",
		"autodl:beijingDC1:A100-SXM4-80GB:2x:on-demand | sku=A100-SXM4-80GB A100-80GB x2 | beijingDC1 | on-demand | 13.36 CNY | raw 6.68/gpu-hour | units 1",
		"autodl:beijingDC2:A100-PCIE-40GB:1x:on-demand | sku=A100-PCIE-40GB A100-40GB x1 | beijingDC2 | on-demand | 4.98 CNY | raw 4.98/gpu-hour | units 1",
	}
	for _, inServer := range []bool{true, false} {
		t.Run(fmt.Sprintf("in server %v", inServer), func(t *testing.T) {
			s := &stockServer{t: t, token: "tok", bodies: bodies}
			if inServer {
				s.hang = map[string]bool{"westDC2": true}
			}
			ts := httptest.NewServer(s)
			defer ts.Close()
			release := make(chan struct{})
			defer close(release)
			cfg := autodl.Config{BaseURL: ts.URL, Token: "tok", PriceList: priceList(), Now: clock}
			if !inServer {
				cfg.HTTPClient = &http.Client{Transport: hangTransport{hang: map[string]bool{"westDC2": true}, release: release}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			offers, dropped, err := autodl.New(cfg).Offers(ctx)
			if took := time.Since(start); took > deadline+time.Second {
				t.Errorf("Offers took %s", took)
			}
			const wantErr = "autodl: 1 of 4 regions unfinished at deadline: westDC2: context deadline exceeded"
			if err == nil || err.Error() != wantErr || !errors.Is(err, context.DeadlineExceeded) || pricing.Classify(err) != pricing.ClassTimeout {
				t.Errorf("err %v, want %s (timeout)", err, wantErr)
			}
			diff(t, rows(offers), want)
			if len(dropped) != 0 {
				t.Errorf("dropped %+v", dropped)
			}
		})
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	s := &stockServer{t: t, token: "tok"}
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	offers, dropped, err := autodl.New(autodl.Config{BaseURL: ts.URL, Token: "tok", PriceList: priceList()}).Offers(ctx)
	want := "autodl: 4 of 4 regions unfinished at deadline: beijingDC1, beijingDC2, yangzhouDC1, westDC2: context canceled"
	if err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want %s", err, want)
	}
	if len(offers) != 0 || len(dropped) != 0 {
		t.Errorf("offers %v dropped %v", offers, dropped)
	}
}

// TestNoPriceList: without prices (or a date) Offers fails before any call.
func TestNoPriceList(t *testing.T) {
	for _, pl := range []autodl.PriceList{
		{},
		{Prices: priceList().Prices},
	} {
		s := &stockServer{t: t, token: ""}
		ts := httptest.NewServer(s)
		_, _, err := autodl.New(autodl.Config{BaseURL: ts.URL, PriceList: pl}).Offers(context.Background())
		ts.Close()
		if err == nil || !strings.HasPrefix(err.Error(), "autodl: ") || len(s.called()) != 0 {
			t.Errorf("err %v, calls %v", err, s.called())
		}
	}
}

// TestNoFloat: no non-test file of the package touches float64.
func TestNoFloat(t *testing.T) { moneytest.NoFloat(t) }

// TestRecordingsAreRealShape: every recording is the documented envelope.
func TestRecordingsAreRealShape(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/replay/autodl/gpu_stock.*.json")
	if len(files) != 4 {
		t.Fatalf("recordings %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Code string                                  `json:"code"`
			Msg  *string                                 `json:"msg"`
			Data []map[string]map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil || env.Code != "Success" || env.Msg == nil || env.Data == nil {
			t.Errorf("%s: %v %+v", f, err, env)
		}
		for _, el := range env.Data {
			if len(el) != 1 {
				t.Errorf("%s: element with %d keys", f, len(el))
			}
			for name, s := range el {
				for _, k := range []string{"idle_gpu_num", "total_gpu_num"} {
					if _, ok := s[k]; !ok {
						t.Errorf("%s: %s lacks %s", f, name, k)
					}
				}
			}
		}
	}
}
