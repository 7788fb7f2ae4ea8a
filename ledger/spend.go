package ledger

import (
	"context"
	"database/sql"
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

// TierSpend is the committed spend of tier: the sum of the total expected
// cost of its decisions decided in [from, to), in the billing currency they
// were recorded in. It fails if the records mix currencies (a billing
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
	return sum, rows.Err()
}
