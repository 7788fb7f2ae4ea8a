package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice"
)

// Delivery names, as set in [sluice.Trigger].Delivery.
const (
	// DeliverySNS is an alarm notification delivered through an SNS topic
	// subscription (aws-lambda-go events.SNSEvent).
	DeliverySNS = "sns"
	// DeliveryEventBridge is an EventBridge "CloudWatch Alarm State Change"
	// event (aws-lambda-go events.CloudWatchEvent, detail [AlarmData]).
	DeliveryEventBridge = "eventbridge"
	// DeliveryLambdaAction is the event of the alarm's own Lambda action
	// ([CloudWatchAlarmLambdaEvent]).
	DeliveryLambdaAction = "lambda-action"
	// DeliverySQSPrefix starts the Delivery of an alarm that came through an
	// SQS queue: "sqs/sns" (an SNS notification envelope), "sqs/sns-raw" (the
	// alarm payload itself, SNS raw message delivery), "sqs/eventbridge".
	DeliverySQSPrefix = "sqs/"
)

// DepthSource values, as set in [sluice.Trigger].DepthSource.
const (
	// DepthFromDatapoint: Depth is the first datapoint quoted in the alarm's
	// NewStateReason, rounded up to a whole message.
	DepthFromDatapoint = "alarm-datapoint"
	// DepthNone: the reason quoted no datapoint (allowed for OK and
	// INSUFFICIENT_DATA only); Depth is 0.
	DepthNone = "none"
)

// Shapes of a Lambda event, as reported in [Event].Shape.
const (
	ShapeSNS          = "sns"
	ShapeEventBridge  = "eventbridge"
	ShapeLambdaAction = "lambda-action"
	ShapeSQS          = "sqs"
)

// Item is one part of an event that is decided, and retried, on its own: an
// SQS message, or the whole event for the other shapes.
type Item struct {
	// ID is the SQS messageId (the batchItemFailures itemIdentifier); "" for
	// a whole event.
	ID string
	// Triggers are the alarm notifications the item carries (nil when Err is set).
	Triggers []sluice.Trigger
	// Err is why the item was refused: a [*ParseError] wrapping [ErrBadEvent].
	// A refused item is not worth retrying.
	Err error
}

// Event is a parsed Lambda event.
type Event struct {
	// Shape is ShapeSNS, ShapeEventBridge, ShapeLambdaAction or ShapeSQS.
	Shape string
	// Items has one entry per SQS message in an SQS batch, and exactly one
	// (with ID "") otherwise.
	Items []Item
}

// Batch reports whether the event's items succeed or fail separately (an SQS
// batch): the function then answers with batchItemFailures instead of an error.
func (e Event) Batch() bool { return e.Shape == ShapeSQS }

// Triggers returns the triggers of every item that was not refused, in order.
func (e Event) Triggers() []sluice.Trigger {
	var out []sluice.Trigger
	for _, it := range e.Items {
		out = append(out, it.Triggers...)
	}
	return out
}

// ParseEvent detects the shape of a raw Lambda event by its top-level keys
// and parses it:
//
//   - "Records" whose first record has eventSource "aws:sqs": an SQS batch
//     (aws-lambda-go events.SQSEvent), each body an SNS notification envelope,
//     a raw alarm payload or an EventBridge event; see [ParseSQSBatch];
//   - "Records" otherwise: an SNS event ([ParseSNSAlarm]);
//   - "detail-type": EventBridge ([ParseEventBridgeAlarm]);
//   - "alarmData": the alarm's Lambda action ([ParseLambdaActionAlarm]).
//
// The error is for the event as a whole (not JSON, unknown shape, or, for
// every shape but SQS, any bad field); in an SQS batch a bad message is
// refused alone, in its Item.Err.
func ParseEvent(raw []byte) (Event, error) {
	top, err := decodeTop(raw)
	if err != nil {
		return Event{}, err
	}
	one := func(shape string, ts []sluice.Trigger, err error) (Event, error) {
		if err != nil {
			return Event{}, err
		}
		return Event{Shape: shape, Items: []Item{{Triggers: ts}}}, nil
	}
	switch {
	case isSQS(top):
		return parseSQS(top)
	case has(top, "Records"):
		ts, err := ParseSNSAlarm(raw)
		return one(ShapeSNS, ts, err)
	case has(top, "detail-type"):
		t, err := eventBridge("event", DeliveryEventBridge, raw)
		return one(ShapeEventBridge, []sluice.Trigger{t}, err)
	case has(top, "alarmData"):
		t, err := lambdaAction("event", DeliveryLambdaAction, raw)
		return one(ShapeLambdaAction, []sluice.Trigger{t}, err)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], "...")
	}
	return Event{}, &ParseError{Source: "event", Err: fmt.Errorf("unrecognised event shape (top-level keys [%s]; "+
		"want an SNS or SQS event with Records, an EventBridge event with detail-type, or an alarm Lambda action with alarmData)",
		strings.Join(keys, " "))}
}

func has(top map[string]json.RawMessage, k string) bool { _, ok := top[k]; return ok }

// Parse turns a raw Lambda event into one trigger per alarm notification it
// carries, whatever its shape ([ParseEvent]). Unlike ParseEvent it refuses an
// SQS batch whole when any message is bad (with that message's error). All
// errors wrap [ErrBadEvent].
func Parse(raw []byte) ([]sluice.Trigger, error) {
	ev, err := ParseEvent(raw)
	if err != nil {
		return nil, err
	}
	for _, it := range ev.Items {
		if it.Err != nil {
			return nil, it.Err
		}
	}
	return ev.Triggers(), nil
}

var errNotJSON = errors.New("not JSON")

// decodeTop decodes the top level of an event into its keys, after refusing a
// document with a duplicate object key anywhere (exact, or up to case) or
// nesting deeper than maxNesting (see checkStrictJSON).
func decodeTop(raw []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(raw) {
		return nil, &ParseError{Source: "event", Err: errNotJSON}
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, bad("event", "", "", "not a JSON object")
	}
	if err := checkStrictJSON(raw); err != nil {
		return nil, &ParseError{Source: "event", Err: err}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, &ParseError{Source: "event", Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	return top, nil
}
