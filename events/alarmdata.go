package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"

	awsevents "github.com/aws/aws-lambda-go/events"
)

// AlarmData is the alarm part shared by the EventBridge "CloudWatch Alarm
// State Change" event (its detail) and the event of an alarm's Lambda action
// (its alarmData). aws-lambda-go has no type for either (CloudWatchEvent keeps
// detail as raw JSON). Sources: CloudWatch user guide, "Alarm events and
// EventBridge" and "Invoke a Lambda function from an alarm".
type AlarmData struct {
	AlarmName     string             `json:"alarmName"`
	State         AlarmStateDetail   `json:"state"`
	PreviousState AlarmStateDetail   `json:"previousState"`
	Configuration AlarmConfiguration `json:"configuration"`
}

// AlarmStateDetail is one alarm state: Value is ALARM, OK or
// INSUFFICIENT_DATA; Reason is the human text (the same as an SNS
// notification's NewStateReason); ReasonData is a JSON document as a string
// (see [ReasonData]); Timestamp is the state-change time in
// [StateChangeTimeLayout].
type AlarmStateDetail struct {
	Value      string `json:"value"`
	Reason     string `json:"reason"`
	ReasonData string `json:"reasonData,omitempty"`
	Timestamp  string `json:"timestamp"`
}

// AlarmConfiguration is the alarm's definition: for a single-metric alarm one
// entry with MetricStat; for metric math, one entry per query (expressions
// have Expression and no MetricStat).
type AlarmConfiguration struct {
	Description string        `json:"description,omitempty"`
	Metrics     []AlarmMetric `json:"metrics"`
}

// AlarmMetric is one metric data query of an alarm.
type AlarmMetric struct {
	ID         string           `json:"id"`
	Expression string           `json:"expression,omitempty"`
	Label      string           `json:"label,omitempty"`
	MetricStat *AlarmMetricStat `json:"metricStat,omitempty"`
	ReturnData bool             `json:"returnData"`
}

// AlarmMetricStat is a metric with its statistic; Period is in seconds.
type AlarmMetricStat struct {
	Metric AlarmMetricName `json:"metric"`
	Period int             `json:"period"`
	Stat   string          `json:"stat"`
	Unit   string          `json:"unit,omitempty"`
}

// AlarmMetricName names a metric. Unlike the SNS payload, Dimensions is an
// object (dimension name → value), and the metric name is "name".
type AlarmMetricName struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Dimensions map[string]string `json:"dimensions,omitempty"`
}

// ReasonData is the JSON document carried as a string in
// AlarmStateDetail.ReasonData. RecentDatapoints are the values of the
// evaluated periods, oldest first (StartDate is the first one's period
// start); EvaluatedDatapoints, when present, carry each period's timestamp
// and (when it had data) value. Numbers are kept as their JSON text.
type ReasonData struct {
	Version             string               `json:"version"`
	QueryDate           string               `json:"queryDate,omitempty"`
	StartDate           string               `json:"startDate,omitempty"`
	Statistic           string               `json:"statistic,omitempty"`
	Period              int                  `json:"period,omitempty"`
	RecentDatapoints    []json.Number        `json:"recentDatapoints"`
	Threshold           json.Number          `json:"threshold,omitempty"`
	EvaluatedDatapoints []EvaluatedDatapoint `json:"evaluatedDatapoints,omitempty"`
}

// EvaluatedDatapoint is one period the alarm evaluated; Value is nil for a
// period without data.
type EvaluatedDatapoint struct {
	Timestamp   string       `json:"timestamp"`
	SampleCount *json.Number `json:"sampleCount,omitempty"`
	Value       *json.Number `json:"value,omitempty"`
}

// CloudWatchAlarmLambdaEvent is the event a CloudWatch alarm's Lambda action
// sends ("source": "aws.cloudwatch", alarmData). Time uses
// [StateChangeTimeLayout]; Region is a region code.
type CloudWatchAlarmLambdaEvent struct {
	Source    string    `json:"source"`
	AlarmARN  string    `json:"alarmArn"`
	AccountID string    `json:"accountId"`
	Time      string    `json:"time"`
	Region    string    `json:"region"`
	AlarmData AlarmData `json:"alarmData"`
}

// EventBridge constants of a CloudWatch alarm state change.
const (
	CloudWatchSource     = "aws.cloudwatch"
	AlarmStateChangeType = "CloudWatch Alarm State Change"
)

// fields are the wire paths of one shape's alarm parts, for error messages.
type fields struct {
	arn, region, name, state, time, reason, reasonData, metrics string
}

var (
	ebFields = fields{arn: "resources", region: "region", name: "detail.alarmName", state: "detail.state.value",
		time: "detail.state.timestamp", reason: "detail.state.reason", reasonData: "detail.state.reasonData",
		metrics: "detail.configuration.metrics"}
	actionFields = fields{arn: "alarmArn", region: "region", name: "alarmData.alarmName", state: "alarmData.state.value",
		time: "alarmData.state.timestamp", reason: "alarmData.state.reason", reasonData: "alarmData.state.reasonData",
		metrics: "alarmData.configuration.metrics"}
)

