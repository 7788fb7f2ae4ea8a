// Package events parses the envelopes a CloudWatch queue-depth alarm arrives in
// and turns each into a [sluice.Trigger]. It is the edge: the aws-lambda-go
// event types are used here and nowhere else (reference/style.md point 2).
//
// Shapes understood ([ParseEvent] detects them by their top-level keys):
//
//   - SNS: an aws-lambda-go events.SNSEvent (github.com/aws/aws-lambda-go
//     events/sns.go) whose Records[].Sns.Message is a JSON string holding the
//     CloudWatch alarm notification (events.CloudWatchAlarmSNSPayload; see
//     "Using Amazon SNS topics" in the CloudWatch user guide). See [ParseSNSAlarm].
//   - EventBridge: a "CloudWatch Alarm State Change" event
//     (events.CloudWatchEvent with detail [AlarmData]; CloudWatch user guide,
//     "Alarm events and EventBridge"). See [ParseEventBridgeAlarm].
//   - The alarm's Lambda action: [CloudWatchAlarmLambdaEvent] ("source":
//     "aws.cloudwatch", alarmData; CloudWatch user guide, "Invoke a Lambda
//     function from an alarm"). See [ParseLambdaActionAlarm].
//   - SQS: an events.SQSEvent batch whose bodies are any of the above as a
//     queue receives them (an SNS notification envelope, the raw alarm
//     payload, an EventBridge event). Each message succeeds or fails alone
//     ([Item]), for the function's batchItemFailures. See [ParseSQSBatch].
//
// The same state change of one alarm gives the same trigger (bar Delivery)
// whichever way it is delivered, so its decision id is the same too.
//
// # Depth
//
// An SNS notification's depth is the first (newest) datapoint quoted in
// NewStateReason. An EventBridge or Lambda-action alarm carries the newest
// datapoint twice: in state.reasonData (the newest evaluatedDatapoints value,
// else the last recentDatapoints entry) and as the first datapoint quoted in
// state.reason. When both are there they must give the same depth (each
// rounded up to a whole message): an event where they differ is refused
// whole, with an error naming both fields, e.g.
//
//	event: detail.state.reasonData.recentDatapoints[0] "1000.0": depth 1000 disagrees with detail.state.reason, whose first datapoint is "42.0" (depth 42): refused rather than guess which is right
//
// Sluice does not pick one: the depth sizes a purchase, and an event that
// contradicts itself is not one to buy on. When the reason quotes no
// datapoint, reasonData alone gives the depth; when reasonData has no value,
// the reason does.
//
// # Text
//
// The strings kept in a trigger (the alarm name and ARN) are refused when
// they carry control, format or line-separator characters, and when they
// carry U+FFFD: encoding/json decodes invalid UTF-8 to it, so the bytes sent
// are lost (the error names the field and the byte offset).
//
// Every error this package returns for a malformed event is a [*ParseError]
// wrapping [ErrBadEvent].
package events
