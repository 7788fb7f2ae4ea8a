package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// ReleaseRecord is the body stored for one release step: the sluice.Release
// itself (flat, "kind":"release") with the chain fields, so that it is
// chained like a decision. Its record id is ReleaseRecordID: one record per
// placement and state, so a placement has at most one pending and one final
// (released or lost) record, and a second final record is refused.
type ReleaseRecord struct {
	sluice.Release
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

var _ sluice.ReleaseLedger = (*SQLite)(nil)

// ErrAlreadyReleased is returned (wrapping sluice.ErrDuplicate) by
// AppendRelease when the placement already has a released or lost record.
var ErrAlreadyReleased = fmt.Errorf("placement already released or lost: %w", sluice.ErrDuplicate)

// AppendRelease chains and stores one release step. For a placement
// (DecisionID set) the placement record must exist and be successful, with
// the same queue and slots as r (ErrNoDecision otherwise), and no released or
// lost record may exist for it (ErrAlreadyReleased, which wraps
// sluice.ErrDuplicate). The same state twice is sluice.ErrDuplicate (the
// record id is unique). An orphan (DecisionID "") names its provider and
// external ids and carries no slots. r.Kind is set to "release".
func (s *SQLite) AppendRelease(ctx context.Context, r sluice.Release) error {
	r.Kind = KindRelease
	id := ReleaseRecordID(r)
	if err := checkRelease(r, id); err != nil {
		return err
	}
	obj, err := toObject(ReleaseRecord{Release: r})
	if err != nil {
		return fmt.Errorf("ledger: append release %q: %w", id, err)
	}
	check := func(ctx context.Context, tx *sql.Tx) error {
		if r.DecisionID == "" {
			return nil
		}
		var body string
		err := tx.QueryRowContext(ctx, `SELECT body FROM records WHERE record_id = ? AND kind = 'placement'`,
			PlacementRecordID(r.DecisionID, r.Line)).Scan(&body)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("placement %s line %d: %w", r.DecisionID, r.Line, ErrNoDecision)
		}
		if err != nil {
			return err
		}
		var pr PlacementRecord
		if err := json.Unmarshal([]byte(body), &pr); err != nil {
			return fmt.Errorf("placement %s line %d: %w", r.DecisionID, r.Line, err)
		}
		p := pr.Placement
		switch {
		case p.Error != "":
			return fmt.Errorf("placement %s line %d failed (%s): nothing to release: %w", r.DecisionID, r.Line, p.Error, ErrNoDecision)
		case p.Queue != r.Queue:
			return fmt.Errorf("queue %q differs from the placement's queue %q", r.Queue, p.Queue)
		case p.Slots != r.Slots:
			return fmt.Errorf("slots %d differ from the placement's %d", r.Slots, p.Slots)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM records WHERE record_id IN (?, ?)`,
			ReleaseRecordID(sluice.Release{DecisionID: r.DecisionID, Line: r.Line, State: sluice.ReleaseReleased}),
			ReleaseRecordID(sluice.Release{DecisionID: r.DecisionID, Line: r.Line, State: sluice.ReleaseLost})).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%s line %d: %w", r.DecisionID, r.Line, ErrAlreadyReleased)
		}
		return nil
	}
	if _, _, err := s.append(ctx, obj, check); err != nil {
		return fmt.Errorf("ledger: append release %q: %w", id, err)
	}
	return nil
}

// openPlacementsSQL selects the successful placements of one queue ("" =
// every queue) with the lines and billing currency of their decision, the
// states of their release records and the reason of the latest one.
const openPlacementsSQL = `
SELECT p.body, json_extract(d.body, '$.lines'), json_extract(d.body, '$.billing_currency'),
       (SELECT group_concat(json_extract(r.body, '$.state'), ',') FROM records r
         WHERE r.kind = 'release' AND r.decision_id = p.decision_id
           AND json_extract(r.body, '$.line') = json_extract(p.body, '$.placement.line')),
       (SELECT json_extract(r.body, '$.reason') FROM records r
         WHERE r.kind = 'release' AND r.decision_id = p.decision_id
           AND json_extract(r.body, '$.line') = json_extract(p.body, '$.placement.line')
         ORDER BY r.seq DESC LIMIT 1)
FROM records p JOIN records d ON d.record_id = p.decision_id AND d.kind = 'decision'
WHERE p.kind = 'placement'
  AND COALESCE(json_extract(p.body, '$.placement.error'), '') = ''
  AND (? = '' OR p.queue = ?)
ORDER BY p.seq`

// OpenPlacements returns the successful placements of queue ("" = every
// queue) that have no released or lost record, with ReleaseState
// sluice.ReleasePending when a release was asked for and not confirmed, and
// ReleaseReason the reason of the latest release record (by seq).
//
// Order: most expensive first by hourly burn, Price × Units, converted to the
// decision's billing currency with the FX rate recorded on the placement's
// line (sluice.FXTable.Convert: division rounded half away from zero to
// sluice.FXScale places; used for ordering only, never stored); ties by
// decision id, then line. A placement whose price cannot be converted sorts
// last.
func (s *SQLite) OpenPlacements(ctx context.Context, queue string) ([]sluice.OpenPlacement, error) {
	rows, err := s.db.QueryContext(ctx, openPlacementsSQL, queue, queue)
	if err != nil {
		return nil, fmt.Errorf("ledger: open placements %q: %w", queue, err)
	}
	defer rows.Close()
	var out []ranked
	for rows.Next() {
		var body string
		var lines, billing, states, reason sql.NullString
		if err := rows.Scan(&body, &lines, &billing, &states, &reason); err != nil {
			return nil, fmt.Errorf("ledger: open placements %q: %w", queue, err)
		}
		var pr PlacementRecord
		if err := json.Unmarshal([]byte(body), &pr); err != nil {
			return nil, fmt.Errorf("ledger: open placements %q: decode placement: %w", queue, err)
		}
		op := sluice.OpenPlacement{Placement: pr.Placement, ReleaseReason: reason.String}
		final := false
		for _, st := range strings.Split(states.String, ",") {
			switch st {
			case sluice.ReleaseReleased, sluice.ReleaseLost:
				final = true
			case sluice.ReleasePending:
				op.ReleaseState = sluice.ReleasePending
			}
		}
		if final {
			continue
		}
		r := ranked{op: op}
		var ls []sluice.Line
		if json.Unmarshal([]byte(lines.String), &ls) == nil && op.Line >= 0 && op.Line < len(ls) && op.Price.IsSet() {
			if m, err := convertLine(op.Price.MulInt(op.Units), ls[op.Line], billing.String); err == nil {
				r.rate, r.ok = m.Amount, true
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: open placements %q: %w", queue, err)
	}
	return mostExpensiveFirst(out), nil
}

// lineClaimsSchema is the table of line claims: an operational lease, not an
// audit record (it is outside the hash chain and Verify). One row per
// decision line; the holder and the lease's end are overwritten when the
// claim changes hands.
const lineClaimsSchema = `CREATE TABLE IF NOT EXISTS line_claims (
	decision_id TEXT NOT NULL,
	line        INTEGER NOT NULL,
	owner       TEXT NOT NULL,
	until       TEXT NOT NULL,
	PRIMARY KEY (decision_id, line)
)`

var _ sluice.LineClaims = (*SQLite)(nil)

// ClaimLine takes the lease on one decision line for owner until until
// (sluice.LineClaims). Inside one write transaction (BEGIN IMMEDIATE, so
// processes serialise): no claim, or one held by owner, or one that steal
// says may be taken (expired, or its holder is dead) → owner holds it now
// (ok); otherwise ok = false. prev is the holder before the call ("" when
// the line was never claimed).
func (s *SQLite) ClaimLine(ctx context.Context, decisionID string, line int, owner string, until time.Time,
	steal func(holder string, holderUntil time.Time) bool) (prev string, ok bool, err error) {
	if decisionID == "" || owner == "" {
		return "", false, errors.New("ledger: claim line: empty decision id or owner")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, lineClaimsSchema); err != nil {
		return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
	}
	var cur, curUntil string
	err = tx.QueryRowContext(ctx, `SELECT owner, until FROM line_claims WHERE decision_id = ? AND line = ?`, decisionID, line).Scan(&cur, &curUntil)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
	case cur != owner:
		t, perr := time.Parse(time.RFC3339Nano, curUntil)
		if perr != nil || steal == nil || !steal(cur, t) {
			return cur, false, nil
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO line_claims (decision_id, line, owner, until) VALUES (?, ?, ?, ?)
		ON CONFLICT (decision_id, line) DO UPDATE SET owner = excluded.owner, until = excluded.until`,
		decisionID, line, owner, until.UTC().Format(time.RFC3339Nano)); err != nil {
		return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
	}
	if err := tx.Commit(); err != nil {
		return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
	}
	return cur, true, nil
}

// checkRelease refuses a release step either store would record wrongly: an
// unknown state, no reason, an orphan (DecisionID "") without its provider
// and external ids or with slots, negative slots or billed seconds. id names
// the record in the error.
func checkRelease(r sluice.Release, id string) error {
	switch {
	case r.State != sluice.ReleasePending && r.State != sluice.ReleaseReleased && r.State != sluice.ReleaseLost:
		return fmt.Errorf("ledger: append release %q: state %q: want %s, %s or %s", id, r.State,
			sluice.ReleasePending, sluice.ReleaseReleased, sluice.ReleaseLost)
	case r.Reason == "":
		return fmt.Errorf("ledger: append release %q: empty reason", id)
	case r.DecisionID == "" && (r.Provider == "" || len(r.ExternalIDs) == 0):
		return fmt.Errorf("ledger: append release %q: an orphan needs its provider and external ids", id)
	case r.DecisionID == "" && r.Slots != 0:
		return fmt.Errorf("ledger: append release %q: an orphan has no slots", id)
	case r.Slots < 0 || r.BilledSeconds < 0:
		return fmt.Errorf("ledger: append release %q: negative slots or billed seconds", id)
	}
	return nil
}

// ranked is an open placement with its hourly cost in the billing currency
// (ok = false when it could not be converted).
type ranked struct {
	op   sluice.OpenPlacement
	rate decimal.Decimal
	ok   bool
}

// mostExpensiveFirst orders open placements for release: those with a known
// rate first, dearest first, then by decision id and line (stable).
func mostExpensiveFirst(out []ranked) []sluice.OpenPlacement {
	slices.SortStableFunc(out, func(a, b ranked) int {
		if a.ok != b.ok {
			if a.ok {
				return -1
			}
			return 1
		}
		if c := b.rate.Cmp(a.rate); c != 0 {
			return c
		}
		if c := strings.Compare(a.op.DecisionID, b.op.DecisionID); c != 0 {
			return c
		}
		return a.op.Line - b.op.Line
	})
	ops := make([]sluice.OpenPlacement, len(out))
	for i, r := range out {
		ops[i] = r.op
	}
	return ops
}
