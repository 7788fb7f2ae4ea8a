package metrics_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var at = time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)

func writer(b *bytes.Buffer) *metrics.Writer {
	return &metrics.Writer{W: b, Namespace: metrics.Namespace, Now: func() time.Time { return at }}
}

// checkSpec parses each line and checks it against the EMF specification:
// _aws.Timestamp in ms, one directive with a namespace, every dimension a
// root string member, every metric a root number member, limits held.
func checkSpec(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("line %d not JSON: %v\n%s", i, err, line)
		}
		aws := o["_aws"].(map[string]any)
		if ts, _ := aws["Timestamp"].(json.Number).Int64(); ts != at.UnixMilli() {
			t.Errorf("line %d Timestamp %v", i, aws["Timestamp"])
		}
		for _, d := range aws["CloudWatchMetrics"].([]any) {
			d := d.(map[string]any)
			if d["Namespace"] != "Sluice" {
				t.Errorf("line %d namespace %v", i, d["Namespace"])
			}
			for _, set := range d["Dimensions"].([]any) {
				if n := len(set.([]any)); n == 0 || n > 30 {
					t.Errorf("line %d: dimension set of %d", i, n)
				}
				for _, name := range set.([]any) {
					if _, ok := o[name.(string)].(string); !ok {
						t.Errorf("line %d: dimension %v is not a root string member", i, name)
					}
				}
			}
			ms := d["Metrics"].([]any)
			if len(ms) == 0 || len(ms) > 100 {
				t.Errorf("line %d: %d metrics", i, len(ms))
			}
			for _, m := range ms {
				name := m.(map[string]any)["Name"].(string)
				if _, ok := o[name].(json.Number); !ok {
					t.Errorf("line %d: metric %s is not a root number member", i, name)
				}
			}
		}
		objs = append(objs, o)
	}
	return objs
}

func money(s, cur string) sluice.Money {
	return sluice.Money{Amount: decimal.RequireFromString(s), Currency: cur}
}

func TestDecisionGolden(t *testing.T) {
	rec := sluice.DecisionRecord{
		DecisionID: "dec-4b76346f860e6d9731342e327b690995", Status: "planned", Outcome: "placed",
		Trigger: sluice.Trigger{Queue: "train-overseas", Depth: 42, DepthSource: "sqs-live", Delivery: "eventbridge"},
		Demand:  sluice.Demand{Queue: "train-overseas"},
		Sources: []sluice.SourceReport{
			{Provider: "aws", Offers: 14, LatencyMS: 212, Dropped: []sluice.DroppedOffer{{Provider: "aws", Ref: "a", Reason: "stale"}, {Provider: "aws", Ref: "b", Reason: "stale"}}},
			{Provider: "vast", Offers: 0, LatencyMS: 2000, Error: "deadline", ErrorClass: "timeout"},
		},
		Plan: sluice.Plan{SlotsWanted: 8, SlotsCovered: 8, TotalExpectedCost: money("103.06683", "USD"),
			Rejected: []sluice.Rejection{
				{Provider: "aws", OfferID: "x", Reasons: []sluice.Reason{{Code: "residency"}, {Code: "budget-tier"}}},
				{Provider: "vast", OfferID: "y", Reasons: []sluice.Reason{{Code: "residency"}, {Code: "residency", Rule: "residency.unmapped"}}},
			}},
	}
	var b bytes.Buffer
	if err := writer(&b).Decision("burst", rec, false); err != nil {
		t.Fatal(err)
	}
	objs := checkSpec(t, b.String())
	// The decision line: the cost is the exact decimal, not a float.
	if !strings.Contains(b.String(), `"ExpectedCost":103.06683,`) {
		t.Errorf("ExpectedCost not written as the exact decimal:\n%s", b.String())
	}
	// residency counts each offer once (y has two residency reasons).
	if len(objs) != 6 || objs[1]["Reason"] != "budget-tier" || objs[2]["Reason"] != "residency" || objs[2]["OffersRejected"] != json.Number("2") ||
		objs[3]["OffersDropped"] != json.Number("2") || objs[5]["ProviderErrors"] != json.Number("1") || objs[5]["ErrorClass"] != "timeout" {
		t.Errorf("lines:\n%s", b.String())
	}
	golden(t, "decision.golden", b.Bytes())

	b.Reset()
	if err := writer(&b).Decision("burst", rec, true); err != nil {
		t.Fatal(err)
	}
	objs = checkSpec(t, b.String())
	if len(objs) != 1 || objs[0]["Replays"] != json.Number("1") || objs[0]["ExpectedCost"] != nil {
		t.Errorf("replay: %s", b.String())
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		_ = os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after review):\n got %s\nwant %s", name, got, want)
	}
}

