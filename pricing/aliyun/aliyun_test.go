package aliyun

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

const (
	testKeyID  = "LTAI-test-key"
	testSecret = "test-secret"
)

var testNow = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// fakeECS speaks the ECS RPC API over V3-signed requests. It checks every
// header, recomputes the signature independently, and answers by
// x-acs-action + RegionId + InstanceType; spot pages are chosen by Offset.
type fakeECS struct {
	t *testing.T
	// bodies: "Action|RegionId|InstanceType" → pages; pages[Offset] is served.
	bodies map[string]map[string]string
	// status forces a status for a key (with bodies[key][""] as the body).
	status map[string]int

	mu       sync.Mutex
	calls    []string // "Action|RegionId|InstanceType|Offset"
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func newFakeECS(t *testing.T) *fakeECS {
	return &fakeECS{t: t, bodies: map[string]map[string]string{}, status: map[string]int{}}
}

func (f *fakeECS) add(action, region, instanceType, offset, body string) {
	k := action + "|" + region + "|" + instanceType
	if f.bodies[k] == nil {
		f.bodies[k] = map[string]string{}
	}
	f.bodies[k][offset] = body
}

// loadReplay loads testdata/replay/aliyun/<Action>.<RegionId>.<InstanceType>.json.
func (f *fakeECS) loadReplay() {
	dir := filepath.Join("..", "..", "testdata", "replay", "aliyun")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		f.t.Fatalf("no recordings in %s: %v", dir, err)
	}
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		action, rest, _ := strings.Cut(name, ".")
		region, instanceType, _ := strings.Cut(rest, ".")
		b, err := os.ReadFile(p)
		if err != nil {
			f.t.Fatal(err)
		}
		f.add(action, region, instanceType, "", string(b))
	}
}

var authRE = regexp.MustCompile(`^ACS3-HMAC-SHA256 Credential=([^,]+),SignedHeaders=([a-z0-9;-]+),Signature=([0-9a-f]{64})$`)

