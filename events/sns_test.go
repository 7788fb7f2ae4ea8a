package events_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	awsevents "github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/events"
)

const dir = "../testdata/events"

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// good lists every file in testdata/events with the trigger it must give.
var good = map[string]sluice.Trigger{
	"alarm-sns-burst.json": {
		AlarmName:       "sluice-train-overseas-depth",
		AlarmARN:        "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth",
		State:           sluice.StateAlarm,
		StateChangeTime: utc("2026-11-29T10:05:00Z"),
		Region:          "us-east-1",
		Queue:           "train-overseas",
		Depth:           42,
		DepthSource:     "alarm-datapoint",
		Delivery:        "sns",
	},
	"alarm-sns-beijing.json": {
		AlarmName:       "sluice-train-beijing-depth",
		AlarmARN:        "arn:aws-cn:cloudwatch:cn-north-1:210987654321:alarm:sluice-train-beijing-depth",
		State:           sluice.StateAlarm,
		StateChangeTime: utc("2026-11-29T10:12:00Z"),
		Region:          "cn-north-1",
		Queue:           "train-beijing",
		Depth:           6,
		DepthSource:     "alarm-datapoint",
		Delivery:        "sns",
	},
	"alarm-sns-nockpt.json": {
		AlarmName:       "sluice-finetune-nockpt-depth",
		AlarmARN:        "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-finetune-nockpt-depth",
		State:           sluice.StateAlarm,
		StateChangeTime: utc("2026-11-29T10:07:00Z"),
		Region:          "us-east-1",
		Queue:           "finetune-nockpt",
		Depth:           3, // first of [3.0 (..), 2.0 (..)]
		DepthSource:     "alarm-datapoint",
		Delivery:        "sns",
	},
	"alarm-sns-metrics.json": {
		AlarmName:       "sluice-train-overseas-backlog",
		AlarmARN:        "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-backlog",
		State:           sluice.StateAlarm,
		StateChangeTime: utc("2026-11-29T10:22:00Z"),
		Region:          "us-east-1",
		Queue:           "train-overseas",
		Depth:           12,
		DepthSource:     "alarm-datapoint",
		Delivery:        "sns",
	},
	"alarm-sns-ok.json": {
		AlarmName:       "sluice-train-overseas-depth",
		AlarmARN:        "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth",
		State:           sluice.StateOK,
		StateChangeTime: utc("2026-11-29T11:40:00Z"),
		Region:          "us-east-1",
		Queue:           "train-overseas",
		Depth:           4,
		DepthSource:     "alarm-datapoint",
		Delivery:        "sns",
	},
}

// badFiles lists every file in testdata/events/bad with the text its error
// must contain (the field, or what is wrong with the event as a whole).
var badFiles = map[string]string{
	"not-json.json":           "event: not JSON",
	"no-records.json":         "event: Records: empty",
	"empty-message.json":      `sns record 0: Sns.Message: empty`,
	"message-not-json.json":   `sns record 0: Sns.Message "ALARM: \"sluice-train-overseas-depth\" in US East (N. Virginia)": not JSON`,
	"unknown-state.json":      `sns record 0: NewStateValue "PENDING": unknown state`,
	"no-queue-dimension.json": `sns record 0: Trigger.Dimensions: no QueueName dimension of an AWS/SQS metric`,
	"rfc3339-time.json":       `sns record 0: StateChangeTime "2026-11-29T10:05:00Z": want layout 2006-01-02T15:04:05.000-0700`,
	"non-sqs-namespace.json":  `sns record 0: Trigger.Namespace "AWS/EC2": not AWS/SQS`,
	"negative-depth.json":     `sns record 0: NewStateReason "-3.0": datapoint is negative`,
	"alarm-no-datapoint.json": `sns record 0: NewStateReason "Threshold Crossed: no datapoints were received`,
	"not-sns-record.json":     `sns record 0: EventSource "aws:sqs": not aws:sns`,
	"duplicate-state.json":    `sns record 0: Sns.Message: duplicate key "NewStateValue"`,
	"duplicate-records.json":  `event: duplicate key "Records"`,
	"arn-zero-width-space.json": `sns record 0: AlarmArn "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth\u200b": ` +
		`U+200B at byte 75: control, whitespace or format character`,
	"age-metric.json":           `sns record 0: Trigger.MetricName "ApproximateAgeOfOldestMessage": an age in seconds, not a queue depth`,
	"two-queue-dimensions.json": `sns record 0: Trigger.Dimensions "train-beijing": second QueueName dimension (the first names "train-overseas")`,
	"alarm-name-escape.json":    `sns record 0: AlarmName "\x1b[2J\x1b[1;31msluice-train-overseas-depth": U+001B at byte 0: control or format character`,
	"alarm-name-invalid-utf8.json": "sns record 0: AlarmName \"sluice-\ufffd\ufffd-depth\": U+FFFD at byte 7: invalid UTF-8 " +
		`(sent as invalid bytes or as the replacement character)`,
}

