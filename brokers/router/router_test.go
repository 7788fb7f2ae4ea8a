package router

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/config"
)

const dec = "dec-0123456789abcdef0123456789abcdef"

type records map[string]sluice.DecisionRecord

func (r records) Decision(_ context.Context, id string) (sluice.DecisionRecord, bool, error) {
	rec, ok := r[id]
	return rec, ok, nil
}

func usd(s string) sluice.Money { return sluice.MustMoney(s, "USD") }

func newRouter(t *testing.T, recs Records) (*Router, *fake.Server) {
	t.Helper()
	srv := fake.New()
	eps := map[string]string{}
	cfg := &config.Config{Providers: map[string]config.Provider{}}
	for _, p := range fake.Providers {
		hs := httptest.NewServer(srv.Handler(p))
		t.Cleanup(hs.Close)
		eps[p] = hs.URL
		if p == "runpod" {
			eps[p] += "/graphql"
		}
		cfg.Providers[p] = config.Provider{Enabled: true, CredentialEnv: "KEY_" + p, SecretEnv: "SECRET_" + p}
	}
	cfg.Providers["aws"] = config.Provider{Enabled: true, Regions: []string{"us-east-1"}} // no credentials: loopback gets dummies
	r, err := FromConfig(context.Background(), cfg, Options{Endpoints: eps, Records: recs,
		Getenv: func(k string) string { return "value-of-" + k }})
	if err != nil {
		t.Fatal(err)
	}
	return r, srv
}

// One line per provider through the sluice.Broker interface: placed,
// found, listed, released.
func TestRoutesAllFive(t *testing.T) {
	r, srv := newRouter(t, nil)
	var b sluice.Broker = r
	if got := r.Providers(); len(got) != 5 {
		t.Fatalf("providers %v", got)
	}
	bid := func(s string) *sluice.Money { m := usd(s); return &m }
	lines := []sluice.Line{
		{OfferID: "aws:us-east-1:us-east-1a:p4d.24xlarge:spot", Provider: "aws", Market: sluice.Spot, Units: 1, GPUs: 8, Slots: 1, UnitPrice: usd("12.5"), Bid: bid("12.5")},
		{OfferID: "aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand", Provider: "aliyun", Market: sluice.OnDemand, Units: 1, GPUs: 1, Slots: 1, UnitPrice: sluice.MustMoney("34.7", "CNY")},
		{OfferID: "runpod:NVIDIA A100-SXM4-80GB:secure:8x:spot", Provider: "runpod", Market: sluice.Spot, Units: 1, GPUs: 8, Slots: 1, UnitPrice: usd("5.52"), Bid: bid("5.52")},
		{OfferID: "vast:4242:bid", Provider: "vast", Market: sluice.Spot, Units: 1, GPUs: 2, Slots: 1, UnitPrice: usd("1.2"), Bid: bid("1.2")},
		{OfferID: "autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand", Provider: "autodl", Market: sluice.OnDemand, Units: 1, GPUs: 1, Slots: 1, UnitPrice: sluice.MustMoney("6.68", "CNY")},
	}
	ctx := context.Background()
	for i, l := range lines {
		p, err := b.Place(ctx, dec, i, l)
		if err != nil || len(p.ExternalIDs) != 1 || p.Provider != l.Provider {
			t.Fatalf("%s: %+v %v", l.Provider, p, err)
		}
		f, ok, err := b.Find(ctx, l.Provider, dec, i)
		if err != nil || !ok || f.ExternalIDs[0] != p.ExternalIDs[0] {
			t.Fatalf("%s find: %+v %v %v", l.Provider, f, ok, err)
		}
		list, err := b.Instances(ctx, l.Provider)
		if err != nil || len(list) != 1 || list[0].DecisionID != dec || list[0].Line != i {
			t.Fatalf("%s instances: %+v %v", l.Provider, list, err)
		}
		if g, _, err := r.Billing(l.Provider); err != nil || g != time.Second {
			t.Fatalf("%s billing: %v %v", l.Provider, g, err)
		}
		if res, err := b.Release(ctx, p); err != nil || !res.Confirmed {
			t.Fatalf("%s release: %+v %v", l.Provider, res, err)
		}
		if n := srv.Running(l.Provider); n != 0 {
			t.Fatalf("%s: %d running after release", l.Provider, n)
		}
	}
	if _, err := b.Place(ctx, dec, 9, sluice.Line{Provider: "lambda"}); !errors.Is(err, sluice.ErrQuota) {
		t.Fatalf("unknown provider: %v", err)
	}
}

