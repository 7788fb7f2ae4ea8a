package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// Records returns every record in seq order, read in one snapshot.
func (s *SQLite) Records(ctx context.Context) ([]Stored, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("ledger: records: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT seq, kind, record_id, decision_id, queue, body, prev_hash, hash
		FROM records ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("ledger: records: %w", err)
	}
	defer rows.Close()
	var out []Stored
	for rows.Next() {
		var r Stored
		var body string
		if err := rows.Scan(&r.Seq, &r.Kind, &r.RecordID, &r.DecisionID, &r.Queue, &body, &r.PrevHash, &r.Hash); err != nil {
			return nil, fmt.Errorf("ledger: records: %w", err)
		}
		r.Body = []byte(body)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: records: %w", err)
	}
	return out, nil
}
