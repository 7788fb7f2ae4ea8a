package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// tierSpendSQL selects the total expected cost text of every decision of one
// budget tier decided in [from, to). Amounts are summed in Go with decimal,
// never by SQLite (whose SUM would go through binary floating point).
const tierSpendSQL = `
SELECT json_extract(body, '$.decided_at'),
       json_extract(body, '$.total_expected_cost.amount'),
       json_extract(body, '$.total_expected_cost.currency')
FROM records
WHERE kind = 'decision'
  AND json_extract(body, '$.profile.budget_tier') = ?
  AND json_extract(body, '$.decided_at') >= ?
  AND json_extract(body, '$.decided_at') < ?
  AND json_extract(body, '$.total_expected_cost.amount') IS NOT NULL`

// textSlack widens the text prefilter of tierSpendSQL so that no record in
// [from, to) is missed whatever its zone offset or fractional seconds; the
// exact window is applied in Go on parsed times.
const textSlack = 48 * time.Hour

// trueUpSQL selects the placement and release records that change the spend
// of decisions of one budget tier decided in the text window (see textSlack):
// failed placements and release steps, with the decision's lines, billing
// currency and decided_at. trueUp decides in Go what each one changes.
const trueUpSQL = `
SELECT p.kind, p.body, json_extract(d.body, '$.lines'), json_extract(d.body, '$.billing_currency'),
       json_extract(d.body, '$.decided_at')
FROM records p JOIN records d ON d.record_id = p.decision_id AND d.kind = 'decision'
WHERE p.kind IN ('placement', 'release')
  AND json_extract(d.body, '$.profile.budget_tier') = ?
  AND json_extract(d.body, '$.decided_at') >= ?
  AND json_extract(d.body, '$.decided_at') < ?
ORDER BY p.seq`

// TierSpend is the committed spend of tier: the sum of the total expected
// cost of its decisions decided in [from, to), trued up by their later
// records (see TrueUp: a failed line gives its expected cost back, a
// released line's accrued cost replaces its expected cost), in the billing
// currency they were recorded in. It fails if the records mix currencies (a billing
// currency change mid-period must be converted explicitly, not summed).
// The window is applied to parsed decided_at times (text comparison alone
// would put 00:00:00.5Z on the 1st into the previous month).
func (s *SQLite) TierSpend(ctx context.Context, tier sluice.Tier, from, to time.Time) (decimal.Decimal, error) {
	return tierSpend(ctx, s.db, tier, from, to)
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func tierSpend(ctx context.Context, q querier, tier sluice.Tier, from, to time.Time) (decimal.Decimal, error) {
	rows, err := q.QueryContext(ctx, tierSpendSQL, string(tier),
		from.Add(-textSlack).UTC().Format(time.RFC3339), to.Add(textSlack).UTC().Format(time.RFC3339))
	if err != nil {
		return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
	}
	defer rows.Close()
	sum, currency := decimal.Zero, ""
	for rows.Next() {
		var at, amount, cur string
		if err := rows.Scan(&at, &amount, &cur); err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: decided_at %q: %w", at, err)
		}
		if t.Before(from) || !t.Before(to) {
			continue
		}
		d, err := decimal.NewFromString(amount)
		if err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: total_expected_cost %q: %w", amount, err)
		}
		if currency != "" && cur != currency {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %s decisions in both %s and %s", tier, currency, cur)
		}
		currency, sum = cur, sum.Add(d)
	}
	if err := rows.Err(); err != nil {
		return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
	}
	rows.Close()
	adj, err := q.QueryContext(ctx, trueUpSQL, string(tier),
		from.Add(-textSlack).UTC().Format(time.RFC3339), to.Add(textSlack).UTC().Format(time.RFC3339))
	if err != nil {
		return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
	}
	defer adj.Close()
	var tu TrueUps
	for adj.Next() {
		var kind, body, at string
		var lines, billing sql.NullString
		if err := adj.Scan(&kind, &body, &lines, &billing, &at); err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: decided_at %q: %w", at, err)
		}
		if t.Before(from) || !t.Before(to) {
			continue
		}
		d, err := tu.Add(kind, []byte(body), []byte(lines.String), billing.String)
		if err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
		}
		sum = sum.Add(d)
	}
	return sum, adj.Err()
}

