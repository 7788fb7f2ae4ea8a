package runpod

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/brokers/internal/brokertest"
)

const dec = brokertest.Decision

func newAdapter(t *testing.T) (*Adapter, *fake.Server) {
	t.Helper()
	srv, url := brokertest.Fake(t, "runpod")
	return New(Config{URL: url + "/graphql", APIKey: "rp-key"}), srv
}

var usd = brokertest.USD

func spot8(perUnit string, units int) sluice.Line {
	b := usd(perUnit)
	return sluice.Line{OfferID: "runpod:NVIDIA A100-SXM4-80GB:secure:8x:spot", Provider: "runpod", SKU: "NVIDIA A100-SXM4-80GB", Region: "global",
		Market: sluice.Spot, Units: units, GPUs: 8 * units, Slots: units, UnitPrice: b, Bid: &b}
}

// A multi-GPU spot offer: the whole-unit price 5.52 (8 GPUs) is sent as
// bidPerGpu 0.690; the pod's costPerHr (per pod) is read back.
func TestMultiGPUSpotBidPerGPU(t *testing.T) {
	a, srv := newAdapter(t)
	p, err := a.Place(context.Background(), dec, 0, spot8("5.52", 1), bid.Limits{MinBid: usd("5.52"), OnDemand: usd("15.12")})
	if err != nil {
		t.Fatal(err)
	}
	pods := srv.Instances("runpod")
	if len(pods) != 1 || pods[0].Bid != "0.690" || pods[0].GPUs != 8 || pods[0].Market != "spot" || pods[0].Name != "sluice-"+dec+"-l0-u0" ||
		pods[0].Tags["cloudType"] != "SECURE" {
		t.Fatalf("fake pods: %+v", pods)
	}
	if p.BidSent != "0.690" || p.BidUnit != sluice.BidPerGPU || p.BidDecided.String() != "0.69 USD" || p.Price.String() != "5.52 USD" {
		t.Fatalf("placement: %+v", p)
	}
	// Placing again finds the pod by name and buys nothing.
	if p2, err := a.Place(context.Background(), dec, 0, spot8("5.52", 1), bid.Limits{}); err != nil || p2.ExternalIDs[0] != p.ExternalIDs[0] || len(srv.Instances("runpod")) != 1 {
		t.Fatalf("repeat: %+v %v", p2, err)
	}
	list, err := a.Instances(context.Background())
	if err != nil || len(list) != 1 || list[0].DecisionID != dec || list[0].Line != 0 || list[0].Price.String() != "5.52 USD" {
		t.Fatalf("instances: %+v %v", list, err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed || srv.Running("runpod") != 0 {
		t.Fatalf("release: %+v %v", res, err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed {
		t.Fatalf("release of a gone pod: %+v %v", res, err)
	}
}

// RunPod removing its spot path: a GraphQL error is capability-unavailable.
func TestSpotPathGraphQLErrorIsCapabilityUnavailable(t *testing.T) {
	a, srv := newAdapter(t)
	srv.Fail(fake.Fault{Provider: "runpod", Kind: fake.Unavailable, Op: "podRentInterruptable"})
	_, err := a.Place(context.Background(), dec, 0, spot8("5.52", 1), bid.Limits{})
	var ge *GraphQLError
	if !errors.Is(err, sluice.ErrCapabilityUnavailable) || !errors.As(err, &ge) {
		t.Fatalf("err = %v", err)
	}
	// The on-demand path still works.
	od := sluice.Line{OfferID: "runpod:NVIDIA A100-SXM4-80GB:community:2x:on-demand", Provider: "runpod", Region: "global",
		Market: sluice.OnDemand, Units: 1, GPUs: 2, Slots: 1, UnitPrice: usd("3.78")}
	p, err := a.Place(context.Background(), dec, 1, od, bid.Limits{})
	if err != nil || p.Price.String() != "3.78 USD" || p.BidSent != "" {
		t.Fatalf("on-demand: %+v %v", p, err)
	}
	if pods := srv.Instances("runpod"); pods[0].Tags["cloudType"] != "COMMUNITY" {
		t.Fatalf("cloud type not pinned: %+v", pods[0])
	}
}

func TestFaults(t *testing.T) {
	brokertest.Faults(t, "runpod", newAdapter, spot8("5.52", 1), brokertest.Refusals, nil)
}

// Two units; the first create times out after making its pod. The retry
// adopts that pod and buys only the second.
func TestTimeoutAfterCreateBuysOnlyWhatIsMissing(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.TimeoutAfterCreate(t, a, srv, "runpod", 3, spot8("5.52", 2))
}

func TestPriceMismatchAndTerminateTimeout(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.PriceMismatch(t, a, srv, "runpod", 0, spot8("5.52", 1), "9.99", "9.99 USD")
	p, err := a.Place(context.Background(), dec, 1, spot8("5.52", 1), bid.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	brokertest.TerminateTimeout(t, a, srv, "runpod", p)
}

func TestParseOfferID(t *testing.T) {
	r, err := ParseOfferID("runpod:NVIDIA A100 80GB PCIe:community:4x:spot")
	if err != nil || r.GPUTypeID != "NVIDIA A100 80GB PCIe" || r.Cloud != "COMMUNITY" || r.GPUs != 4 {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"runpod:x:cloudy:1x:spot", "vast:1:bid", "runpod::secure:1x:spot", "runpod:x:secure:0x:spot"} {
		if _, err := ParseOfferID(bad); !errors.Is(err, sluice.ErrQuota) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A capacity refusal on the second unit: the line is all or nothing, so the
// first pod is terminated.
func TestPartialLineRolledBack(t *testing.T) {
	a, srv := newAdapter(t)
	if _, err := a.Place(context.Background(), dec, 0, spot8("5.52", 1), bid.Limits{}); err != nil {
		t.Fatal(err) // u0 of line 0 exists
	}
	srv.Fail(fake.Fault{Provider: "runpod", Kind: fake.Capacity, Times: 1})
	p, err := a.Place(context.Background(), dec, 0, spot8("5.52", 2), bid.Limits{})
	if !errors.Is(err, sluice.ErrInsufficientCapacity) || len(p.ExternalIDs) != 0 || srv.Running("runpod") != 0 {
		t.Fatalf("err = %v, placement %+v, running %d", err, p, srv.Running("runpod"))
	}
}
