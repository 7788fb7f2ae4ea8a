package queue_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/motoserver"
	"github.com/sluicehq/sluice/queue"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}

// backlog creates a queue on moto_server with sent messages, of which
// received are then received (in flight, not deleted).
func backlog(t *testing.T, c *sqs.Client, sent, received int) string {
	t.Helper()
	ctx := context.Background()
	name := motoserver.Unique("train")
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range sent {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("job " + string(rune('a'+i)))}); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < received {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: int32(received - got), VisibilityTimeout: 600})
		if err != nil {
			t.Fatal(err)
		}
		got += len(out.Messages)
	}
	return name
}

func trigger(queueName string) sluice.Trigger {
	return sluice.Trigger{
		AlarmName: "sluice-depth", AlarmARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:sluice-depth",
		State: sluice.StateAlarm, Region: "us-east-1", Queue: queueName, Depth: 42, DepthSource: "alarm-datapoint", Delivery: "sns",
	}
}

func TestLiveDepthFromMoto(t *testing.T) {
	c := sqs.NewFromConfig(motoserver.Config(t))
	name := backlog(t, c, 7, 2)
	r := &queue.Reader{Client: c}
	got, d, err := r.Live(context.Background(), trigger(name))
	if err != nil {
		t.Fatal(err)
	}
	if d != (queue.Depth{Visible: 5, InFlight: 2}) || got.Depth != 5 || got.DepthSource != queue.DepthFromSQS {
		t.Fatalf("depth %+v, trigger depth %d from %q; want 5 visible + 2 in flight, depth 5 from sqs-live", d, got.Depth, got.DepthSource)
	}
	// Everything else about the trigger is kept (so the decision id is the same).
	want := trigger(name)
	want.Depth, want.DepthSource = 5, queue.DepthFromSQS
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestFallsBackToTheDatapoint(t *testing.T) {
	c := sqs.NewFromConfig(motoserver.Config(t))
	r := &queue.Reader{Client: c}
	cases := []struct {
		name string
		tr   sluice.Trigger
		want string
	}{
		{"no such queue", trigger(motoserver.Unique("missing")), "sqs GetQueueUrl"},
		{"OK state is not re-read", func() sluice.Trigger { t := trigger("x"); t.State = sluice.StateOK; return t }(), "not an ALARM"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := r.Live(context.Background(), c.tr)
			if err == nil || !strings.Contains(err.Error(), c.want) || got != c.tr {
				t.Fatalf("got %+v, %v; want the trigger unchanged and an error containing %q", got, err, c.want)
			}
		})
	}
	var nilReader *queue.Reader
	if got, _, err := nilReader.Live(context.Background(), trigger("x")); err == nil || got != trigger("x") {
		t.Errorf("nil reader: %+v %v", got, err)
	}
}

// TestUnreachableWithinTimeout: a queue endpoint that accepts connections and
// never answers costs at most the reader's timeout.
func TestUnreachableWithinTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // hold it open, say nothing
		}
	}()
	c := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + l.Addr().String())}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	r := &queue.Reader{Client: c, Timeout: 200 * time.Millisecond}
	start := time.Now()
	got, _, err := r.Live(context.Background(), trigger("train"))
	if err == nil || got.DepthSource != "alarm-datapoint" || got.Depth != 42 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if e := time.Since(start); e > 2*time.Second {
		t.Errorf("took %v with a 200ms timeout", e)
	}
}
