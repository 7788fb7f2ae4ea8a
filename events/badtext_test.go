package events_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
)

// Invalid UTF-8 (decoded by encoding/json as U+FFFD) in a string the parser
// keeps is refused naming the field, in every delivery shape (L8).
func TestBadUTF8(t *testing.T) {
	const why = `U+FFFD at byte %s: invalid UTF-8 (sent as invalid bytes or as the replacement character)`
	// msg builds the message; the test writes U+FFFD as \ufffd in prefix.
	msg := func(prefix, at string) string {
		return strings.ReplaceAll(prefix, `\ufffd`, "\ufffd") + ": " + strings.Replace(why, "%s", at, 1)
	}
	burst := string(read(t, "alarm-sns-burst.json"))
	eb := string(read(t, "alarm-eventbridge-burst.json"))
	la := string(read(t, "alarm-lambda-burst.json"))
	const name = "sluice-train-overseas-depth"
	cases := []struct {
		name string
		raw  []byte
		want string // exact error
	}{
		{"SNS: raw 0xff in AlarmName (inside Sns.Message)",
			[]byte(strings.Replace(burst, `AlarmName\":\"sluice-`, "AlarmName\\\":\\\"sluice-\xff", 1)),
			msg(`sns record 0: AlarmName "sluice-\ufffdtrain-overseas-depth"`, "7")},
		{"SNS: truncated two-byte sequence at the end of AlarmName",
			[]byte(strings.Replace(burst, `overseas-depth\",\"AlarmDescription`, "overseas-depth\xc3\\\",\\\"AlarmDescription", 1)),
			msg(`sns record 0: AlarmName "sluice-train-overseas-depth\ufffd"`, "27")},
		{"SNS: escaped replacement character in AlarmName",
			[]byte(strings.Replace(burst, `AlarmName\":\"sluice-`, `AlarmName\":\"sluice-\\ufffd`, 1)),
			msg(`sns record 0: AlarmName "sluice-\ufffdtrain-overseas-depth"`, "7")},
		{"SNS: raw 0xfe in AlarmArn",
			[]byte(strings.Replace(burst, `alarm:sluice-train-overseas-depth\",\"OldStateValue`, "alarm:sluice-train-overseas-depth\xfe\\\",\\\"OldStateValue", 1)),
			msg(`sns record 0: AlarmArn "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth\ufffd"`, "75")},
		{"EventBridge: raw 0xff in detail.alarmName",
			[]byte(strings.Replace(eb, `"alarmName": "sluice-`, "\"alarmName\": \"sluice-\xff", 1)),
			msg(`event: detail.alarmName "sluice-\ufffdtrain-overseas-depth"`, "7")},
		{"EventBridge: raw 0xff in resources (the ARN)",
			[]byte(strings.Replace(eb, `alarm:`+name+`"`+"\n", "alarm:"+name+"\xff\"\n", 1)),
			msg(`event: resources "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth\ufffd"`, "75")},
		{"Lambda action: raw 0xff in alarmData.alarmName",
			[]byte(strings.Replace(la, `"alarmName": "sluice-`, "\"alarmName\": \"sluice-\xff", 1)),
			msg(`event: alarmData.alarmName "sluice-\ufffdtrain-overseas-depth"`, "7")},
		{"Lambda action: raw 0xff in alarmArn",
			[]byte(strings.Replace(la, `alarm:`+name+`",`, "alarm:"+name+"\xff\",", 1)),
			msg(`event: alarmArn "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-train-overseas-depth\ufffd"`, "75")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if bytes.Equal(c.raw, read(t, "alarm-sns-burst.json")) || bytes.Equal(c.raw, []byte(eb)) || bytes.Equal(c.raw, []byte(la)) {
				t.Fatal("the edit did not apply")
			}
			got, err := events.Parse(c.raw)
			wantRefused(t, got, err, c.want)
			if err != nil && err.Error() != c.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, c.want)
			}
		})
	}
}

// An EventBridge or Lambda-action alarm whose reasonData datapoint and the
// first datapoint quoted in its reason text give different depths is refused,
// naming both fields (M7; events/doc.go, "Depth").
func TestBadDatapointsDisagree(t *testing.T) {
	edit := func(file, top, rd, reason string) []byte {
		return editJSON(t, file, func(v map[string]any) {
			st := obj(v, top, "state")
			st["reasonData"] = rd
			if reason != "" {
				st["reason"] = reason
			}
		})
	}
	const reason2 = "Threshold Crossed: 2 out of the last 2 datapoints [12.0 (29/11/26 10:21:00), 11.0 (29/11/26 10:20:00)] ..."
	cases := []struct {
		name string
		raw  []byte
		want string // exact error
	}{
		{"EventBridge: recentDatapoints 1000.0, reason 42.0 (the tester's file)",
			edit("alarm-eventbridge-burst.json", "detail", `{"version":"1.0","recentDatapoints":[1000.0],"threshold":10.0}`, ""),
			`event: detail.state.reasonData.recentDatapoints[0] "1000.0": depth 1000 disagrees with detail.state.reason, ` +
				`whose first datapoint is "42.0" (depth 42): refused rather than guess which is right`},
		{"EventBridge: newest evaluated datapoint 9.0, reason 12.0",
			edit("alarm-eventbridge-burst.json", "detail", `{"version":"1.0","recentDatapoints":[11.0,12.0],"evaluatedDatapoints":[`+
				`{"timestamp":"2026-11-29T10:21:00.000+0000","value":9.0},{"timestamp":"2026-11-29T10:20:00.000+0000","value":11.0}]}`, reason2),
			`event: detail.state.reasonData.evaluatedDatapoints[0].value "9.0": depth 9 disagrees with detail.state.reason, ` +
				`whose first datapoint is "12.0" (depth 12): refused rather than guess which is right`},
		{"EventBridge: the oldest recent datapoint is not the depth",
			edit("alarm-eventbridge-burst.json", "detail", `{"version":"1.0","recentDatapoints":[12.0,11.0]}`, reason2),
			`event: detail.state.reasonData.recentDatapoints[1] "11.0": depth 11 disagrees with detail.state.reason, ` +
				`whose first datapoint is "12.0" (depth 12): refused rather than guess which is right`},
		{"Lambda action: recentDatapoints 0.0, reason 42.0",
			edit("alarm-lambda-burst.json", "alarmData", `{"version":"1.0","recentDatapoints":[0.0]}`, ""),
			`event: alarmData.state.reasonData.recentDatapoints[0] "0.0": depth 0 disagrees with alarmData.state.reason, ` +
				`whose first datapoint is "42.0" (depth 42): refused rather than guess which is right`},
		{"Lambda action: the reason's datapoint is itself bad",
			edit("alarm-lambda-burst.json", "alarmData", `{"version":"1.0","recentDatapoints":[42.0]}`,
				"Threshold Crossed: 1 out of the last 1 datapoints [-42.0 (29/11/26 10:05:00)] ..."),
			`event: alarmData.state.reason "-42.0": datapoint is negative: a queue depth cannot be`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events.Parse(c.raw)
			wantRefused(t, got, err, c.want)
			if err != nil && err.Error() != c.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, c.want)
			}
		})
	}
}
