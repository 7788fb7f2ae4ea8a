package events

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicehq/sluice"

	awsevents "github.com/aws/aws-lambda-go/events"
)

// StateChangeTimeLayout is the layout of StateChangeTime in a CloudWatch alarm
// SNS notification, e.g. "2026-11-29T10:05:00.000+0000". It is NOT RFC 3339
// (no colon in the offset, always milliseconds); aws-lambda-go keeps the field
// as a string (events.CloudWatchAlarmSNSPayload.StateChangeTime).
const StateChangeTimeLayout = "2006-01-02T15:04:05.000-0700"

// SQSNamespace is the CloudWatch namespace of the SQS metrics, and
// QueueNameDimension the dimension naming the queue (SQS developer guide,
// "Available CloudWatch metrics for Amazon SQS").
const (
	SQSNamespace       = "AWS/SQS"
	QueueNameDimension = "QueueName"
)

// maxDepth bounds a believable queue depth; beyond it the datapoint is refused
// rather than overflowing an int on 32-bit builds.
const maxDepth = math.MaxInt32

// alarmState checks a CloudWatch state value (NewStateValue).
func alarmState(src, field, v string) (sluice.AlarmState, error) {
	switch s := sluice.AlarmState(v); s {
	case sluice.StateAlarm, sluice.StateOK, sluice.StateInsufficientData:
		return s, nil
	}
	if v == "" {
		return "", bad(src, field, "", "empty")
	}
	return "", bad(src, field, v, "unknown state")
}

// stateChangeTime parses StateChangeTime in [StateChangeTimeLayout], as UTC.
func stateChangeTime(src, field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, bad(src, field, "", "empty")
	}
	t, err := time.Parse(StateChangeTimeLayout, v)
	if err != nil {
		return time.Time{}, bad(src, field, v, "want layout "+StateChangeTimeLayout)
	}
	return t.UTC(), nil
}

// regionCode matches an AWS region code: us-east-1, cn-north-1, us-gov-west-1, ap-southeast-5.
var regionCode = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// regionFromARN returns the region code of a CloudWatch alarm ARN
// (arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>), or "" when arn
// is not one.
func regionFromARN(arn string) string {
	p := strings.SplitN(arn, ":", 7)
	if len(p) != 7 || p[0] != "arn" || p[2] != "cloudwatch" || p[5] != "alarm" || !regionCode.MatchString(p[3]) {
		return ""
	}
	return p[3]
}

// sqsQueueName matches an SQS queue name: up to 80 alphanumerics, hyphens and
// underscores, a FIFO queue's ending in ".fifo" (SQS CreateQueue, QueueName).
var sqsQueueName = regexp.MustCompile(`^([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$`)

// queueDimension returns the QueueName dimension's value, or ok=false.
func queueDimension(dims []awsevents.CloudWatchDimension) (string, bool) {
	for _, d := range dims {
		if d.Name == QueueNameDimension {
			return d.Value, true
		}
	}
	return "", false
}

// alarmQueue finds the SQS queue an alarm watches: the QueueName dimension of
// its AWS/SQS metric (Trigger.Namespace + Trigger.Dimensions for a single-metric
// alarm; Trigger.Metrics[].MetricStat.Metric for a metric-math alarm, where
// every AWS/SQS metric must name the same queue).
func alarmQueue(src string, t awsevents.CloudWatchAlarmTrigger) (string, error) {
	const noQueue = "no QueueName dimension of an AWS/SQS metric"
	if len(t.Metrics) == 0 {
		if t.Namespace != SQSNamespace {
			return "", bad(src, "Trigger.Namespace", t.Namespace, "not "+SQSNamespace+": "+noQueue)
		}
		q, ok := queueDimension(t.Dimensions)
		if !ok {
			return "", bad(src, "Trigger.Dimensions", "", noQueue)
		}
		return checkQueueName(src, "Trigger.Dimensions", q)
	}
	var queue, field string
	for i, m := range t.Metrics {
		if m.MetricStat.Metric.Namespace != SQSNamespace {
			continue
		}
		q, ok := queueDimension(m.MetricStat.Metric.Dimensions)
		if !ok {
			continue
		}
		f := fmt.Sprintf("Trigger.Metrics[%d].MetricStat.Metric.Dimensions", i)
		if queue != "" && q != queue {
			return "", bad(src, f, q, fmt.Sprintf("second queue (%s names %q): want one queue per alarm", field, queue))
		}
		queue, field = q, f
	}
	if field == "" {
		return "", bad(src, "Trigger.Metrics", "", noQueue)
	}
	return checkQueueName(src, field, queue)
}

