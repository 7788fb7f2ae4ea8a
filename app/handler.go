package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/queue"
)

// Function names: the Lambda functions (functions/<name>), the Function
// dimension of their metrics and the "function" attribute of their logs.
const (
	FunctionBurst     = "burst"
	FunctionDrain     = "drain"
	FunctionReconcile = "reconcile"
)

// Result is what a function returns for one invocation. For an SQS batch,
// BatchItemFailures lists the messages to deliver again (Lambda's partial
// batch response, with ReportBatchItemFailures on the event source mapping);
// Lambda ignores the other fields.
type Result struct {
	Decisions []DecisionSummary `json:"decisions,omitempty"`
	// Drains are the drain function's answers, one per OK trigger.
	Drains []any `json:"drains,omitempty"`
	// Refused names what was wrong with a bad event (the first refusal). A
	// bad event is not retried (it would fail the same way), so the handler
	// returns no error for it.
	Refused string `json:"refused,omitempty"`
	// Refusals lists every refusal (one per refused SQS message or trigger).
	Refusals []string `json:"refusals,omitempty"`
	// BatchItemFailures: the SQS messages that failed for a transient reason.
	BatchItemFailures []BatchItemFailure `json:"batchItemFailures,omitempty"`
}

// BatchItemFailure names one SQS message to retry (Lambda's
// SQSBatchItemFailure: itemIdentifier = the messageId).
type BatchItemFailure struct {
	ItemIdentifier string `json:"itemIdentifier"`
}

// DecisionSummary is the short form of one decision in a Result.
type DecisionSummary struct {
	DecisionID        string `json:"decision_id"`
	Queue             string `json:"queue"`
	Status            string `json:"status"`
	Outcome           string `json:"outcome"`
	Replayed          bool   `json:"replayed"`
	Depth             int    `json:"depth"`
	DepthSource       string `json:"depth_source"`
	SlotsWanted       int    `json:"slots_wanted"`
	SlotsCovered      int    `json:"slots_covered"`
	TotalExpectedCost string `json:"total_expected_cost"`
}

// DepthReader re-reads a trigger's queue depth live ([queue.Reader]): it
// returns the trigger with Depth and DepthSource replaced, or the trigger
// unchanged and why not.
type DepthReader interface {
	Live(ctx context.Context, t sluice.Trigger) (sluice.Trigger, queue.Depth, error)
}

// Handler is one Lambda function's invocation logic over a wired App:
// parse the event (any alarm delivery, events.ParseEvent), read the live
// depth, decide (burst) or release (drain), log with the decision id and
// emit EMF metrics.
//
// Errors: a bad event, an unknown queue or a bad config is permanent — it is
// logged, counted (metric Refused) and answered without an error, so Lambda
// does not retry it. Anything else (the ledger, a provider, a timeout) is
// transient: the invocation returns the error and Lambda retries it (an
// asynchronous invocation twice, then the function's failure destination);
// in an SQS batch only the failed message goes back, in BatchItemFailures.
type Handler struct {
	App      *App
	Function string // FunctionBurst or FunctionDrain
	// Depth, when set, re-reads the depth of ALARM triggers before deciding.
	Depth DepthReader
	// Metrics, when set, receives EMF lines.
	Metrics *metrics.Writer
	// Decide defaults to App.Burst.Decide.
	Decide func(ctx context.Context, t sluice.Trigger) (sluice.DecisionRecord, bool, error)
	// Drain releases the placements of an OK trigger's queue (the drain
	// function); nil refuses OK triggers in the drain function as
	// not supported by this build.
	Drain func(ctx context.Context, t sluice.Trigger) (any, error)
}

// Handle runs the main job for one raw alarm event as the burst function
// (see [Handler]), without live depth or metrics.
func (a *App) Handle(ctx context.Context, raw json.RawMessage) (Result, error) {
	return (&Handler{App: a, Function: FunctionBurst}).Handle(ctx, raw)
}

// Permanent reports whether err will not go away on retry: a bad event or a
// bad config / unknown queue.
func Permanent(err error) bool {
	return errors.Is(err, events.ErrBadEvent) || errors.Is(err, config.ErrBadConfig) || errors.Is(err, sluice.ErrBadTrigger)
}

