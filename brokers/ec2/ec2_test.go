package ec2

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/brokers/internal/brokertest"
	"github.com/sluicehq/sluice/brokers/placement"
)

const dec = brokertest.Decision

func newAdapter(t *testing.T) (*Adapter, *fake.Server) {
	t.Helper()
	srv, url := brokertest.Fake(t, "aws")
	a, err := New(context.Background(), Config{Endpoint: url, AccessKeyID: "AKIDFAKE", SecretAccessKey: "secret", Regions: []string{"us-east-1"}})
	if err != nil {
		t.Fatal(err)
	}
	return a, srv
}

var usd = brokertest.USD

func spotLine(bidText string) sluice.Line {
	b := usd(bidText)
	return sluice.Line{OfferID: "aws:us-east-1:us-east-1b:p4d.24xlarge:spot", Provider: "aws", SKU: "p4d.24xlarge", Region: "us-east-1",
		Market: sluice.Spot, Units: 1, GPUs: 8, Slots: 1, UnitPrice: b, Bid: &b}
}

func TestPlaceSpot(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("aws", "p4d.24xlarge", "12.1")
	ctx := context.Background()
	p, err := a.Place(ctx, dec, 0, spotLine("12.5"), bid.Limits{MinBid: usd("12.5"), OnDemand: usd("32.7726")})
	if err != nil {
		t.Fatal(err)
	}
	insts := srv.Instances("aws")
	if len(insts) != 1 {
		t.Fatalf("fake holds %d instances, want 1", len(insts))
	}
	i := insts[0]
	if i.Bid != "12.500000" || i.Market != "spot" || i.Token != dec+"-l0" || i.Region != "us-east-1b" ||
		i.Tags[placement.TagDecision] != dec || i.Tags[placement.TagLine] != "0" {
		t.Errorf("instance at the fake: %+v", i)
	}
	if p.BidSent != "12.500000" || p.BidDecided.String() != "12.5 USD" || p.BidUnit != sluice.BidPerInstance ||
		p.Price.String() != "12.1 USD" || p.Market != sluice.Spot || len(p.ExternalIDs) != 1 || p.ExternalIDs[0] != i.ID ||
		p.ClientToken != dec+"-l0" {
		t.Errorf("placement: %+v", p)
	}
	// Same line again: EC2's ClientToken returns the same instance.
	p2, err := a.Place(ctx, dec, 0, spotLine("12.5"), bid.Limits{})
	if err != nil || p2.ExternalIDs[0] != p.ExternalIDs[0] || srv.Running("aws") != 1 {
		t.Fatalf("second place: %+v %v, running %d", p2, err, srv.Running("aws"))
	}
	f, ok, err := a.Find(ctx, dec, 0)
	if err != nil || !ok || f.ExternalIDs[0] != i.ID || f.Market != sluice.Spot {
		t.Fatalf("find: %+v %v %v", f, ok, err)
	}
	if _, ok, err := a.Find(ctx, dec, 1); ok || err != nil {
		t.Fatalf("find of an unplaced line: ok=%v err=%v", ok, err)
	}
	list, err := a.Instances(ctx)
	if err != nil || len(list) != 1 || list[0].DecisionID != dec || list[0].Line != 0 || list[0].State != "running" || list[0].Price.String() != "12.1 USD" {
		t.Fatalf("instances: %+v %v", list, err)
	}
	res, err := a.Release(ctx, p)
	if err != nil || !res.Confirmed || srv.Running("aws") != 0 {
		t.Fatalf("release: %+v %v running %d", res, err, srv.Running("aws"))
	}
	if list, _ := a.Instances(ctx); len(list) != 0 {
		t.Fatalf("terminated instance still listed: %+v", list)
	}
}

func TestBidAtOrUnder0001RefusedBeforeTheCall(t *testing.T) {
	a, srv := newAdapter(t)
	for _, b := range []string{"0.001", "0.0009", "0.0010004"} {
		_, err := a.Place(context.Background(), dec, 0, spotLine(b), bid.Limits{})
		if !errors.Is(err, sluice.ErrBidOutOfRange) {
			t.Errorf("bid %s: err = %v, want ErrBidOutOfRange", b, err)
		}
	}
	if n := len(srv.Instances("aws")); n != 0 {
		t.Fatalf("a refused bid reached the provider: %d instances", n)
	}
}

