package metrics

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/sluicehq/sluice"
)

// Namespace is the CloudWatch namespace of Sluice's metrics.
const Namespace = "Sluice"

// Metric names Sluice emits (dimensions in brackets):
//
//	Decisions, SlotsWanted, SlotsCovered, ExpectedCost  [Function] [Function Queue] [Function Status]
//	Replays                                             [Function] [Function Queue]
//	OffersRejected                                      [Function Reason]
//	OffersDropped                                       [Function Reason]
//	ProviderLatency (ms), ProviderOffers, ProviderErrors [Function Provider]
//	QueueDepth, QueueInFlight                           [Function Queue]
//	Refused                                             [Function Kind]
//	Released, ReleasePending                            [Function] [Function Queue] (drain), [Function] (reconcile)
//	Orphans, Lost, Adopted                              [Function] (reconcile)
//
// ExpectedCost is the decision's total expected cost in its billing currency
// (the Currency property), the exact decimal the ledger holds.
const (
	MDecisions       = "Decisions"
	MReplays         = "Replays"
	MSlotsWanted     = "SlotsWanted"
	MSlotsCovered    = "SlotsCovered"
	MExpectedCost    = "ExpectedCost"
	MOffersRejected  = "OffersRejected"
	MOffersDropped   = "OffersDropped"
	MProviderLatency = "ProviderLatency"
	MProviderOffers  = "ProviderOffers"
	MProviderErrors  = "ProviderErrors"
	MQueueDepth      = "QueueDepth"
	MQueueInFlight   = "QueueInFlight"
	MRefused         = "Refused"
)

// Decision emits the metrics of one decision: the decision line (count,
// slots, expected cost), one line per rejection reason code (an offer refused
// for two reasons counts under both), one per dropped-offer reason, and one
// per quote source (latency, offers, error). A replayed decision (the same
// alarm delivered again) emits only Replays: its cost was counted once.
func (w *Writer) Decision(function string, rec sluice.DecisionRecord, replayed bool) error {
	base := map[string]any{"Function": function, "Queue": rec.Demand.Queue, "DecisionId": rec.DecisionID}
	if rec.Demand.Queue == "" {
		base["Queue"] = rec.Trigger.Queue
	}
	if replayed {
		return w.Emit([][]string{{"Function"}, {"Function", "Queue"}}, []Metric{Int(MReplays, Count, 1)}, base)
	}
	p := maps.Clone(base)
	p["Status"] = rec.Status
	p["Outcome"] = rec.Outcome
	p["Currency"] = rec.TotalExpectedCost.Currency
	p["DepthSource"] = rec.Trigger.DepthSource
	p["Delivery"] = rec.Trigger.Delivery
	cost := rec.TotalExpectedCost.Amount.String()
	err := w.Emit([][]string{{"Function"}, {"Function", "Queue"}, {"Function", "Status"}}, []Metric{
		Int(MDecisions, Count, 1),
		Int(MSlotsWanted, Count, int64(rec.SlotsWanted)),
		Int(MSlotsCovered, Count, int64(rec.SlotsCovered)),
		{Name: MExpectedCost, Unit: None, Value: jsonNumber(cost)},
	}, p)
	rejected := map[string]int64{}
	for _, r := range rec.Rejected {
		seen := map[string]bool{}
		for _, reason := range r.Reasons {
			if !seen[reason.Code] {
				seen[reason.Code] = true
				rejected[reason.Code]++
			}
		}
	}
	dropped := map[string]int64{}
	for _, s := range rec.Sources {
		for _, d := range s.Dropped {
			dropped[d.Reason]++
		}
	}
	for _, kind := range []struct {
		name   string
		counts map[string]int64
	}{{MOffersRejected, rejected}, {MOffersDropped, dropped}} {
		for _, code := range slices.Sorted(maps.Keys(kind.counts)) {
			p := maps.Clone(base)
			p["Reason"] = code
			err = firstErr(err, w.Emit([][]string{{"Function", "Reason"}}, []Metric{Int(kind.name, Count, kind.counts[code])}, p))
		}
	}
	for _, s := range rec.Sources {
		p := maps.Clone(base)
		p["Provider"] = s.Provider
		failed := int64(0)
		if s.Error != "" {
			failed = 1
			p["ErrorClass"] = s.ErrorClass
		}
		err = firstErr(err, w.Emit([][]string{{"Function", "Provider"}}, []Metric{
			Int(MProviderLatency, Milliseconds, s.LatencyMS),
			Int(MProviderOffers, Count, int64(s.Offers)),
			Int(MProviderErrors, Count, failed),
		}, p))
	}
	return err
}

// Depth emits a queue's depth as the decision used it, with where it came
// from (DepthSource) and, when read live, the messages in flight.
func (w *Writer) Depth(function string, t sluice.Trigger, inFlight int, live bool) error {
	p := map[string]any{"Function": function, "Queue": t.Queue, "DepthSource": t.DepthSource, "DecisionId": sluice.DecisionID(t)}
	ms := []Metric{Int(MQueueDepth, Count, int64(t.Depth))}
	if live {
		ms = append(ms, Int(MQueueInFlight, Count, int64(inFlight)))
	}
	return w.Emit([][]string{{"Function", "Queue"}}, ms, p)
}

// Refused counts an event (or SQS message) refused without retry; kind is
// "bad-event", "unknown-queue" or "policy".
func (w *Writer) Refused(function, kind, why string) error {
	return w.Emit([][]string{{"Function", "Kind"}}, []Metric{Int(MRefused, Count, 1)},
		map[string]any{"Function": function, "Kind": kind, "Reason": why})
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// jsonNumber is a decimal's text as a JSON number ("0" for an empty amount).
func jsonNumber(s string) json.Number {
	if s == "" {
		return "0"
	}
	return json.Number(s)
}

// Release metrics.
const (
	MReleased       = "Released"
	MReleasePending = "ReleasePending"
	MOrphans        = "Orphans"
	MLost           = "Lost"
	MAdopted        = "Adopted"
)

// Drain emits one drain's outcome: placements released and still pending
// [Function Queue].
func (w *Writer) Drain(function string, rep sluice.DrainReport) error {
	return w.Emit([][]string{{"Function"}, {"Function", "Queue"}}, []Metric{
		Int(MReleased, Count, int64(len(rep.Released))),
		Int(MReleasePending, Count, int64(len(rep.Pending))),
	}, map[string]any{"Function": function, "Queue": rep.Queue, "Skipped": rep.Skipped})
}

// Reconcile emits one reconcile run: orphans terminated, placements lost,
// lines adopted, pending releases confirmed and still pending [Function].
func (w *Writer) Reconcile(function string, rep sluice.ReconcileReport) error {
	return w.Emit([][]string{{"Function"}}, []Metric{
		Int(MOrphans, Count, int64(len(rep.Orphans))),
		Int(MLost, Count, int64(len(rep.Lost))),
		Int(MAdopted, Count, int64(len(rep.Adopted))),
		Int(MReleased, Count, int64(len(rep.Released))),
		Int(MReleasePending, Count, int64(len(rep.Pending))),
	}, map[string]any{"Function": function})
}
