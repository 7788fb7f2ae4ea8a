package policy

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
)

func TestExplain(t *testing.T) {
	e := newEvaluator(t)
	beijing := offer("bj", "aliyun", "cn-beijing", "", sluice.OnDemand)
	hangzhouSpot := offer("hz", "aliyun", "cn-hangzhou", "", sluice.Spot)
	p := queue(func(p *sluice.QueueProfile) { p.Workload = "long-lived-inference" })
	x, err := e.Explain(context.Background(), p, []sluice.Offer{beijing, hangzhouSpot}, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	if x.Revision != e.Revision() || x.Profile["workload"] != "long-lived-inference" || x.Profile["data_class"] != "cn-beijing-only" {
		t.Errorf("revision %s, profile %v", x.Revision, x.Profile)
	}
	bj, hz := x.Offers[0], x.Offers[1]
	if !bj.Allow || bj.Zone != sluice.ZoneBeijing || len(bj.Reasons) != 0 || bj.Input["price_per_gpu_hour"] == nil || bj.Input["region"] != "cn-beijing" {
		t.Errorf("beijing on-demand: %+v", bj)
	}
	want := map[string]string{
		"residency.zone_not_allowed":           "Zone not allowed for the data class",
		"interruptibility.never_spot_workload": "Spot for a long-lived inference service",
		"budget_tier.market_not_allowed":       "Market not allowed for the budget tier",
	}
	if hz.Allow || len(hz.Reasons) != len(want) {
		t.Fatalf("hangzhou spot: %+v", hz)
	}
	for _, r := range hz.Reasons {
		if want[r.Rule] != r.Title {
			t.Errorf("%s: title %q, want %q", r.Rule, r.Title, want[r.Rule])
		}
		info, ok := e.Rule(r.Rule)
		if !ok || info.Title != r.Title || info.File == "" || info.Line == 0 || info.Description == "" || info.Code != r.Code {
			t.Errorf("Rule(%s) = %+v, %v", r.Rule, info, ok)
		}
	}
	if len(e.Rules()) != 16 {
		t.Errorf("%d annotated deny rules, want 16", len(e.Rules()))
	}
}