// ParseEventBridgeAlarm parses an EventBridge "CloudWatch Alarm State Change"
// event (aws-lambda-go events.CloudWatchEvent with detail [AlarmData]) into
// one trigger with Delivery [DeliveryEventBridge]. source must be
// aws.cloudwatch, detail-type "CloudWatch Alarm State Change", resources
// exactly the alarm's ARN, and region the ARN's region. The alarm is checked
// as [ParseSNSAlarm] checks the SNS payload (name, ARN, state, time in
// [StateChangeTimeLayout] from detail.state.timestamp, one SQS depth metric);
// the depth comes from detail.state.reasonData (see [ReasonData]), else from
// the first datapoint quoted in detail.state.reason. Errors are
// [*ParseError]s wrapping [ErrBadEvent].
func ParseEventBridgeAlarm(raw []byte) ([]sluice.Trigger, error) {
	if _, err := decodeTop(raw); err != nil {
		return nil, err
	}
	t, err := eventBridge("event", DeliveryEventBridge, raw)
	if err != nil {
		return nil, err
	}
	return []sluice.Trigger{t}, nil
}

func eventBridge(src, delivery string, raw []byte) (sluice.Trigger, error) {
	var ev awsevents.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return sluice.Trigger{}, &ParseError{Source: src, Err: fmt.Errorf("not an EventBridge event: %w", err)}
	}
	if ev.Source != CloudWatchSource {
		return sluice.Trigger{}, bad(src, "source", ev.Source, "not "+CloudWatchSource)
	}
	if ev.DetailType != AlarmStateChangeType {
		return sluice.Trigger{}, bad(src, "detail-type", ev.DetailType, "not "+AlarmStateChangeType)
	}
	if len(ev.Resources) != 1 {
		return sluice.Trigger{}, bad(src, "resources", "", fmt.Sprintf("%d entries: want exactly the alarm's ARN", len(ev.Resources)))
	}
	if len(ev.Detail) == 0 || string(ev.Detail) == "null" {
		return sluice.Trigger{}, bad(src, "detail", "", "missing")
	}
	var d AlarmData
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return sluice.Trigger{}, &ParseError{Source: src, Field: "detail", Err: fmt.Errorf("not a CloudWatch alarm state change: %w", err)}
	}
	return alarmDataTrigger(src, delivery, ebFields, ev.Resources[0], ev.Region, &d)
}

// ParseLambdaActionAlarm parses the event of an alarm's Lambda action
// ([CloudWatchAlarmLambdaEvent]: "source": "aws.cloudwatch", alarmArn,
// alarmData) into one trigger with Delivery [DeliveryLambdaAction], by the
// rules of [ParseEventBridgeAlarm] (alarmArn is the ARN; region must be its
// region).
func ParseLambdaActionAlarm(raw []byte) ([]sluice.Trigger, error) {
	if _, err := decodeTop(raw); err != nil {
		return nil, err
	}
	t, err := lambdaAction("event", DeliveryLambdaAction, raw)
	if err != nil {
		return nil, err
	}
	return []sluice.Trigger{t}, nil
}

func lambdaAction(src, delivery string, raw []byte) (sluice.Trigger, error) {
	var ev CloudWatchAlarmLambdaEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return sluice.Trigger{}, &ParseError{Source: src, Err: fmt.Errorf("not a CloudWatch alarm Lambda action event: %w", err)}
	}
	if ev.Source != CloudWatchSource {
		return sluice.Trigger{}, bad(src, "source", ev.Source, "not "+CloudWatchSource)
	}
	return alarmDataTrigger(src, delivery, actionFields, ev.AlarmARN, ev.Region, &ev.AlarmData)
}

