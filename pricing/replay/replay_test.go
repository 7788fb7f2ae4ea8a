package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pricing/replay"
)

// files writes name → content under dir.
func files(t *testing.T, dir string, fs map[string]string) {
	t.Helper()
	for name, content := range fs {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func start(t *testing.T, fs map[string]string) *replay.Server {
	t.Helper()
	dir := t.TempDir()
	files(t, dir, fs)
	srv, err := replay.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

type reply struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func newReq(t *testing.T, method, u, body string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

func TestLookupOrder(t *testing.T) {
	srv := start(t, map[string]string{
		"runpod/graphql.GpuTypes.json": `"runpod op"`,
		"runpod/graphql.json":          `"runpod any"`,
		"vast/bundles.bid.json":        `"vast bid"`,
		"vast/bundles.json":            `"vast any"`,
		"aliyun/DescribePrice.cn-beijing.ecs.gn7e-c16g1.4xlarge.json":            `"price gn7e"`,
		"aliyun/DescribePrice.cn-beijing.json":                                   `"price beijing"`,
		"aliyun/DescribePrice.json":                                              `"price any"`,
		"aliyun/DescribeSpotPriceHistory.cn-beijing.ecs.gn7e-c16g1.4xlarge.json": `"spot gn7e"`,
		"autodl/GET_api_v1_dev_gpu_stock.json":                                   `"autodl stock"`,
	})
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name     string
		provider string
		req      func(base string) *http.Request
		key      string
		keys     []string
		body     string
	}{
		{"runpod operationName", "runpod", func(b string) *http.Request {
			return newReq(t, "POST", b+"/graphql", `{"operationName":"GpuTypes","query":"query GpuTypes {…}"}`)
		}, "graphql.GpuTypes", []string{"graphql.GpuTypes", "graphql"}, `"runpod op"`},
		{"runpod other operation falls back", "runpod", func(b string) *http.Request {
			return newReq(t, "POST", b+"/graphql", `{"operationName":"PodRentInterruptable","query":"…"}`)
		}, "graphql", []string{"graphql.PodRentInterruptable", "graphql"}, `"runpod any"`},
		{"runpod no operationName", "runpod", func(b string) *http.Request {
			return newReq(t, "POST", b+"/graphql", `{"query":"{ myself { id } }"}`)
		}, "graphql", []string{"graphql"}, `"runpod any"`},
		{"vast bid", "vast", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v0/bundles/", `{"type":"bid","limit":3}`)
		}, "bundles.bid", []string{"bundles.bid", "bundles"}, `"vast bid"`},
		{"vast ondemand falls back", "vast", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v0/bundles/", `{"type":"ondemand"}`)
		}, "bundles", []string{"bundles.ondemand", "bundles"}, `"vast any"`},
		{"aliyun query, full key", "aliyun", func(b string) *http.Request {
			return newReq(t, "GET", b+"/?Action=DescribePrice&RegionId=cn-beijing&InstanceType=ecs.gn7e-c16g1.4xlarge", "")
		}, "DescribePrice.cn-beijing.ecs.gn7e-c16g1.4xlarge",
			[]string{"DescribePrice.cn-beijing.ecs.gn7e-c16g1.4xlarge", "DescribePrice.cn-beijing", "DescribePrice"}, `"price gn7e"`},
		{"aliyun header action, form body", "aliyun", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", "RegionId=cn-beijing&InstanceType=ecs.gn7e-c16g1.4xlarge",
				"x-acs-action", "DescribeSpotPriceHistory", "Content-Type", form)
		}, "DescribeSpotPriceHistory.cn-beijing.ecs.gn7e-c16g1.4xlarge",
			[]string{"DescribeSpotPriceHistory.cn-beijing.ecs.gn7e-c16g1.4xlarge", "DescribeSpotPriceHistory.cn-beijing", "DescribeSpotPriceHistory"}, `"spot gn7e"`},
		{"aliyun region only", "aliyun", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", "Action=DescribePrice&RegionId=cn-beijing&InstanceType=ecs.gn8v", "Content-Type", form)
		}, "DescribePrice.cn-beijing",
			[]string{"DescribePrice.cn-beijing.ecs.gn8v", "DescribePrice.cn-beijing", "DescribePrice"}, `"price beijing"`},
		{"aliyun action only", "aliyun", func(b string) *http.Request {
			return newReq(t, "GET", b+"/?Action=DescribePrice&RegionId=cn-hangzhou", "")
		}, "DescribePrice", []string{"DescribePrice.cn-hangzhou", "DescribePrice"}, `"price any"`},
		{"other provider: method and path", "autodl", func(b string) *http.Request {
			return newReq(t, "GET", b+"/api/v1/dev/gpu/stock/", "")
		}, "GET_api_v1_dev_gpu_stock", []string{"GET_api_v1_dev_gpu_stock"}, `"autodl stock"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.Requests(tt.provider))
			r := do(t, tt.req(srv.URL(tt.provider)))
			if r.status != 200 || r.body != tt.body || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d %q (%s), want 200 %q", r.status, r.body, r.header.Get("Content-Type"), tt.body)
			}
			reqs := srv.Requests(tt.provider)
			if len(reqs) != before+1 {
				t.Fatalf("log has %d requests, want %d", len(reqs), before+1)
			}
			got := reqs[len(reqs)-1]
			if got.Key != tt.key || !slices.Equal(got.Keys, tt.keys) || got.Status != 200 {
				t.Errorf("logged key %q keys %q status %d; want %q %q", got.Key, got.Keys, got.Status, tt.key, tt.keys)
			}
		})
	}
}

func TestNotFoundListsKeys(t *testing.T) {
	srv := start(t, map[string]string{"vast/bundles.bid.json": `{}`})
	r := do(t, newReq(t, "POST", srv.URL("vast")+"/api/v0/bundles/", `{"type":"reserved"}`))
	if r.status != 404 {
		t.Fatalf("status %d", r.status)
	}
	var body struct {
		Error     string   `json:"error"`
		Provider  string   `json:"provider"`
		Path      string   `json:"path"`
		KeysTried []string `json:"keys_tried"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("404 body %q: %v", r.body, err)
	}
	if body.Provider != "vast" || body.Path != "/api/v0/bundles/" || !slices.Equal(body.KeysTried, []string{"bundles.reserved", "bundles"}) {
		t.Errorf("404 body %+v", body)
	}
	reqs := srv.Requests("vast")
	if len(reqs) != 1 || reqs[0].Key != "" || reqs[0].Status != 404 {
		t.Errorf("log %+v", reqs)
	}
}

