package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/sluicehq/sluice/events"
)

// Result is what the burst function returns for one invocation: one entry per
// trigger in the event, or Refused when the event was bad.
type Result struct {
	Decisions []DecisionSummary `json:"decisions,omitempty"`
	// Refused names what was wrong with a bad event. A bad event is not
	// retried (it would fail the same way), so the handler returns no error.
	Refused string `json:"refused,omitempty"`
}

// DecisionSummary is the short form of one decision in a Result.
type DecisionSummary struct {
	DecisionID        string `json:"decision_id"`
	Queue             string `json:"queue"`
	Status            string `json:"status"`
	Outcome           string `json:"outcome"`
	Replayed          bool   `json:"replayed"`
	SlotsWanted       int    `json:"slots_wanted"`
	SlotsCovered      int    `json:"slots_covered"`
	TotalExpectedCost string `json:"total_expected_cost"`
}

// Handle runs the main job for one raw alarm event (any shape events.Parse
// accepts). Bad events and unknown queues are refused whole, logged, and not
// returned as errors; anything else (ledger, policy) is returned so Lambda retries.
func (a *App) Handle(ctx context.Context, raw json.RawMessage) (Result, error) {
	triggers, err := events.Parse(raw)
	if err != nil {
		slog.WarnContext(ctx, "refused bad event", "error", err)
		return Result{Refused: err.Error()}, nil
	}
	for _, t := range triggers {
		if _, err := a.Config.Profile(t.Queue); err != nil {
			slog.WarnContext(ctx, "refused event for unknown queue", "queue", t.Queue, "error", err)
			return Result{Refused: err.Error()}, nil
		}
	}
	var res Result
	for _, t := range triggers {
		rec, replayed, err := a.Burst.Decide(ctx, t)
		if err != nil {
			if IsBadInput(err) {
				return Result{Refused: err.Error()}, nil
			}
			return res, errors.Join(errors.New("burst "+t.Queue), err)
		}
		slog.InfoContext(ctx, "decision", "decision_id", rec.DecisionID, "queue", t.Queue, "status", rec.Status, "outcome", rec.Outcome,
			"replayed", replayed, "slots_wanted", rec.SlotsWanted, "slots_covered", rec.SlotsCovered,
			"total_expected_cost", rec.TotalExpectedCost.String())
		res.Decisions = append(res.Decisions, DecisionSummary{
			DecisionID: rec.DecisionID, Queue: t.Queue, Status: rec.Status, Outcome: rec.Outcome, Replayed: replayed,
			SlotsWanted: rec.SlotsWanted, SlotsCovered: rec.SlotsCovered, TotalExpectedCost: rec.TotalExpectedCost.String(),
		})
	}
	return res, nil
}
