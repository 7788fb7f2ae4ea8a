package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

const (
	exampleConfig = "../../testdata/sluice.yaml"
	replayDir     = "../../testdata/replay"
)

// quotesJSON is the --json document as a reader sees it: money as decimal strings.
type quotesJSON struct {
	BillingCurrency string `json:"billing_currency"`
	Offers          []struct {
		OfferID  string `json:"offer_id"`
		Provider string `json:"provider"`
		SKU      string `json:"sku"`
		Region   string `json:"region"`
		Zone     string `json:"zone"`
		Market   string `json:"market"`
		GPUs     int    `json:"gpus_per_unit"`
		PerGPU   *struct {
			Amount   json.RawMessage `json:"amount"`
			Currency string          `json:"currency"`
		} `json:"price_per_gpu_hour"`
		PerGPUBilling *struct {
			Amount   json.RawMessage `json:"amount"`
			Currency string          `json:"currency"`
		} `json:"price_per_gpu_hour_billing"`
		AgeMS int64 `json:"age_ms"`
		Units int   `json:"units_available"`
	} `json:"offers"`
	Sources []sluice.SourceReport     `json:"sources"`
	Counts  map[string]map[string]int `json:"counts"`
}

func quotesReplay(t *testing.T, dir string) (int, quotesJSON, string) {
	t.Helper()
	code, out, errOut := sluiceRun(t, "quotes", "--config", exampleConfig, "--replay", dir, "--json")
	var q quotesJSON
	if code != 2 {
		if err := json.Unmarshal([]byte(out), &q); err != nil {
			t.Fatalf("exit %d, --json output is not JSON: %v\n%s\nstderr: %s", code, err, out, errOut)
		}
	}
	return code, q, errOut
}

