package vast

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
	srv, url := brokertest.Fake(t, "vast")
	return New(Config{BaseURL: url, APIKey: "vast-key"}), srv
}

var usd = brokertest.USD

func bidLine(ask, price string) sluice.Line {
	b := usd(price)
	return sluice.Line{OfferID: "vast:" + ask + ":bid", Provider: "vast", SKU: ask, Region: "US", Market: sluice.Spot,
		Units: 1, GPUs: 2, Slots: 1, UnitPrice: b, Bid: &b}
}

// An interruptible line always carries its price (per machine-hour); the
// instance is read back as a bid at that price.
func TestInterruptibleCarriesPrice(t *testing.T) {
	a, srv := newAdapter(t)
	p, err := a.Place(context.Background(), dec, 0, bidLine("4242", "1.234567"), bid.Limits{MinBid: usd("1.2")})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Instances("vast")
	if len(got) != 1 || got[0].Bid != "1.234567" || got[0].Market != "spot" || got[0].SKU != "4242" || got[0].Name != "sluice-"+dec+"-l0" {
		t.Fatalf("fake: %+v", got)
	}
	if p.BidSent != "1.234567" || p.BidUnit != sluice.BidPerMachine || p.Price.String() != "1.234567 USD" || p.ExternalIDs[0] != got[0].ID {
		t.Fatalf("placement: %+v", p)
	}
	// Retried: the label is found, nothing is rented again.
	if p2, err := a.Place(context.Background(), dec, 0, bidLine("4242", "1.234567"), bid.Limits{}); err != nil || p2.ExternalIDs[0] != p.ExternalIDs[0] || len(srv.Instances("vast")) != 1 {
		t.Fatalf("repeat: %+v %v", p2, err)
	}
	if err := a.ChangeBid(context.Background(), p.ExternalIDs[0], "1.5"); err != nil {
		t.Fatal(err)
	}
	f, ok, err := a.Find(context.Background(), dec, 0)
	if err != nil || !ok || f.Market != sluice.Spot || f.Price.String() != "1.5 USD" {
		t.Fatalf("find after change bid: %+v %v %v", f, ok, err)
	}
	list, err := a.Instances(context.Background())
	if err != nil || len(list) != 1 || list[0].DecisionID != dec || list[0].Line != 0 {
		t.Fatalf("instances: %+v %v", list, err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed || srv.Running("vast") != 0 {
		t.Fatalf("release: %+v %v", res, err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed {
		t.Fatalf("release of a destroyed instance: %+v %v", res, err)
	}
}

// A spot line without a bid is refused before the call: renting without a
// price would start on-demand.
func TestInterruptibleWithoutPriceRefused(t *testing.T) {
	a, srv := newAdapter(t)
	l := bidLine("4242", "1")
	l.Bid = nil
	if _, err := a.Place(context.Background(), dec, 0, l, bid.Limits{}); err == nil {
		t.Fatal("spot line without a bid placed")
	}
	if len(srv.Instances("vast")) != 0 {
		t.Fatal("reached the provider")
	}
}

func TestOnDemandSendsNoPrice(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("vast", "77", "2.5")
	l := sluice.Line{OfferID: "vast:77:ondemand", Provider: "vast", SKU: "77", Market: sluice.OnDemand, Units: 1, GPUs: 1, Slots: 1, UnitPrice: usd("2.5")}
	p, err := a.Place(context.Background(), dec, 1, l, bid.Limits{})
	if err != nil || p.BidSent != "" || p.Market != sluice.OnDemand || srv.Instances("vast")[0].Bid != "" {
		t.Fatalf("%+v %v %+v", p, err, srv.Instances("vast"))
	}
}

func TestFaultsAndMinBid(t *testing.T) {
	brokertest.Faults(t, "vast", newAdapter, bidLine("1", "1"), brokertest.Refusals, nil)
	a, srv := newAdapter(t)
	srv.SetPrice("vast", "9:min_bid", "1.1")
	if _, err := a.Place(context.Background(), dec, 0, bidLine("9", "1"), bid.Limits{}); !errors.Is(err, sluice.ErrInsufficientCapacity) {
		t.Fatalf("bid under min: %v", err)
	}
}

func TestTimeoutAfterCreateAdopted(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.TimeoutAfterCreate(t, a, srv, "vast", 2, bidLine("5", "1"))
}

func TestPriceMismatchAndTerminateTimeout(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.PriceMismatch(t, a, srv, "vast", 0, bidLine("5", "1"), "3", "3 USD")
	p, err := a.Place(context.Background(), dec, 1, bidLine("6", "1"), bid.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	brokertest.TerminateTimeout(t, a, srv, "vast", p)
}