// The recorded decision gives the bid limits: a spot bid above the on-demand
// price of the same capacity is refused before any call.
func TestLimitsFromTheRecordedDecision(t *testing.T) {
	offers := []sluice.Offer{
		{ID: "runpod:NVIDIA A100-SXM4-80GB:secure:8x:spot", Provider: "runpod", SKU: "NVIDIA A100-SXM4-80GB", Region: "global", GPUsPerUnit: 8,
			Market: sluice.Spot, UnitPrice: usd("5.52"), MinBid: usd("5.52")},
		{ID: "runpod:NVIDIA A100-SXM4-80GB:secure:8x:on-demand", Provider: "runpod", SKU: "NVIDIA A100-SXM4-80GB", Region: "global", GPUsPerUnit: 8,
			Market: sluice.OnDemand, UnitPrice: usd("5")},
	}
	r, srv := newRouter(t, records{dec: {DecisionID: dec, Offers: offers}})
	b := usd("5.52")
	_, err := r.Place(context.Background(), dec, 0, sluice.Line{OfferID: offers[0].ID, Provider: "runpod", Market: sluice.Spot, Units: 1, GPUs: 8, Slots: 1, UnitPrice: b, Bid: &b})
	if !errors.Is(err, sluice.ErrBidOutOfRange) || len(srv.Instances("runpod")) != 0 {
		t.Fatalf("err = %v, pods %d", err, len(srv.Instances("runpod")))
	}
}

// The same lines placed 5 times concurrently (one process, one router): one
// set of instances at every fake provider.
func TestConcurrentPlacementsBuyOnce(t *testing.T) {
	r, srv := newRouter(t, nil)
	bid := func(s string) *sluice.Money { m := usd(s); return &m }
	lines := []sluice.Line{
		{OfferID: "aws:us-east-1:us-east-1a:p4d.24xlarge:spot", Provider: "aws", Market: sluice.Spot, Units: 2, GPUs: 16, Slots: 2, UnitPrice: usd("12.5"), Bid: bid("12.5")},
		{OfferID: "aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand", Provider: "aliyun", Market: sluice.OnDemand, Units: 2, GPUs: 2, Slots: 2, UnitPrice: sluice.MustMoney("34.7", "CNY")},
		{OfferID: "runpod:NVIDIA A100-SXM4-80GB:secure:8x:spot", Provider: "runpod", Market: sluice.Spot, Units: 2, GPUs: 16, Slots: 2, UnitPrice: usd("5.52"), Bid: bid("5.52")},
		{OfferID: "vast:4242:bid", Provider: "vast", Market: sluice.Spot, Units: 1, GPUs: 2, Slots: 1, UnitPrice: usd("1.2"), Bid: bid("1.2")},
		{OfferID: "autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand", Provider: "autodl", Market: sluice.OnDemand, Units: 2, GPUs: 2, Slots: 2, UnitPrice: sluice.MustMoney("6.68", "CNY")},
	}
	errs := make(chan error, 5*len(lines))
	done := make(chan struct{})
	for range 5 {
		go func() {
			for i, l := range lines {
				_, err := r.Place(context.Background(), dec, i, l)
				errs <- err
			}
			done <- struct{}{}
		}()
	}
	for range 5 {
		<-done
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range lines {
		if n := len(srv.Instances(l.Provider)); n != l.Units {
			t.Errorf("%s: %d instances, want %d", l.Provider, n, l.Units)
		}
	}
}
