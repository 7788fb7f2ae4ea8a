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
// Every error this package returns for a malformed event is a [*ParseError]
// wrapping [ErrBadEvent].
package events