func TestEmitRefusesWhatEMFRejects(t *testing.T) {
	var b bytes.Buffer
	w := writer(&b)
	p := map[string]any{"Function": "burst", "Queue": "q", "N": 3}
	cases := []struct {
		name string
		dims [][]string
		ms   []metrics.Metric
		want string
	}{
		{"no metrics", nil, nil, "0 metrics"},
		{"float text", nil, []metrics.Metric{{Name: "X", Unit: metrics.None, Value: "1.5.2"}}, `value "1.5.2" is not a JSON number`},
		{"NaN", nil, []metrics.Metric{{Name: "X", Unit: metrics.None, Value: "NaN"}}, "not a JSON number"},
		{"dimension missing", [][]string{{"Function", "Provider"}}, []metrics.Metric{metrics.Int("X", metrics.Count, 1)}, "dimension Provider has no string value"},
		{"dimension not a string", [][]string{{"N"}}, []metrics.Metric{metrics.Int("X", metrics.Count, 1)}, "dimension N has no string value"},
		{"metric shadows a property", nil, []metrics.Metric{metrics.Int("Queue", metrics.Count, 1)}, "also a property"},
		{"31 dimensions", [][]string{make([]string, 31)}, []metrics.Metric{metrics.Int("X", metrics.Count, 1)}, "dimension set of 31"},
	}
	for _, c := range cases {
		err := w.Emit(c.dims, c.ms, p)
		if !errors.Is(err, metrics.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrInvalid containing %q", c.name, err, c.want)
		}
	}
	if b.Len() != 0 {
		t.Errorf("refused lines were written: %s", b.String())
	}
	// 100 metrics are fine, 101 are not.
	var ms []metrics.Metric
	for i := range 101 {
		ms = append(ms, metrics.Int("M"+strings.Repeat("x", i), metrics.Count, int64(i)))
	}
	if err := w.Emit(nil, ms[:100], nil); err != nil {
		t.Fatal(err)
	}
	checkSpec(t, b.String())
	if err := w.Emit(nil, ms, nil); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("101 metrics: %v", err)
	}
}

func TestDepthAndRefused(t *testing.T) {
	var b bytes.Buffer
	w := writer(&b)
	tr := sluice.Trigger{AlarmARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:a", StateChangeTime: at, Queue: "q", Depth: 5, DepthSource: "sqs-live"}
	if err := w.Depth("burst", tr, 2, true); err != nil {
		t.Fatal(err)
	}
	if err := w.Refused("burst", "bad-event", "event: not JSON"); err != nil {
		t.Fatal(err)
	}
	objs := checkSpec(t, b.String())
	if objs[0]["QueueDepth"] != json.Number("5") || objs[0]["QueueInFlight"] != json.Number("2") || objs[0]["DecisionId"] != sluice.DecisionID(tr) ||
		objs[1]["Refused"] != json.Number("1") || objs[1]["Kind"] != "bad-event" {
		t.Errorf("%s", b.String())
	}
}

func TestDrainAndReconcile(t *testing.T) {
	var b bytes.Buffer
	w := writer(&b)
	rep := sluice.DrainReport{Queue: "q", Released: []sluice.Release{{}, {}}, Pending: []sluice.Release{{}}}
	if err := w.Drain("drain", rep); err != nil {
		t.Fatal(err)
	}
	if err := w.Reconcile("reconcile", sluice.ReconcileReport{Orphans: []sluice.Release{{}}, Adopted: []sluice.Placement{{}, {}, {}}}); err != nil {
		t.Fatal(err)
	}
	objs := checkSpec(t, b.String())
	if objs[0]["Released"] != json.Number("2") || objs[0]["ReleasePending"] != json.Number("1") || objs[0]["Queue"] != "q" ||
		objs[1]["Orphans"] != json.Number("1") || objs[1]["Adopted"] != json.Number("3") || objs[1]["Lost"] != json.Number("0") {
		t.Errorf("%s", b.String())
	}
}
