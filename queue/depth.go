// Package queue reads a training queue's live depth from SQS, so a decision
// sizes demand on the backlog now rather than on the alarm's datapoint (which
// is up to one alarm period old).
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice"
)

// DepthFromSQS is the Trigger.DepthSource of a depth read live with
// GetQueueAttributes (ApproximateNumberOfMessagesVisible).
const DepthFromSQS = "sqs-live"

// API is the part of the SQS client Depth uses (*sqs.Client implements it).
// IAM: sqs:GetQueueUrl and sqs:GetQueueAttributes on the training queues.
type API interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Depth is one reading of a queue. Both counts are approximate, as SQS says
// (SQS developer guide, "Available CloudWatch metrics for Amazon SQS";
// GetQueueAttributes).
type Depth struct {
	// Visible is ApproximateNumberOfMessagesVisible: messages waiting (the backlog).
	Visible int
	// InFlight is ApproximateNumberOfMessagesNotVisible: received, not yet deleted.
	InFlight int
}

// Reader reads live depths. The zero Timeout means 1 s: the read sits on the
// decision's critical path, and the alarm's datapoint is a fine fallback.
type Reader struct {
	Client  API
	Timeout time.Duration
}

// maxDepth bounds a believable count (as events does for datapoints).
const maxDepth = 1<<31 - 1

// Read returns the live depth of the queue named name in account (the
// 12-digit id; "" = the caller's own) and region ("" = the client's).
func (r *Reader) Read(ctx context.Context, name, account, region string) (Depth, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opt := func(o *sqs.Options) {
		if region != "" {
			o.Region = region
		}
	}
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(name)}
	if account != "" {
		in.QueueOwnerAWSAccountId = aws.String(account)
	}
	u, err := r.Client.GetQueueUrl(ctx, in, opt)
	if err != nil {
		return Depth{}, fmt.Errorf("sqs GetQueueUrl %s: %w", name, err)
	}
	if u.QueueUrl == nil || *u.QueueUrl == "" {
		return Depth{}, fmt.Errorf("sqs GetQueueUrl %s: empty QueueUrl", name)
	}
	out, err := r.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: u.QueueUrl,
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	}, opt)
	if err != nil {
		return Depth{}, fmt.Errorf("sqs GetQueueAttributes %s: %w", name, err)
	}
	var d Depth
	// The attribute ApproximateNumberOfMessages is what CloudWatch publishes
	// as ApproximateNumberOfMessagesVisible.
	if d.Visible, err = count(out.Attributes, string(types.QueueAttributeNameApproximateNumberOfMessages)); err != nil {
		return Depth{}, fmt.Errorf("sqs GetQueueAttributes %s: %w", name, err)
	}
	if d.InFlight, err = count(out.Attributes, string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)); err != nil {
		return Depth{}, fmt.Errorf("sqs GetQueueAttributes %s: %w", name, err)
	}
	return d, nil
}

func count(attrs map[string]string, name string) (int, error) {
	v, ok := attrs[name]
	if !ok {
		return 0, fmt.Errorf("%s missing", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxDepth {
		return 0, fmt.Errorf("%s %q: not a count", name, v)
	}
	return int(n), nil
}

// Live replaces t.Depth with the queue's live backlog (Visible) when the
// queue can be read, setting DepthSource to [DepthFromSQS]; otherwise t keeps
// the alarm's datapoint and why is the reason (logged by the caller). Only an
// ALARM is re-read: an OK or INSUFFICIENT_DATA trigger sizes no demand.
// The account comes from the alarm ARN (arn:…:cloudwatch:region:account:alarm:name).
func (r *Reader) Live(ctx context.Context, t sluice.Trigger) (out sluice.Trigger, d Depth, why error) {
	if r == nil || r.Client == nil {
		return t, Depth{}, errors.New("no SQS client")
	}
	if t.State != sluice.StateAlarm {
		return t, Depth{}, errors.New("not an ALARM")
	}
	d, err := r.Read(ctx, t.Queue, arnAccount(t.AlarmARN), t.Region)
	if err != nil {
		return t, Depth{}, err
	}
	if t.Depth != d.Visible {
		slog.DebugContext(ctx, "live depth differs from the alarm's datapoint", "queue", t.Queue, "datapoint", t.Depth, "visible", d.Visible)
	}
	t.Depth, t.DepthSource = d.Visible, DepthFromSQS
	return t, d, nil
}

func arnAccount(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return ""
	}
	return parts[4]
}
