// Package audit reads a ledger chain the way finance does: it recomputes
// every line and total of every decision from the recorded unit prices,
// quantities, hours, rework and FX rates (Recompute), exports the placed
// lines as FOCUS 1.2 cost rows (WriteFOCUS), and summarises a month's spend
// by tier, team, provider or zone (MonthReport). It works on the stored
// records of any ledger store (ledger.Stored), in chain order, and never
// uses binary floating point (see package chart for the one drawing edge).
package audit

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// Book is a chain decoded: its decisions in chain order, each with its
// lines' placements and release steps.
type Book struct {
	Decisions []*Decision
	// Orphans are release steps of instances no decision owns (reconcile).
	Orphans []sluice.Release
	// OrphanCosts are the settled (released or lost) ones among them, in
	// chain order: costs with no plan line (see Orphan).
	OrphanCosts []*Orphan
	byID        map[string]*Decision
}

// Decision is one decision record and what happened to its lines.
type Decision struct {
	Seq      int64
	RecordID string
	Rec      sluice.DecisionRecord
	Lines    []*LineState
}

// Line states.
const (
	LinePlanned = "planned" // no placement record yet
	LineFailed  = "failed"  // the provider did not place it
	LineOpen    = "open"    // placed, not released (a release may be pending)
	LineSettled = "settled" // released or lost: its accrued cost is known
)

// LineState is one plan line with its placement and release steps.
type LineState struct {
	Decision  *Decision
	Index     int
	Line      sluice.Line
	Placement *sluice.Placement
	// Final is the released or lost step, nil until there is one.
	Final    *sluice.Release
	Releases []sluice.Release
}

// State is LinePlanned, LineFailed, LineOpen or LineSettled.
func (l *LineState) State() string {
	switch {
	case l.Placement == nil:
		return LinePlanned
	case l.Placement.Error != "":
		return LineFailed
	case l.Final != nil:
		return LineSettled
	default:
		return LineOpen
	}
}

// Committed is what the line holds against its tier's budget, in the billing
// currency: its expected cost while planned or open, nothing once failed,
// and its accrued cost once settled (ledger.TrueUps: converted with the
// line's recorded FX rate; dividing rounds half away from zero to
// sluice.FXScale places).
func (l *LineState) Committed() (sluice.Money, error) {
	billing := l.Decision.Rec.BillingCurrency
	switch l.State() {
	case LineFailed:
		return sluice.Money{Amount: decimal.Zero, Currency: billing}, nil
	case LineSettled:
		return toBilling(l.Final.AccruedCost, l.Line, billing)
	default:
		return l.Line.ExpectedCostBilling, nil
	}
}

// Billed is the provider charge of the line in the billing currency: the
// base cost (no expected rework) converted with the line's FX rate while
// planned or open (a projection), the accrued cost once settled, nothing
// when it failed. Same rounding point as Committed.
func (l *LineState) Billed() (sluice.Money, error) {
	billing := l.Decision.Rec.BillingCurrency
	switch l.State() {
	case LineFailed:
		return sluice.Money{Amount: decimal.Zero, Currency: billing}, nil
	case LineSettled:
		return toBilling(l.Final.AccruedCost, l.Line, billing)
	default:
		return toBilling(l.Line.BaseCost, l.Line, billing)
	}
}

// HoursRun is the hours per unit the line runs (or ran): the planned hours
// while planned or open, the billed seconds ÷ 3600 once settled (rounded
// half away from zero to HoursPlaces), 0 when it failed. To multiply it,
// use hoursTimes (one rounding, after the multiplication).
func (l *LineState) HoursRun() decimal.Decimal {
	return l.hoursTimes(1)
}

// hoursTimes is n × HoursRun with a single rounding point: once settled, n
// × billed seconds ÷ 3600 rounded half away from zero to HoursPlaces (n ×
// the rounded hours would carry the rounding error n times: 32 GPUs × 1 s
// is 0.008889 GPU-hours, not 32 × 0.000278 = 0.008896).
func (l *LineState) hoursTimes(n int64) decimal.Decimal {
	switch l.State() {
	case LineFailed:
		return decimal.Zero
	case LineSettled:
		return decimal.NewFromInt(n).Mul(decimal.NewFromInt(l.Final.BilledSeconds)).DivRound(decimal.NewFromInt(3600), HoursPlaces)
	default:
		return decimal.NewFromInt(n).Mul(l.Line.Hours)
	}
}

// GPUHours is GPUs × the hours run, rounded once (hoursTimes).
func (l *LineState) GPUHours() decimal.Decimal {
	return l.hoursTimes(int64(l.Line.GPUs))
}

// UnitHours is units × the hours run, rounded once (hoursTimes): the FOCUS
// PricingQuantity.
func (l *LineState) UnitHours() decimal.Decimal {
	return l.hoursTimes(int64(l.Line.Units))
}