func TestSidecar(t *testing.T) {
	srv := start(t, map[string]string{
		"vast/bundles.bid.json":           `{"detail":"API requests too frequent endpoint threshold=4.5"}`,
		"vast/bundles.bid.json.meta.json": `{"status":429,"delay_ms":150,"headers":{"Retry-After":"2","X-Test":"yes"}}`,
		"vast/bundles.json":               `{"offers":[]}`,
		"vast/bundles.json.meta.json":     `{"delay_ms":5000}`,
	})
	t0 := time.Now()
	r := do(t, newReq(t, "POST", srv.URL("vast")+"/api/v0/bundles/", `{"type":"bid"}`))
	if el := time.Since(t0); el < 150*time.Millisecond {
		t.Errorf("answered after %v, want ≥ 150ms delay", el)
	}
	if r.status != 429 || r.header.Get("Retry-After") != "2" || r.header.Get("X-Test") != "yes" || !strings.Contains(r.body, "too frequent") {
		t.Errorf("got %d %v %q", r.status, r.header, r.body)
	}

	// A long delay ends when the client gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := newReq(t, "POST", srv.URL("vast")+"/api/v0/bundles/", `{"type":"ondemand"}`).WithContext(ctx)
	t0 = time.Now()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Error("no error from a cancelled request")
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("cancelled request took %v", el)
	}
	reqs := srv.Requests("vast")
	if len(reqs) != 2 || reqs[1].Key != "bundles" || reqs[1].Status != 200 {
		t.Errorf("log %+v", reqs)
	}
	// Close must not hang on the abandoned handler.
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Error("Close hung: the delayed handler ignored the cancelled context")
	}
}

