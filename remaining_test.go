package sluice

import "testing"

// A follow-up re-plans on the parent's quotes; the stock the chain already
// holds must not be planned again (found by the burst-table golden: a
// follow-up bought 2 more units of an offer whose 2 units the parent held).
func TestRemainingTakesOutHeldUnits(t *testing.T) {
	offers := []Offer{
		{ID: "aws:a", Provider: "aws", GPUsPerUnit: 8, UnitsAvailable: 2},
		{ID: "aws:b", Provider: "aws", GPUsPerUnit: 8, UnitsAvailable: 3},
		{ID: "autodl:4x", Provider: "autodl", GPUsPerUnit: 4, UnitsAvailable: 3, Pool: "autodl:bj1:A100", PoolGPUs: 12},
		{ID: "autodl:8x", Provider: "autodl", GPUsPerUnit: 8, UnitsAvailable: 1, Pool: "autodl:bj1:A100", PoolGPUs: 12},
		{ID: "vast:1", Provider: "vast", GPUsPerUnit: 8, UnitsAvailable: 1},
	}
	root := &DecisionRecord{Offers: offers, Plan: Plan{Lines: []Line{
		{Provider: "aws", OfferID: "aws:a", Units: 2},
		{Provider: "aws", OfferID: "aws:b", Units: 2},
		{Provider: "autodl", OfferID: "autodl:4x", Units: 1},
	}}}
	root.FollowUps = []DecisionRecord{{Plan: Plan{Lines: []Line{{Provider: "vast", OfferID: "vast:1", Units: 1}}}}}
	refused := []refusal{{line: Line{Provider: "aws", OfferID: "aws:b", Units: 2}, class: ClassCapacity}}
	got := remaining(root, refused)
	want := []struct{ units, pool int }{{0, 0}, {3, 0}, {2, 8}, {1, 8}, {0, 0}}
	for i, w := range want {
		if got[i].UnitsAvailable != w.units || got[i].PoolGPUs != w.pool {
			t.Errorf("%s: units %d pool %d, want %d and %d", got[i].ID, got[i].UnitsAvailable, got[i].PoolGPUs, w.units, w.pool)
		}
	}
	if offers[0].UnitsAvailable != 2 || offers[2].PoolGPUs != 12 {
		t.Error("remaining changed the parent's offers")
	}
}

func TestFirstLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 200, "short"},
		{"one\ntwo", 200, "one…"},
		{"abcdef", 3, "abc…"},
		{"登录超时", 4, "登…"}, // 3-byte runes: never cut inside one
		{"", 5, ""},
	} {
		if got := firstLine(c.in, c.n); got != c.want {
			t.Errorf("firstLine(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
