package autodl

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/fake"
)

const dec = "dec-0123456789abcdef0123456789abcdef"

func newAdapter(t *testing.T) (*Adapter, *fake.Server) {
	t.Helper()
	srv := fake.New()
	srv.Hang = 100 * time.Millisecond
	hs := httptest.NewServer(srv.Handler("autodl"))
	t.Cleanup(hs.Close)
	return New(Config{BaseURL: hs.URL, Token: "jwt-token"}), srv
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
	for _, tc := range []struct {
		kind string
		want error
	}{{fake.Capacity, sluice.ErrInsufficientCapacity}, {fake.Quota, sluice.ErrQuota}, {fake.Throttle, sluice.ErrTransient}} {
		t.Run(tc.kind, func(t *testing.T) {
			a, srv := newAdapter(t)
			srv.Fail(fake.Fault{Provider: "autodl", Kind: tc.kind, Times: 1})
			if _, err := a.Place(context.Background(), dec, 0, line(1, "13.36"), bid.Limits{}); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTimeoutAfterCreateAdopted(t *testing.T) {
	a, srv := newAdapter(t)
	srv.Fail(fake.Fault{Provider: "autodl", Kind: fake.TimeoutAfterCreate, Times: 1})
	if _, err := a.Place(context.Background(), dec, 1, line(1, "13.36"), bid.Limits{}); !errors.Is(err, sluice.ErrTransient) {
		t.Fatalf("err = %v", err)
	}
	f, ok, err := a.Find(context.Background(), dec, 1)
	if err != nil || !ok || len(f.ExternalIDs) != 1 {
		t.Fatalf("find: %+v %v %v", f, ok, err)
	}
	p, err := a.Place(context.Background(), dec, 1, line(1, "13.36"), bid.Limits{})
	if err != nil || p.ExternalIDs[0] != f.ExternalIDs[0] || len(srv.Instances("autodl")) != 1 {
		t.Fatalf("retry: %+v %v", p, err)
	}
}

func TestPriceMismatchAndTerminateTimeout(t *testing.T) {
	a, srv := newAdapter(t)
	srv.Fail(fake.Fault{Provider: "autodl", Kind: fake.Price, Price: "20", Times: 1})
	p, err := a.Place(context.Background(), dec, 0, line(1, "13.36"), bid.Limits{})
	if !errors.Is(err, sluice.ErrPriceMismatch) || p.Price.String() != "20 CNY" || srv.Running("autodl") != 0 {
		t.Fatalf("err = %v %+v", err, p)
	}
	p, err = a.Place(context.Background(), dec, 1, line(1, "13.36"), bid.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Fail(fake.Fault{Provider: "autodl", Kind: fake.TerminateTimeout, Times: 1})
	if _, err := a.Release(context.Background(), p); !errors.Is(err, sluice.ErrTransient) || srv.Running("autodl") != 1 {
		t.Fatalf("release: %v", err)
	}
	if res, err := a.Release(context.Background(), p); err != nil || !res.Confirmed || srv.Running("autodl") != 0 {
		t.Fatalf("retry: %+v %v", res, err)
	}
}