func TestBadSidecar(t *testing.T) {
	srv := start(t, map[string]string{
		"runpod/graphql.json":           `{}`,
		"runpod/graphql.json.meta.json": `{"status":`,
	})
	r := do(t, newReq(t, "POST", srv.URL("runpod")+"/graphql", `{}`))
	if r.status != 500 || !strings.Contains(r.body, "graphql.json.meta.json") {
		t.Errorf("got %d %q", r.status, r.body)
	}
}

func TestRequestLog(t *testing.T) {
	srv := start(t, map[string]string{"runpod/graphql.json": `{"data":{}}`, "vast/bundles.json": `{"offers":[]}`})
	for range 3 {
		do(t, newReq(t, "POST", srv.URL("runpod")+"/graphql?x=1", `{"query":"q"}`, "Authorization", "Bearer k"))
	}
	reqs := srv.Requests("runpod")
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Method != "POST" || r.Path != "/graphql" || r.Query != "x=1" || string(r.Body) != `{"query":"q"}` ||
			r.Header.Get("Authorization") != "Bearer k" || r.Time.IsZero() || (i > 0 && r.Time.Before(reqs[i-1].Time)) {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	if n := len(srv.Requests("vast")); n != 0 {
		t.Errorf("vast saw %d requests", n)
	}
	if got := srv.Providers(); !slices.Equal(got, []string{"runpod", "vast"}) {
		t.Errorf("Providers() = %v", got)
	}
	if srv.URL("aliyun") != "" {
		t.Errorf("URL(aliyun) = %q, want empty", srv.URL("aliyun"))
	}
	u, err := url.Parse(srv.URL("runpod"))
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Errorf("URL(runpod) = %q, want a 127.0.0.1 address", srv.URL("runpod"))
	}
}