// alarmDataTrigger checks one AlarmData (EventBridge detail or Lambda action
// alarmData) and turns it into a Trigger.
func alarmDataTrigger(src, delivery string, f fields, arn, region string, d *AlarmData) (sluice.Trigger, error) {
	tr := sluice.Trigger{AlarmName: d.AlarmName, AlarmARN: arn, Delivery: delivery}
	if err := checkAlarmNameAt(src, f.name, d.AlarmName); err != nil {
		return tr, err
	}
	if strings.TrimSpace(arn) == "" {
		return tr, bad(src, f.arn, "", "empty")
	}
	var err error
	if tr.Region, err = checkAlarmARNAt(src, f.arn, arn); err != nil {
		return tr, err
	}
	if region != tr.Region {
		return tr, bad(src, f.region, region, "not the alarm ARN's region "+tr.Region)
	}
	if !strings.HasSuffix(arn, ":alarm:"+d.AlarmName) {
		return tr, bad(src, f.name, d.AlarmName, "not the name in the alarm ARN")
	}
	if tr.State, err = alarmState(src, f.state, d.State.Value); err != nil {
		return tr, err
	}
	if tr.StateChangeTime, err = stateChangeTime(src, f.time, d.State.Timestamp); err != nil {
		return tr, err
	}
	if tr.Queue, err = configQueue(src, f.metrics, d.Configuration.Metrics); err != nil {
		return tr, err
	}
	depth, dpField, dpText, ok, err := reasonDataDepth(src, f.reasonData, d.State.ReasonData)
	switch {
	case err == nil && !ok:
		depth, ok, err = reasonDepth(src, f.reason, d.State.Reason)
	case err == nil:
		// Both carry the newest datapoint: refuse an event where they differ
		// (see the package doc, "Depth").
		rdepth, rtext, rok, rerr := reasonDatapoint(src, f.reason, d.State.Reason)
		if rerr != nil {
			err = rerr
		} else if rok && rdepth != depth {
			err = &ParseError{Source: src, Field: dpField, Value: dpText, Err: fmt.Errorf(
				"depth %d disagrees with %s, whose first datapoint is %q (depth %d): refused rather than guess which is right",
				depth, f.reason, rtext, rdepth)}
		}
	}
	switch {
	case err != nil:
		return tr, err
	case ok:
		tr.Depth, tr.DepthSource = depth, DepthFromDatapoint
	case tr.State == sluice.StateAlarm:
		return tr, bad(src, f.reasonData, d.State.ReasonData, "no datapoint, and an ALARM needs the observed depth")
	default:
		tr.DepthSource = DepthNone
	}
	return tr, nil
}

// configQueue applies the queue rules of [alarmQueue] to an alarm
// configuration's metrics: one entry with a metricStat and no expression is a
// single-metric alarm; anything else is metric math.
func configQueue(src, field string, ms []AlarmMetric) (string, error) {
	if len(ms) == 0 {
		return "", bad(src, field, "", "empty: no metric (a composite alarm cannot size a queue)")
	}
	single := len(ms) == 1 && ms[0].MetricStat != nil && ms[0].Expression == ""
	var refs []metricRef
	for i, m := range ms {
		if m.MetricStat == nil {
			continue
		}
		f := fmt.Sprintf("%s[%d].metricStat.metric.", field, i)
		names := make([]string, 0, len(m.MetricStat.Metric.Dimensions))
		for k := range m.MetricStat.Metric.Dimensions {
			names = append(names, k)
		}
		slices.Sort(names)
		dims := make([]awsevents.CloudWatchDimension, 0, len(names))
		for _, k := range names {
			dims = append(dims, awsevents.CloudWatchDimension{Name: k, Value: m.MetricStat.Metric.Dimensions[k]})
		}
		refs = append(refs, metricRef{namespace: m.MetricStat.Metric.Namespace, name: m.MetricStat.Metric.Name, dims: dims,
			nsField: f + "namespace", nameField: f + "name", dimsField: f + "dimensions"})
	}
	return depthQueue(src, single, field, refs)
}

// reasonDataDepth reads the depth from a state's reasonData: the value of the
// latest evaluated datapoint that has one, else the last (newest) of
// recentDatapoints, rounded up like any datapoint. ok=false when reasonData
// is empty or holds no value. dpField and dpText are the wire path and text
// of the datapoint used.
func reasonDataDepth(src, field, text string) (depth int, dpField, dpText string, ok bool, err error) {
	if strings.TrimSpace(text) == "" {
		return 0, "", "", false, nil
	}
	if !json.Valid([]byte(text)) {
		return 0, "", "", false, bad(src, field, text, "not JSON")
	}
	if err := checkStrictJSON([]byte(text)); err != nil {
		return 0, "", "", false, &ParseError{Source: src, Field: field, Err: err}
	}
	var rd ReasonData
	if err := json.Unmarshal([]byte(text), &rd); err != nil {
		return 0, "", "", false, &ParseError{Source: src, Field: field, Err: fmt.Errorf("not alarm reason data: %w", err)}
	}
	var latest time.Time
	var value string
	f := field + ".evaluatedDatapoints"
	for i, e := range rd.EvaluatedDatapoints {
		if e.Value == nil {
			continue
		}
		ts, err := stateChangeTime(src, fmt.Sprintf("%s.evaluatedDatapoints[%d].timestamp", field, i), e.Timestamp)
		if err != nil {
			return 0, "", "", false, err
		}
		if value == "" || ts.After(latest) {
			latest, value = ts, e.Value.String()
			f = fmt.Sprintf("%s.evaluatedDatapoints[%d].value", field, i)
		}
	}
	if value == "" {
		if len(rd.RecentDatapoints) == 0 {
			return 0, "", "", false, nil
		}
		value = rd.RecentDatapoints[len(rd.RecentDatapoints)-1].String()
		f = fmt.Sprintf("%s.recentDatapoints[%d]", field, len(rd.RecentDatapoints)-1)
	}
	d, err := datapoint(src, f, value)
	if err != nil {
		return 0, "", "", false, err
	}
	return d, f, value, true, nil
}
