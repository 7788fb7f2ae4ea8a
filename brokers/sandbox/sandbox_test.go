package sandbox

import (
	"context"
	"errors"
	"fmt"
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

func TestStateFileIsSharedAcrossBrokers(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)
	path := t.TempDir() + "/provider.json"
	one := &Broker{Now: func() time.Time { return at }, StatePath: path}
	two := &Broker{Now: func() time.Time { return at.Add(time.Hour) }, StatePath: path}
	line := sluice.Line{Provider: "aws", OfferID: "aws:x:spot", Market: sluice.Spot, Units: 2, Slots: 4, UnitPrice: sluice.MustMoney("5.8394", "USD")}
	ctx := context.Background()
	// Created, answer lost: the other process finds it and does not buy again.
	if err := one.AddFault(Fault{Op: OpPlace, Class: FaultTimeoutAfterCreate, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Place(ctx, "dec-1", 0, line); !errors.Is(err, sluice.ErrTransient) {
		t.Fatalf("place: %v, want ErrTransient", err)
	}
	p, ok, err := two.Find(ctx, "aws", "dec-1", 0)
	if err != nil || !ok || len(p.ExternalIDs) != 2 || !p.PlacedAt.Equal(at) {
		t.Fatalf("find: %+v %v %v", p, ok, err)
	}
	if again, err := two.Place(ctx, "dec-1", 0, line); err != nil || again.ExternalIDs[0] != p.ExternalIDs[0] || two.Orders() != 1 {
		t.Fatalf("place again: %+v %v, %d orders", again, err, two.Orders())
	}
	// A terminate that times out leaves it running; the retry confirms with its own time.
	if err := one.AddFault(Fault{Op: OpRelease, Class: FaultTransient, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Release(ctx, p); !errors.Is(err, sluice.ErrTransient) {
		t.Fatalf("release: %v", err)
	}
	if ins, _ := two.Instances(ctx, "aws"); len(ins) != 2 {
		t.Fatalf("%d instances after a timed-out terminate, want 2", len(ins))
	}
	res, err := two.Release(ctx, p)
	if err != nil || !res.Confirmed || !res.At.Equal(at.Add(time.Hour)) {
		t.Fatalf("release retry: %+v %v", res, err)
	}
	if ins, _ := one.Instances(ctx, "aws"); len(ins) != 0 {
		t.Fatalf("%d instances after release", len(ins))
	}
	st, _ := one.Snapshot()
	want := []string{"place aws dec-1-l0", "find aws dec-1-l0", "place aws dec-1-l0", "release aws dec-1-l0", "instances aws", "release aws dec-1-l0", "instances aws"}
	if fmt.Sprint(st.Calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", st.Calls, want)
	}
}

func TestFaultClasses(t *testing.T) {
	for _, tc := range []struct {
		class string
		want  error
	}{
		{FaultCapacity, sluice.ErrInsufficientCapacity},
		{FaultQuota, sluice.ErrQuota},
		{FaultCapability, sluice.ErrCapabilityUnavailable},
		{FaultTransient, sluice.ErrTransient},
	} {
		b := &Broker{}
		_ = b.AddFault(Fault{Op: OpPlace, OfferID: "o1", Class: tc.class, Times: 1})
		_, err := b.Place(context.Background(), "dec-1", 0, sluice.Line{Provider: "vast", OfferID: "o1", Units: 1})
		if !errors.Is(err, tc.want) || b.Orders() != 0 {
			t.Errorf("%s: %v (%d orders), want %v and none", tc.class, err, b.Orders(), tc.want)
		}
		// Times 1: the next call goes through; another offer never matched.
		if _, err := b.Place(context.Background(), "dec-1", 0, sluice.Line{Provider: "vast", OfferID: "o1", Units: 1}); err != nil || b.Orders() != 1 {
			t.Errorf("%s: second call %v", tc.class, err)
		}
	}
}