func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(good)+len(others) {
		t.Errorf("%d files in %s, %d in the tables: every file needs a row (good, or others in alarmdata_test.go)", len(files), dir, len(good)+len(others))
	}
	for _, f := range files {
		name := filepath.Base(f)
		if _, ok := others[name]; ok {
			continue // TestOtherShapes
		}
		t.Run(name, func(t *testing.T) {
			want, ok := good[name]
			if !ok {
				t.Fatalf("no row for %s", name)
			}
			for _, parse := range []struct {
				name string
				fn   func([]byte) ([]sluice.Trigger, error)
			}{{"Parse", events.Parse}, {"ParseSNSAlarm", events.ParseSNSAlarm}} {
				got, err := parse.fn(read(t, name))
				if err != nil {
					t.Fatalf("%s: %v", parse.name, err)
				}
				if len(got) != 1 {
					t.Fatalf("%s: %d triggers, want 1", parse.name, len(got))
				}
				if got[0] != want {
					t.Errorf("%s:\n got %+v\nwant %+v", parse.name, got[0], want)
				}
				if got[0].StateChangeTime.Location() != time.UTC {
					t.Errorf("%s: StateChangeTime in %v, want UTC", parse.name, got[0].StateChangeTime.Location())
				}
			}
		})
	}
}

func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(dir, "bad", "*.json"))
	if len(files) != len(badFiles) {
		t.Errorf("%d files in %s/bad, %d in the table: every file needs a row", len(files), dir, len(badFiles))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want, ok := badFiles[name]
			if !ok {
				t.Fatalf("no row for %s", name)
			}
			for _, parse := range []func([]byte) ([]sluice.Trigger, error){events.Parse, events.ParseSNSAlarm} {
				got, err := parse(read(t, "bad/"+name))
				if err == nil {
					t.Fatalf("no error; got %+v", got)
				}
				if got != nil {
					t.Errorf("triggers returned with the error: %+v", got)
				}
				if !errors.Is(err, events.ErrBadEvent) {
					t.Errorf("error %q does not wrap ErrBadEvent", err)
				}
				var pe *events.ParseError
				if !errors.As(err, &pe) {
					t.Errorf("error %q is not a *ParseError", err)
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n  %s\ndoes not contain\n  %s", err, want)
				}
			}
		})
	}
}

