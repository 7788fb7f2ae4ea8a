package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestPlaceIsIdempotentOnClientToken(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)
	b := &Broker{Now: func() time.Time { return at }}
	bid := sluice.MustMoney("4.76", "USD")
	line := sluice.Line{Provider: "runpod", OfferID: "runpod:x:secure:4x:spot", Market: sluice.Spot, Units: 2, Slots: 2,
		UnitPrice: sluice.MustMoney("4.76", "USD"), Bid: &bid}
	p1, err := b.Place(context.Background(), "dec-1", 0, line)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := b.Place(context.Background(), "dec-1", 0, line)
	p3, _ := b.Place(context.Background(), "dec-1", 1, line)
	if b.Orders() != 2 {
		t.Fatalf("%d orders, want 2 (line 0 placed once)", b.Orders())
	}
	if p1.ClientToken != "dec-1-l0" || len(p1.ExternalIDs) != 2 || p1.ExternalIDs[0] != p2.ExternalIDs[0] || p1.ExternalIDs[0] == p3.ExternalIDs[0] {
		t.Fatalf("placements: %+v / %+v / %+v", p1, p2, p3)
	}
	if p1.Price.String() != "4.76 USD" || p1.Market != sluice.Spot || !p1.PlacedAt.Equal(at) {
		t.Fatalf("read back: %+v", p1)
	}
}

func TestPlaceFailureIsNotRecorded(t *testing.T) {
	b := &Broker{Fail: func(provider, _ string) error {
		if provider == "vast" {
			return errors.New("no capacity")
		}
		return nil
	}}
	_, err := b.Place(context.Background(), "dec-2", 0, sluice.Line{Provider: "vast", OfferID: "vast:1:ondemand", Units: 1})
	if err == nil || b.Orders() != 0 {
		t.Fatalf("err %v, orders %d", err, b.Orders())
	}
}
