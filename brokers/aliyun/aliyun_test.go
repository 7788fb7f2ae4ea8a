package aliyun

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/brokers/internal/brokertest"
	"github.com/sluicehq/sluice/brokers/placement"
)

const dec = brokertest.Decision

func newAdapter(t *testing.T) (*Adapter, *fake.Server) {
	t.Helper()
	srv, url := brokertest.Fake(t, "aliyun")
	return New(Config{Endpoint: url, AccessKeyID: "LTAIfake", AccessKeySecret: "secret", Regions: []string{"cn-beijing"}}), srv
}

var cny = brokertest.CNY

func spotLine(limit string) sluice.Line {
	b := cny(limit)
	return sluice.Line{OfferID: "aliyun:cn-beijing:cn-beijing-h:ecs.gn7e-c16g1.4xlarge:spot", Provider: "aliyun", SKU: "ecs.gn7e-c16g1.4xlarge",
		Region: "cn-beijing", Market: sluice.Spot, Units: 1, GPUs: 1, Slots: 1, UnitPrice: b, Bid: &b}
}

// A limit with more than 3 decimals is rounded DOWN to 3 (brokers/bid) and
// that text is what ECS receives.
func TestSpotLimitFourDecimalsRoundedDown(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("aliyun", "ecs.gn7e-c16g1.4xlarge", "12.3")
	p, err := a.Place(context.Background(), dec, 0, spotLine("12.3456"), bid.Limits{MinBid: cny("12.3"), OnDemand: cny("34.7")})
	if err != nil {
		t.Fatal(err)
	}
	insts := srv.Instances("aliyun")
	if len(insts) != 1 || insts[0].Bid != "12.345" || insts[0].Market != "spot" || insts[0].Token != dec+"-l0" ||
		insts[0].Tags[placement.TagDecision] != dec || insts[0].Zone != "cn-beijing-h" || insts[0].Region != "cn-beijing" {
		t.Fatalf("fake: %+v", insts)
	}
	if p.BidSent != "12.345" || p.BidDecided.String() != "12.3456 CNY" || p.Price.String() != "12.3 CNY" || p.ExternalIDs[0] != insts[0].ID {
		t.Fatalf("placement: %+v", p)
	}
	// Idempotent on ClientToken.
	p2, err := a.Place(context.Background(), dec, 0, spotLine("12.3456"), bid.Limits{})
	if err != nil || p2.ExternalIDs[0] != p.ExternalIDs[0] || len(srv.Instances("aliyun")) != 1 {
		t.Fatalf("repeat: %+v %v", p2, err)
	}
	f, ok, err := a.Find(context.Background(), dec, 0)
	if err != nil || !ok || f.Market != sluice.Spot || f.ExternalIDs[0] != p.ExternalIDs[0] {
		t.Fatalf("find: %+v %v %v", f, ok, err)
	}
	list, err := a.Instances(context.Background())
	if err != nil || len(list) != 1 || list[0].DecisionID != dec || list[0].State != "Running" {
		t.Fatalf("instances: %+v %v", list, err)
	}
	res, err := a.Release(context.Background(), p)
	if err != nil || !res.Confirmed || srv.Running("aliyun") != 0 {
		t.Fatalf("release: %+v %v", res, err)
	}
	if _, ok, _ := a.Find(context.Background(), dec, 0); ok {
		t.Fatal("deleted instance still found")
	}
}

func TestFaults(t *testing.T) {
	brokertest.Faults(t, "aliyun", newAdapter, spotLine("40"),
		slices.Concat(brokertest.Refusals, []brokertest.Refusal{brokertest.Unavailable}), nil)
}

func TestLimitUnderSpotPriceIsCapacity(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("aliyun", "ecs.gn7e-c16g1.4xlarge", "20")
	if _, err := a.Place(context.Background(), dec, 0, spotLine("19.999"), bid.Limits{}); !errors.Is(err, sluice.ErrInsufficientCapacity) {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeoutAfterCreateAdopted(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.TimeoutAfterCreate(t, a, srv, "aliyun", 1, spotLine("40"))
}

func TestPriceMismatch(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("aliyun", "ecs.gn7e-c16g1.4xlarge", "10")
	brokertest.PriceMismatch(t, a, srv, "aliyun", 0, spotLine("20"), "25", "25 CNY")
}

func TestOnDemandAndTerminateTimeout(t *testing.T) {
	a, srv := newAdapter(t)
	line := sluice.Line{OfferID: "aliyun:cn-beijing:ecs.gn7e-c16g1.32xlarge:on-demand", Provider: "aliyun", SKU: "ecs.gn7e-c16g1.32xlarge",
		Region: "cn-beijing", Market: sluice.OnDemand, Units: 2, GPUs: 16, Slots: 2, UnitPrice: cny("277.93")}
	p, err := a.Place(context.Background(), dec, 4, line, bid.Limits{})
	if err != nil || len(p.ExternalIDs) != 2 || p.BidSent != "" || p.Market != sluice.OnDemand {
		t.Fatalf("on-demand: %+v %v", p, err)
	}
	brokertest.TerminateTimeout(t, a, srv, "aliyun", p)
}

func TestClassify(t *testing.T) {
	for code, want := range map[string]error{
		"OperationDenied.NoStock": sluice.ErrInsufficientCapacity, "Throttling.User": sluice.ErrTransient, "Throttling": sluice.ErrTransient,
		"QuotaExceed.PostPaidInstance": sluice.ErrQuota, "Forbidden.RAM": sluice.ErrQuota, "InvalidSpotPriceLimit.LowerThanPublicPrice": sluice.ErrInsufficientCapacity,
		"InternalError": sluice.ErrTransient, "InvalidSpotStrategy.NotSupported": sluice.ErrCapabilityUnavailable,
	} {
		if got := Classify(code, 400); got != want {
			t.Errorf("%s: %v, want %v", code, got, want)
		}
	}
	if Classify("", 503) != sluice.ErrTransient || Classify("", 403) != sluice.ErrQuota {
		t.Error("status classes")
	}
}