func TestKeysStayInTheDirectory(t *testing.T) {
	req := httptest.NewRequest("GET", "/?Action=../../etc/passwd&RegionId=a/b", nil)
	keys := replay.Keys("aliyun", req, nil)
	want := []string{".._.._etc_passwd.a_b", ".._.._etc_passwd"}
	if !slices.Equal(keys, want) {
		t.Errorf("Keys = %q, want %q", keys, want)
	}
	for _, k := range keys {
		if strings.ContainsAny(k, `/\`) {
			t.Errorf("key %q has a path separator", k)
		}
	}
	req = httptest.NewRequest("POST", "/graphql", nil)
	if got := replay.Keys("runpod", req, []byte(`{"operationName":"a/../b"}`)); !slices.Equal(got, []string{"graphql.a_.._b", "graphql"}) {
		t.Errorf("Keys = %q", got)
	}
	if got := replay.Keys("other", httptest.NewRequest("DELETE", "/", nil), nil); !slices.Equal(got, []string{"DELETE"}) {
		t.Errorf("Keys = %q", got)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := replay.Start(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("no error for a missing dir")
	}
	if _, err := replay.Start(t.TempDir()); err == nil {
		t.Error("no error for a dir without providers")
	}
}

// TestRepositoryRecordings serves the checked-in recordings.
func TestRepositoryRecordings(t *testing.T) {
	srv, err := replay.Start("../../testdata/replay")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, c := range []struct{ provider, path, body, key string }{
		{"runpod", "/graphql", `{"operationName":"GpuTypes","query":"…"}`, "graphql"},
		{"vast", "/api/v0/bundles/", `{"type":"ondemand"}`, "bundles.ondemand"},
		{"vast", "/api/v0/bundles/", `{"type":"bid"}`, "bundles.bid"},
		{"autodl", "/api/v1/dev/machine/region/gpu_stock", `{"region_sign":"beijingDC1","gpu_name_set":["A100-SXM4-80GB"]}`, "gpu_stock.beijingDC1"},
		{"autodl", "/api/v1/dev/machine/region/gpu_stock", `{"region_sign":"beijingDC2","gpu_name_set":["A100-SXM4-80GB"]}`, "gpu_stock.beijingDC2"},
		{"autodl", "/api/v1/dev/machine/region/gpu_stock", `{"region_sign":"yangzhouDC1","gpu_name_set":["A100-SXM4-80GB"]}`, "gpu_stock.yangzhouDC1"},
		{"autodl", "/api/v1/dev/machine/region/gpu_stock", `{"region_sign":"westDC2","gpu_name_set":["A100-SXM4-80GB"]}`, "gpu_stock.westDC2"},
	} {
		r := do(t, newReq(t, "POST", srv.URL(c.provider)+c.path, c.body))
		if r.status != 200 || !json.Valid([]byte(r.body)) {
			t.Errorf("%s %s: %d", c.provider, c.key, r.status)
		}
		reqs := srv.Requests(c.provider)
		if k := reqs[len(reqs)-1].Key; k != c.key {
			t.Errorf("%s: key %q, want %q", c.provider, k, c.key)
		}
	}
	for _, c := range []struct{ provider, body, key, ctype string }{
		{"aws-ec2", "Action=DescribeSpotPriceHistory&Version=2016-11-15", "DescribeSpotPriceHistory.us-east-1", replay.ContentTypeXML},
		{"aws-ec2", "Action=DescribeSpotPriceHistory&Version=2016-11-15", "DescribeSpotPriceHistory.us-west-2", replay.ContentTypeXML},
		{"aws-pricing", `{"Filters":[{"Field":"instanceType","Type":"TERM_MATCH","Value":"p4d.24xlarge"}]}`, "GetProducts.p4d.24xlarge", replay.ContentTypeAmzJSON11},
		{"aws-pricing", `{"Filters":[{"Field":"instanceType","Type":"TERM_MATCH","Value":"p4de.24xlarge"}]}`, "GetProducts.p4de.24xlarge", replay.ContentTypeAmzJSON11},
	} {
		region := strings.TrimPrefix(c.key, "DescribeSpotPriceHistory.")
		r := do(t, newReq(t, "POST", srv.URL(c.provider)+"/", c.body,
			"Authorization", fmt.Sprintf(sigV4, region), "X-Amz-Target", "AWSPriceListService.GetProducts"))
		if r.status != 200 || r.header.Get("Content-Type") != c.ctype {
			t.Errorf("%s %s: %d %s", c.provider, c.key, r.status, r.header.Get("Content-Type"))
		}
		if c.ctype == replay.ContentTypeAmzJSON11 && !json.Valid([]byte(r.body)) {
			t.Errorf("%s: not JSON", c.key)
		}
		reqs := srv.Requests(c.provider)
		if k := reqs[len(reqs)-1].Key; k != c.key {
			t.Errorf("%s: key %q, want %q", c.provider, k, c.key)
		}
	}
}

const sigV4 = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/%s/ec2/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=abc"

// TestAWSKeys: aws-ec2 keys by form Action and the SigV4 scope's region and is
// served from .xml as text/xml; aws-pricing keys by X-Amz-Target and the
// instanceType filter and is served as application/x-amz-json-1.1.
func TestAWSKeys(t *testing.T) {
	srv := start(t, map[string]string{
		"aws-ec2/DescribeSpotPriceHistory.us-east-1.xml": `<DescribeSpotPriceHistoryResponse>east</DescribeSpotPriceHistoryResponse>`,
		"aws-ec2/DescribeSpotPriceHistory.xml":           `<DescribeSpotPriceHistoryResponse>any</DescribeSpotPriceHistoryResponse>`,
		"aws-ec2/DescribeRegions.json":                   `"json beats xml"`,
		"aws-ec2/DescribeRegions.xml":                    `<never/>`,
		"aws-pricing/GetProducts.p4d.24xlarge.json":      `{"PriceList":["p4d"]}`,
		"aws-pricing/GetProducts.json":                   `{"PriceList":[]}`,
		"aws-pricing/DescribeServices.json":              `{"Services":[]}`,
	})
	form := "application/x-www-form-urlencoded; charset=utf-8"
	spotBody := "Action=DescribeSpotPriceHistory&InstanceType.1=p4d.24xlarge&ProductDescription.1=Linux%2FUNIX&Version=2016-11-15"
	amz := "application/x-amz-json-1.1"
	getProducts := func(filters string) string {
		return `{"Filters":[` + filters + `],"FormatVersion":"aws_v1","MaxResults":100,"ServiceCode":"AmazonEC2"}`
	}
	tests := []struct {
		name, provider string
		req            func(base string) *http.Request
		key            string
		keys           []string
		body, ctype    string
	}{
		{"ec2 region from SigV4 scope", "aws-ec2", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", spotBody, "Content-Type", form, "Authorization", fmt.Sprintf(sigV4, "us-east-1"))
		}, "DescribeSpotPriceHistory.us-east-1", []string{"DescribeSpotPriceHistory.us-east-1", "DescribeSpotPriceHistory"},
			`<DescribeSpotPriceHistoryResponse>east</DescribeSpotPriceHistoryResponse>`, "text/xml;charset=UTF-8"},
		{"ec2 other region falls back", "aws-ec2", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", spotBody, "Content-Type", form, "Authorization", fmt.Sprintf(sigV4, "eu-west-1"))
		}, "DescribeSpotPriceHistory", []string{"DescribeSpotPriceHistory.eu-west-1", "DescribeSpotPriceHistory"},
			`<DescribeSpotPriceHistoryResponse>any</DescribeSpotPriceHistoryResponse>`, "text/xml;charset=UTF-8"},
		{"ec2 unsigned", "aws-ec2", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", spotBody, "Content-Type", form)
		}, "DescribeSpotPriceHistory", []string{"DescribeSpotPriceHistory"},
			`<DescribeSpotPriceHistoryResponse>any</DescribeSpotPriceHistoryResponse>`, "text/xml;charset=UTF-8"},
		{"ec2 .json tried before .xml", "aws-ec2", func(b string) *http.Request {
			return newReq(t, "GET", b+"/?Action=DescribeRegions&Version=2016-11-15", "", "Authorization", fmt.Sprintf(sigV4, "us-east-1"))
		}, "DescribeRegions", []string{"DescribeRegions.us-east-1", "DescribeRegions"}, `"json beats xml"`, "application/json"},
		{"pricing instanceType filter", "aws-pricing", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", getProducts(`{"Field":"instanceType","Type":"TERM_MATCH","Value":"p4d.24xlarge"},{"Field":"regionCode","Type":"TERM_MATCH","Value":"us-west-2"}`),
				"Content-Type", amz, "X-Amz-Target", "AWSPriceListService.GetProducts")
		}, "GetProducts.p4d.24xlarge", []string{"GetProducts.p4d.24xlarge", "GetProducts"}, `{"PriceList":["p4d"]}`, amz},
		{"pricing other type falls back", "aws-pricing", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", getProducts(`{"Field":"regionCode","Type":"TERM_MATCH","Value":"us-east-1"},{"Field":"InstanceType","Type":"TERM_MATCH","Value":"p5.48xlarge"}`),
				"Content-Type", amz, "X-Amz-Target", "AWSPriceListService.GetProducts")
		}, "GetProducts", []string{"GetProducts.p5.48xlarge", "GetProducts"}, `{"PriceList":[]}`, amz},
		{"pricing no instanceType filter", "aws-pricing", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", getProducts(``), "Content-Type", amz, "X-Amz-Target", "AWSPriceListService.GetProducts")
		}, "GetProducts", []string{"GetProducts"}, `{"PriceList":[]}`, amz},
		{"pricing other operation", "aws-pricing", func(b string) *http.Request {
			return newReq(t, "POST", b+"/", `{"ServiceCode":"AmazonEC2"}`, "Content-Type", amz, "X-Amz-Target", "AWSPriceListService.DescribeServices")
		}, "DescribeServices", []string{"DescribeServices"}, `{"Services":[]}`, amz},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.Requests(tt.provider))
			r := do(t, tt.req(srv.URL(tt.provider)))
			if r.status != 200 || r.body != tt.body || r.header.Get("Content-Type") != tt.ctype {
				t.Errorf("got %d %q (%s), want 200 %q (%s)", r.status, r.body, r.header.Get("Content-Type"), tt.body, tt.ctype)
			}
			reqs := srv.Requests(tt.provider)
			if len(reqs) != before+1 {
				t.Fatalf("log has %d requests, want %d", len(reqs), before+1)
			}
			got := reqs[len(reqs)-1]
			if got.Key != tt.key || !slices.Equal(got.Keys, tt.keys) || got.Status != 200 {
				t.Errorf("logged key %q keys %q status %d; want %q %q", got.Key, got.Keys, got.Status, tt.key, tt.keys)
			}
		})
	}

	// Without an Action or X-Amz-Target the generic method_path key is used.
	if got := replay.Keys("aws-ec2", httptest.NewRequest("GET", "/", nil), nil); !slices.Equal(got, []string{"GET"}) {
		t.Errorf("Keys = %q", got)
	}
	if got := replay.Keys("aws-pricing", httptest.NewRequest("POST", "/x", nil), []byte(`{}`)); !slices.Equal(got, []string{"POST_x"}) {
		t.Errorf("Keys = %q", got)
	}
	// Key parts from the request are cleaned.
	req := httptest.NewRequest("POST", "/", strings.NewReader(""))
	req.Header.Set("Authorization", fmt.Sprintf(sigV4, "us east<1>"))
	if got := replay.Keys("aws-ec2", req, []byte("Action=A/B")); !slices.Equal(got, []string{"A_B.us_east_1_", "A_B"}) {
		t.Errorf("Keys = %q", got)
	}
	// A scope with a path in it is not a credential scope: no region key.
	req.Header.Set("Authorization", fmt.Sprintf(sigV4, "../etc"))
	if got := replay.Keys("aws-ec2", req, []byte("Action=A")); !slices.Equal(got, []string{"A"}) {
		t.Errorf("Keys = %q", got)
	}
	req = httptest.NewRequest("POST", "/", nil)
	req.Header.Set("X-Amz-Target", "AWSPriceListService.Get/Products")
	if got := replay.Keys("aws-pricing", req, []byte(`{"Filters":[{"Field":"instanceType","Value":"../x"}]}`)); !slices.Equal(got, []string{"Get_Products..._x", "Get_Products"}) {
		t.Errorf("Keys = %q", got)
	}
}

// TestXMLSidecar: an .xml recording's sidecar is <key>.xml.meta.json (an EC2
// error answer with its status), and its headers may override Content-Type.
func TestXMLSidecar(t *testing.T) {
	srv := start(t, map[string]string{
		"aws-ec2/DescribeSpotPriceHistory.us-west-2.xml":           `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>r</RequestID></Response>`,
		"aws-ec2/DescribeSpotPriceHistory.us-west-2.xml.meta.json": `{"status":503}`,
		"aws-pricing/GetProducts.json":                             `{"PriceList":[]}`,
		"aws-pricing/GetProducts.json.meta.json":                   `{"headers":{"Content-Type":"application/json"}}`,
	})
	r := do(t, newReq(t, "POST", srv.URL("aws-ec2")+"/", "Action=DescribeSpotPriceHistory",
		"Content-Type", "application/x-www-form-urlencoded", "Authorization", fmt.Sprintf(sigV4, "us-west-2")))
	if r.status != 503 || !strings.Contains(r.body, "RequestLimitExceeded") || r.header.Get("Content-Type") != "text/xml;charset=UTF-8" {
		t.Errorf("got %d %q (%s)", r.status, r.body, r.header.Get("Content-Type"))
	}
	r = do(t, newReq(t, "POST", srv.URL("aws-pricing")+"/", `{}`, "X-Amz-Target", "AWSPriceListService.GetProducts"))
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d (%s)", r.status, r.header.Get("Content-Type"))
	}
	if got := replay.ContentType("aws-pricing", "GetProducts.xml"); got != replay.ContentTypeXML {
		t.Errorf("ContentType = %q", got)
	}
}

// TestAutoDLKeys: autodl's gpu_stock is keyed by the JSON body's region_sign
// (one loopback server answers every region); other autodl requests keep the
// generic method_path key.
func TestAutoDLKeys(t *testing.T) {
	srv := start(t, map[string]string{
		"autodl/gpu_stock.beijingDC1.json":       `{"code":"Success","msg":"","data":[]}`,
		"autodl/gpu_stock.json":                  `{"code":"Success","msg":"","data":null}`,
		"autodl/POST_api_v1_dev_deployment.json": `{"code":"Success","msg":"","data":{"deployment_uuid":"d"}}`,
	})
	const path = "/api/v1/dev/machine/region/gpu_stock"
	tests := []struct {
		name, method, path, body string
		key                      string
		keys                     []string
		want                     string
	}{
		{"region_sign", "POST", path, `{"region_sign":"beijingDC1","gpu_name_set":["A100-SXM4-80GB"]}`,
			"gpu_stock.beijingDC1", []string{"gpu_stock.beijingDC1", "gpu_stock"}, `{"code":"Success","msg":"","data":[]}`},
		{"other region falls back", "POST", path + "/", `{"gpu_name_set":[],"region_sign":"westDC2"}`,
			"gpu_stock", []string{"gpu_stock.westDC2", "gpu_stock"}, `{"code":"Success","msg":"","data":null}`},
		{"no region_sign", "POST", path, `{"gpu_name_set":["A100-SXM4-80GB"]}`,
			"gpu_stock", []string{"gpu_stock"}, `{"code":"Success","msg":"","data":null}`},
		{"region_sign not a string", "POST", path, `{"region_sign":1}`,
			"gpu_stock", []string{"gpu_stock"}, `{"code":"Success","msg":"","data":null}`},
		{"region_sign cleaned", "POST", path, `{"region_sign":"../beijingDC1"}`,
			"gpu_stock", []string{"gpu_stock..._beijingDC1", "gpu_stock"}, `{"code":"Success","msg":"","data":null}`},
		{"other endpoint: method and path", "POST", "/api/v1/dev/deployment", `{"name":"x"}`,
			"POST_api_v1_dev_deployment", []string{"POST_api_v1_dev_deployment"}, `{"code":"Success","msg":"","data":{"deployment_uuid":"d"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.Requests("autodl"))
			r := do(t, newReq(t, tt.method, srv.URL("autodl")+tt.path, tt.body, "Content-Type", "application/json"))
			if r.status != 200 || r.body != tt.want || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d %q (%s), want 200 %q", r.status, r.body, r.header.Get("Content-Type"), tt.want)
			}
			reqs := srv.Requests("autodl")
			if len(reqs) != before+1 {
				t.Fatalf("log has %d requests, want %d", len(reqs), before+1)
			}
			got := reqs[len(reqs)-1]
			if got.Key != tt.key || !slices.Equal(got.Keys, tt.keys) {
				t.Errorf("logged key %q keys %q; want %q %q", got.Key, got.Keys, tt.key, tt.keys)
			}
		})
	}
	// The rule is for POST only: a GET of the same path keeps the generic key.
	if got := replay.Keys("autodl", httptest.NewRequest("GET", path, nil), nil); !slices.Equal(got, []string{"GET_api_v1_dev_machine_region_gpu_stock"}) {
		t.Errorf("Keys = %q", got)
	}
}
