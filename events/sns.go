package events

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice"

	awsevents "github.com/aws/aws-lambda-go/events"
)

// SNSEventSource is the EventSource of every record Lambda receives from an
// SNS subscription (aws-lambda-go events.SNSEventRecord.EventSource).
const SNSEventSource = "aws:sns"

// ParseSNSAlarm parses an SNS event as Lambda delivers it (aws-lambda-go
// events.SNSEvent, events/sns.go) whose every Records[].Sns.Message is a
// CloudWatch alarm notification: a JSON string holding an
// events.CloudWatchAlarmSNSPayload (CloudWatch user guide, "Using Amazon SNS
// topics"; sample in aws-lambda-go events/testdata/cloudwatch-alarm-sns-payload-*.json).
//
// It returns one trigger per record, in record order, with Delivery
// [DeliverySNS]. If any record is bad the whole event is refused: the error is
// a [*ParseError] naming the record ("sns record N") and the field, and wraps
// [ErrBadEvent].
//
// The event and every Sns.Message are read strictly: a key repeated in one
// object (exactly, or up to case, which encoding/json would also merge) or
// nesting deeper than 64 levels refuses the event, with the key path in the
// error (`sns record 0: Sns.Message: duplicate key "NewStateValue"`).
//
// Per record: AlarmName must be 1 to 255 characters without control or format
// (Cf) characters; AlarmArn must be a CloudWatch alarm ARN
// (arn:aws[-cn|-us-gov|-iso…]:cloudwatch:<region>:<12 digits>:alarm:<name>)
// without control, whitespace or format characters. State is NewStateValue
// (ALARM, OK or INSUFFICIENT_DATA); StateChangeTime is parsed with
// [StateChangeTimeLayout] and kept in UTC; Region is the region code of
// AlarmArn (never the payload's human Region text). Queue is the single
// QueueName dimension of the AWS/SQS metric (Trigger.Dimensions, or
// Trigger.Metrics[].MetricStat.Metric.Dimensions for metric math), and that
// metric must be a queue depth: [MetricVisible] for a single-metric alarm;
// [MetricVisible] or [MetricNotVisible] for every AWS/SQS metric of a
// metric-math alarm, with at least one [MetricVisible]. Depth is the first
// datapoint in NewStateReason rounded up ([DepthFromDatapoint]). An ALARM
// whose reason quotes no datapoint is refused; an OK or INSUFFICIENT_DATA one
// gets Depth 0 ([DepthNone]). For a metric-math alarm the datapoint is the
// expression's value.
func ParseSNSAlarm(raw []byte) ([]sluice.Trigger, error) {
	top, err := decodeTop(raw)
	if err != nil {
		return nil, err
	}
	rawRecords, ok := top["Records"]
	if !ok {
		return nil, bad("event", "Records", "", "missing: not an SNS event")
	}
	var records []json.RawMessage
	if err := json.Unmarshal(rawRecords, &records); err != nil {
		return nil, &ParseError{Source: "event", Field: "Records", Err: fmt.Errorf("not an array: %w", err)}
	}
	if len(records) == 0 {
		return nil, bad("event", "Records", "", "empty")
	}
	out := make([]sluice.Trigger, 0, len(records))
	for i, r := range records {
		t, err := snsRecord(fmt.Sprintf("sns record %d", i), r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func snsRecord(src string, raw json.RawMessage) (sluice.Trigger, error) {
	var rec awsevents.SNSEventRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return sluice.Trigger{}, &ParseError{Source: src, Err: fmt.Errorf("not an SNS record: %w", err)}
	}
	if rec.EventSource != SNSEventSource {
		return sluice.Trigger{}, bad(src, "EventSource", rec.EventSource, "not "+SNSEventSource)
	}
	return alarmMessage(src, "Sns.Message", DeliverySNS, rec.SNS.Message)
}

// alarmMessage parses a CloudWatch alarm notification sent as the JSON text
// msg (an SNS Message, or an SQS body under raw message delivery); field
// names where msg was found.
func alarmMessage(src, field, delivery, msg string) (sluice.Trigger, error) {
	if strings.TrimSpace(msg) == "" {
		return sluice.Trigger{}, bad(src, field, "", "empty")
	}
	if !json.Valid([]byte(msg)) {
		return sluice.Trigger{}, bad(src, field, msg, "not JSON")
	}
	if err := checkStrictJSON([]byte(msg)); err != nil {
		return sluice.Trigger{}, &ParseError{Source: src, Field: field, Err: err}
	}
	var p awsevents.CloudWatchAlarmSNSPayload
	if err := json.Unmarshal([]byte(msg), &p); err != nil {
		return sluice.Trigger{}, &ParseError{Source: src, Field: field, Err: fmt.Errorf("not a CloudWatch alarm notification: %w", err)}
	}
	return alarmTrigger(src, delivery, &p)
}
