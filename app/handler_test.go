package app

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestHandleRefusesBadEventsWithoutRetry(t *testing.T) {
	a := openTest(t)
	for _, name := range []string{"not-json.json", "unknown-state.json", "rfc3339-time.json"} {
		raw, _ := os.ReadFile("../testdata/events/bad/" + name)
		res, err := a.Handle(context.Background(), raw)
		if err != nil || res.Refused == "" || len(res.Decisions) != 0 {
			t.Errorf("%s: res %+v err %v; want refused, no error (so Lambda does not retry)", name, res, err)
		}
	}
	if n, err := a.Ledger.Verify(context.Background()); err != nil || n != 0 {
		t.Fatalf("ledger after bad events: %d records, %v", n, err)
	}
}

func TestHandleDecidesAndIsIdempotent(t *testing.T) {
	a := openTest(t)
	raw, _ := os.ReadFile("../testdata/events/alarm-sns-nockpt.json")
	first, err := a.Handle(context.Background(), raw)
	if err != nil || len(first.Decisions) != 1 {
		t.Fatalf("%+v %v", first, err)
	}
	d := first.Decisions[0]
	if d.Queue != "finetune-nockpt" || d.Outcome != "placed" || d.TotalExpectedCost != "33.8361098604 USD" || d.Replayed {
		t.Fatalf("first: %+v", d)
	}
	second, err := a.Handle(context.Background(), raw)
	if err != nil || !second.Decisions[0].Replayed || second.Decisions[0].DecisionID != d.DecisionID {
		t.Fatalf("second: %+v %v", second, err)
	}
	if a.Broker.Orders() != 1 {
		t.Fatalf("%d orders after redelivery, want 1", a.Broker.Orders())
	}
	raw = []byte(strings.ReplaceAll(string(raw), "finetune-nockpt", "train-nowhere"))
	if res, err := a.Handle(context.Background(), raw); err != nil || !strings.Contains(res.Refused, "train-nowhere") {
		t.Fatalf("unknown queue: %+v %v", res, err)
	}
}
