package events_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	awsevents "github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/events"
)

var knownDelivery = map[string]bool{
	"sns": true, "eventbridge": true, "lambda-action": true,
	"sqs/sns": true, "sqs/sns-raw": true, "sqs/eventbridge": true,
}

// with returns tr with its Delivery (and, when depth >= 0, Depth) replaced.
func with(tr sluice.Trigger, delivery string, depth int) sluice.Trigger {
	tr.Delivery = delivery
	if depth >= 0 {
		tr.Depth = depth
	}
	return tr
}

// others lists every non-SNS file in testdata/events: its shape, and the
// triggers per item (one item unless it is an SQS batch; nil = item refused).
var others = map[string]struct {
	shape string
	ids   []string
	items [][]sluice.Trigger
	errs  []string // per item: "" or the refusal's text
}{
	"alarm-eventbridge-burst.json": {shape: "eventbridge", ids: []string{""},
		items: [][]sluice.Trigger{{with(good["alarm-sns-burst.json"], "eventbridge", -1)}}},
	"alarm-eventbridge-ok.json": {shape: "eventbridge", ids: []string{""},
		items: [][]sluice.Trigger{{with(good["alarm-sns-ok.json"], "eventbridge", -1)}}},
	// Newest evaluated datapoint (10:21, 12.0) — the same as the SNS reason's first.
	"alarm-eventbridge-metrics.json": {shape: "eventbridge", ids: []string{""},
		items: [][]sluice.Trigger{{with(good["alarm-sns-metrics.json"], "eventbridge", -1)}}},
	"alarm-lambda-burst.json": {shape: "lambda-action", ids: []string{""},
		items: [][]sluice.Trigger{{with(good["alarm-sns-burst.json"], "lambda-action", -1)}}},
	"alarm-lambda-ok.json": {shape: "lambda-action", ids: []string{""},
		items: [][]sluice.Trigger{{with(good["alarm-sns-ok.json"], "lambda-action", -1)}}},
	"sqs-batch.json": {shape: "sqs",
		ids: []string{"059f36b4-87a3-44ab-83d2-661975830a7d", "2e1424d4-f796-459a-8184-9c92662be6da", "c80e8021-a70a-42c7-a470-796e1186f753"},
		items: [][]sluice.Trigger{
			{with(good["alarm-sns-beijing.json"], "sqs/sns", -1)},
			{with(good["alarm-sns-nockpt.json"], "sqs/sns-raw", -1)},
			{with(good["alarm-sns-burst.json"], "sqs/eventbridge", -1)},
		}},
	"sqs-batch-mixed.json": {shape: "sqs",
		ids: []string{"7c0b2d1e-4f3a-4b5c-8d6e-9f0a1b2c3d4e", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "f0e1d2c3-b4a5-4968-8776-5a4b3c2d1e0f"},
		items: [][]sluice.Trigger{
			{with(good["alarm-sns-burst.json"], "sqs/sns", -1)},
			nil,
			{with(good["alarm-sns-ok.json"], "sqs/eventbridge", -1)},
		},
		errs: []string{"", `sqs message 1: body "ALARM: \"sluice-train-overseas-depth\" in US East (N. Virginia)": not JSON`, ""}},
}

