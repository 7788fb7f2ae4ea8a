package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/events"
)

// messageText returns the burst event with its Sns.Message text changed by
// edit (a text edit, so duplicate keys and odd nesting survive).
func messageText(t *testing.T, edit func(msg string) string) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(read(t, "alarm-sns-burst.json"), &ev); err != nil {
		t.Fatal(err)
	}
	sns := ev["Records"].([]any)[0].(map[string]any)["Sns"].(map[string]any)
	msg := sns["Message"].(string)
	edited := edit(msg)
	if edited == msg {
		t.Fatal("edit changed nothing")
	}
	sns["Message"] = edited
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceOnce replaces the single occurrence of old in s, failing the test if
// there is not exactly one.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%q occurs %d times, want 1", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

// wantRefused fails unless err is a *ParseError wrapping ErrBadEvent whose
// message contains want, and no triggers came with it.
func wantRefused(t *testing.T, got []sluice.Trigger, err error, want string) {
	t.Helper()
	var pe *events.ParseError
	if err == nil || got != nil || !errors.Is(err, events.ErrBadEvent) || !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %+v, %v\nwant a *ParseError wrapping ErrBadEvent containing %q", got, err, want)
	}
}

func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestDuplicateKeys(t *testing.T) {
	burst := string(read(t, "alarm-sns-burst.json"))
	rec := string(records(t, "alarm-sns-burst.json")[0])
	envelope := func(edit func(string) string) func(*testing.T) []byte {
		return func(t *testing.T) []byte { return []byte(edit(burst)) }
	}
	message := func(edit func(string) string) func(*testing.T) []byte {
		return func(t *testing.T) []byte { return messageText(t, edit) }
	}
	cases := []struct {
		name string
		raw  func(*testing.T) []byte
		want string // exact error; "" = accepted
	}{
		{"Records twice at the top",
			func(*testing.T) []byte { return []byte(`{"Records":[],"Records":[` + rec + `]}`) },
			`event: duplicate key "Records"`},
		{"Records twice, the first holding the alarm",
			func(*testing.T) []byte { return []byte(`{"Records":[` + rec + `],"Records":[]}`) },
			`event: duplicate key "Records"`},
		{"EventSource twice in a record", envelope(func(s string) string {
			return replaceOnce(t, s, `"EventSource": "aws:sns",`, `"EventSource": "aws:sqs", "EventSource": "aws:sns",`)
		}), `event: duplicate key "Records[0].EventSource"`},
		{"Message twice in Sns", envelope(func(s string) string {
			return replaceOnce(t, s, `"Type": "Notification",`, `"Type": "Notification", "Message": "{}",`)
		}), `event: duplicate key "Records[0].Sns.Message"`},
		{"Message twice up to case", envelope(func(s string) string {
			return replaceOnce(t, s, `"Type": "Notification",`, `"Type": "Notification", "message": "{}",`)
		}), `event: duplicate key "Records[0].Sns.Message" (same field as "message" to a case-insensitive decoder)`},
		{"NewStateValue OK then ALARM", message(func(s string) string {
			return replaceOnce(t, s, `"NewStateValue":"ALARM"`, `"NewStateValue":"OK","NewStateValue":"ALARM"`)
		}), `sns record 0: Sns.Message: duplicate key "NewStateValue"`},
		{"AlarmArn twice", message(func(s string) string {
			return replaceOnce(t, s, `"OldStateValue"`, `"AlarmArn":"arn:aws:cloudwatch:us-east-1:123456789012:alarm:other","OldStateValue"`)
		}), `sns record 0: Sns.Message: duplicate key "AlarmArn"`},
		{"AlarmArn twice up to case", message(func(s string) string {
			return replaceOnce(t, s, `"OldStateValue"`, `"ALARMARN":"arn:aws:cloudwatch:us-east-1:123456789012:alarm:other","OldStateValue"`)
		}), `sns record 0: Sns.Message: duplicate key "ALARMARN" (same field as "AlarmArn" to a case-insensitive decoder)`},
		{"dimension name twice, deep in Trigger", message(func(s string) string {
			return replaceOnce(t, s, `{"value":"train-overseas","name":"QueueName"}`, `{"value":"train-overseas","name":"QueueName","name":"Other"}`)
		}), `sns record 0: Sns.Message: duplicate key "Trigger.Dimensions[0].name"`},
		{"same key in different objects is fine", message(func(s string) string {
			return replaceOnce(t, s, `"Period":60`, `"Period":60,"Extra":{"Period":60,"x":[{"Period":1},{"Period":2}]}`)
		}), ""},
		{"message attribute names are case-sensitive", envelope(func(s string) string {
			return replaceOnce(t, s, `"MessageAttributes": {}`, `"MessageAttributes": {"Team":{"Type":"String","Value":"a"},"team":{"Type":"String","Value":"b"}}`)
		}), ""},
		{"message attribute repeated exactly", envelope(func(s string) string {
			return replaceOnce(t, s, `"MessageAttributes": {}`, `"MessageAttributes": {"Team":{"Type":"String","Value":"a"},"Team":{"Type":"String","Value":"b"}}`)
		}), `event: duplicate key "Records[0].Sns.MessageAttributes.Team"`},
		{"64 levels in the message are fine", message(func(s string) string {
			return replaceOnce(t, s, `{"AlarmName"`, `{"Deep":`+nest(63)+`,"AlarmName"`)
		}), ""},
		{"65 levels in the message", message(func(s string) string {
			return replaceOnce(t, s, `{"AlarmName"`, `{"Deep":`+nest(64)+`,"AlarmName"`)
		}), `sns record 0: Sns.Message: nested deeper than 64 levels at "Deep` + strings.Repeat("[0]", 63) + `"`},
		{"65 levels in the envelope",
			func(*testing.T) []byte { return []byte(`{"Records":[` + rec + `],"x":` + nest(64) + `}`) },
			`event: nested deeper than 64 levels at "x` + strings.Repeat("[0]", 63) + `"`},
		{"10000 levels in the envelope",
			func(*testing.T) []byte { return []byte(`{"x":` + nest(9999) + `}`) },
			`event: nested deeper than 64 levels`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := c.raw(t)
			for _, parse := range []func([]byte) ([]sluice.Trigger, error){events.Parse, events.ParseSNSAlarm} {
				got, err := parse(raw)
				if c.want == "" {
					if err != nil || len(got) != 1 || got[0] != good["alarm-sns-burst.json"] {
						t.Fatalf("got %+v, %v; want the burst trigger", got, err)
					}
					continue
				}
				wantRefused(t, got, err, c.want)
				if !strings.HasPrefix(err.Error(), c.want) {
					t.Errorf("error\n  %s\nwant it to start with\n  %s", err, c.want)
				}
			}
		})
	}
}