func (f *fakeECS) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"RequestId":"FAKE-REQ","HostId":"ecs.aliyuncs.com","Code":%q,"Message":%q,"Recommend":"https://api.aliyun.com/troubleshoot?q=%s"}`, code, msg, code)
}

func (f *fakeECS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond) // let calls overlap so the concurrency bound is observable

	if problem := checkV3(r); problem != "" {
		f.t.Errorf("bad request %s: %s", r.URL, problem)
		f.fail(w, http.StatusBadRequest, "IncompleteSignature", problem)
		return
	}
	q := r.URL.Query()
	action := r.Header.Get("x-acs-action")
	want := map[string]string{}
	switch action {
	case "DescribePrice":
		want = map[string]string{"ResourceType": "instance", "PriceUnit": "Hour"}
	case "DescribeSpotPriceHistory":
		want = map[string]string{"NetworkType": "vpc", "OSType": "linux",
			"StartTime": testNow.Add(-time.Hour).Format("2006-01-02T15:04:05Z")}
	default:
		f.fail(w, http.StatusNotFound, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
		return
	}
	for k, v := range want {
		if q.Get(k) != v {
			f.t.Errorf("%s: %s = %q, want %q", action, k, q.Get(k), v)
		}
	}
	region, instanceType := q.Get("RegionId"), q.Get("InstanceType")
	if region == "" || instanceType == "" {
		f.fail(w, http.StatusBadRequest, "MissingParameter", "RegionId and InstanceType are mandatory.")
		return
	}
	key := action + "|" + region + "|" + instanceType
	offset := q.Get("Offset")
	f.mu.Lock()
	f.calls = append(f.calls, key+"|"+offset)
	f.mu.Unlock()

	pages, ok := f.bodies[key]
	if !ok {
		f.fail(w, http.StatusBadRequest, "InvalidInstanceType.NotSupported", "The specified InstanceType is not supported.")
		return
	}
	body, ok := pages[offset]
	if !ok {
		body = `{"RequestId":"FAKE-EMPTY","Currency":"CNY","SpotPrices":{"SpotPriceType":[]}}`
	}
	w.Header().Set("Content-Type", "application/json")
	if s, ok := f.status[key]; ok {
		w.WriteHeader(s)
	}
	fmt.Fprint(w, body)
}

// checkV3 verifies the V3 headers and recomputes the signature independently of
// sign.go (java.net.URLEncoder-style encoding, then the documented fix-ups).
func checkV3(r *http.Request) string {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return "method " + r.Method
	}
	if v := r.Header.Get("x-acs-version"); v != "2014-05-26" {
		return "x-acs-version " + v
	}
	if d := r.Header.Get("x-acs-date"); d != testNow.Format("2006-01-02T15:04:05Z") {
		return "x-acs-date " + d
	}
	if r.Header.Get("x-acs-signature-nonce") == "" {
		return "no x-acs-signature-nonce"
	}
	empty := sha256.Sum256(nil)
	if h := r.Header.Get("x-acs-content-sha256"); h != hex.EncodeToString(empty[:]) {
		return "x-acs-content-sha256 " + h
	}
	m := authRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "Authorization " + r.Header.Get("Authorization")
	}
	if m[1] != testKeyID {
		return "Credential " + m[1]
	}
	if m[2] != "host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version" {
		return "SignedHeaders " + m[2]
	}
	enc := func(s string) string {
		e := url.QueryEscape(s)
		e = strings.ReplaceAll(e, "+", "%20")
		e = strings.ReplaceAll(e, "*", "%2A")
		return strings.ReplaceAll(e, "%7E", "~")
	}
	q := r.URL.Query()
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, enc(k)+"="+enc(v))
		}
	}
	sort.Strings(pairs)
	var hdr strings.Builder
	for _, name := range strings.Split(m[2], ";") {
		v := r.Header.Get(name)
		if name == "host" {
			v = r.Host
		}
		hdr.WriteString(name + ":" + strings.TrimSpace(v) + "\n")
	}
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	cr := r.Method + "\n" + path + "\n" + strings.Join(pairs, "&") + "\n" + hdr.String() + "\n" + m[2] + "\n" + r.Header.Get("x-acs-content-sha256")
	h := sha256.Sum256([]byte(cr))
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte("ACS3-HMAC-SHA256\n" + hex.EncodeToString(h[:])))
	if want := hex.EncodeToString(mac.Sum(nil)); m[3] != want {
		return "Signature " + m[3] + ", recomputed " + want
	}
	return ""
}

func testConfig(endpoint string) Config {
	n := atomic.Int64{}
	return Config{
		Endpoint:        endpoint,
		AccessKeyID:     testKeyID,
		AccessKeySecret: testSecret,
		Now:             func() time.Time { return testNow },
		Nonce:           func() string { return fmt.Sprintf("nonce-%d", n.Add(1)) },
	}
}

type wantOffer struct {
	id, price string
	gpus      int
}

// TestOffersFromRecordings runs the client against the recordings in
// testdata/replay/aliyun and checks every offer exactly.
func TestOffersFromRecordings(t *testing.T) {
	f := newFakeECS(t)
	f.loadReplay()
	srv := httptest.NewServer(f)
	defer srv.Close()

	offers, dropped, err := New(testConfig(srv.URL)).Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 0 {
		t.Errorf("dropped: %+v", dropped)
	}
	want := []wantOffer{
		{"aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand", "34.742", 1},
		{"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.4xlarge:spot", "10.77", 1},
		{"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.4xlarge:spot", "13.202", 1},
		{"aliyun:cn-beijing:ecs.gn7e-c16g1.16xlarge:on-demand", "138.968", 4},
		{"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.16xlarge:spot", "43.08", 4},
		{"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.16xlarge:spot", "52.808", 4},
		{"aliyun:cn-beijing:ecs.gn7e-c16g1.32xlarge:on-demand", "277.936", 8},
		{"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.32xlarge:spot", "86.16", 8},
		{"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.32xlarge:spot", "105.616", 8},
		{"aliyun:cn-hangzhou:ecs.gn7e-c16g1.4xlarge:on-demand", "34.742", 1},
		{"aliyun:cn-hangzhou:cn-hangzhou-i:ecs.gn7e-c16g1.4xlarge:spot", "9.38", 1},
		{"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.4xlarge:spot", "14.592", 1},
		{"aliyun:cn-hangzhou:ecs.gn7e-c16g1.16xlarge:on-demand", "138.968", 4},
		{"aliyun:cn-hangzhou:cn-hangzhou-i:ecs.gn7e-c16g1.16xlarge:spot", "37.521", 4},
		{"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.16xlarge:spot", "58.367", 4},
		{"aliyun:cn-hangzhou:ecs.gn7e-c16g1.32xlarge:on-demand", "277.936", 8},
		{"aliyun:cn-hangzhou:cn-hangzhou-i:ecs.gn7e-c16g1.32xlarge:spot", "75.043", 8},
		{"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.32xlarge:spot", "116.733", 8},
		{"aliyun:cn-shanghai:ecs.gn7e-c16g1.4xlarge:on-demand", "34.742", 1},
		{"aliyun:cn-shanghai:cn-shanghai-l:ecs.gn7e-c16g1.4xlarge:spot", "12.16", 1},
		{"aliyun:cn-shanghai:cn-shanghai-m:ecs.gn7e-c16g1.4xlarge:spot", "10.075", 1},
		{"aliyun:cn-shanghai:ecs.gn7e-c16g1.16xlarge:on-demand", "138.968", 4},
		{"aliyun:cn-shanghai:cn-shanghai-l:ecs.gn7e-c16g1.16xlarge:spot", "48.639", 4},
		{"aliyun:cn-shanghai:cn-shanghai-m:ecs.gn7e-c16g1.16xlarge:spot", "40.301", 4},
		{"aliyun:cn-shanghai:ecs.gn7e-c16g1.32xlarge:on-demand", "277.936", 8},
		{"aliyun:cn-shanghai:cn-shanghai-l:ecs.gn7e-c16g1.32xlarge:spot", "97.278", 8},
		{"aliyun:cn-shanghai:cn-shanghai-m:ecs.gn7e-c16g1.32xlarge:spot", "80.601", 8},
	}
	if len(offers) != len(want) {
		t.Fatalf("%d offers, want %d: %v", len(offers), len(want), ids(offers))
	}
	twins := map[sluice.CapacityKey]bool{}
	for i, w := range want {
		o := offers[i]
		region := strings.Split(w.id, ":")[1]
		spot := strings.HasSuffix(w.id, ":spot")
		sku := strings.Split(w.id, ":")[2]
		if spot {
			sku = strings.Split(w.id, ":")[3]
		}
		if o.ID != w.id || o.UnitPrice.String() != w.price+" CNY" || o.RawPrice != w.price ||
			o.GPUsPerUnit != w.gpus || o.Region != region || o.SKU != sku || o.Provider != "aliyun" ||
			o.GPUModel != "A100-80GB" || o.Basis != sluice.PerInstanceHour || o.UnitsAvailable != 2 ||
			!o.FetchedAt.Equal(testNow) || !o.ExpiresAt.Equal(testNow.Add(5*time.Minute)) {
			t.Errorf("offer %d = %+v\nwant %+v", i, o, w)
		}
		if spot {
			if o.Market != sluice.Spot || o.MinBid.Cmp(o.UnitPrice) != 0 || o.MinBid.Currency != "CNY" || !strings.HasPrefix(o.Source, "aliyun ecs DescribeSpotPriceHistory "+region+" zone ") {
				t.Errorf("spot offer %s: market %s, MinBid %s, Source %q", o.ID, o.Market, o.MinBid, o.Source)
			}
			if !twins[o.Capacity()] {
				t.Errorf("spot offer %s: no on-demand twin with CapacityKey %+v", o.ID, o.Capacity())
			}
		} else {
			if o.Market != sluice.OnDemand || o.MinBid.IsSet() || o.Source != "aliyun ecs DescribePrice "+region {
				t.Errorf("on-demand offer %s: market %s, MinBid %v, Source %q", o.ID, o.Market, o.MinBid, o.Source)
			}
			twins[o.Capacity()] = true
		}
	}
	if got := f.maxSeen.Load(); got > Concurrency {
		t.Errorf("%d calls in flight, bound is %d", got, Concurrency)
	}
	if len(f.calls) != 18 {
		t.Errorf("%d calls, want 18 (3 regions × 3 types × 2 actions): %v", len(f.calls), f.calls)
	}
}

func ids(offers []sluice.Offer) []string {
	var s []string
	for _, o := range offers {
		s = append(s, o.ID+"="+o.UnitPrice.String())
	}
	return s
}

func spotEntry(zone, ts, price string) string {
	return fmt.Sprintf(`{"ZoneId":%q,"InstanceType":"ecs.gn7e-c16g1.4xlarge","IoOptimized":"optimized","NetworkType":"vpc","Timestamp":%q,"SpotPrice":%s,"OriginPrice":34.742}`, zone, ts, price)
}

func spotBody(nextOffset string, entries ...string) string {
	next := ""
	if nextOffset != "" {
		next = `"NextOffset":` + nextOffset + `,`
	}
	return `{"RequestId":"R",` + next + `"Currency":"CNY","SpotPrices":{"SpotPriceType":[` + strings.Join(entries, ",") + `]}}`
}

const odBody = `{"RequestId":"R","PriceInfo":{"Price":{"Currency":"CNY","OriginalPrice":34.742,"DiscountPrice":0,"TradePrice":34.742},"Rules":{"Rule":[]}}}`

func oneTypeConfig(endpoint string) Config {
	cfg := testConfig(endpoint)
	cfg.Regions = []string{"cn-beijing"}
	cfg.InstanceTypes = []string{"ecs.gn7e-c16g1.4xlarge"}
	return cfg
}

// TestSpotPagination: pages are followed by Offset while NextOffset grows and
// the page is non-empty; the latest Timestamp across pages wins per zone.
func TestSpotPagination(t *testing.T) {
	f := newFakeECS(t)
	const it = "ecs.gn7e-c16g1.4xlarge"
	f.add("DescribePrice", "cn-beijing", it, "", odBody)
	f.add("DescribeSpotPriceHistory", "cn-beijing", it, "", spotBody("2",
		spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "12.5"),
		spotEntry("cn-beijing-i", "2026-11-29T23:50:00Z", "13.202")))
	f.add("DescribeSpotPriceHistory", "cn-beijing", it, "2", spotBody("4",
		spotEntry("cn-beijing-h", "2026-11-29T23:40:00Z", "10.770"),
		spotEntry("cn-beijing-i", "2026-11-29T23:20:00Z", "14.000")))
	f.add("DescribeSpotPriceHistory", "cn-beijing", it, "4", spotBody("4")) // empty last page
	srv := httptest.NewServer(f)
	defer srv.Close()

	offers, dropped, err := New(oneTypeConfig(srv.URL)).Offers(context.Background())
	if err != nil || len(dropped) != 0 {
		t.Fatalf("err %v, dropped %+v", err, dropped)
	}
	got := ids(offers)
	want := []string{
		"aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand=34.742 CNY",
		"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.4xlarge:spot=10.77 CNY",  // page 2, later than page 1
		"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.4xlarge:spot=13.202 CNY", // page 1, later than page 2
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("offers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if offers[1].RawPrice != "10.770" {
		t.Errorf("RawPrice = %q, want the wire text 10.770", offers[1].RawPrice)
	}
	var spotCalls []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "DescribeSpotPriceHistory") {
			spotCalls = append(spotCalls, c[strings.LastIndex(c, "|")+1:])
		}
	}
	if strings.Join(spotCalls, ",") != ",2,4" {
		t.Errorf("spot Offsets requested = %q, want \",2,4\"", spotCalls)
	}
}

// TestSpotPaginationStops: a NextOffset that does not grow ends the walk.
func TestSpotPaginationStops(t *testing.T) {
	f := newFakeECS(t)
	const it = "ecs.gn7e-c16g1.4xlarge"
	f.add("DescribePrice", "cn-beijing", it, "", odBody)
	f.add("DescribeSpotPriceHistory", "cn-beijing", it, "", spotBody("0", spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "12.5")))
	srv := httptest.NewServer(f)
	defer srv.Close()
	offers, _, err := New(oneTypeConfig(srv.URL)).Offers(context.Background())
	if err != nil || len(offers) != 2 {
		t.Fatalf("err %v, offers %v", err, ids(offers))
	}
	if len(f.calls) != 2 {
		t.Errorf("calls %v, want one DescribePrice and one DescribeSpotPriceHistory", f.calls)
	}
}

// TestBadEntryDropped: one bad price is dropped with a reason naming field and
// value; the other offers survive.
func TestBadEntryDropped(t *testing.T) {
	f := newFakeECS(t)
	const it = "ecs.gn7e-c16g1.4xlarge"
	f.add("DescribePrice", "cn-beijing", it, "", odBody)
	f.add("DescribeSpotPriceHistory", "cn-beijing", it, "", spotBody("",
		spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "11.0"),
		spotEntry("cn-beijing-h", "2026-11-29T23:40:00Z", `"n/a"`), // latest is bad: no stale fallback
		spotEntry("cn-beijing-i", "2026-11-29T23:40:00Z", "13.202"),
		spotEntry("cn-beijing-j", "yesterday", "9.9"),
		spotEntry("cn-shanghai-l", "2026-11-29T23:40:00Z", "9.9"),
	))
	srv := httptest.NewServer(f)
	defer srv.Close()
	offers, dropped, err := New(oneTypeConfig(srv.URL)).Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(offers); len(got) != 2 || got[1] != "aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.4xlarge:spot=13.202 CNY" {
		t.Errorf("offers %v", got)
	}
	wantReasons := map[string]string{
		"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.4xlarge:spot":                       `SpotPrice "n/a": not a JSON number`,
		"aliyun:cn-beijing:cn-beijing-j:ecs.gn7e-c16g1.4xlarge:spot@yesterday":             `Timestamp "yesterday"`,
		"aliyun:cn-beijing:cn-shanghai-l:ecs.gn7e-c16g1.4xlarge:spot@2026-11-29T23:40:00Z": `ZoneId "cn-shanghai-l": not a zone of region cn-beijing`,
	}
	if len(dropped) != len(wantReasons) {
		t.Fatalf("dropped %+v", dropped)
	}
	for _, d := range dropped {
		w, ok := wantReasons[d.Ref]
		if !ok || d.Provider != "aliyun" || !strings.Contains(d.Reason, w) {
			t.Errorf("dropped %+v, want reason containing %q", d, w)
		}
	}
}

func TestParseDescribePriceBadPrice(t *testing.T) {
	for _, tc := range []struct{ body, reason string }{
		{`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":-1}}}`, `PriceInfo.Price.TradePrice -1: negative`},
		{`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":0}}}`, `PriceInfo.Price.TradePrice 0: not positive`},
		{`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":"34.742"}}}`, `PriceInfo.Price.TradePrice "34.742": not a JSON number`},
		{`{"PriceInfo":{"Price":{"Currency":"CNY"}}}`, `PriceInfo.Price.TradePrice: missing`},
		{`{"PriceInfo":{"Price":{"TradePrice":34.742}}}`, `PriceInfo.Price.Currency (missing)`},
		{`{"PriceInfo":{"Price":{"Currency":"cny","TradePrice":34.742}}}`, `currency "cny": not an ISO 4217 code`},
	} {
		offers, dropped, err := ParseDescribePrice([]byte(tc.body), "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{})
		if err != nil || len(offers) != 0 || len(dropped) != 1 {
			t.Errorf("%s: offers %v dropped %v err %v", tc.body, offers, dropped, err)
			continue
		}
		if d := dropped[0]; d.Ref != "aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand" || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: dropped %+v, want reason containing %q", tc.body, d, tc.reason)
		}
	}
}