// records returns the Records of a testdata file, for splicing events together.
func records(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(read(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Records
}

func snsEvent(t *testing.T, recs ...json.RawMessage) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"Records": recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeveralRecords(t *testing.T) {
	burst := records(t, "alarm-sns-burst.json")[0]
	beijing := records(t, "alarm-sns-beijing.json")[0]
	got, err := events.Parse(snsEvent(t, burst, beijing))
	if err != nil {
		t.Fatal(err)
	}
	want := []sluice.Trigger{good["alarm-sns-burst.json"], good["alarm-sns-beijing.json"]}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	// One bad record refuses the whole event, and the error names it.
	badRec := records(t, "bad/unknown-state.json")[0]
	got, err = events.Parse(snsEvent(t, burst, beijing, badRec))
	if err == nil || got != nil {
		t.Fatalf("got %v, %v; want the whole event refused", got, err)
	}
	if !errors.Is(err, events.ErrBadEvent) || !strings.HasPrefix(err.Error(), `sns record 2: NewStateValue "PENDING"`) {
		t.Errorf("error %q: want it to name sns record 2 and wrap ErrBadEvent", err)
	}
}

// alarmWith returns the burst event with its alarm payload changed by edit.
func alarmWith(t *testing.T, edit func(p map[string]any)) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(read(t, "alarm-sns-burst.json"), &ev); err != nil {
		t.Fatal(err)
	}
	sns := ev["Records"].([]any)[0].(map[string]any)["Sns"].(map[string]any)
	var p map[string]any
	if err := json.Unmarshal([]byte(sns["Message"].(string)), &p); err != nil {
		t.Fatal(err)
	}
	edit(p)
	m, _ := json.Marshal(p)
	sns["Message"] = string(m)
	b, _ := json.Marshal(ev)
	return b
}

const reasonFmt = "Threshold Crossed: 2 out of the last 2 datapoints [%s (29/11/26 10:05:00), 40.0 (29/11/26 10:04:00)] " +
	"were greater than or equal to the threshold (10.0) (minimum 2 datapoints for OK -> ALARM transition)."

func TestEdgeCases(t *testing.T) {
	reason := func(dp string) func(map[string]any) {
		return func(p map[string]any) { p["NewStateReason"] = strings.Replace(reasonFmt, "%s", dp, 1) }
	}
	trig := func(p map[string]any) map[string]any { return p["Trigger"].(map[string]any) }
	cases := []struct {
		name    string
		edit    func(map[string]any)
		check   func(sluice.Trigger) bool
		wantErr string // "" = success
	}{
		{"fractional depth rounds up", reason("41.2"), func(tr sluice.Trigger) bool { return tr.Depth == 42 }, ""},
		{"exact depth kept", reason("42.000"), func(tr sluice.Trigger) bool { return tr.Depth == 42 }, ""},
		{"zero depth", reason("0.0"), func(tr sluice.Trigger) bool { return tr.Depth == 0 && tr.DepthSource == "alarm-datapoint" }, ""},
		{"E-notation depth", reason("1.5E3"), func(tr sluice.Trigger) bool { return tr.Depth == 1500 }, ""},
		{"huge depth", reason("1.0E12"), nil, "datapoint above"},
		{"depth not a number", reason("NaN"), nil, `NewStateReason "NaN": datapoint is not a decimal`},
		{"negative fraction", reason("-0.5"), nil, `NewStateReason "-0.5": datapoint is negative`},
		{"offset converted to UTC", func(p map[string]any) { p["StateChangeTime"] = "2026-11-29T18:05:00.000+0800" },
			func(tr sluice.Trigger) bool {
				return tr.StateChangeTime.Equal(utc("2026-11-29T10:05:00Z")) && tr.StateChangeTime.Location() == time.UTC
			}, ""},
		{"time without millis", func(p map[string]any) { p["StateChangeTime"] = "2026-11-29T10:05:00+0000" }, nil,
			`StateChangeTime "2026-11-29T10:05:00+0000": want layout`},
		{"time with colon offset", func(p map[string]any) { p["StateChangeTime"] = "2026-11-29T10:05:00.000+00:00" }, nil,
			`StateChangeTime "2026-11-29T10:05:00.000+00:00": want layout`},
		{"empty time", func(p map[string]any) { p["StateChangeTime"] = "" }, nil, "StateChangeTime: empty"},
		{"INSUFFICIENT_DATA without datapoint", func(p map[string]any) {
			p["NewStateValue"] = "INSUFFICIENT_DATA"
			p["NewStateReason"] = "Unchecked: Initial alarm creation"
		}, func(tr sluice.Trigger) bool {
			return tr.State == sluice.StateInsufficientData && tr.Depth == 0 && tr.DepthSource == "none"
		}, ""},
		{"OK treated as breaching has no datapoint", func(p map[string]any) {
			p["NewStateValue"] = "OK"
			p["NewStateReason"] = "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [NonBreaching]."
		}, func(tr sluice.Trigger) bool {
			return tr.State == sluice.StateOK && tr.Depth == 0 && tr.DepthSource == "none"
		}, ""},
		{"lower-case state", func(p map[string]any) { p["NewStateValue"] = "alarm" }, nil, `NewStateValue "alarm": unknown state`},
		{"empty state", func(p map[string]any) { p["NewStateValue"] = "" }, nil, "NewStateValue: empty"},
		{"no alarm name", func(p map[string]any) { delete(p, "AlarmName") }, nil, "AlarmName: empty"},
		{"no alarm ARN", func(p map[string]any) { delete(p, "AlarmArn") }, nil, "AlarmArn: empty"},
		// The ARN must be valid: there is no fallback to the human Region text.
		{"ARN without region is refused, no Region fallback", func(p map[string]any) {
			p["AlarmArn"] = "arn:aws:cloudwatch:REGION:ACCOUNT_NUMBER:alarm:EXAMPLE"
		}, nil, `AlarmArn "arn:aws:cloudwatch:REGION:ACCOUNT_NUMBER:alarm:EXAMPLE": not a CloudWatch alarm ARN`},
		{"ARN that is not an ARN", func(p map[string]any) {
			p["AlarmArn"] = "EXAMPLE"
			p["Region"] = ""
		}, nil, `AlarmArn "EXAMPLE": not a CloudWatch alarm ARN`},
		{"GovCloud region code", func(p map[string]any) {
			p["AlarmArn"] = "arn:aws-us-gov:cloudwatch:us-gov-west-1:123456789012:alarm:x"
		}, func(tr sluice.Trigger) bool { return tr.Region == "us-gov-west-1" }, ""},
		{"FIFO queue", func(p map[string]any) {
			trig(p)["Dimensions"] = []any{map[string]any{"name": "QueueName", "value": "train-overseas.fifo"}}
		}, func(tr sluice.Trigger) bool { return tr.Queue == "train-overseas.fifo" }, ""},
		{"empty queue name", func(p map[string]any) {
			trig(p)["Dimensions"] = []any{map[string]any{"name": "QueueName", "value": ""}}
		}, nil, "Trigger.Dimensions: empty QueueName"},
		{"queue name with a slash", func(p map[string]any) {
			trig(p)["Dimensions"] = []any{map[string]any{"name": "QueueName", "value": "a/b"}}
		}, nil, `Trigger.Dimensions "a/b": not an SQS queue name`},
		{"Trigger is not an object", func(p map[string]any) { p["Trigger"] = "x" }, nil,
			"Sns.Message: not a CloudWatch alarm notification"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(alarmWith(t, c.edit))
			if c.wantErr != "" {
				if err == nil || !errors.Is(err, events.ErrBadEvent) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %+v, %v; want an ErrBadEvent containing %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(got[0]) {
				t.Errorf("unexpected trigger %+v", got[0])
			}
		})
	}
}

func TestMetricMath(t *testing.T) {
	metrics := func(p map[string]any) []any { return p["Trigger"].(map[string]any)["Metrics"].([]any) }
	dims := func(m any) map[string]any {
		return m.(map[string]any)["MetricStat"].(map[string]any)["Metric"].(map[string]any)
	}
	fromMetrics := func(edit func(p map[string]any)) []byte {
		var ev map[string]any
		_ = json.Unmarshal(read(t, "alarm-sns-metrics.json"), &ev)
		sns := ev["Records"].([]any)[0].(map[string]any)["Sns"].(map[string]any)
		var p map[string]any
		_ = json.Unmarshal([]byte(sns["Message"].(string)), &p)
		edit(p)
		m, _ := json.Marshal(p)
		sns["Message"] = string(m)
		b, _ := json.Marshal(ev)
		return b
	}
	cases := []struct {
		name, wantErr string
		edit          func(p map[string]any)
	}{
		{"two queues", `Trigger.Metrics[2].MetricStat.Metric.Dimensions "other-q": second queue (Trigger.Metrics[1].MetricStat.Metric.Dimensions names "train-overseas")`,
			func(p map[string]any) {
				dims(metrics(p)[2])["Dimensions"] = []any{map[string]any{"name": "QueueName", "value": "other-q"}}
			}},
		{"no SQS metric", "Trigger.Metrics: no QueueName dimension of an AWS/SQS metric", func(p map[string]any) {
			dims(metrics(p)[1])["Namespace"] = "Custom/Jobs"
			dims(metrics(p)[2])["Namespace"] = "Custom/Jobs"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := events.Parse(fromMetrics(c.edit))
			if err == nil || !errors.Is(err, events.ErrBadEvent) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("got %v; want an ErrBadEvent containing %q", err, c.wantErr)
			}
		})
	}
	// One non-SQS metric next to the queue's metric is fine.
	got, err := events.Parse(fromMetrics(func(p map[string]any) { dims(metrics(p)[2])["Namespace"] = "Custom/Jobs" }))
	if err != nil || got[0].Queue != "train-overseas" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestParseShapes(t *testing.T) {
	cases := map[string]string{
		"":                        "event: not JSON",
		"   ":                     "event: not JSON",
		`[1,2]`:                   "event: not a JSON object",
		`"Records"`:               "event: not a JSON object",
		`null`:                    "event: not a JSON object",
		`{}`:                      "event: unrecognised event shape",
		`{"source":"aws.events"}`: "event: unrecognised event shape (top-level keys [source]",
		`{"Records":{}}`:          "event: Records: not an array",
		`{"Records":null}`:        "event: Records: empty",
		`{"Records":[null]}`:      `sns record 0: EventSource: not aws:sns`,
		`{"Records":[{"EventSource":"aws:sns","Sns":{"Timestamp":"yesterday"}}]}`: "sns record 0: not an SNS record",
	}
	for in, want := range cases {
		_, err := events.Parse([]byte(in))
		if err == nil || !errors.Is(err, events.ErrBadEvent) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an ErrBadEvent containing %q", in, err, want)
		}
	}
	// ParseSNSAlarm refuses a non-SNS object rather than calling it unrecognised.
	if _, err := events.ParseSNSAlarm([]byte(`{}`)); err == nil || err.Error() != "event: Records: missing: not an SNS event" {
		t.Errorf("ParseSNSAlarm({}) = %v", err)
	}
}

