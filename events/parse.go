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

// shape is one envelope Parse recognises: match looks only at the top-level
// keys of the event (cheap, and shapes differ there); parse does the work.
type shape struct {
	name  string
	match func(top map[string]json.RawMessage) bool
	parse func(raw []byte) ([]sluice.Trigger, error)
}

// shapes is tried in order; the first match wins. EventBridge ("detail-type"
// "CloudWatch Alarm State Change") and the alarm's Lambda action ("alarmData")
// go here.
var shapes = []shape{
	{name: "sns", match: hasKey("Records"), parse: ParseSNSAlarm},
}

func hasKey(k string) func(map[string]json.RawMessage) bool {
	return func(top map[string]json.RawMessage) bool { _, ok := top[k]; return ok }
}

// Parse turns a raw Lambda event into one trigger per alarm notification it
// carries. It detects the envelope by its top-level keys; today only the SNS
// shape (an aws-lambda-go events.SNSEvent, see [ParseSNSAlarm]) is known, and
// anything else fails with "unrecognised event shape". All errors wrap
// [ErrBadEvent].
func Parse(raw []byte) ([]sluice.Trigger, error) {
	top, err := decodeTop(raw)
	if err != nil {
		return nil, err
	}
	for _, s := range shapes {
		if s.match(top) {
			return s.parse(raw)
		}
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], "...")
	}
	return nil, &ParseError{Source: "event", Err: fmt.Errorf("unrecognised event shape (top-level keys [%s]; want an SNS event with Records)",
		strings.Join(keys, " "))}
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