func TestParseDescribePriceExact(t *testing.T) {
	offers, dropped, err := ParseDescribePrice([]byte(odBody), "cn-hangzhou", "ecs.gn7-c13g1.13xlarge", testNow, Config{MaxUnits: 3, TTL: time.Minute})
	if err != nil || len(dropped) != 0 || len(offers) != 1 {
		t.Fatalf("offers %v dropped %v err %v", offers, dropped, err)
	}
	o := offers[0]
	want := sluice.Offer{
		ID: "aliyun:cn-hangzhou:ecs.gn7-c13g1.13xlarge:on-demand", Provider: "aliyun", SKU: "ecs.gn7-c13g1.13xlarge",
		GPUModel: "A100-40GB", GPUsPerUnit: 4, Region: "cn-hangzhou", Market: sluice.OnDemand,
		UnitPrice: sluice.MustMoney("34.742", "CNY"), Basis: sluice.PerInstanceHour, RawPrice: "34.742",
		UnitsAvailable: 3, FetchedAt: testNow, ExpiresAt: testNow.Add(time.Minute), Source: "aliyun ecs DescribePrice cn-hangzhou",
	}
	if o.UnitPrice.Cmp(want.UnitPrice) != 0 || o.UnitPrice.Currency != "CNY" {
		t.Errorf("UnitPrice %s", o.UnitPrice)
	}
	o.UnitPrice = want.UnitPrice
	if fmt.Sprintf("%+v", o) != fmt.Sprintf("%+v", want) {
		t.Errorf("offer\n%+v\nwant\n%+v", o, want)
	}
}

