package events

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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

// alarmARN matches a CloudWatch alarm ARN,
// arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>, capturing the
// partition suffix and the region. [checkAlarmARN] also refuses, anywhere in
// the ARN, every rune that is a control character, whitespace (Unicode
// White_Space, not only ASCII) or a format character (category Cf: zero-width
// space U+200B, BOM, bidi controls, ...): such a rune is invisible but makes a
// different ARN, and so a different decision id, for the same alarm.
var alarmARN = regexp.MustCompile(`^arn:aws(-cn|-us-gov|-iso[a-z-]*)?:cloudwatch:([a-z0-9-]+):[0-9]{12}:alarm:[^\s]+$`)

// maxAlarmName is CloudWatch's limit on AlarmName (PutMetricAlarm), in characters.
const maxAlarmName = 255

// invisible reports whether r is a control character, whitespace or a format
// (Cf) character. Unicode line and paragraph separators (Zl, Zp) count as
// whitespace here.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.IsSpace(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// firstRune returns the index and rune of the first rune in s for which bad
// holds, or -1.
func firstRune(s string, bad func(rune) bool) (int, rune) {
	for i, r := range s {
		if bad(r) {
			return i, r
		}
	}
	return -1, 0
}

// checkAlarmARN checks AlarmArn (see alarmARN) and returns its region code.
// The region must be an AWS region code of the ARN's partition: cn-* exactly
// in aws-cn, us-gov-* exactly in aws-us-gov, *-iso* exactly in aws-iso*.
func checkAlarmARN(src, arn string) (string, error) { return checkAlarmARNAt(src, "AlarmArn", arn) }

// checkAlarmARNAt is [checkAlarmARN] for an ARN sent in the field named field.
func checkAlarmARNAt(src, field, arn string) (string, error) {
	if i, r := firstRune(arn, invisible); i >= 0 {
		return "", bad(src, field, arn, fmt.Sprintf("%U at byte %d: control, whitespace or format character", r, i))
	}
	if i := replacementAt(arn); i >= 0 {
		return "", bad(src, field, arn, fmt.Sprintf(invalidUTF8, i))
	}
	m := alarmARN.FindStringSubmatch(arn)
	if m == nil {
		return "", bad(src, field, arn, "not a CloudWatch alarm ARN (arn:<partition>:cloudwatch:<region>:<12-digit account>:alarm:<name>)")
	}
	partition, region := "aws"+m[1], m[2]
	if !regionCode.MatchString(region) {
		return "", bad(src, field, arn, fmt.Sprintf("region %q: not an AWS region code", region))
	}
	cn, gov, iso := strings.HasPrefix(region, "cn-"), strings.HasPrefix(region, "us-gov-"), strings.Contains(region, "-iso")
	if cn != (partition == "aws-cn") || gov != (partition == "aws-us-gov") || iso != strings.HasPrefix(partition, "aws-iso") {
		return "", bad(src, field, arn, fmt.Sprintf("region %s is not in partition %s", region, partition))
	}
	return region, nil
}

// checkAlarmName refuses an AlarmName that is blank, longer than CloudWatch's
// 255 characters, or carries a control character (a terminal escape such as
// ESC, a newline), a format (Cf) character, a line/paragraph separator or
// invalid UTF-8 (U+FFFD; see replacementAt).
// Spaces are allowed: CloudWatch allows them in alarm names.
func checkAlarmName(src, name string) error { return checkAlarmNameAt(src, "AlarmName", name) }

// checkAlarmNameAt is [checkAlarmName] for a name sent in the field named field.
func checkAlarmNameAt(src, field, name string) error {
	if strings.TrimSpace(name) == "" {
		return bad(src, field, "", "empty")
	}
	if n := utf8.RuneCountInString(name); n > maxAlarmName {
		return bad(src, field, name, fmt.Sprintf("%d characters: longer than CloudWatch's %d", n, maxAlarmName))
	}
	if i, r := firstRune(name, func(r rune) bool {
		return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
	}); i >= 0 {
		return bad(src, field, name, fmt.Sprintf("%U at byte %d: control or format character", r, i))
	}
	if i := replacementAt(name); i >= 0 {
		return bad(src, field, name, fmt.Sprintf(invalidUTF8, i))
	}
	return nil
}

// invalidUTF8 is the refusal of a kept string holding U+FFFD (see
// replacementAt); its verb is the byte index.
const invalidUTF8 = "U+FFFD at byte %d: invalid UTF-8 (sent as invalid bytes or as the replacement character)"

