package app

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/events"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json")

// decisionAt is the pinned decision clock: 30 s after the alarms fired.
var decisionAt = time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)

func openTest(t *testing.T) *App {
	t.Helper()
	a, err := Open(context.Background(), Options{
		ConfigPath: "../testdata/sluice.yaml", ReplayDir: "../testdata/replay",
		LedgerPath: filepath.Join(t.TempDir(), "ledger.db"),
		Clock:      sluice.ClockFunc(func() time.Time { return decisionAt }), CodeVersion: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func decide(t *testing.T, a *App, event string) sluice.DecisionRecord {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../testdata/events", event))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := events.Parse(raw)
	if err != nil || len(ts) != 1 {
		t.Fatalf("%s: %v", event, err)
	}
	rec, replayed, err := a.Burst.Decide(context.Background(), ts[0])
	if err != nil || replayed {
		t.Fatalf("%s: replayed=%v err=%v", event, replayed, err)
	}
	return rec
}

// golden is the part of a decision that must not change without review:
// what was chosen, at what cost, and why everything else was refused.
type golden struct {
	Status   string             `json:"status"`
	Outcome  string             `json:"outcome"`
	Demand   sluice.Demand      `json:"demand"`
	Lines    []sluice.Line      `json:"lines"`
	Total    sluice.Money       `json:"total_expected_cost"`
	Covered  int                `json:"slots_covered"`
	Short    []sluice.Reason    `json:"short,omitempty"`
	Rejected []sluice.Rejection `json:"rejected"`
}

func checkGolden(t *testing.T, name string, rec sluice.DecisionRecord) {
	t.Helper()
	got, err := json.MarshalIndent(golden{rec.Status, rec.Outcome, rec.Demand, rec.Lines, rec.TotalExpectedCost, rec.SlotsCovered, rec.Short, rec.Rejected}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("../testdata/golden", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./app -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("decision differs from %s (go test ./app -update rewrites it after review):\n%s", path, got)
	}
}

type lineWant struct {
	offer string
	units int
	cost  string // expected cost in the billing currency
}

func checkLines(t *testing.T, rec sluice.DecisionRecord, want []lineWant, total string) {
	t.Helper()
	if len(rec.Lines) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(rec.Lines), len(want), rec.Lines)
	}
	for i, w := range want {
		l := rec.Lines[i]
		if l.OfferID != w.offer || l.Units != w.units || l.ExpectedCostBilling.Amount.String() != w.cost || l.ExpectedCostBilling.Currency != "USD" {
			t.Errorf("line %d = %s × %d = %s, want %s × %d = %s USD", i, l.OfferID, l.Units, l.ExpectedCostBilling, w.offer, w.units, w.cost)
		}
	}
	if rec.TotalExpectedCost.Amount.String() != total || rec.TotalExpectedCost.Currency != "USD" {
		t.Errorf("total = %s, want %s USD", rec.TotalExpectedCost, total)
	}
	if rec.Outcome != sluice.StatusPlaced || len(rec.Placements) != len(rec.Lines) {
		t.Errorf("status %s with %d placements for %d lines", rec.Outcome, len(rec.Placements), len(rec.Lines))
	}
}

func reasonCodes(rec sluice.DecisionRecord) map[string][]string {
	out := map[string][]string{}
	for _, r := range rec.Rejected {
		for _, x := range r.Reasons {
			out[r.OfferID] = append(out[r.OfferID], x.Code)
		}
	}
	return out
}

// Overseas-allowed, checkpointable, emergency tier: 8 slots of 4 GPUs × 4 h.
// RunPod A100 80GB PCIe spot is 1.19 USD/GPU-h: a 4-GPU pod 4.76/h, an 8-GPU pod 9.52/h.
// Expected cost per slot = 4.76 × 4 h + rework 0.05/h × 4 h × (30 min ÷ 2) × 4.76/h
// = 19.04 + 0.238 = 19.278 USD. RunPod's 4 units of 4× give 4 slots (77.112) and
// 2 units of 8× give 4 slots (77.112): 154.224 USD.
// Spot wins: the on-demand twin costs 6.56 × 4 = 26.24 per slot; the cheapest
// Alibaba spot 4× (37.521 CNY/h, cn-hangzhou) is 5.279… USD/h before rework.
func TestGoldenOverseasCheckpointable(t *testing.T) {
	rec := decide(t, openTest(t), "alarm-sns-burst.json")
	checkLines(t, rec, []lineWant{
		{"runpod:NVIDIA A100 80GB PCIe:secure:4x:spot", 4, "77.112"},
		{"runpod:NVIDIA A100 80GB PCIe:secure:8x:spot", 2, "77.112"},
	}, "154.224")
	for _, l := range rec.Lines {
		if l.Market != sluice.Spot || l.Bid == nil || l.Bid.String() != l.UnitPrice.String() {
			t.Errorf("line %s: market %s bid %v", l.OfferID, l.Market, l.Bid)
		}
	}
	codes := reasonCodes(rec)
	// Vast's bid asks cost what their on-demand twins cost (1.33 / 2.67): never chosen.
	if strings.Join(codes["vast:9320001:bid"], ",") != "unit-too-small,spot-not-cheaper" {
		t.Errorf("vast:9320001:bid reasons %v", codes["vast:9320001:bid"])
	}
	checkGolden(t, "train-overseas", rec)
}

// Beijing-only, elastic tier: 4 slots of 4 GPUs × 6 h. Only cn-beijing may be
// chosen. gn7e-c16g1.16xlarge (4× A100) is 138.968 CNY/h: 833.808 CNY per
// slot = 117.3187753264 USD at 7.1072 (10 places); .32xlarge (8×) 277.936 CNY/h
// = 1667.616 CNY per unit of two slots = 234.6375506529 USD. Two 16xlarge
// (Alibaba quotes 2 units per offer) + one 32xlarge: 469.2751013057 USD.
func TestGoldenBeijingOnly(t *testing.T) {
	rec := decide(t, openTest(t), "alarm-sns-beijing.json")
	checkLines(t, rec, []lineWant{
		{"aliyun:cn-beijing:ecs.gn7e-c16g1.16xlarge:on-demand", 2, "234.6375506528"},
		{"aliyun:cn-beijing:ecs.gn7e-c16g1.32xlarge:on-demand", 1, "234.6375506529"},
	}, "469.2751013057")
	for _, l := range rec.Lines {
		if l.Region != "cn-beijing" || l.Zone != sluice.ZoneBeijing || l.ExpectedCost.Currency != "CNY" || l.FX == nil {
			t.Errorf("line %s: region %s zone %s cost %s fx %v", l.OfferID, l.Region, l.Zone, l.ExpectedCost, l.FX)
		}
	}
	zones := map[string]sluice.Zone{}
	for _, v := range rec.Verdicts {
		zones[v.OfferID] = v.Zone
	}
	codes := reasonCodes(rec)
	refused := 0
	for _, o := range rec.Offers {
		if z := zones[o.ID]; z == sluice.ZoneOverseas || z == sluice.ZoneEastChina {
			refused++
			if !contains(codes[o.ID], sluice.ReasonResidency) {
				t.Errorf("%s (%s, %s) not refused for residency: %v", o.ID, o.Region, z, codes[o.ID])
			}
		}
	}
	if refused != 40 { // 12 RunPod + 10 Vast + 18 Alibaba in cn-hangzhou / cn-shanghai
		t.Errorf("%d overseas/east-china offers, want 40", refused)
	}
	checkGolden(t, "train-beijing", rec)
}

// Not checkpointable: 3 slots of 4 GPUs × 3 h, never spot. RunPod A100 80GB
// PCIe on demand is 1.64 USD/GPU-h → 6.56 per 4-GPU pod-hour; 3 × 6.56 × 3 = 59.04 USD.
func TestGoldenNotCheckpointable(t *testing.T) {
	rec := decide(t, openTest(t), "alarm-sns-nockpt.json")
	checkLines(t, rec, []lineWant{{"runpod:NVIDIA A100 80GB PCIe:secure:4x:on-demand", 3, "59.04"}}, "59.04")
	codes := reasonCodes(rec)
	for _, o := range rec.Offers {
		if o.Market == sluice.Spot && !contains(codes[o.ID], sluice.ReasonInterruptibility) {
			t.Errorf("spot offer %s not refused for interruptibility: %v", o.ID, codes[o.ID])
		}
	}
	checkGolden(t, "finetune-nockpt", rec)
}

// A second alarm for the same queue sees the first decision's live slots.
func TestDemandSubtractsLivePlacements(t *testing.T) {
	a := openTest(t)
	first := decide(t, a, "alarm-sns-burst.json") // 8 slots placed
	if first.SlotsCovered != 8 {
		t.Fatalf("first covered %d", first.SlotsCovered)
	}
	second := decide(t, a, "alarm-sns-metrics.json") // depth 12, max 8, live 8
	if second.Demand.Live != 8 || second.Demand.Slots != 0 || second.Status != sluice.StatusNothingToDo || len(second.Lines) != 0 {
		t.Fatalf("second: demand %+v status %s", second.Demand, second.Status)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
