package policy_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/policy"
)

// The offers of the replay market (testdata/replay) by residency zone,
// listed by hand from the recordings and policy/data/regions.json.
var (
	replayBeijing = []string{
		// Alibaba cn-beijing (spot in two zones, on-demand)
		"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.16xlarge:spot",
		"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.32xlarge:spot",
		"aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.4xlarge:spot",
		"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.16xlarge:spot",
		"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.32xlarge:spot",
		"aliyun:cn-beijing:cn-beijing-i:ecs.gn7e-c16g1.4xlarge:spot",
		"aliyun:cn-beijing:ecs.gn7e-c16g1.16xlarge:on-demand",
		"aliyun:cn-beijing:ecs.gn7e-c16g1.32xlarge:on-demand",
		"aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand",
		// AutoDL Beijing A and B
		"autodl:beijingDC1:A100-PCIE-40GB:1x:on-demand",
		"autodl:beijingDC1:A100-PCIE-40GB:2x:on-demand",
		"autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand",
		"autodl:beijingDC1:A100-SXM4-80GB:2x:on-demand",
		"autodl:beijingDC1:A100-SXM4-80GB:4x:on-demand",
		"autodl:beijingDC1:A100-SXM4-80GB:8x:on-demand",
		"autodl:beijingDC2:A100-PCIE-40GB:1x:on-demand",
		"autodl:beijingDC2:A100-PCIE-40GB:2x:on-demand",
	}
	replayEastChina = []string{
		// Alibaba cn-hangzhou and cn-shanghai
		"aliyun:cn-hangzhou:cn-hangzhou-i:ecs.gn7e-c16g1.16xlarge:spot",
		"aliyun:cn-hangzhou:cn-hangzhou-i:ecs.gn7e-c16g1.32xlarge:spot",
		"aliyun:cn-hangzhou:cn-hangzhou-i:ecs.gn7e-c16g1.4xlarge:spot",
		"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.16xlarge:spot",
		"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.32xlarge:spot",
		"aliyun:cn-hangzhou:cn-hangzhou-j:ecs.gn7e-c16g1.4xlarge:spot",
		"aliyun:cn-hangzhou:ecs.gn7e-c16g1.16xlarge:on-demand",
		"aliyun:cn-hangzhou:ecs.gn7e-c16g1.32xlarge:on-demand",
		"aliyun:cn-hangzhou:ecs.gn7e-c16g1.4xlarge:on-demand",
		"aliyun:cn-shanghai:cn-shanghai-l:ecs.gn7e-c16g1.16xlarge:spot",
		"aliyun:cn-shanghai:cn-shanghai-l:ecs.gn7e-c16g1.32xlarge:spot",
		"aliyun:cn-shanghai:cn-shanghai-l:ecs.gn7e-c16g1.4xlarge:spot",
		"aliyun:cn-shanghai:cn-shanghai-m:ecs.gn7e-c16g1.16xlarge:spot",
		"aliyun:cn-shanghai:cn-shanghai-m:ecs.gn7e-c16g1.32xlarge:spot",
		"aliyun:cn-shanghai:cn-shanghai-m:ecs.gn7e-c16g1.4xlarge:spot",
		"aliyun:cn-shanghai:ecs.gn7e-c16g1.16xlarge:on-demand",
		"aliyun:cn-shanghai:ecs.gn7e-c16g1.32xlarge:on-demand",
		"aliyun:cn-shanghai:ecs.gn7e-c16g1.4xlarge:on-demand",
	}
	replayCNOther = []string{
		// AutoDL Northwest B (westDC2)
		"autodl:westDC2:A100-SXM4-80GB:1x:on-demand",
		"autodl:westDC2:A100-SXM4-80GB:2x:on-demand",
		"autodl:westDC2:A100-SXM4-80GB:4x:on-demand",
	}
	// Everything else in the recordings is overseas: AWS us-east-1 and
	// us-west-2, RunPod (global), Vast hosts in the US, DE and SI.
	replayOverseasProviders = []string{"aws", "runpod", "vast"}
	replayOffers            = 75
)

// replayMarket collects the offers of testdata/replay as `sluice burst --replay` does.
func replayMarket(t *testing.T) []sluice.Offer {
	t.Helper()
	cfg, err := config.Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := sluice.ClockFunc(func() time.Time { return time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC) })
	offers, _, err := app.Quotes(context.Background(), app.Options{Config: cfg, ReplayDir: "../testdata/replay", Clock: clock, FXURL: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != replayOffers {
		t.Fatalf("replay market has %d offers, the lists below were made for %d", len(offers), replayOffers)
	}
	return offers
}

// One test per residency class: the offers residency allows (no reason with
// code "residency") are exactly the hand-listed set.
func TestResidencyClassesOverReplayMarket(t *testing.T) {
	offers := replayMarket(t)
	var overseas []string
	for _, o := range offers {
		if slices.Contains(replayOverseasProviders, o.Provider) {
			overseas = append(overseas, o.ID)
		}
	}
	domestic := slices.Concat(replayBeijing, replayEastChina, replayCNOther)
	classes := []struct {
		name      string
		dataClass string
		export    bool
		want      []string
	}{
		{"cn-beijing-only", "cn-beijing-only", true, replayBeijing},
		{"cn-domestic", "cn-domestic", true, domestic},
		{"public with export approval", "public", true, slices.Concat(domestic, overseas)},
		{"public without export approval", "public", false, domestic},
	}
	ev, err := policy.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range classes {
		t.Run(c.name, func(t *testing.T) {
			p := sluice.QueueProfile{Queue: "q", GPUModels: config.GPUModels, GPUsPerSlot: 1, MaxSlots: 1,
				Checkpointable: true, CheckpointIntervalMinutes: 30, DataClass: c.dataClass, ExportApproved: c.export,
				Tier: sluice.TierEmergency, Team: "t"}
			vs, err := ev.Evaluate(context.Background(), p, offers, time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				if !slices.ContainsFunc(v.Reasons, func(r sluice.Reason) bool { return r.Code == sluice.ReasonResidency }) {
					got = append(got, v.OfferID)
				}
			}
			want := slices.Clone(c.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				extra, missing := diff(got, want), diff(want, got)
				t.Errorf("allowed by residency: %d offers, want %d\nnot expected: %s\nmissing: %s", len(got), len(want),
					strings.Join(extra, ", "), strings.Join(missing, ", "))
			}
		})
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