// TrueUps computes how placement and release records change their decisions'
// committed spend. Feed it the records of a chain in order; it remembers
// which lines were already settled, so a line settles once.
type TrueUps struct {
	settled map[string]bool // decision id + "/" + line
}

// Add returns the change of committed spend, in the decision's billing
// currency, that one record makes:
//
//   - a placement with an error: −ExpectedCostBilling of its line (the line
//     was never bought);
//   - a release step in state released or lost, the first for its line:
//     AccruedCost converted to the billing currency − ExpectedCostBilling of
//     the line (what it really cost replaces what the plan expected);
//   - anything else (successful placement, pending release, orphan, a line
//     number the decision does not have): 0.
//
// A settled step whose accrued cost is in a currency the line's recorded FX
// rate cannot convert into the billing currency (capacity read back in
// another currency than its offer's, released at once as a price mismatch)
// settles the line at its expected cost (0): the budget keeps the planned
// figure rather than a guessed conversion, and the record keeps the accrued
// cost as the provider billed it. Failing instead would make every later
// spend read of the tier fail, and with it every decision of the tier.
//
// lines is the decision's "lines" JSON and billing its billing currency.
// Rounding point: converting AccruedCost from the offer currency divides by
// the line's recorded FX rate when the billing currency is the rate's base,
// rounded half away from zero to sluice.FXScale places (sluice.FXTable.Convert);
// every other step is exact.
func (tu *TrueUps) Add(kind string, body, lines []byte, billing string) (decimal.Decimal, error) {
	var ls []sluice.Line
	line, key := 0, ""
	var accrued *sluice.Money
	switch kind {
	case KindPlacement:
		var pr PlacementRecord
		if err := json.Unmarshal(body, &pr); err != nil {
			return decimal.Zero, fmt.Errorf("placement: %w", err)
		}
		if pr.Placement.Error == "" {
			return decimal.Zero, nil
		}
		line, key = pr.Placement.Line, pr.Placement.DecisionID
	case KindRelease:
		r, err := decodeRelease(body)
		if err != nil {
			return decimal.Zero, err
		}
		if r.DecisionID == "" || (r.State != sluice.ReleaseReleased && r.State != sluice.ReleaseLost) {
			return decimal.Zero, nil
		}
		line, key, accrued = r.Line, r.DecisionID, &r.AccruedCost
	default:
		return decimal.Zero, nil
	}
	key = lineKey(key, line)
	if tu.settled[key] {
		return decimal.Zero, nil
	}
	if err := json.Unmarshal(lines, &ls); err != nil {
		return decimal.Zero, fmt.Errorf("decision %s lines: %w", key, err)
	}
	if line < 0 || line >= len(ls) {
		// Not a line of the decision: it changes no spend (and must not
		// block every later append of the tier); audit.Recompute reports it.
		return decimal.Zero, nil
	}
	if tu.settled == nil {
		tu.settled = map[string]bool{}
	}
	tu.settled[key] = true
	l := ls[line]
	d := l.ExpectedCostBilling.Amount.Neg()
	if accrued != nil && accrued.IsSet() {
		conv, err := convertLine(*accrued, l, billing)
		if err != nil {
			return decimal.Zero, nil // see above: settled at the expected cost
		}
		d = d.Add(conv.Amount)
	}
	return d, nil
}

// convertLine converts m into billing with the FX rate recorded on line l.
func convertLine(m sluice.Money, l sluice.Line, billing string) (sluice.Money, error) {
	if m.Currency == billing {
		return m, nil
	}
	if l.FX == nil {
		return sluice.Money{}, fmt.Errorf("%s to %s: the line records no FX rate", m.Currency, billing)
	}
	out, _, err := sluice.FXTable{*l.FX}.Convert(m, billing)
	return out, err
}

// decodeRelease reads a release record body: a sluice.Release with
// prev_hash and hash, or an envelope {"kind":"release","release":{…}}.
func decodeRelease(body []byte) (sluice.Release, error) {
	var env struct {
		Release *sluice.Release `json:"release"`
	}
	var r sluice.Release
	if err := json.Unmarshal(body, &env); err == nil && env.Release != nil {
		return *env.Release, nil
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("release: %w", err)
	}
	return r, nil
}