// replacementAt returns the byte index of the first U+FFFD in s, or -1.
// encoding/json decodes each invalid UTF-8 byte in a string to U+FFFD, so a
// string the parser keeps (AlarmName, the alarm ARN) is refused when it
// holds one: the bytes sent are lost, and two different names would become
// the same text. A literal U+FFFD (JSON "\ufffd") is refused too: it cannot be
// told apart after decoding, and no real alarm name carries it.
func replacementAt(s string) int { return strings.IndexRune(s, utf8.RuneError) }

// sqsQueueName matches an SQS queue name: up to 80 alphanumerics, hyphens and
// underscores, a FIFO queue's ending in ".fifo" (SQS CreateQueue, QueueName).
var sqsQueueName = regexp.MustCompile(`^([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$`)

// Queue-depth metrics of the AWS/SQS namespace (SQS developer guide,
// "Available CloudWatch metrics for Amazon SQS").
const (
	// MetricVisible is the number of messages waiting to be received: the backlog.
	MetricVisible = "ApproximateNumberOfMessagesVisible"
	// MetricNotVisible is the number of messages in flight (received, not yet
	// deleted). Alone it is not a backlog (those jobs are already running), so
	// it is accepted only inside metric math next to MetricVisible, as in
	// "visible + in flight".
	MetricNotVisible = "ApproximateNumberOfMessagesNotVisible"
)

// depthMetric says why metric (an AWS/SQS MetricName) is not a queue depth
// Sluice can size demand from, or "" when it is MetricVisible or, with
// inMath, MetricNotVisible.
func depthMetric(metric string, inMath bool) string {
	switch metric {
	case MetricVisible:
		return ""
	case MetricNotVisible:
		if inMath {
			return ""
		}
		return "messages in flight, not a backlog: alarm on " + MetricVisible + " (or metric math adding it)"
	case "":
		return "empty: want " + MetricVisible
	case "ApproximateNumberOfMessages":
		return "a GetQueueAttributes attribute, not an AWS/SQS CloudWatch metric: want " + MetricVisible
	case "ApproximateAgeOfOldestMessage":
		return "an age in seconds, not a queue depth: want " + MetricVisible
	}
	return "not a queue-depth metric: want " + MetricVisible
}

// queueDimension returns the QueueName dimension's value, or ok=false. A
// second QueueName dimension is an error naming both values: the alarm would
// otherwise be pinned to whichever came first.
func queueDimension(src, field string, dims []awsevents.CloudWatchDimension) (string, bool, error) {
	q, ok := "", false
	for _, d := range dims {
		if d.Name != QueueNameDimension {
			continue
		}
		if ok {
			return "", false, bad(src, field, d.Value, fmt.Sprintf("second %s dimension (the first names %q): want one queue per alarm", QueueNameDimension, q))
		}
		q, ok = d.Value, true
	}
	return q, ok, nil
}

// alarmQueue finds the SQS queue an alarm watches: the QueueName dimension of
// its AWS/SQS metric (Trigger.Namespace + Trigger.Dimensions for a single-metric
// alarm; Trigger.Metrics[].MetricStat.Metric for a metric-math alarm, where
// every AWS/SQS metric must name the same queue). The metric must be a queue
// depth: a single-metric alarm's Trigger.MetricName must be
// ApproximateNumberOfMessagesVisible; in metric math every AWS/SQS metric must
// be ApproximateNumberOfMessagesVisible or ApproximateNumberOfMessagesNotVisible,
// and at least one must be ApproximateNumberOfMessagesVisible.
func alarmQueue(src string, t awsevents.CloudWatchAlarmTrigger) (string, error) {
	if len(t.Metrics) == 0 {
		return depthQueue(src, true, "Trigger.Metrics", []metricRef{{
			namespace: t.Namespace, name: t.MetricName, dims: t.Dimensions,
			nsField: "Trigger.Namespace", nameField: "Trigger.MetricName", dimsField: "Trigger.Dimensions",
		}})
	}
	refs := make([]metricRef, 0, len(t.Metrics))
	for i, m := range t.Metrics {
		f := fmt.Sprintf("Trigger.Metrics[%d].MetricStat.Metric.", i)
		refs = append(refs, metricRef{
			namespace: m.MetricStat.Metric.Namespace, name: m.MetricStat.Metric.MetricName, dims: m.MetricStat.Metric.Dimensions,
			nsField: f + "Namespace", nameField: f + "MetricName", dimsField: f + "Dimensions",
		})
	}
	return depthQueue(src, false, "Trigger.Metrics", refs)
}