func TestParseErrorMessage(t *testing.T) {
	e := &events.ParseError{Source: "sns record 3", Field: "NewStateReason", Value: strings.Repeat("x", 200), Err: errors.New("boom")}
	want := `sns record 3: NewStateReason "` + strings.Repeat("x", 120) + `...": boom`
	if e.Error() != want {
		t.Errorf("got %s\nwant %s", e, want)
	}
	if !errors.Is(e, events.ErrBadEvent) {
		t.Error("ParseError does not wrap ErrBadEvent")
	}
}

// TestRoundTrip proves the testdata is the real wire shape: each file decodes
// with aws-lambda-go's events.SNSEvent, each Message with
// events.CloudWatchAlarmSNSPayload, and re-encoding loses nothing but the
// fields AWS sends and aws-lambda-go does not model (listed in unmodelled) and
// zero or empty values (omitempty) — so a misspelt or misplaced field name in
// the testdata fails here.
func TestRoundTrip(t *testing.T) {
	unmodelled := map[string]bool{
		"AlarmConfigurationUpdatedTimestamp": true, "OKActions": true, "AlarmActions": true, "InsufficientDataActions": true,
	}
	files, _ := filepath.Glob(filepath.Join(dir, "alarm-sns-*.json"))
	for _, bd := range []string{"empty-message.json", "unknown-state.json", "no-queue-dimension.json", "rfc3339-time.json",
		"non-sqs-namespace.json", "negative-depth.json", "alarm-no-datapoint.json", "not-sns-record.json",
		"arn-zero-width-space.json", "age-metric.json", "two-queue-dimensions.json", "alarm-name-escape.json"} {
		files = append(files, filepath.Join(dir, "bad", bd))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var ev awsevents.SNSEvent
			if err := json.Unmarshal(in, &ev); err != nil {
				t.Fatalf("not an events.SNSEvent: %v", err)
			}
			out, _ := json.Marshal(ev)
			// Message is compared decoded, below; blank it on both sides here.
			sameJSON(t, "event", blankMessages(t, in), blankMessages(t, out), nil)
			for i, r := range ev.Records {
				if r.SNS.Message == "" {
					continue
				}
				var p awsevents.CloudWatchAlarmSNSPayload
				if err := json.Unmarshal([]byte(r.SNS.Message), &p); err != nil {
					t.Fatalf("record %d Message is not an events.CloudWatchAlarmSNSPayload: %v", i, err)
				}
				pout, _ := json.Marshal(p)
				sameJSON(t, "Message", []byte(r.SNS.Message), pout, unmodelled)
			}
		})
	}
}

