package events

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice"

	awsevents "github.com/aws/aws-lambda-go/events"
)

// SQSEventSource is the eventSource of every record Lambda receives from an
// SQS event source mapping (aws-lambda-go events.SQSMessage.EventSource).
const SQSEventSource = "aws:sqs"

// isSQS reports whether the event's first record says it comes from SQS
// (lower-case "eventSource", as SQS records spell it; SNS records use
// "EventSource").
func isSQS(top map[string]json.RawMessage) bool {
	var recs []json.RawMessage
	if json.Unmarshal(top["Records"], &recs) != nil || len(recs) == 0 {
		return false
	}
	var first map[string]json.RawMessage
	if json.Unmarshal(recs[0], &first) != nil || first == nil {
		return false
	}
	var src string
	_ = json.Unmarshal(first["eventSource"], &src)
	return src == SQSEventSource
}

// ParseSQSBatch parses an SQS event as Lambda delivers it (aws-lambda-go
// events.SQSEvent) whose messages carry CloudWatch alarms: each body is an SNS
// notification envelope (an SNS topic subscribed by the queue: Type
// "Notification", Message holding the alarm payload), the alarm payload
// itself (SNS raw message delivery), or an EventBridge "CloudWatch Alarm
// State Change" event (an EventBridge rule targeting the queue). Each message
// is one [Item] (ID = messageId) with one trigger or its own error, so one
// bad message does not refuse the others. The error is for the batch as a
// whole (not JSON, Records not an array).
func ParseSQSBatch(raw []byte) (Event, error) {
	top, err := decodeTop(raw)
	if err != nil {
		return Event{}, err
	}
	if !has(top, "Records") {
		return Event{}, bad("event", "Records", "", "missing: not an SQS event")
	}
	return parseSQS(top)
}

func parseSQS(top map[string]json.RawMessage) (Event, error) {
	var records []json.RawMessage
	if err := json.Unmarshal(top["Records"], &records); err != nil {
		return Event{}, &ParseError{Source: "event", Field: "Records", Err: fmt.Errorf("not an array: %w", err)}
	}
	if len(records) == 0 {
		return Event{}, bad("event", "Records", "", "empty")
	}
	ev := Event{Shape: ShapeSQS, Items: make([]Item, 0, len(records))}
	for i, r := range records {
		src := fmt.Sprintf("sqs message %d", i)
		var m awsevents.SQSMessage
		if err := json.Unmarshal(r, &m); err != nil {
			ev.Items = append(ev.Items, Item{Err: &ParseError{Source: src, Err: fmt.Errorf("not an SQS message: %w", err)}})
			continue
		}
		it := Item{ID: m.MessageId}
		switch {
		case m.EventSource != SQSEventSource:
			it.Err = bad(src, "eventSource", m.EventSource, "not "+SQSEventSource)
		case m.MessageId == "":
			it.Err = bad(src, "messageId", "", "empty")
		default:
			t, err := sqsBody(src, m.Body)
			if err != nil {
				it.Err = err
			} else {
				it.Triggers = append(it.Triggers, t)
			}
		}
		ev.Items = append(ev.Items, it)
	}
	return ev, nil
}

// snsEnvelope is an SNS notification as an SQS subscriber receives it (the
// body of the message, without raw message delivery).
type snsEnvelope struct {
	Type     string `json:"Type"`
	TopicArn string `json:"TopicArn"`
	Message  string `json:"Message"`
}

func sqsBody(src, body string) (t sluice.Trigger, err error) {
	if !json.Valid([]byte(body)) {
		return t, bad(src, "body", body, "not JSON")
	}
	top, err := decodeTop([]byte(body))
	if err != nil {
		pe := err.(*ParseError)
		return t, &ParseError{Source: src, Field: "body", Err: pe.Err}
	}
	switch {
	case has(top, "Type") && has(top, "Message"):
		var env snsEnvelope
		if err := json.Unmarshal([]byte(body), &env); err != nil {
			return t, &ParseError{Source: src, Field: "body", Err: fmt.Errorf("not an SNS notification: %w", err)}
		}
		if env.Type != "Notification" {
			return t, bad(src, "body.Type", env.Type, "not Notification")
		}
		return alarmMessage(src, "body.Message", DeliverySQSPrefix+DeliverySNS, env.Message)
	case has(top, "AlarmName"):
		return alarmMessage(src, "body", DeliverySQSPrefix+DeliverySNS+"-raw", body)
	case has(top, "detail-type"):
		return eventBridge(src, DeliverySQSPrefix+DeliveryEventBridge, []byte(body))
	}
	return t, bad(src, "body", "", "not a CloudWatch alarm message (want an SNS notification, a raw alarm payload or an EventBridge event)")
}