func TestAlarmARN(t *testing.T) {
	arn := func(v string) func(map[string]any) { return func(p map[string]any) { p["AlarmArn"] = v } }
	const base = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth"
	cases := []struct {
		name       string
		edit       func(map[string]any)
		wantRegion string // "" = refused with wantErr
		wantErr    string
	}{
		{"trailing newline", arn(base + "\n"), "", `AlarmArn "` + base + `\n": U+000A at byte 75: control, whitespace or format character`},
		{"trailing zero-width space", arn(base + "\u200b"), "", `AlarmArn "` + base + `\u200b": U+200B at byte 75: control, whitespace or format character`},
		{"leading byte-order mark", arn("\ufeff" + base), "", `U+FEFF at byte 0`},
		{"right-to-left override in the name", arn("arn:aws:cloudwatch:us-east-1:123456789012:alarm:a\u202eb"), "", `U+202E at byte 49`},
		{"space in the name", arn("arn:aws:cloudwatch:us-east-1:123456789012:alarm:my alarm"), "", `U+0020 at byte 50`},
		{"no-break space", arn("arn:aws:cloudwatch:us-east-1:123456789012:alarm:my\u00a0alarm"), "", `U+00A0 at byte 50`},
		{"tab", arn("arn:aws:cloudwatch:us-east-1:123456789012:alarm:a\tb"), "", `U+0009 at byte 49`},
		{"11-digit account", arn("arn:aws:cloudwatch:us-east-1:12345678901:alarm:x"), "", `not a CloudWatch alarm ARN`},
		{"SNS topic ARN", arn("arn:aws:sns:us-east-1:123456789012:sluice-alarms"), "", `not a CloudWatch alarm ARN`},
		{"dashboard, not an alarm", arn("arn:aws:cloudwatch::123456789012:dashboard/x"), "", `not a CloudWatch alarm ARN`},
		{"empty name", arn("arn:aws:cloudwatch:us-east-1:123456789012:alarm:"), "", `not a CloudWatch alarm ARN`},
		{"unknown partition", arn("arn:aws-xx:cloudwatch:us-east-1:123456789012:alarm:x"), "", `not a CloudWatch alarm ARN`},
		{"upper-case region", arn("arn:aws:cloudwatch:US-EAST-1:123456789012:alarm:x"), "", `not a CloudWatch alarm ARN`},
		{"region that is not a code", arn("arn:aws:cloudwatch:east:123456789012:alarm:x"), "", `region "east": not an AWS region code`},
		{"China region in the aws partition", arn("arn:aws:cloudwatch:cn-north-1:123456789012:alarm:x"), "", `region cn-north-1 is not in partition aws`},
		{"aws-cn partition with a US region", arn("arn:aws-cn:cloudwatch:us-east-1:123456789012:alarm:x"), "", `region us-east-1 is not in partition aws-cn`},
		{"GovCloud region in the aws partition", arn("arn:aws:cloudwatch:us-gov-west-1:123456789012:alarm:x"), "", `region us-gov-west-1 is not in partition aws`},
		{"aws-cn, Ningxia", arn("arn:aws-cn:cloudwatch:cn-northwest-1:210987654321:alarm:x"), "cn-northwest-1", ""},
		{"aws-iso", arn("arn:aws-iso:cloudwatch:us-iso-east-1:123456789012:alarm:x"), "us-iso-east-1", ""},
		{"aws-iso-b", arn("arn:aws-iso-b:cloudwatch:us-isob-east-1:123456789012:alarm:x"), "us-isob-east-1", ""},
		{"colon in the alarm name", arn("arn:aws:cloudwatch:eu-west-1:123456789012:alarm:a:b"), "eu-west-1", ""},
		{"region always from the ARN, not the Region text", func(p map[string]any) {
			p["AlarmArn"] = "arn:aws:cloudwatch:ap-southeast-5:123456789012:alarm:x"
			p["Region"] = "China (Beijing)"
		}, "ap-southeast-5", ""},
		{"region from the ARN when Region text is empty", func(p map[string]any) {
			p["Region"] = ""
		}, "us-east-1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(alarmWith(t, c.edit))
			if c.wantRegion == "" {
				wantRefused(t, got, err, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Region != c.wantRegion {
				t.Errorf("Region %q, want %q", got[0].Region, c.wantRegion)
			}
		})
	}
}

func TestAlarmName(t *testing.T) {
	cases := []struct {
		name, value string
		wantErr     string // "" = accepted, AlarmName kept as sent
	}{
		{"terminal escape", "\x1b[2J\x1b[31msluice", `AlarmName "\x1b[2J\x1b[31msluice": U+001B at byte 0: control or format character`},
		{"newline", "sluice\nforged log line", `U+000A at byte 6`},
		{"carriage return", "sluice\r", `U+000D at byte 6`},
		{"DEL", "sluice\x7f", `U+007F at byte 6`},
		{"C1 control", "sluice\u009b31m", `U+009B at byte 6`},
		{"zero-width space", "sluice\u200b-depth", `U+200B at byte 6`},
		{"right-to-left override", "\u202esluice", `U+202E at byte 0`},
		{"line separator", "a\u2028b", `U+2028 at byte 1`},
		{"blank", "   ", `AlarmName: empty`},
		{"256 characters", strings.Repeat("a", 256), `256 characters: longer than CloudWatch's 255`},
		{"256 two-byte characters", strings.Repeat("é", 256), `256 characters: longer than CloudWatch's 255`},
		{"255 characters", strings.Repeat("a", 255), ""},
		{"255 two-byte characters", strings.Repeat("é", 255), ""},
		{"spaces and non-ASCII letters", "Sluice 训练 backlog (us-east-1)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(alarmWith(t, func(p map[string]any) { p["AlarmName"] = c.value }))
			if c.wantErr != "" {
				wantRefused(t, got, err, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got[0].AlarmName != c.value {
				t.Errorf("AlarmName %q, want %q", got[0].AlarmName, c.value)
			}
		})
	}
}

func TestQueueDimensionsAndMetric(t *testing.T) {
	trig := func(p map[string]any) map[string]any { return p["Trigger"].(map[string]any) }
	dims := func(vals ...string) []any {
		var out []any
		for _, v := range vals {
			out = append(out, map[string]any{"name": "QueueName", "value": v})
		}
		return out
	}
	single := func(edit func(tr map[string]any)) []byte {
		return alarmWith(t, func(p map[string]any) { edit(trig(p)) })
	}
	math := func(edit func(ms []any)) []byte {
		var ev map[string]any
		if err := json.Unmarshal(read(t, "alarm-sns-metrics.json"), &ev); err != nil {
			t.Fatal(err)
		}
		sns := ev["Records"].([]any)[0].(map[string]any)["Sns"].(map[string]any)
		var p map[string]any
		if err := json.Unmarshal([]byte(sns["Message"].(string)), &p); err != nil {
			t.Fatal(err)
		}
		edit(trig(p)["Metrics"].([]any))
		m, _ := json.Marshal(p)
		sns["Message"] = string(m)
		b, _ := json.Marshal(ev)
		return b
	}
	metric := func(ms []any, i int) map[string]any {
		return ms[i].(map[string]any)["MetricStat"].(map[string]any)["Metric"].(map[string]any)
	}
	cases := []struct {
		name      string
		raw       []byte
		wantQueue string // "" = refused with wantErr
		wantErr   string
	}{
		{"single metric, two QueueName dimensions",
			single(func(tr map[string]any) { tr["Dimensions"] = dims("train-overseas", "train-beijing") }), "",
			`sns record 0: Trigger.Dimensions "train-beijing": second QueueName dimension (the first names "train-overseas"): want one queue per alarm`},
		{"single metric, the same QueueName twice",
			single(func(tr map[string]any) { tr["Dimensions"] = dims("train-overseas", "train-overseas") }), "",
			`Trigger.Dimensions "train-overseas": second QueueName dimension`},
		{"single metric, QueueName next to another dimension",
			single(func(tr map[string]any) {
				tr["Dimensions"] = append([]any{map[string]any{"name": "Team", "value": "ml"}}, dims("train-overseas")...)
			}), "train-overseas", ""},
		{"metric math, two QueueName dimensions in one metric",
			math(func(ms []any) { metric(ms, 1)["Dimensions"] = dims("train-overseas", "other-q") }), "",
			`Trigger.Metrics[1].MetricStat.Metric.Dimensions "other-q": second QueueName dimension (the first names "train-overseas")`},
		{"single metric, ApproximateAgeOfOldestMessage",
			single(func(tr map[string]any) { tr["MetricName"] = "ApproximateAgeOfOldestMessage" }), "",
			`sns record 0: Trigger.MetricName "ApproximateAgeOfOldestMessage": an age in seconds, not a queue depth: want ApproximateNumberOfMessagesVisible`},
		{"single metric, ApproximateNumberOfMessagesNotVisible",
			single(func(tr map[string]any) { tr["MetricName"] = "ApproximateNumberOfMessagesNotVisible" }), "",
			`Trigger.MetricName "ApproximateNumberOfMessagesNotVisible": messages in flight, not a backlog`},
		{"single metric, ApproximateNumberOfMessages (an attribute, not a metric)",
			single(func(tr map[string]any) { tr["MetricName"] = "ApproximateNumberOfMessages" }), "",
			`Trigger.MetricName "ApproximateNumberOfMessages": a GetQueueAttributes attribute, not an AWS/SQS CloudWatch metric`},
		{"single metric, NumberOfMessagesSent",
			single(func(tr map[string]any) { tr["MetricName"] = "NumberOfMessagesSent" }), "",
			`Trigger.MetricName "NumberOfMessagesSent": not a queue-depth metric`},
		{"single metric, no MetricName",
			single(func(tr map[string]any) { delete(tr, "MetricName") }), "",
			`Trigger.MetricName: empty: want ApproximateNumberOfMessagesVisible`},
		{"single metric, lower-case metric name",
			single(func(tr map[string]any) { tr["MetricName"] = "approximatenumberofmessagesvisible" }), "",
			`not a queue-depth metric`},
		{"metric math, age as the second metric",
			math(func(ms []any) { metric(ms, 2)["MetricName"] = "ApproximateAgeOfOldestMessage" }), "",
			`sns record 0: Trigger.Metrics[2].MetricStat.Metric.MetricName "ApproximateAgeOfOldestMessage": an age in seconds`},
		{"metric math, in-flight only",
			math(func(ms []any) { metric(ms, 1)["MetricName"] = "ApproximateNumberOfMessagesNotVisible" }), "",
			`sns record 0: Trigger.Metrics: no ApproximateNumberOfMessagesVisible metric: in-flight messages alone are not a backlog`},
		{"metric math, visible + in flight (fixture)", math(func(ms []any) {}), "train-overseas", ""},
		{"metric math, a non-SQS metric may be anything",
			math(func(ms []any) {
				metric(ms, 2)["Namespace"] = "Custom/Jobs"
				metric(ms, 2)["MetricName"] = "RunningJobs"
			}), "train-overseas", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(c.raw)
			if c.wantQueue == "" {
				wantRefused(t, got, err, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Queue != c.wantQueue {
				t.Errorf("Queue %q, want %q", got[0].Queue, c.wantQueue)
			}
		})
	}
}
