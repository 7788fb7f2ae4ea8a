package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/queue"
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

// fakeDepth is a DepthReader of func fields.
type fakeDepth struct {
	live func(t sluice.Trigger) (sluice.Trigger, queue.Depth, error)
}

func (f fakeDepth) Live(_ context.Context, t sluice.Trigger) (sluice.Trigger, queue.Depth, error) {
	return f.live(t)
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../testdata/events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestHandlerEveryDelivery: the same ALARM through SNS, EventBridge, the
// Lambda action and an SQS batch is decided once; the others are replays.
func TestHandlerEveryDelivery(t *testing.T) {
	a := openTest(t)
	var emf bytes.Buffer
	h := &Handler{App: a, Function: FunctionBurst, Metrics: &metrics.Writer{W: &emf, Namespace: metrics.Namespace}}
	var ids []string
	for i, f := range []string{"alarm-eventbridge-burst.json", "alarm-sns-burst.json", "alarm-lambda-burst.json"} {
		res, err := h.Handle(context.Background(), readEvent(t, f))
		if err != nil || len(res.Decisions) != 1 || res.Refused != "" {
			t.Fatalf("%s: %+v %v", f, res, err)
		}
		d := res.Decisions[0]
		if d.Replayed != (i > 0) || d.Queue != "train-overseas" || d.Depth != 42 || d.DepthSource != "alarm-datapoint" {
			t.Errorf("%s: %+v", f, d)
		}
		ids = append(ids, d.DecisionID)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("decision ids %v", ids)
	}
	if n := a.Broker.Orders(); n == 0 {
		t.Fatal("nothing placed")
	}
	orders := a.Broker.Orders()
	// The SQS batch: Beijing and nockpt are new decisions, burst is a replay.
	res, err := h.Handle(context.Background(), readEvent(t, "sqs-batch.json"))
	if err != nil || len(res.Decisions) != 3 || len(res.BatchItemFailures) != 0 || res.Refused != "" {
		t.Fatalf("batch: %+v %v", res, err)
	}
	if res.Decisions[0].Queue != "train-beijing" || res.Decisions[1].Queue != "finetune-nockpt" || res.Decisions[2].DecisionID != ids[0] || !res.Decisions[2].Replayed {
		t.Errorf("batch decisions %+v", res.Decisions)
	}
	if a.Broker.Orders() <= orders {
		t.Errorf("batch placed nothing new")
	}
	// Every decision line carries its decision id.
	if c := strings.Count(emf.String(), `"Decisions":1,`); c != 3 {
		t.Errorf("%d decision metric lines, want 3 (one per new decision):\n%s", c, emf.String())
	}
	if !strings.Contains(emf.String(), `"DecisionId":"`+ids[0]+`"`) || strings.Count(emf.String(), `"Replays":1`) != 3 {
		t.Errorf("EMF:\n%s", emf.String())
	}
}

func TestHandlerBatchRetriesOnlyTransientFailures(t *testing.T) {
	// After the mixed batch's OK alarm (11:40): an alarm more than
	// sluice.MaxAlarmSkew ahead of the decision clock is refused.
	a := openTestAt(t, time.Date(2026, 11, 29, 11, 40, 30, 0, time.UTC))
	h := &Handler{App: a, Function: FunctionBurst}
	h.Decide = func(ctx context.Context, tr sluice.Trigger) (sluice.DecisionRecord, bool, error) {
		if tr.Queue == "finetune-nockpt" {
			return sluice.DecisionRecord{}, false, fmt.Errorf("ledger: %w", context.DeadlineExceeded)
		}
		return a.Burst.Decide(ctx, tr)
	}
	res, err := h.Handle(context.Background(), readEvent(t, "sqs-batch.json"))
	if err != nil {
		t.Fatalf("a batch never fails whole: %v", err)
	}
	want := []BatchItemFailure{{ItemIdentifier: "2e1424d4-f796-459a-8184-9c92662be6da"}}
	if !slices.Equal(res.BatchItemFailures, want) || len(res.Decisions) != 2 {
		t.Fatalf("%+v; want only the nockpt message retried", res)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"batchItemFailures":[{"itemIdentifier":"2e1424d4-f796-459a-8184-9c92662be6da"}]`) {
		t.Errorf("wire form %s", b)
	}
	// The bad message of the mixed batch is refused (not retried); the others decided.
	res, err = h.Handle(context.Background(), readEvent(t, "sqs-batch-mixed.json"))
	if err != nil || len(res.BatchItemFailures) != 0 || len(res.Refusals) != 1 || !strings.HasPrefix(res.Refused, "sqs message 1: body") || len(res.Decisions) != 2 {
		t.Fatalf("mixed: %+v %v", res, err)
	}
	// Outside a batch a transient failure is an error (Lambda retries), a bad event is not.
	res, err = h.Handle(context.Background(), readEvent(t, "alarm-sns-nockpt.json"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("transient: %+v %v; want the error returned", res, err)
	}
	if _, err := h.Handle(context.Background(), readEvent(t, "bad/unknown-state.json")); err != nil {
		t.Fatalf("bad event returned an error: %v", err)
	}
}

func TestHandlerLiveDepth(t *testing.T) {
	a := openTest(t)
	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	h := &Handler{App: a, Function: FunctionBurst, Depth: fakeDepth{func(tr sluice.Trigger) (sluice.Trigger, queue.Depth, error) {
		if tr.Queue == "train-beijing" {
			return tr, queue.Depth{}, errors.New("sqs GetQueueUrl train-beijing: AccessDenied")
		}
		tr.Depth, tr.DepthSource = 3, queue.DepthFromSQS
		return tr, queue.Depth{Visible: 3, InFlight: 9}, nil
	}}}
	res, err := h.Handle(context.Background(), readEvent(t, "alarm-sns-burst.json"))
	if err != nil || res.Decisions[0].Depth != 3 || res.Decisions[0].DepthSource != "sqs-live" {
		t.Fatalf("%+v %v", res, err)
	}
	rec, ok, err := a.Ledger.Decision(context.Background(), res.Decisions[0].DecisionID)
	if err != nil || !ok || rec.Trigger.Depth != 3 || rec.Trigger.DepthSource != "sqs-live" || rec.Demand.Depth != 3 {
		t.Fatalf("recorded trigger %+v demand %+v (%v)", rec.Trigger, rec.Demand, err)
	}
	res, err = h.Handle(context.Background(), readEvent(t, "alarm-sns-beijing.json"))
	if err != nil || res.Decisions[0].Depth != 6 || res.Decisions[0].DepthSource != "alarm-datapoint" {
		t.Fatalf("fallback: %+v %v", res, err)
	}
	if !strings.Contains(logs.String(), `"msg":"live depth unavailable: using the alarm datapoint"`) ||
		!strings.Contains(logs.String(), `"decision_id":"`+res.Decisions[0].DecisionID+`"`) {
		t.Errorf("logs:\n%s", logs.String())
	}
}

func TestHandlerDrainFunction(t *testing.T) {
	a := openTest(t)
	var got []sluice.Trigger
	h := &Handler{App: a, Function: FunctionDrain, Drain: func(_ context.Context, tr sluice.Trigger) (any, error) {
		got = append(got, tr)
		return map[string]int{"released": 2}, nil
	}}
	for _, f := range []string{"alarm-sns-ok.json", "alarm-eventbridge-ok.json", "alarm-lambda-ok.json", "alarm-sns-burst.json"} {
		if res, err := h.Handle(context.Background(), readEvent(t, f)); err != nil || res.Refused != "" {
			t.Fatalf("%s: %+v %v", f, res, err)
		}
	}
	if len(got) != 3 || got[0].State != sluice.StateOK || got[1].Delivery != "eventbridge" || got[2].Delivery != "lambda-action" {
		t.Errorf("drained %+v; want the three OK deliveries and not the ALARM", got)
	}
	h.Drain = nil
	if _, err := h.Handle(context.Background(), readEvent(t, "alarm-sns-ok.json")); err == nil {
		t.Error("drain without a Drain func succeeded")
	}
}