func TestUnknownInstanceTypeDropped(t *testing.T) {
	// Parse level.
	_, dropped, err := ParseDescribePrice([]byte(odBody), "cn-beijing", "ecs.g7.large", testNow, Config{})
	if err != nil || len(dropped) != 1 || !strings.Contains(dropped[0].Reason, `InstanceType "ecs.g7.large"`) {
		t.Errorf("dropped %+v err %v", dropped, err)
	}
	// Client level: never called.
	f := newFakeECS(t)
	f.add("DescribePrice", "cn-beijing", "ecs.gn7e-c16g1.4xlarge", "", odBody)
	f.add("DescribeSpotPriceHistory", "cn-beijing", "ecs.gn7e-c16g1.4xlarge", "", spotBody(""))
	srv := httptest.NewServer(f)
	defer srv.Close()
	cfg := oneTypeConfig(srv.URL)
	cfg.InstanceTypes = []string{"ecs.g7.large", "ecs.gn7e-c16g1.4xlarge"}
	offers, dropped, err := New(cfg).Offers(context.Background())
	if err != nil || len(offers) != 1 || len(dropped) != 1 || dropped[0].Ref != "ecs.g7.large" {
		t.Errorf("offers %v dropped %+v err %v", ids(offers), dropped, err)
	}
	for _, c := range f.calls {
		if strings.Contains(c, "ecs.g7.large") {
			t.Errorf("called for an unknown type: %s", c)
		}
	}
}

