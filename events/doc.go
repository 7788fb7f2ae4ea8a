// Package events parses the envelopes a CloudWatch queue-depth alarm arrives in
// and turns each into a [sluice.Trigger]. It is the edge: the aws-lambda-go
// event types are used here and nowhere else (reference/style.md point 2).
//
// Shapes understood today:
//
//   - SNS: an aws-lambda-go events.SNSEvent (github.com/aws/aws-lambda-go
//     events/sns.go) whose Records[].Sns.Message is a JSON string holding the
//     CloudWatch alarm notification (events.CloudWatchAlarmSNSPayload; see
//     "Using Amazon SNS topics" in the CloudWatch user guide). See [ParseSNSAlarm].
//
// [Parse] detects the shape of a raw event and dispatches to the right parser;
// EventBridge "CloudWatch Alarm State Change" events and the alarm's direct
// Lambda action are added there as further shapes.
//
// Every error this package returns for a malformed event is a [*ParseError]
// wrapping [ErrBadEvent].
package events