func blankMessages(t *testing.T, b []byte) []byte {
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, r := range v["Records"].([]any) {
		sns := r.(map[string]any)["Sns"].(map[string]any)
		sns["Message"] = ""
		// time.Time re-encodes "10:22:00.190Z" as "10:22:00.19Z": compare instants.
		if ts, ok := sns["Timestamp"].(string); ok {
			tm, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("Sns.Timestamp %q: %v", ts, err)
			}
			sns["Timestamp"] = tm.UTC().Format(time.RFC3339Nano)
		}
	}
	out, _ := json.Marshal(v)
	return out
}

// sameJSON fails unless in and out hold the same values, except that keys in
// skip (at any depth) and zero values may be missing from out.
func sameJSON(t *testing.T, what string, in, out []byte, skip map[string]bool) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	a = prune(a, skip)
	b = prune(b, nil)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Errorf("%s does not round-trip through aws-lambda-go:\ntestdata %s\nre-encoded %s", what, ja, jb)
	}
}

// prune drops skipped keys, zero values (null, false, 0, "") and empty objects
// and arrays (after pruning) from objects: omitempty drops them on re-encoding,
// and aws-lambda-go has no omitempty on nested structs (MetricStat), so an
// expression entry re-encodes with an empty "MetricStat":{"Metric":{}}.
func prune(v any, skip map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = prune(e, skip)
			if skip[k] || isEmpty(e) {
				delete(x, k)
				continue
			}
			x[k] = e
		}
	case []any:
		for i, e := range x {
			x[i] = prune(e, skip)
		}
	}
	return v
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func FuzzParse(f *testing.F) {
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
		got, err := events.Parse(raw)
		if err != nil {
			if got != nil {
				t.Errorf("triggers %+v returned with error %v", got, err)
			}
			if !errors.Is(err, events.ErrBadEvent) {
				t.Errorf("error %v does not wrap ErrBadEvent", err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("success with no triggers")
		}
		for _, tr := range got {
			switch tr.State {
			case sluice.StateAlarm, sluice.StateOK, sluice.StateInsufficientData:
			default:
				t.Errorf("invalid state %q", tr.State)
			}
			if tr.Queue == "" {
				t.Error("empty Queue")
			}
			if tr.Depth < 0 {
				t.Errorf("negative Depth %d", tr.Depth)
			}
			if tr.State == sluice.StateAlarm && tr.DepthSource != events.DepthFromDatapoint {
				t.Errorf("ALARM with DepthSource %q", tr.DepthSource)
			}
			if tr.AlarmName == "" || tr.AlarmARN == "" || tr.Region == "" || tr.StateChangeTime.IsZero() || !knownDelivery[tr.Delivery] {
				t.Errorf("incomplete trigger %+v", tr)
			}
			if strings.ContainsFunc(tr.AlarmARN, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) ||
				!strings.HasPrefix(tr.AlarmARN, "arn:") || !strings.Contains(tr.AlarmARN, ":cloudwatch:"+tr.Region+":") {
				t.Errorf("AlarmARN %q with Region %q", tr.AlarmARN, tr.Region)
			}
			if utf8.RuneCountInString(tr.AlarmName) > 255 || strings.ContainsFunc(tr.AlarmName, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
				t.Errorf("AlarmName %q", tr.AlarmName)
			}
		}
	})
}