// TestErrorJSON: the ECS error JSON becomes an error naming provider, action,
// Code and Message — for a failing call (dropped, others survive) and when
// every call fails (Offers fails).
func TestErrorJSON(t *testing.T) {
	f := newFakeECS(t)
	f.loadReplay()
	srv := httptest.NewServer(f)
	defer srv.Close()

	cfg := testConfig(srv.URL)
	cfg.InstanceTypes = []string{"ecs.gn7e-c16g1.4xlarge", "ecs.gn7-c12g1.3xlarge"} // the server has no gn7 recordings
	cfg.Regions = []string{"cn-beijing"}
	offers, dropped, err := New(cfg).Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != 3 {
		t.Errorf("offers %v", ids(offers))
	}
	if len(dropped) != 2 {
		t.Fatalf("dropped %+v", dropped)
	}
	for i, action := range []string{"DescribePrice", "DescribeSpotPriceHistory"} {
		d := dropped[i]
		want := "aliyun " + action + ` cn-beijing ecs.gn7-c12g1.3xlarge: HTTP 400: Code "InvalidInstanceType.NotSupported", Message "The specified InstanceType is not supported." (RequestId FAKE-REQ)`
		if d.Ref != "aliyun:cn-beijing:ecs.gn7-c12g1.3xlarge" || d.Reason != want {
			t.Errorf("dropped %+v\nwant reason %s", d, want)
		}
	}

	cfg.InstanceTypes = []string{"ecs.gn7-c12g1.3xlarge"}
	_, _, err = New(cfg).Offers(context.Background())
	var apiErr *APIError
	if err == nil || !errors.As(err, &apiErr) {
		t.Fatalf("err %v, want an *APIError", err)
	}
	if apiErr.Code != "InvalidInstanceType.NotSupported" || apiErr.HTTPStatus != 400 ||
		!strings.Contains(err.Error(), "aliyun DescribePrice") || !strings.Contains(err.Error(), "The specified InstanceType is not supported.") {
		t.Errorf("err %v", err)
	}
}