// TestQuotesReplayCounts: the recorded bodies of testdata/replay (see its
// README) give these offers per provider and residency zone with the example
// config. They change when a recording, a source's parsing or hygiene does.
func TestQuotesReplayCounts(t *testing.T) {
	code, q, errOut := quotesReplay(t, replayDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := map[string]map[string]int{
		"aliyun": {"beijing": 9, "east-china": 18},
		"autodl": {"beijing": 8, "cn-other": 3},
		"aws":    {"overseas": 14},
		"runpod": {"overseas": 12},
		"vast":   {"overseas": 11},
	}
	if !maps.EqualFunc(q.Counts, want, maps.Equal) {
		t.Errorf("counts %v, want %v", q.Counts, want)
	}
	total := 0
	for _, s := range q.Sources {
		total += s.Offers
		if s.Error != "" {
			t.Errorf("source %s: %s", s.Provider, s.Error)
		}
	}
	if len(q.Offers) != 75 || total != 75 {
		t.Errorf("%d offers listed, %d reported by sources; want 75", len(q.Offers), total)
	}
	for _, o := range q.Offers {
		if o.AgeMS != 0 { // the sources stamp offers with the pinned clock
			t.Errorf("%s: age %d ms on a pinned clock", o.OfferID, o.AgeMS)
		}
		if o.Zone == "" || o.Zone == "unmapped" {
			t.Errorf("%s: zone %q", o.OfferID, o.Zone)
		}
	}
}

// TestQuotesReplayPrices checks per-GPU-hour prices exactly, as decimal
// strings. Billing (USD) figures for CNY offers are unit price ÷ (7.1072 ×
// GPUs), rounded once to 10 places half away from zero; with Python:
//
//	>>> from decimal import Decimal as D, ROUND_HALF_UP
//	>>> q = lambda x: x.quantize(D("1e-10"), rounding=ROUND_HALF_UP)
//	>>> q(D("34.742") / D("7.1072"))          # aliyun cn-beijing 4xlarge on-demand, 1 GPU
//	Decimal('4.8882823053')
//	>>> q(D("116.733") / (D("7.1072") * 8))   # aliyun cn-hangzhou-j 32xlarge spot, 8 GPUs
//	Decimal('2.0530764577')
//	>>> q(D("58.367") / (D("7.1072") * 4))    # aliyun cn-hangzhou-j 16xlarge spot, 4 GPUs
//	Decimal('2.0530940455')
//	>>> q(D("53.44") / (D("7.1072") * 8))     # autodl beijingDC1 A100-SXM4-80GB 8x
//	Decimal('0.9398919406')
//	>>> D("21.957642") / 8, D("1.49") / 2, D("2.67") / 2
//	(Decimal('2.74470525'), Decimal('0.745'), Decimal('1.335'))
func TestQuotesReplayPrices(t *testing.T) {
	code, q, errOut := quotesReplay(t, replayDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []struct {
		id, zone, own, ownCur, billing string
		gpus                           int
	}{
		{"aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand", "beijing", "34.742", "CNY", "4.8882823053", 1},
		{"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.32xlarge:spot", "east-china", "14.591625", "CNY", "2.0530764577", 8},
		{"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.16xlarge:spot", "east-china", "14.59175", "CNY", "2.0530940455", 4},
		{"autodl:beijingDC1:A100-SXM4-80GB:8x:on-demand", "beijing", "6.68", "CNY", "0.9398919406", 8},
		{"aws:us-east-1:p4d.24xlarge:on-demand", "overseas", "2.74470525", "USD", "2.74470525", 8},
		{"vast:9310003:ondemand", "overseas", "0.745", "USD", "0.745", 2},
		{"vast:9320002:bid", "overseas", "1.335", "USD", "1.335", 2},
		{"runpod:NVIDIA A100 80GB PCIe:secure:4x:on-demand", "overseas", "1.62", "USD", "1.62", 4},
	}
	byID := map[string]int{}
	for i, o := range q.Offers {
		byID[o.OfferID] = i
	}
	for _, w := range want {
		i, ok := byID[w.id]
		if !ok {
			t.Errorf("%s: not listed", w.id)
			continue
		}
		o := q.Offers[i]
		if o.Zone != w.zone || o.GPUs != w.gpus {
			t.Errorf("%s: zone %s, %d GPUs; want %s, %d", w.id, o.Zone, o.GPUs, w.zone, w.gpus)
		}
		// Amounts are JSON strings holding the exact decimal.
		if o.PerGPU == nil || string(o.PerGPU.Amount) != `"`+w.own+`"` || o.PerGPU.Currency != w.ownCur {
			t.Errorf("%s: price per GPU-hour %+v, want %q %s", w.id, o.PerGPU, w.own, w.ownCur)
		}
		if o.PerGPUBilling == nil || string(o.PerGPUBilling.Amount) != `"`+w.billing+`"` || o.PerGPUBilling.Currency != "USD" {
			t.Errorf("%s: billing price per GPU-hour %+v, want %q USD", w.id, o.PerGPUBilling, w.billing)
		}
	}
}

func TestQuotesTable(t *testing.T) {
	code, out, errOut := sluiceRun(t, "quotes", "--config", exampleConfig, "--replay", replayDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"quotes    75 offers from 5 sources at 2026-11-29T10:05:30Z",
		"fx        1 USD = 7.1072 CNY (as of 2026-11-27",
		"USD/GPU-h",
		"offers  beijing  east-china  cn-other  overseas  total\n",
		"aliyun  9        18          0         0         27\n",
		"autodl  8        0           3         0         11\n",
		"total   17       18          3         37        75\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// One offer line, whitespace-normalised: provider sku region zone market GPUs USD own age units id.
	line := "aliyun ecs.gn7e-c16g1.4xlarge cn-beijing beijing on-demand 1 4.8882823053 34.742 CNY 0s 2 aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand"
	found := false
	for _, l := range strings.Split(out, "\n") {
		found = found || strings.Join(strings.Fields(l), " ") == line
	}
	if !found {
		t.Errorf("no line %q in:\n%s", line, out)
	}
}

// copyProvider copies one provider's recordings into a fresh replay dir.
func copyProvider(t *testing.T, dst, provider string) {
	t.Helper()
	src := filepath.Join(replayDir, provider)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, provider), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, provider, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQuotesOneSourceAnswers: exit 0 as long as one source answered; the
// others are listed with their error.
func TestQuotesOneSourceAnswers(t *testing.T) {
	dir := t.TempDir()
	copyProvider(t, dir, "vast")
	code, q, errOut := quotesReplay(t, dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(q.Counts) != 1 || q.Counts["vast"]["overseas"] != 11 {
		t.Errorf("counts %v, want only vast", q.Counts)
	}
	failed := 0
	for _, s := range q.Sources {
		if s.Provider != "vast" {
			if s.Error == "" || s.ErrorClass == "" {
				t.Errorf("%s: no error reported (%+v)", s.Provider, s)
			}
			failed++
		}
	}
	if failed != len(q.Sources)-1 || failed == 0 {
		t.Errorf("%d failed sources of %d", failed, len(q.Sources))
	}
}

// TestQuotesNoSourceAnswers: exit 1, with the reports still printed.
func TestQuotesNoSourceAnswers(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "vast"), 0o755); err != nil { // a server that answers 404 to everything
		t.Fatal(err)
	}
	code, q, errOut := quotesReplay(t, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	if !strings.Contains(errOut, "no quote source answered") {
		t.Errorf("stderr %q", errOut)
	}
	if len(q.Offers) != 0 || len(q.Sources) == 0 {
		t.Errorf("%d offers, %d sources", len(q.Offers), len(q.Sources))
	}
	for _, s := range q.Sources {
		if s.Error == "" {
			t.Errorf("%s answered", s.Provider)
		}
	}
}

func TestQuotesBadConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("billing_currency: usd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"quotes", "--config", bad},
		{"quotes", "--config", filepath.Join(t.TempDir(), "missing.yaml")},
		{"quotes", "--no-such-flag"},
		{"quotes", "--config", exampleConfig, "extra"},
	} {
		code, out, errOut := sluiceRun(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 with a message", args, code, out, errOut)
		}
	}
	_, _, errOut := sluiceRun(t, "quotes", "--config", bad)
	if !strings.Contains(errOut, "billing_currency") || !strings.Contains(errOut, bad) {
		t.Errorf("stderr %q does not name the file and field", errOut)
	}
}
