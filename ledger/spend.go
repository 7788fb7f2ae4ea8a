package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// tierSpendSQL selects the total expected cost text of every decision of one
// budget tier decided in [from, to). Amounts are summed in Go with decimal,
// never by SQLite (whose SUM would go through binary floating point).
const tierSpendSQL = `
SELECT json_extract(body, '$.total_expected_cost.amount'),
       json_extract(body, '$.total_expected_cost.currency')
FROM records
WHERE kind = 'decision'
  AND json_extract(body, '$.profile.budget_tier') = ?
  AND json_extract(body, '$.decided_at') >= ?
  AND json_extract(body, '$.decided_at') < ?
  AND json_extract(body, '$.total_expected_cost.amount') IS NOT NULL`

// TierSpend is the committed spend of tier: the sum of the total expected
// cost of its decisions decided in [from, to), in the billing currency they
// were recorded in. It fails if the records mix currencies (a billing
// currency change mid-period must be converted explicitly, not summed).
// Times are compared as RFC 3339 text in UTC, which orders correctly.
func (s *SQLite) TierSpend(ctx context.Context, tier sluice.Tier, from, to time.Time) (decimal.Decimal, error) {
	rows, err := s.db.QueryContext(ctx, tierSpendSQL, string(tier),
		from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
	}
	defer rows.Close()
	sum, currency := decimal.Zero, ""
	for rows.Next() {
		var amount, cur string
		if err := rows.Scan(&amount, &cur); err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
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