func TestParseErrorJSON(t *testing.T) {
	body := []byte(`{"RequestId":"5C2B7A9E-0000","HostId":"ecs.aliyuncs.com","Code":"Throttling","Message":"Request was denied due to request throttling.","Recommend":"https://api.aliyun.com/troubleshoot?q=Throttling"}`)
	for name, parse := range map[string]func([]byte, string, string, time.Time, Config) ([]sluice.Offer, []sluice.DroppedOffer, error){
		"DescribePrice": ParseDescribePrice, "DescribeSpotPriceHistory": ParseSpotPriceHistory,
	} {
		_, _, err := parse(body, "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{})
		want := "aliyun " + name + ` cn-beijing ecs.gn7e-c16g1.4xlarge: Code "Throttling", Message "Request was denied due to request throttling." (RequestId 5C2B7A9E-0000)`
		if err == nil || err.Error() != want {
			t.Errorf("%s: err %v\nwant %s", name, err, want)
		}
		for _, bad := range []string{`not json`, `[]`, `{"RequestId":"x"}`} {
			if _, _, err := parse([]byte(bad), "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{}); err == nil || !strings.HasPrefix(err.Error(), "aliyun "+name+" cn-beijing") {
				t.Errorf("%s %s: err %v", name, bad, err)
			}
		}
	}
}

func TestHTTPErrorWithoutJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gateway timeout", http.StatusGatewayTimeout)
	}))
	defer srv.Close()
	_, _, err := New(oneTypeConfig(srv.URL)).Offers(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 504") || !strings.Contains(err.Error(), "aliyun DescribePrice cn-beijing") {
		t.Errorf("err %v", err)
	}
}

