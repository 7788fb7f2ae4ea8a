package autodl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/brokers/internal/brokertest"
)

const dec = brokertest.Decision

func newAdapter(t *testing.T) (*Adapter, *fake.Server) {
	t.Helper()
	srv, url := brokertest.Fake(t, "autodl")
	return New(Config{BaseURL: url, Token: "jwt-token"}), srv
}

func line(units int, unitPrice string) sluice.Line {
	return sluice.Line{OfferID: "autodl:beijingDC1:A100-SXM4-80GB:2x:on-demand", Provider: "autodl", SKU: "A100-SXM4-80GB", Region: "beijingDC1",
		Market: sluice.OnDemand, Units: units, GPUs: 2 * units, Slots: units, UnitPrice: sluice.MustMoney(unitPrice, "CNY")}
}

// price_to is the ceiling in milli-yuan per GPU-hour; the container's actual
// price (milli-yuan per container-hour) is read back.
func TestPlaceCeilingAndReadBack(t *testing.T) {
	a, srv := newAdapter(t)
	p, err := a.Place(context.Background(), dec, 0, line(2, "13.36"), bid.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cs := srv.Instances("autodl")
	if len(cs) != 2 || cs[0].Bid != "6680" || cs[0].GPUs != 2 || cs[0].Region != "beijingDC1" || cs[0].Name != "sluice-"+dec+"-l0" {
		t.Fatalf("fake: %+v", cs)
	}
	if p.BidSent != "6680" || p.BidUnit != sluice.BidPerGPU || p.BidDecided.String() != "6.68 CNY" || p.Price.String() != "13.36 CNY" ||
		len(p.ExternalIDs) != 2 || p.ExternalIDs[0] != cs[0].Group+"/"+cs[0].ID {
		t.Fatalf("placement: %+v", p)
	}
	if p2, err := a.Place(context.Background(), dec, 0, line(2, "13.36"), bid.Limits{}); err != nil || len(p2.ExternalIDs) != 2 || len(srv.Instances("autodl")) != 2 {
		t.Fatalf("repeat: %+v %v", p2, err)
	}
	list, err := a.Instances(context.Background())
	if err != nil || len(list) != 2 || list[0].DecisionID != dec || list[0].Price.String() != "13.36 CNY" {
		t.Fatalf("instances: %+v %v", list, err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed || srv.Running("autodl") != 0 {
		t.Fatalf("release: %+v %v", res, err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed {
		t.Fatalf("release again: %+v %v", res, err)
	}
}

// A list price above the ceiling finds no machine: capacity.
func TestCeilingBelowListPriceIsCapacity(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("autodl", "A100-SXM4-80GB", "7.5")
	if _, err := a.Place(context.Background(), dec, 0, line(1, "13.36"), bid.Limits{}); !errors.Is(err, sluice.ErrInsufficientCapacity) {
		t.Fatalf("err = %v", err)
	}
}

func TestFaults(t *testing.T) {
	brokertest.Faults(t, "autodl", newAdapter, line(1, "13.36"), brokertest.Refusals, nil)
}

func TestTimeoutAfterCreateAdopted(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.TimeoutAfterCreate(t, a, srv, "autodl", 1, line(1, "13.36"))
}

func TestPriceMismatchAndTerminateTimeout(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.PriceMismatch(t, a, srv, "autodl", 0, line(1, "13.36"), "20", "20 CNY")
	p, err := a.Place(context.Background(), dec, 1, line(1, "13.36"), bid.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	brokertest.TerminateTimeout(t, a, srv, "autodl", p)
}

// AutoDL writes times at UTC+8: a container's start time read back is the
// same instant the fake launched it, not eight hours earlier (the fake once
// labelled UTC clock times "+08:00", which billed a 7-second container for
// 8 hours; found by a new-user test).
func TestStartedAtIsTheLaunchInstant(t *testing.T) {
	a, srv := newAdapter(t)
	if _, err := a.Place(context.Background(), dec, 0, line(1, "13.36"), bid.Limits{}); err != nil {
		t.Fatal(err)
	}
	p, ok, err := a.Find(context.Background(), dec, 0)
	launched := srv.Instances("autodl")[0].LaunchedAt
	if err != nil || !ok || !p.PlacedAt.Equal(launched.Truncate(time.Second)) {
		t.Fatalf("find: placed at %s, launched %s (%v %v)", p.PlacedAt, launched, ok, err)
	}
}