// Start is when the line started running (placement time; decision time
// while planned); End is when it stopped or is planned to (release time once
// settled, else Start + planned hours, truncated to whole seconds).
func (l *LineState) Start() time.Time {
	if l.Placement != nil && !l.Placement.PlacedAt.IsZero() {
		return l.Placement.PlacedAt.UTC()
	}
	return l.Decision.Rec.DecidedAt.UTC()
}

// End: see Start.
func (l *LineState) End() time.Time {
	if l.State() == LineSettled && !l.Final.At.IsZero() {
		return l.Final.At.UTC()
	}
	secs := l.Line.Hours.Mul(decimal.NewFromInt(3600)).IntPart()
	return l.Start().Add(time.Duration(secs) * time.Second)
}

// toBilling converts m with the FX rate recorded on line.
func toBilling(m sluice.Money, line sluice.Line, billing string) (sluice.Money, error) {
	if m.Currency == billing || !m.IsSet() {
		if !m.IsSet() {
			return sluice.Money{Amount: decimal.Zero, Currency: billing}, nil
		}
		return m, nil
	}
	if line.FX == nil {
		return sluice.Money{}, fmt.Errorf("%s to %s: the line records no FX rate", m.Currency, billing)
	}
	out, _, err := sluice.FXTable{*line.FX}.Convert(m, billing)
	return out, err
}

// Load decodes a chain (in order). It fails on a body that does not decode,
// naming the record; the chain itself is checked by ledger.VerifyStored.
func Load(recs []ledger.Stored) (*Book, error) {
	b := &Book{byID: map[string]*Decision{}}
	for _, r := range recs {
		bad := func(err error) error { return &Problem{Seq: r.Seq, RecordID: r.RecordID, Reason: err.Error()} }
		switch r.Kind {
		case ledger.KindDecision:
			d := &Decision{Seq: r.Seq, RecordID: r.RecordID}
			if err := json.Unmarshal(r.Body, &d.Rec); err != nil {
				return nil, bad(err)
			}
			for i, l := range d.Rec.Lines {
				d.Lines = append(d.Lines, &LineState{Decision: d, Index: i, Line: l})
			}
			b.Decisions = append(b.Decisions, d)
			b.byID[r.RecordID] = d
		case ledger.KindPlacement:
			var pr ledger.PlacementRecord
			if err := json.Unmarshal(r.Body, &pr); err != nil {
				return nil, bad(err)
			}
			ls, err := b.line(pr.Placement.DecisionID, pr.Placement.Line)
			if err != nil {
				return nil, bad(err)
			}
			p := pr.Placement
			ls.Placement = &p
		case ledger.KindRelease:
			var rr ledger.ReleaseRecord
			if err := json.Unmarshal(r.Body, &rr); err != nil {
				return nil, bad(err)
			}
			rel := rr.Release
			if rel.DecisionID == "" {
				b.Orphans = append(b.Orphans, rel)
				if rel.State == sluice.ReleaseReleased || rel.State == sluice.ReleaseLost {
					o := &Orphan{Seq: r.Seq, RecordID: r.RecordID, Hash: r.Hash, Release: rel, TagLine: -1}
					if id, line, ok := parseOrphanTag(rel.Error); ok {
						o.Tag, o.TagLine, o.Decision = id, line, b.byID[id]
					}
					b.OrphanCosts = append(b.OrphanCosts, o)
				}
				continue
			}
			ls, err := b.line(rel.DecisionID, rel.Line)
			if err != nil {
				return nil, bad(err)
			}
			ls.Releases = append(ls.Releases, rel)
			if ls.Final == nil && (rel.State == sluice.ReleaseReleased || rel.State == sluice.ReleaseLost) {
				ls.Final = &ls.Releases[len(ls.Releases)-1]
			}
		default:
			return nil, bad(fmt.Errorf("unknown record kind %q", r.Kind))
		}
	}
	return b, nil
}

func (b *Book) line(decisionID string, line int) (*LineState, error) {
	d, ok := b.byID[decisionID]
	if !ok {
		return nil, fmt.Errorf("decision %q is not recorded before it", decisionID)
	}
	if line < 0 || line >= len(d.Lines) {
		return nil, fmt.Errorf("line %d: decision %s has %d lines", line, decisionID, len(d.Lines))
	}
	return d.Lines[line], nil
}

// Problem is the first record whose figures do not recompute.
type Problem struct {
	Seq      int64
	RecordID string
	Reason   string
}

// Error is "record seq 7 (dec-…): line 0 base_cost: recorded …, recomputed …".
func (p *Problem) Error() string {
	return fmt.Sprintf("record seq %d (%s): %s", p.Seq, p.RecordID, p.Reason)
}