// TestSpotLatestRegardlessOfOrder: the latest Timestamp wins even when the
// wire order is not chronological.
func TestSpotLatestRegardlessOfOrder(t *testing.T) {
	body := spotBody("",
		spotEntry("cn-beijing-h", "2026-11-29T23:45:00Z", "10.77"),
		spotEntry("cn-beijing-h", "2026-11-29T23:05:00Z", "12.507"),
		spotEntry("cn-beijing-h", "2026-11-29T23:25:00Z", "11.812"))
	offers, dropped, err := ParseSpotPriceHistory([]byte(body), "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{})
	if err != nil || len(dropped) != 0 || len(offers) != 1 {
		t.Fatalf("offers %v dropped %v err %v", offers, dropped, err)
	}
	o := offers[0]
	if o.UnitPrice.String() != "10.77 CNY" || o.MinBid.String() != "10.77 CNY" || o.Region != "cn-beijing" ||
		o.ID != "aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.4xlarge:spot" ||
		o.Source != "aliyun ecs DescribeSpotPriceHistory cn-beijing zone cn-beijing-h at 2026-11-29T23:45:00Z" {
		t.Errorf("offer %+v", o)
	}
}

// TestRegionalEndpoint: {region} in Endpoint is replaced per region.
func TestRegionalEndpoint(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.Path+" "+r.URL.Query().Get("RegionId")] = true
		mu.Unlock()
		if problem := checkV3(r); problem != "" {
			t.Errorf("%s: %s", r.URL, problem)
		}
		w.Header().Set("Content-Type", "application/json;charset=utf-8") // as ECS sends it
		if r.Header.Get("x-acs-action") == "DescribePrice" {
			fmt.Fprint(w, odBody)
		} else {
			fmt.Fprint(w, spotBody(""))
		}
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL + "/{region}/")
	cfg.Regions = []string{"cn-beijing", "cn-shanghai"}
	cfg.InstanceTypes = []string{"ecs.gn7e-c16g1.4xlarge"}
	if _, _, err := New(cfg).Offers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !paths["/cn-beijing/ cn-beijing"] || !paths["/cn-shanghai/ cn-shanghai"] || len(paths) != 2 {
		t.Errorf("paths %v", paths)
	}
}

func TestDefaults(t *testing.T) {
	c := New(Config{})
	if c.Name() != "aliyun" || c.cfg.Endpoint != "https://ecs.{region}.aliyuncs.com" || c.cfg.MaxUnits != 2 ||
		c.cfg.TTL != 5*time.Minute || strings.Join(c.cfg.Regions, ",") != "cn-beijing,cn-hangzhou,cn-shanghai" ||
		strings.Join(c.cfg.InstanceTypes, ",") != "ecs.gn7e-c16g1.4xlarge,ecs.gn7e-c16g1.16xlarge,ecs.gn7e-c16g1.32xlarge" {
		t.Errorf("defaults %+v", c.cfg)
	}
	if a, b := c.cfg.Nonce(), c.cfg.Nonce(); a == b || len(a) != 32 {
		t.Errorf("nonces %q %q", a, b)
	}
}

func TestContextCancelled(t *testing.T) {
	f := newFakeECS(t)
	f.loadReplay()
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := New(testConfig(srv.URL)).Offers(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