func checkQueueName(src, field, q string) (string, error) {
	if q == "" {
		return "", bad(src, field, "", "empty QueueName")
	}
	if !sqsQueueName.MatchString(q) {
		return "", bad(src, field, q, "not an SQS queue name")
	}
	return q, nil
}

// firstDatapoint finds the first datapoint quoted in a NewStateReason:
//
//	Threshold Crossed: 2 out of the last 2 datapoints [3.0 (29/11/26 10:06:00), 2.0 (29/11/26 10:05:00)] were ...
//
// A datapoint is a value followed by its "(dd/MM/yy HH:mm:ss)" time inside
// square brackets; "[Breaching]" (missing data treated as breaching) is not one.
var firstDatapoint = regexp.MustCompile(`\[\s*([^\s\[\](),]+)\s*\(`)

// decimalText is the datapoint text accepted: plain or E-notation decimal, as
// CloudWatch prints doubles ("42.0", "1.5E7"). The exponent is bounded so a
// hostile value cannot make decimal arithmetic expensive.
var decimalText = regexp.MustCompile(`^[-+]?[0-9]{1,40}(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,3})?$`)

// reasonDepth reads the queue depth from NewStateReason: the first datapoint,
// parsed as a decimal and rounded up (a depth counts messages, and 41.5 means
// at least 42 were there). ok=false when the reason quotes no datapoint.
func reasonDepth(src, field, reason string) (depth int, ok bool, err error) {
	m := firstDatapoint.FindStringSubmatch(reason)
	if m == nil {
		return 0, false, nil
	}
	text := m[1]
	if !decimalText.MatchString(text) {
		return 0, false, bad(src, field, text, "datapoint is not a decimal")
	}
	d, err := decimal.NewFromString(text)
	if err != nil {
		return 0, false, &ParseError{Source: src, Field: field, Value: text, Err: fmt.Errorf("datapoint is not a decimal: %w", err)}
	}
	if d.IsNegative() {
		return 0, false, bad(src, field, text, "datapoint is negative: a queue depth cannot be")
	}
	c := d.Ceil()
	if c.GreaterThan(decimal.NewFromInt(maxDepth)) {
		return 0, false, bad(src, field, text, fmt.Sprintf("datapoint above %d: not a believable queue depth", maxDepth))
	}
	return int(c.IntPart()), true, nil
}

// alarmTrigger turns one CloudWatch alarm notification into a Trigger. It is
// shared by the deliveries that carry the SNS payload shape.
func alarmTrigger(src, delivery string, p *awsevents.CloudWatchAlarmSNSPayload) (sluice.Trigger, error) {
	tr := sluice.Trigger{AlarmName: p.AlarmName, AlarmARN: p.AlarmARN, Delivery: delivery}
	if strings.TrimSpace(p.AlarmName) == "" {
		return tr, bad(src, "AlarmName", "", "empty")
	}
	if strings.TrimSpace(p.AlarmARN) == "" {
		return tr, bad(src, "AlarmArn", "", "empty")
	}
	var err error
	if tr.State, err = alarmState(src, "NewStateValue", p.NewStateValue); err != nil {
		return tr, err
	}
	if tr.StateChangeTime, err = stateChangeTime(src, "StateChangeTime", p.StateChangeTime); err != nil {
		return tr, err
	}
	// The payload's Region is the console name ("US East (N. Virginia)"); the
	// ARN carries the code the rest of Sluice uses. Fall back to the name only
	// when the ARN has no region code.
	if tr.Region = regionFromARN(p.AlarmARN); tr.Region == "" {
		if tr.Region = strings.TrimSpace(p.Region); tr.Region == "" {
			return tr, bad(src, "AlarmArn", p.AlarmARN, "no region code, and Region is empty")
		}
	}
	if tr.Queue, err = alarmQueue(src, p.Trigger); err != nil {
		return tr, err
	}
	depth, ok, err := reasonDepth(src, "NewStateReason", p.NewStateReason)
	switch {
	case err != nil:
		return tr, err
	case ok:
		tr.Depth, tr.DepthSource = depth, DepthFromDatapoint
	case tr.State == sluice.StateAlarm:
		return tr, bad(src, "NewStateReason", p.NewStateReason, "no datapoint, and an ALARM needs the observed depth")
	default:
		tr.DepthSource = DepthNone
	}
	return tr, nil
}