func TestPlaceFaults(t *testing.T) {
	refusals := slices.Concat(brokertest.Refusals, []brokertest.Refusal{brokertest.Unavailable})
	brokertest.Faults(t, "aws", newAdapter, spotLine("12.5"), refusals, func(t *testing.T, a *Adapter, p sluice.Placement, err error) {
		if placement.ErrorClass(err) == "" || p.BidSent != "12.500000" {
			t.Fatalf("err = %v (placement %+v)", err, p)
		}
		// The fault was for one call: the retry buys.
		if _, err := a.Place(context.Background(), dec, 0, spotLine("12.5"), bid.Limits{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSpotMaxPriceBelowMarketIsCapacity(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("aws", "p4d.24xlarge", "13")
	_, err := a.Place(context.Background(), dec, 0, spotLine("12.5"), bid.Limits{})
	if !errors.Is(err, sluice.ErrInsufficientCapacity) {
		t.Fatalf("err = %v", err)
	}
}

// A provider that creates the instance but times out on the response: the
// retry (Find, then Place) adopts it and buys nothing more.
func TestTimeoutAfterCreateAdopted(t *testing.T) {
	a, srv := newAdapter(t)
	brokertest.TimeoutAfterCreate(t, a, srv, "aws", 2, spotLine("12.5"))
}

// The provider bills another price than asked: the adapter reads it back,
// terminates at once and returns ErrPriceMismatch with the release result.
func TestPriceMismatchReleasedAtOnce(t *testing.T) {
	a, srv := newAdapter(t)
	srv.SetPrice("aws", "p4d.24xlarge", "10")
	// Spot may come cheaper than the bid: no mismatch.
	if p, err := a.Place(context.Background(), dec, 0, spotLine("20"), bid.Limits{}); err != nil || p.Price.String() != "10 USD" {
		t.Fatalf("cheaper spot: %+v %v", p, err)
	}
	brokertest.PriceMismatch(t, a, srv, "aws", 1, spotLine("15"), "19", "19 USD")
}

func TestOnDemandAndRelease(t *testing.T) {
	a, srv := newAdapter(t)
	line := sluice.Line{OfferID: "aws:us-east-1:p4de.24xlarge:on-demand", Provider: "aws", SKU: "p4de.24xlarge", Region: "us-east-1",
		Market: sluice.OnDemand, Units: 2, GPUs: 16, Slots: 2, UnitPrice: usd("40.9657")}
	p, err := a.Place(context.Background(), dec, 1, line, bid.Limits{})
	if err != nil || len(p.ExternalIDs) != 2 || p.BidSent != "" || p.Price.String() != "40.9657 USD" {
		t.Fatalf("on-demand: %+v %v", p, err)
	}
	brokertest.TerminateTimeout(t, a, srv, "aws", p)
}

func TestCapacityBlock(t *testing.T) {
	a, srv := newAdapter(t)
	line := sluice.Line{OfferID: "aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cbo-0123", Provider: "aws", SKU: "p4de.24xlarge",
		Region: "us-east-1", Market: sluice.Reserved, Units: 1, GPUs: 8, Slots: 1, UnitPrice: usd("31.464")}
	p, err := a.Place(context.Background(), dec, 3, line, bid.Limits{})
	if err != nil || len(p.ExternalIDs) != 1 || p.Market != sluice.Reserved {
		t.Fatalf("capacity block: %+v %v", p, err)
	}
	// Again: the block is found by tag, the instance by token; nothing new is bought.
	p2, err := a.Place(context.Background(), dec, 3, line, bid.Limits{})
	if err != nil || p2.ExternalIDs[0] != p.ExternalIDs[0] || len(srv.Instances("aws")) != 1 {
		t.Fatalf("second place: %+v %v", p2, err)
	}
	f, ok, err := a.Find(context.Background(), dec, 3)
	if err != nil || !ok || f.Market != sluice.Reserved {
		t.Fatalf("find: %+v %v %v", f, ok, err)
	}
}

func TestBilling(t *testing.T) {
	a, _ := newAdapter(t)
	g, m := a.Billing()
	if g != time.Second || m != time.Minute {
		t.Fatalf("billing %s %s", g, m)
	}
}

// Reconcile releases an orphan from its Instance alone (no offer id): the
// adapter searches every region, and only a region that has the instance
// terminates it.
func TestReleaseOrphanInAnotherRegion(t *testing.T) {
	srv := fake.New()
	hs := httptest.NewServer(srv.Handler("aws"))
	defer hs.Close()
	a, err := New(context.Background(), Config{Endpoint: hs.URL, AccessKeyID: "AKID", SecretAccessKey: "s", Regions: []string{"us-east-1", "us-west-2"}})
	if err != nil {
		t.Fatal(err)
	}
	line := spotLine("12.5")
	line.OfferID = "aws:us-west-2:us-west-2b:p4d.24xlarge:spot"
	if _, err := a.Place(context.Background(), dec, 0, line, bid.Limits{}); err != nil {
		t.Fatal(err)
	}
	list, err := a.Instances(context.Background())
	if err != nil || len(list) != 1 {
		t.Fatalf("instances: %+v %v", list, err)
	}
	res, err := a.Release(context.Background(), sluice.Placement{Provider: "aws", ExternalIDs: []string{list[0].ExternalID}})
	if err != nil || !res.Confirmed || srv.Running("aws") != 0 {
		t.Fatalf("release: %+v %v, running %d", res, err, srv.Running("aws"))
	}
}