func TestOtherShapes(t *testing.T) {
	for name, want := range others {
		t.Run(name, func(t *testing.T) {
			raw := read(t, name)
			ev, err := events.ParseEvent(raw)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Shape != want.shape || ev.Batch() != (want.shape == "sqs") || len(ev.Items) != len(want.items) {
				t.Fatalf("shape %q batch %v, %d items; want %q, %d", ev.Shape, ev.Batch(), len(ev.Items), want.shape, len(want.items))
			}
			var all []sluice.Trigger
			firstErr := ""
			for i, it := range ev.Items {
				if it.ID != want.ids[i] {
					t.Errorf("item %d ID %q, want %q", i, it.ID, want.ids[i])
				}
				if !slices.Equal(it.Triggers, want.items[i]) {
					t.Errorf("item %d:\n got %+v\nwant %+v", i, it.Triggers, want.items[i])
				}
				wantErr := ""
				if want.errs != nil {
					wantErr = want.errs[i]
				}
				if (it.Err == nil) != (wantErr == "") || (it.Err != nil && (it.Err.Error() != wantErr || !errors.Is(it.Err, events.ErrBadEvent))) {
					t.Errorf("item %d error %v, want %q wrapping ErrBadEvent", i, it.Err, wantErr)
				}
				if it.Err != nil && firstErr == "" {
					firstErr = it.Err.Error()
				}
				all = append(all, want.items[i]...)
			}
			// Parse gives the same triggers, or refuses the whole event with the first bad item's error.
			got, err := events.Parse(raw)
			if firstErr != "" {
				if err == nil || err.Error() != firstErr || got != nil {
					t.Errorf("Parse: %+v, %v; want refused with %q", got, err, firstErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, all) {
				t.Errorf("Parse: %+v, %v", got, err)
			}
			// The shape's own parser agrees.
			var own func([]byte) ([]sluice.Trigger, error)
			switch want.shape {
			case "eventbridge":
				own = events.ParseEventBridgeAlarm
			case "lambda-action":
				own = events.ParseLambdaActionAlarm
			default:
				own = func(b []byte) ([]sluice.Trigger, error) {
					ev, err := events.ParseSQSBatch(b)
					return ev.Triggers(), err
				}
			}
			if got, err := own(raw); err != nil || !slices.Equal(got, all) {
				t.Errorf("own parser: %+v, %v", got, err)
			}
		})
	}
}

// TestSameAlarmEveryDelivery: one state change of one alarm gives the same
// decision id, queue and depth whichever way it is delivered, so a
// deployment that wires both SNS and EventBridge decides once.
func TestSameAlarmEveryDelivery(t *testing.T) {
	want := good["alarm-sns-burst.json"]
	var ids []string
	for _, f := range []string{"alarm-sns-burst.json", "alarm-eventbridge-burst.json", "alarm-lambda-burst.json", "sqs-batch.json", "sqs-batch-mixed.json"} {
		ts, err := events.ParseEvent(read(t, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts.Triggers() {
			if tr.AlarmARN != want.AlarmARN || !tr.StateChangeTime.Equal(want.StateChangeTime) || tr.State != sluice.StateAlarm {
				continue
			}
			if tr.Queue != want.Queue || tr.Depth != want.Depth || tr.Region != want.Region {
				t.Errorf("%s (%s): %+v", f, tr.Delivery, tr)
			}
			ids = append(ids, sluice.DecisionID(tr))
		}
	}
	if c := slices.Compact(slices.Clone(ids)); len(ids) != 5 || len(c) != 1 || c[0] != sluice.DecisionID(want) {
		t.Fatalf("decision ids %v: want 5 deliveries of %s", ids, sluice.DecisionID(want))
	}
}

// editJSON decodes a testdata file, lets edit change it, and re-encodes it.
func editJSON(t *testing.T, name string, edit func(map[string]any)) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(read(t, name), &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(v any, path ...string) map[string]any {
	m := v.(map[string]any)
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

func metricOf(v map[string]any, root string, i int) map[string]any {
	ms := obj(v, root, "configuration")["metrics"].([]any)
	return obj(ms[i], "metricStat", "metric")
}

func TestEventBridgeAndActionRefused(t *testing.T) {
	eb := func(edit func(v map[string]any)) []byte { return editJSON(t, "alarm-eventbridge-burst.json", edit) }
	la := func(edit func(v map[string]any)) []byte { return editJSON(t, "alarm-lambda-burst.json", edit) }
	reasonData := func(rd string) func(map[string]any) {
		return func(v map[string]any) { obj(v, "detail", "state")["reasonData"] = rd }
	}
	cases := []struct {
		name string
		raw  []byte
		want string // exact error
	}{
		{"detail-type of another event", eb(func(v map[string]any) { v["detail-type"] = "CloudWatch Alarm Configuration Change" }),
			`event: detail-type "CloudWatch Alarm Configuration Change": not CloudWatch Alarm State Change`},
		{"source not CloudWatch", eb(func(v map[string]any) { v["source"] = "my.app" }), `event: source "my.app": not aws.cloudwatch`},
		{"two resources", eb(func(v map[string]any) { v["resources"] = []any{"a", "b"} }), `event: resources: 2 entries: want exactly the alarm's ARN`},
		{"resource not an alarm ARN", eb(func(v map[string]any) { v["resources"] = []any{"arn:aws:sns:us-east-1:123456789012:t"} }),
			`event: resources "arn:aws:sns:us-east-1:123456789012:t": not a CloudWatch alarm ARN (arn:<partition>:cloudwatch:<region>:<12-digit account>:alarm:<name>)`},
		{"region not the ARN's", eb(func(v map[string]any) { v["region"] = "eu-west-1" }), `event: region "eu-west-1": not the alarm ARN's region us-east-1`},
		{"name not the ARN's", eb(func(v map[string]any) { obj(v, "detail")["alarmName"] = "other" }),
			`event: detail.alarmName "other": not the name in the alarm ARN`},
		{"RFC 3339 state timestamp", eb(func(v map[string]any) { obj(v, "detail", "state")["timestamp"] = "2026-11-29T10:05:00Z" }),
			`event: detail.state.timestamp "2026-11-29T10:05:00Z": want layout 2006-01-02T15:04:05.000-0700`},
		{"unknown state", eb(func(v map[string]any) { obj(v, "detail", "state")["value"] = "PENDING" }), `event: detail.state.value "PENDING": unknown state`},
		{"composite alarm (no metrics)", eb(func(v map[string]any) { obj(v, "detail", "configuration")["metrics"] = []any{} }),
			`event: detail.configuration.metrics: empty: no metric (a composite alarm cannot size a queue)`},
		{"EC2 metric", eb(func(v map[string]any) { metricOf(v, "detail", 0)["namespace"] = "AWS/EC2" }),
			`event: detail.configuration.metrics[0].metricStat.metric.namespace "AWS/EC2": not AWS/SQS: no QueueName dimension of an AWS/SQS metric`},
		{"age metric", eb(func(v map[string]any) { metricOf(v, "detail", 0)["name"] = "ApproximateAgeOfOldestMessage" }),
			`event: detail.configuration.metrics[0].metricStat.metric.name "ApproximateAgeOfOldestMessage": an age in seconds, not a queue depth: want ApproximateNumberOfMessagesVisible`},
		{"no QueueName", eb(func(v map[string]any) { metricOf(v, "detail", 0)["dimensions"] = map[string]any{"Other": "x"} }),
			`event: detail.configuration.metrics[0].metricStat.metric.dimensions: no QueueName dimension of an AWS/SQS metric`},
		{"reasonData not JSON", eb(reasonData("{oops")), `event: detail.state.reasonData "{oops": not JSON`},
		{"reasonData with a repeated key", eb(reasonData(`{"version":"1.0","recentDatapoints":[1.0],"recentDatapoints":[99.0]}`)),
			`event: detail.state.reasonData: duplicate key "recentDatapoints"`},
		{"negative datapoint", eb(reasonData(`{"version":"1.0","recentDatapoints":[-3.0]}`)),
			`event: detail.state.reasonData.recentDatapoints[0] "-3.0": datapoint is negative: a queue depth cannot be`},
		{"bad evaluated timestamp", eb(reasonData(`{"version":"1.0","recentDatapoints":[1.0],"evaluatedDatapoints":[{"timestamp":"yesterday","value":1.0}]}`)),
			`event: detail.state.reasonData.evaluatedDatapoints[0].timestamp "yesterday": want layout 2006-01-02T15:04:05.000-0700`},
		{"ALARM without any datapoint", eb(func(v map[string]any) {
			st := obj(v, "detail", "state")
			st["reasonData"] = `{"version":"1.0","recentDatapoints":[]}`
			st["reason"] = "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [Breaching]."
		}), `event: detail.state.reasonData "{\"version\":\"1.0\",\"recentDatapoints\":[]}": no datapoint, and an ALARM needs the observed depth`},
		{"detail null", eb(func(v map[string]any) { v["detail"] = nil }), `event: detail: missing`},
		{"action: source", la(func(v map[string]any) { v["source"] = "aws.events" }), `event: source "aws.events": not aws.cloudwatch`},
		{"action: ARN with a newline", la(func(v map[string]any) { v["alarmArn"] = v["alarmArn"].(string) + "\n" }),
			`event: alarmArn "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth\n": U+000A at byte 75: control, whitespace or format character`},
		{"action: alarm name with an escape", la(func(v map[string]any) { obj(v, "alarmData")["alarmName"] = "\x1b[2Jx" }),
			`event: alarmData.alarmName "\x1b[2Jx": U+001B at byte 0: control or format character`},
		{"action: state timestamp empty", la(func(v map[string]any) { obj(v, "alarmData", "state")["timestamp"] = "" }),
			`event: alarmData.state.timestamp: empty`},
		{"action: two queues in metric math", la(func(v map[string]any) {
			ms := obj(v, "alarmData", "configuration")["metrics"].([]any)
			m2 := map[string]any{"id": "m2", "returnData": false, "metricStat": map[string]any{"period": 60, "stat": "Maximum",
				"metric": map[string]any{"namespace": "AWS/SQS", "name": "ApproximateNumberOfMessagesVisible", "dimensions": map[string]any{"QueueName": "other-q"}}}}
			obj(v, "alarmData", "configuration")["metrics"] = append(ms, m2)
		}), `event: alarmData.configuration.metrics[1].metricStat.metric.dimensions "other-q": second queue (alarmData.configuration.metrics[0].metricStat.metric.dimensions names "train-overseas"): want one queue per alarm`},
		{"event key repeated", []byte(strings.Replace(string(read(t, "alarm-lambda-burst.json")), `"source": "aws.cloudwatch",`, `"source": "aws.cloudwatch", "Source": "x",`, 1)),
			`event: duplicate key "Source" (same field as "source" to a case-insensitive decoder)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(c.raw)
			wantRefused(t, got, err, c.want)
			if err.Error() != c.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, c.want)
			}
		})
	}
}

func TestReasonDataDepth(t *testing.T) {
	// rd sets reasonData and, unless reason is "", the reason text (whose
	// first datapoint must agree with reasonData's; see TestDatapointsDisagree).
	rd := func(s, reason string) []byte {
		return editJSON(t, "alarm-eventbridge-burst.json", func(v map[string]any) {
			obj(v, "detail", "state")["reasonData"] = s
			if reason != "" {
				obj(v, "detail", "state")["reason"] = reason
			}
		})
	}
	const noDatapoint = "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [Breaching]."
	cases := []struct {
		name string
		raw  []byte
		want int
	}{
		{"newest recent datapoint is the last", rd(`{"version":"1.0","recentDatapoints":[3.0,7.2]}`,
			"Threshold Crossed: 2 out of the last 2 datapoints [7.2 (29/11/26 10:05:00), 3.0 (29/11/26 10:04:00)] were greater than the threshold."), 8},
		{"evaluated datapoints win, newest by timestamp", rd(`{"version":"1.0","recentDatapoints":[3.0,7.0],"evaluatedDatapoints":[`+
			`{"timestamp":"2026-11-29T10:03:00.000+0000","value":9.0},{"timestamp":"2026-11-29T10:04:00.000+0000","sampleCount":1.0,"value":5.0},`+
			`{"timestamp":"2026-11-29T10:05:00.000+0000"}]}`, "Threshold Crossed: 2 out of the last 3 datapoints [5.0 (29/11/26 10:04:00), 9.0 (29/11/26 10:03:00)] ..."), 5},
		{"empty reasonData falls back to the reason text (42.0)", rd("", ""), 42},
		{"no values in reasonData falls back to the reason text", rd(`{"version":"1.0","recentDatapoints":[]}`, ""), 42},
		{"E-notation", rd(`{"version":"1.0","recentDatapoints":[1.5E3]}`, "Threshold Crossed: 1 out of the last 1 datapoints [1500.0 (29/11/26 10:05:00)] ..."), 1500},
		{"same depth written differently (41.2 and 41.9 are both 42 messages)", rd(`{"version":"1.0","recentDatapoints":[41.9]}`,
			"Threshold Crossed: 1 out of the last 1 datapoints [41.2 (29/11/26 10:05:00)] ..."), 42},
		{"reason quoting no datapoint: reasonData alone", rd(`{"version":"1.0","recentDatapoints":[7.0]}`, noDatapoint), 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(c.raw)
			if err != nil || got[0].Depth != c.want || got[0].DepthSource != events.DepthFromDatapoint {
				t.Fatalf("got %+v, %v; want depth %d", got, err, c.want)
			}
		})
	}
}

func TestSQSBatchRefusals(t *testing.T) {
	body := func(b string) []byte {
		return editJSON(t, "sqs-batch.json", func(v map[string]any) { v["Records"].([]any)[1].(map[string]any)["body"] = b })
	}
	cases := []struct {
		name string
		raw  []byte
		want string // item 1's error
	}{
		{"body of another kind", body(`{"hello":"world"}`), `sqs message 1: body: not a CloudWatch alarm message (want an SNS notification, a raw alarm payload or an EventBridge event)`},
		{"SNS subscription confirmation", body(`{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}`), `sqs message 1: body.Type "SubscriptionConfirmation": not Notification`},
		{"SNS envelope with a bad alarm", body(`{"Type":"Notification","Message":"{\"AlarmName\":\"x\",\"NewStateValue\":\"PENDING\"}"}`), `sqs message 1: AlarmArn: empty`},
		{"body is a JSON array", body(`[1]`), `sqs message 1: body: not a JSON object`},
		{"body with a repeated key", body(`{"AlarmName":"a","AlarmName":"b"}`), `sqs message 1: body: duplicate key "AlarmName"`},
		{"raw payload, bad state", body(strings.Replace(sqsBody(t, "sqs-batch.json", 1), `"NewStateValue":"ALARM"`, `"NewStateValue":"NOPE"`, 1)),
			`sqs message 1: NewStateValue "NOPE": unknown state`},
		{"no messageId", editJSON(t, "sqs-batch.json", func(v map[string]any) { v["Records"].([]any)[1].(map[string]any)["messageId"] = "" }),
			`sqs message 1: messageId: empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := events.ParseEvent(c.raw)
			if err != nil || len(ev.Items) != 3 {
				t.Fatalf("%+v %v", ev, err)
			}
			if ev.Items[0].Err != nil || ev.Items[2].Err != nil || len(ev.Items[0].Triggers) != 1 || len(ev.Items[2].Triggers) != 1 {
				t.Errorf("the good messages were not kept: %+v", ev.Items)
			}
			e := ev.Items[1].Err
			if e == nil || e.Error() != c.want || !errors.Is(e, events.ErrBadEvent) || ev.Items[1].Triggers != nil {
				t.Errorf("item 1: %+v\nwant error %q", ev.Items[1], c.want)
			}
		})
	}
	for in, want := range map[string]string{
		`{"Records":[{"eventSource":"aws:sqs"}, 7]}`: `sqs message 1: not an SQS message`,
		`{"Records":[{"eventSource":"aws:sqs","messageId":"m"}, {"eventSource":"aws:sns","messageId":"n","body":"{}"}]}`: `sqs message 1: eventSource "aws:sns": not aws:sqs`,
	} {
		ev, err := events.ParseEvent([]byte(in))
		if err != nil || ev.Shape != "sqs" || len(ev.Items) != 2 || ev.Items[1].Err == nil || !strings.HasPrefix(ev.Items[1].Err.Error(), want) {
			t.Errorf("%s: %+v %v; want item 1 refused with %q", in, ev, err, want)
		}
	}
}

// sqsBody returns message i's body in an SQS batch file.
func sqsBody(t *testing.T, name string, i int) string {
	t.Helper()
	var ev awsevents.SQSEvent
	if err := json.Unmarshal(read(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Records[i].Body
}

// TestRoundTripOtherShapes proves the new testdata is the wire shape: each
// EventBridge file decodes with aws-lambda-go's events.CloudWatchEvent and its
// detail with AlarmData, each Lambda action file with
// CloudWatchAlarmLambdaEvent, each reasonData with ReasonData, each SQS file
// with events.SQSEvent — and re-encoding loses nothing but zero values.
func TestRoundTripOtherShapes(t *testing.T) {
	reasonDatas := func(t *testing.T, d events.AlarmData) {
		for _, st := range []events.AlarmStateDetail{d.State, d.PreviousState} {
			if st.ReasonData == "" {
				continue
			}
			var rd events.ReasonData
			if err := json.Unmarshal([]byte(st.ReasonData), &rd); err != nil {
				t.Fatalf("reasonData: %v", err)
			}
			out, _ := json.Marshal(rd)
			sameJSON(t, "reasonData", []byte(st.ReasonData), out, nil)
		}
	}
	for name, o := range others {
		t.Run(name, func(t *testing.T) {
			in := read(t, name)
			switch o.shape {
			case "eventbridge":
				var ev awsevents.CloudWatchEvent
				if err := json.Unmarshal(in, &ev); err != nil {
					t.Fatal(err)
				}
				out, _ := json.Marshal(ev)
				sameJSON(t, "event", in, out, nil)
				var d events.AlarmData
				if err := json.Unmarshal(ev.Detail, &d); err != nil {
					t.Fatal(err)
				}
				dout, _ := json.Marshal(d)
				sameJSON(t, "detail", ev.Detail, dout, nil)
				reasonDatas(t, d)
			case "lambda-action":
				var ev events.CloudWatchAlarmLambdaEvent
				if err := json.Unmarshal(in, &ev); err != nil {
					t.Fatal(err)
				}
				out, _ := json.Marshal(ev)
				sameJSON(t, "event", in, out, nil)
				reasonDatas(t, ev.AlarmData)
			case "sqs":
				var ev awsevents.SQSEvent
				if err := json.Unmarshal(in, &ev); err != nil {
					t.Fatal(err)
				}
				out, _ := json.Marshal(ev)
				sameJSON(t, "event", in, out, nil)
			}
		})
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, pat := range []string{"*.json", "bad/*.json"} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := events.ParseEvent(raw)
		if err != nil {
			if !errors.Is(err, events.ErrBadEvent) || ev.Items != nil {
				t.Fatalf("error %v (items %+v): want ErrBadEvent and no items", err, ev.Items)
			}
			return
		}
		if len(ev.Items) == 0 || (!ev.Batch() && len(ev.Items) != 1) {
			t.Fatalf("%d items for shape %q", len(ev.Items), ev.Shape)
		}
		for i, it := range ev.Items {
			if it.Err != nil {
				if !errors.Is(it.Err, events.ErrBadEvent) || it.Triggers != nil {
					t.Errorf("item %d: %+v", i, it)
				}
				continue
			}
			if len(it.Triggers) == 0 {
				t.Errorf("item %d: no triggers and no error", i)
			}
			for _, tr := range it.Triggers {
				if tr.Queue == "" || tr.AlarmARN == "" || tr.Region == "" || tr.StateChangeTime.IsZero() || !knownDelivery[tr.Delivery] || tr.Depth < 0 {
					t.Errorf("incomplete trigger %+v", tr)
				}
				if tr.State == sluice.StateAlarm && tr.DepthSource != events.DepthFromDatapoint {
					t.Errorf("ALARM with DepthSource %q", tr.DepthSource)
				}
			}
		}
	})
}

// BenchmarkParseEvent: shape detection and strict parsing of each delivery.
func BenchmarkParseEvent(b *testing.B) {
	for _, f := range []string{"alarm-sns-burst.json", "alarm-eventbridge-burst.json", "alarm-lambda-burst.json", "sqs-batch.json"} {
		raw := read(b, f)
		b.Run(f, func(b *testing.B) {
			for b.Loop() {
				if _, err := events.ParseEvent(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