// metricRef is one metric an alarm evaluates, with the wire paths of its
// parts (they differ between the SNS payload and the EventBridge / Lambda
// action shapes) so errors name the field as sent.
type metricRef struct {
	namespace, name string
	dims            []awsevents.CloudWatchDimension
	nsField         string
	nameField       string
	dimsField       string
}

// depthQueue applies the rules of [alarmQueue] to the metrics of one alarm:
// single is a single-metric alarm (one metric, no expression); otherwise the
// metrics are those of a metric-math alarm, and all is the wire path of the
// whole list.
func depthQueue(src string, single bool, all string, ms []metricRef) (string, error) {
	const noQueue = "no QueueName dimension of an AWS/SQS metric"
	if single {
		m := ms[0]
		if m.namespace != SQSNamespace {
			return "", bad(src, m.nsField, m.namespace, "not "+SQSNamespace+": "+noQueue)
		}
		if why := depthMetric(m.name, false); why != "" {
			return "", bad(src, m.nameField, m.name, why)
		}
		q, ok, err := queueDimension(src, m.dimsField, m.dims)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", bad(src, m.dimsField, "", noQueue)
		}
		return checkQueueName(src, m.dimsField, q)
	}
	var queue, field string
	visible := false
	for _, m := range ms {
		if m.namespace != SQSNamespace {
			continue
		}
		if why := depthMetric(m.name, true); why != "" {
			return "", bad(src, m.nameField, m.name, why)
		}
		visible = visible || m.name == MetricVisible
		q, ok, err := queueDimension(src, m.dimsField, m.dims)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if field != "" && q != queue {
			return "", bad(src, m.dimsField, q, fmt.Sprintf("second queue (%s names %q): want one queue per alarm", field, queue))
		}
		queue, field = q, m.dimsField
	}
	if field == "" {
		return "", bad(src, all, "", noQueue)
	}
	if !visible {
		return "", bad(src, all, "", "no "+MetricVisible+" metric: in-flight messages alone are not a backlog")
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
	depth, _, ok, err = reasonDatapoint(src, field, reason)
	return depth, ok, err
}

// reasonDatapoint is [reasonDepth] that also returns the datapoint's text.
func reasonDatapoint(src, field, reason string) (depth int, text string, ok bool, err error) {
	m := firstDatapoint.FindStringSubmatch(reason)
	if m == nil {
		return 0, "", false, nil
	}
	d, err := datapoint(src, field, m[1])
	if err != nil {
		return 0, "", false, err
	}
	return d, m[1], true, nil
}

// datapoint turns one datapoint's text (as CloudWatch prints a double:
// "42.0", "1.5E7") into a queue depth: a non-negative decimal rounded up to a
// whole message (41.5 means at least 42 were there), at most maxDepth.
func datapoint(src, field, text string) (int, error) {
	if !decimalText.MatchString(text) {
		return 0, bad(src, field, text, "datapoint is not a decimal")
	}
	d, err := decimal.NewFromString(text)
	if err != nil {
		return 0, &ParseError{Source: src, Field: field, Value: text, Err: fmt.Errorf("datapoint is not a decimal: %w", err)}
	}
	if d.IsNegative() {
		return 0, bad(src, field, text, "datapoint is negative: a queue depth cannot be")
	}
	c := d.Ceil()
	if c.GreaterThan(decimal.NewFromInt(maxDepth)) {
		return 0, bad(src, field, text, fmt.Sprintf("datapoint above %d: not a believable queue depth", maxDepth))
	}
	return int(c.IntPart()), nil
}

// alarmTrigger turns one CloudWatch alarm notification into a Trigger. It is
// shared by the deliveries that carry the SNS payload shape.
func alarmTrigger(src, delivery string, p *awsevents.CloudWatchAlarmSNSPayload) (sluice.Trigger, error) {
	tr := sluice.Trigger{AlarmName: p.AlarmName, AlarmARN: p.AlarmARN, Delivery: delivery}
	if err := checkAlarmName(src, p.AlarmName); err != nil {
		return tr, err
	}
	if strings.TrimSpace(p.AlarmARN) == "" {
		return tr, bad(src, "AlarmArn", "", "empty")
	}
	var err error
	// The payload's Region is the console name ("US East (N. Virginia)"); the
	// ARN carries the code the rest of Sluice uses, and the ARN must be valid,
	// so the region always comes from it.
	if tr.Region, err = checkAlarmARN(src, p.AlarmARN); err != nil {
		return tr, err
	}
	if tr.State, err = alarmState(src, "NewStateValue", p.NewStateValue); err != nil {
		return tr, err
	}
	if tr.StateChangeTime, err = stateChangeTime(src, "StateChangeTime", p.StateChangeTime); err != nil {
		return tr, err
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