// Handle answers one invocation (see [Handler]).
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (Result, error) {
	var res Result
	ev, err := events.ParseEvent(raw)
	if err != nil {
		h.refuse(ctx, &res, "bad-event", err)
		return res, nil
	}
	for _, it := range ev.Items {
		if it.Err != nil {
			h.refuse(ctx, &res, "bad-event", it.Err, "message_id", it.ID)
			continue
		}
		for _, t := range it.Triggers {
			err := h.trigger(ctx, &res, t)
			if err == nil {
				continue
			}
			if Permanent(err) {
				kind := "unknown-queue"
				if errors.Is(err, sluice.ErrBadTrigger) {
					kind = "bad-trigger"
				}
				h.refuse(ctx, &res, kind, err, "message_id", it.ID, "queue", t.Queue)
				continue
			}
			slog.ErrorContext(ctx, "transient failure: retried", "function", h.Function, "message_id", it.ID,
				"decision_id", sluice.DecisionID(t), "queue", t.Queue, "error", err)
			if !ev.Batch() {
				return res, fmt.Errorf("%s %s: %w", h.Function, t.Queue, err)
			}
			// The whole message is delivered again; triggers of it already
			// decided are replays then (the decision id is the same).
			res.BatchItemFailures = append(res.BatchItemFailures, BatchItemFailure{ItemIdentifier: it.ID})
			break
		}
	}
	return res, nil
}

func (h *Handler) refuse(ctx context.Context, res *Result, kind string, err error, attrs ...any) {
	slog.WarnContext(ctx, "refused without retry", append([]any{"function", h.Function, "kind", kind, "error", err}, attrs...)...)
	if res.Refused == "" {
		res.Refused = err.Error()
	}
	res.Refusals = append(res.Refusals, err.Error())
	if h.Metrics != nil {
		_ = h.Metrics.Refused(h.Function, kind, err.Error())
	}
}

// trigger decides (burst) or releases (drain) one trigger.
func (h *Handler) trigger(ctx context.Context, res *Result, t sluice.Trigger) error {
	if _, err := h.App.Config.Profile(t.Queue); err != nil {
		return err
	}
	log := slog.With("function", h.Function, "decision_id", sluice.DecisionID(t), "queue", t.Queue,
		"alarm", t.AlarmName, "state", t.State, "delivery", t.Delivery)
	if h.Function == FunctionDrain {
		if t.State != sluice.StateOK {
			log.InfoContext(ctx, "not an OK alarm: nothing to drain")
			return nil
		}
		if h.Drain == nil {
			return errors.New("drain is not available in this build")
		}
		out, err := h.Drain(ctx, t)
		if err != nil {
			return err
		}
		log.InfoContext(ctx, "drained", "result", out)
		res.Drains = append(res.Drains, out)
		return nil
	}
	var inFlight int
	live := false
	if h.Depth != nil && t.State == sluice.StateAlarm {
		lt, d, why := h.Depth.Live(ctx, t)
		if why != nil {
			log.InfoContext(ctx, "live depth unavailable: using the alarm datapoint", "depth", t.Depth, "reason", why.Error())
		} else {
			log.InfoContext(ctx, "live depth", "datapoint", t.Depth, "visible", d.Visible, "in_flight", d.InFlight)
			t, inFlight, live = lt, d.InFlight, true
		}
	}
	if h.Metrics != nil {
		_ = h.Metrics.Depth(h.Function, t, inFlight, live)
	}
	decide := h.Decide
	if decide == nil {
		decide = h.App.Burst.Decide
	}
	rec, replayed, err := decide(ctx, t)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "decision", "status", rec.Status, "outcome", rec.Outcome, "replayed", replayed,
		"depth", t.Depth, "depth_source", t.DepthSource, "slots_wanted", rec.SlotsWanted, "slots_covered", rec.SlotsCovered,
		"total_expected_cost", rec.TotalExpectedCost.String())
	if h.Metrics != nil {
		_ = h.Metrics.Decision(h.Function, rec, replayed)
	}
	res.Decisions = append(res.Decisions, DecisionSummary{
		DecisionID: rec.DecisionID, Queue: t.Queue, Status: rec.Status, Outcome: rec.Outcome, Replayed: replayed,
		Depth: t.Depth, DepthSource: t.DepthSource,
		SlotsWanted: rec.SlotsWanted, SlotsCovered: rec.SlotsCovered, TotalExpectedCost: rec.TotalExpectedCost.String(),
	})
	return nil
}
