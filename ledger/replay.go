package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// SpendFromRecords computes TierSpend from a chain in order, in Go: the total
// expected cost of the tier's decisions decided in [from, to), trued up by
// their later records (TrueUps). It is the DynamoDB store's answer for a
// window that is not whole UTC months, and what the conformance tests hold
// both stores' TierSpend to.
func SpendFromRecords(recs []Stored, tier sluice.Tier, from, to time.Time) (decimal.Decimal, error) {
	type dec struct {
		lines   json.RawMessage
		billing string
	}
	in := map[string]dec{}
	sum, currency := decimal.Zero, ""
	var tu TrueUps
	for _, r := range recs {
		switch r.Kind {
		case KindDecision:
			var d struct {
				DecidedAt       time.Time           `json:"decided_at"`
				Profile         sluice.QueueProfile `json:"profile"`
				BillingCurrency string              `json:"billing_currency"`
				Lines           json.RawMessage     `json:"lines"`
				Total           sluice.Money        `json:"total_expected_cost"`
			}
			if err := json.Unmarshal(r.Body, &d); err != nil {
				return decimal.Zero, fmt.Errorf("ledger: tier spend: %s: %w", r.RecordID, err)
			}
			if d.Profile.Tier != tier || d.DecidedAt.Before(from) || !d.DecidedAt.Before(to) {
				continue
			}
			in[r.RecordID] = dec{d.Lines, d.BillingCurrency}
			if !d.Total.IsSet() {
				continue
			}
			if currency != "" && d.Total.Currency != currency {
				return decimal.Zero, fmt.Errorf("ledger: tier spend: %s decisions in both %s and %s", tier, currency, d.Total.Currency)
			}
			currency, sum = d.Total.Currency, sum.Add(d.Total.Amount)
		case KindPlacement, KindRelease:
			d, ok := in[r.DecisionID]
			if !ok {
				continue
			}
			delta, err := tu.Add(r.Kind, r.Body, d.lines, d.billing)
			if err != nil {
				return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
			}
			sum = sum.Add(delta)
		}
	}
	return sum, nil
}

// LiveSlotsFromRecords computes every queue's live slots from a chain: a
// decision adds its slots_covered, a failed placement takes its slots back,
// a released or lost step (the first for its line) takes its slots back.
func LiveSlotsFromRecords(recs []Stored) (map[string]int, error) {
	live := map[string]int{}
	settled := map[string]bool{}
	for _, r := range recs {
		switch r.Kind {
		case KindDecision:
			var d struct {
				SlotsCovered int `json:"slots_covered"`
			}
			if err := json.Unmarshal(r.Body, &d); err != nil {
				return nil, fmt.Errorf("ledger: live slots: %s: %w", r.RecordID, err)
			}
			live[r.Queue] += d.SlotsCovered
		case KindPlacement:
			var pr PlacementRecord
			if err := json.Unmarshal(r.Body, &pr); err != nil {
				return nil, fmt.Errorf("ledger: live slots: %s: %w", r.RecordID, err)
			}
			if pr.Placement.Error != "" {
				live[r.Queue] -= pr.Placement.Slots
				settled[PlacementRecordID(pr.Placement.DecisionID, pr.Placement.Line)] = true
			}
		case KindRelease:
			rel, err := decodeRelease(r.Body)
			if err != nil {
				return nil, err
			}
			k := PlacementRecordID(rel.DecisionID, rel.Line)
			if rel.DecisionID == "" || settled[k] || (rel.State != sluice.ReleaseReleased && rel.State != sluice.ReleaseLost) {
				continue
			}
			settled[k] = true
			live[r.Queue] -= rel.Slots
		}
	}
	return live, nil
}

// OpenPlacementsFromRecords lists the successful placements of queue ("" =
// every queue) with no released or lost step, ReleaseState
// sluice.ReleasePending when a release was asked for, ReleaseReason the
// reason of the latest release step, in SQLite's order:
// hourly burn (Price × Units converted to the decision's billing currency
// with the line's recorded FX rate, division rounded half away from zero to
// sluice.FXScale places, for ordering only) descending, unconvertible last,
// ties by decision id then line.
func OpenPlacementsFromRecords(recs []Stored, queue string) ([]sluice.OpenPlacement, error) {
	type decInfo struct {
		lines   []sluice.Line
		billing string
	}
	decs := map[string]decInfo{}
	var open []ranked
	at := map[string]int{} // placement record id → index in open
	gone := map[string]bool{}
	for _, r := range recs {
		switch r.Kind {
		case KindDecision:
			var d struct {
				BillingCurrency string        `json:"billing_currency"`
				Lines           []sluice.Line `json:"lines"`
			}
			if err := json.Unmarshal(r.Body, &d); err != nil {
				return nil, fmt.Errorf("ledger: open placements: %s: %w", r.RecordID, err)
			}
			decs[r.RecordID] = decInfo{d.Lines, d.BillingCurrency}
		case KindPlacement:
			if queue != "" && r.Queue != queue {
				continue
			}
			var pr PlacementRecord
			if err := json.Unmarshal(r.Body, &pr); err != nil {
				return nil, fmt.Errorf("ledger: open placements: %s: %w", r.RecordID, err)
			}
			op := pr.Placement
			if op.Error != "" {
				continue
			}
			rk := ranked{op: sluice.OpenPlacement{Placement: op}}
			if d, ok := decs[op.DecisionID]; ok && op.Line >= 0 && op.Line < len(d.lines) && op.Price.IsSet() {
				if m, err := convertLine(op.Price.MulInt(op.Units), d.lines[op.Line], d.billing); err == nil {
					rk.rate, rk.ok = m.Amount, true
				}
			}
			at[r.RecordID] = len(open)
			open = append(open, rk)
		case KindRelease:
			rel, err := decodeRelease(r.Body)
			if err != nil {
				return nil, err
			}
			k := PlacementRecordID(rel.DecisionID, rel.Line)
			i, ok := at[k]
			if !ok {
				continue
			}
			switch rel.State {
			case sluice.ReleaseReleased, sluice.ReleaseLost:
				gone[k] = true
			case sluice.ReleasePending:
				open[i].op.ReleaseState = sluice.ReleasePending
			}
			open[i].op.ReleaseReason = rel.Reason
		}
	}
	var out []ranked
	for _, p := range open {
		if !gone[PlacementRecordID(p.op.DecisionID, p.op.Line)] {
			out = append(out, p)
		}
	}
	return mostExpensiveFirst(out), nil
}

// lineKey is the settle key TrueUps uses.
func lineKey(decisionID string, line int) string { return decisionID + "/" + strconv.Itoa(line) }
