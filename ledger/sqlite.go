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

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sluicehq/sluice"
)

// schemaVersion is stored in PRAGMA user_version.
const schemaVersion = 1

// BusyTimeout is how long an append waits for another connection or process
// holding the write lock before it fails with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// schema is the whole ledger: one append-only table. The triggers stop
// accidental UPDATE/DELETE through SQL; they are not a security boundary
// (whoever can write the file can drop them), the hash chain is.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS records (
		seq         INTEGER PRIMARY KEY,
		kind        TEXT NOT NULL,
		record_id   TEXT NOT NULL UNIQUE,
		decision_id TEXT NOT NULL,
		queue       TEXT NOT NULL,
		body        TEXT NOT NULL,
		prev_hash   TEXT NOT NULL,
		hash        TEXT NOT NULL,
		recorded_at TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS records_decision ON records (decision_id, kind)`,
	`CREATE INDEX IF NOT EXISTS records_queue ON records (queue, kind)`,
	`CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
		BEGIN SELECT RAISE(ABORT, 'ledger records are append-only'); END`,
	`CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
		BEGIN SELECT RAISE(ABORT, 'ledger records are append-only'); END`,
}

// liveSlotsSQL is the slots committed and not released for one queue: every
// decision counts the slots its plan covers from the moment its intent is
// recorded (so a decision still placing, or one whose process died mid-way,
// is never bought twice), and a placement record that says the line failed
// gives its slots back. A later 'release' kind adds a WHEN arm subtracting the
// slots it releases, e.g.
//
//	WHEN 'release' THEN -json_extract(body, '$.release.slots')
const liveSlotsSQL = `
SELECT COALESCE(SUM(CASE
		WHEN kind = 'decision' THEN COALESCE(json_extract(body, '$.slots_covered'), 0)
		WHEN kind = 'placement' AND COALESCE(json_extract(body, '$.placement.error'), '') != ''
			THEN -json_extract(body, '$.placement.slots')
		WHEN kind = 'release' AND json_extract(body, '$.state') IN ('released', 'lost')
			THEN -json_extract(body, '$.slots')
		ELSE 0
	END), 0)
FROM records
WHERE queue = ?`

// ErrNoDecision is returned by AppendPlacement when the placement's decision
// is not recorded.
var ErrNoDecision = errors.New("no such decision")

// SQLite is a Ledger in one SQLite file. It is safe for concurrent use, and
// several processes may open the same file: appends serialise on SQLite's
// write lock (BEGIN IMMEDIATE), so the chain never forks.
type SQLite struct {
	db  *sql.DB
	now func() time.Time // recorded_at; not covered by the hash
}

var _ sluice.Ledger = (*SQLite)(nil)

// OpenSQLite opens (creating if needed) the ledger file at path, sets WAL mode,
// a busy timeout of BusyTimeout and synchronous=FULL, and creates the schema
// if absent. path is a plain file path; it may not contain '?'.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" || path == ":memory:" || strings.Contains(path, "?") {
		return nil, fmt.Errorf("ledger: sqlite path %q: want a file path without '?'", path)
	}
	dsn := fmt.Sprintf("%s?_busy_timeout=%d&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate",
		path, BusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	s := &SQLite{db: db, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	return s, nil
}

func (s *SQLite) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one process creates the schema
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this build (%d)", v, schemaVersion)
	}
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if v < schemaVersion {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

// Decision returns the decision record with this id exactly as stored
// (PrevHash and Hash included), or ok=false. Its Placements are the placement
// records of the decision, in line order; when there are none, Placements is
// as stored. The stored hash covers the record as appended, with no
// placements: to recheck it, set Placements back to nil (or use Verify).
func (s *SQLite) Decision(ctx context.Context, id string) (rec sluice.DecisionRecord, ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // one snapshot for both reads
	if err != nil {
		return rec, false, fmt.Errorf("ledger: decision %q: %w", id, err)
	}
	defer tx.Rollback()
	var body string
	err = tx.QueryRowContext(ctx,
		`SELECT body FROM records WHERE record_id = ? AND kind = 'decision'`, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("ledger: decision %q: %w", id, err)
	}
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		return rec, false, fmt.Errorf("ledger: decision %q: decode: %w", id, err)
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT body FROM records WHERE decision_id = ? AND kind = 'placement' ORDER BY seq`, id)
	if err != nil {
		return rec, false, fmt.Errorf("ledger: decision %q: placements: %w", id, err)
	}
	defer rows.Close()
	var ps []sluice.Placement
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return rec, false, fmt.Errorf("ledger: decision %q: placements: %w", id, err)
		}
		var pr PlacementRecord
		if err := json.Unmarshal([]byte(b), &pr); err != nil {
			return rec, false, fmt.Errorf("ledger: decision %q: decode placement: %w", id, err)
		}
		ps = append(ps, pr.Placement)
	}
	if err := rows.Err(); err != nil {
		return rec, false, fmt.Errorf("ledger: decision %q: placements: %w", id, err)
	}
	if len(ps) > 0 {
		slices.SortStableFunc(ps, func(a, b sluice.Placement) int { return a.Line - b.Line })
		rec.Placements = ps
	}
	return rec, true, nil
}

// AppendDecision chains and stores rec. On success it has set rec.Kind to
// "decision" and rec.PrevHash and rec.Hash to the chain values stored. It
// returns an error wrapping sluice.ErrDuplicate when the decision id is
// already recorded (rec is then left unchanged). rec.Placements must be
// empty: placements are recorded with AppendPlacement, so that LiveSlots and
// Decision see every placement the same way.
func (s *SQLite) AppendDecision(ctx context.Context, rec *sluice.DecisionRecord) error {
	if rec == nil {
		return errors.New("ledger: append decision: nil record")
	}
	if rec.DecisionID == "" {
		return errors.New("ledger: append decision: empty decision id")
	}
	if rec.Kind != "" && rec.Kind != KindDecision {
		return fmt.Errorf("ledger: append decision %q: kind %q, want %q", rec.DecisionID, rec.Kind, KindDecision)
	}
	if len(rec.Placements) > 0 {
		return fmt.Errorf("ledger: append decision %q: record has %d placements; append them with AppendPlacement",
			rec.DecisionID, len(rec.Placements))
	}
	r := *rec
	r.Kind = KindDecision
	obj, err := toObject(&r)
	if err != nil {
		return fmt.Errorf("ledger: append decision %q: %w", rec.DecisionID, err)
	}
	// The decision was computed from the queue's live slots and the tier's
	// spend as they were; under the write lock, check they still are, so two
	// alarms decided at once cannot both buy the same missing slots or the
	// same budget headroom.
	check := func(ctx context.Context, tx *sql.Tx) error {
		// A redelivered alarm is a duplicate, whatever state it was planned on.
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM records WHERE record_id = ?`, rec.DecisionID).Scan(&one)
		if err == nil {
			return fmt.Errorf("decision %q: %w", rec.DecisionID, sluice.ErrDuplicate)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var live int
		if err := tx.QueryRowContext(ctx, liveSlotsSQL, queueOf(rec)).Scan(&live); err != nil {
			return err
		}
		if live != rec.Demand.Live {
			return fmt.Errorf("%w: queue %s has %d live slots, the decision assumed %d", sluice.ErrStale, queueOf(rec), live, rec.Demand.Live)
		}
		if b := rec.Budget; b != nil {
			spent, err := tierSpend(ctx, tx, b.Tier, b.PeriodStart, b.PeriodEnd)
			if err != nil {
				return err
			}
			if !spent.Equal(b.Spent.Amount) {
				return fmt.Errorf("%w: tier %s spent %s this period, the decision assumed %s", sluice.ErrStale, b.Tier, spent, b.Spent.Amount)
			}
		}
		return nil
	}
	prev, hash, err := s.append(ctx, obj, check)
	if err != nil {
		return fmt.Errorf("ledger: append decision %q: %w", rec.DecisionID, err)
	}
	rec.Kind, rec.PrevHash, rec.Hash = KindDecision, prev, hash
	return nil
}

// AppendPlacement chains and stores one placement of a recorded decision. It
// fails with ErrNoDecision when the decision is not recorded, when p.Queue is
// not the decision's queue, and with an error wrapping sluice.ErrDuplicate when
// the same decision and line is already recorded.
func (s *SQLite) AppendPlacement(ctx context.Context, p sluice.Placement) error {
	id := PlacementRecordID(p.DecisionID, p.Line)
	switch {
	case p.DecisionID == "":
		return errors.New("ledger: append placement: empty decision id")
	case p.Queue == "":
		return fmt.Errorf("ledger: append placement %q: empty queue", id)
	case p.Slots < 0 || p.Units < 0 || p.Slots > 1<<20:
		return fmt.Errorf("ledger: append placement %q: negative slots or units", id)
	}
	obj, err := toObject(PlacementRecord{Kind: KindPlacement, Placement: p})
	if err != nil {
		return fmt.Errorf("ledger: append placement %q: %w", id, err)
	}
	check := func(ctx context.Context, tx *sql.Tx) error {
		var queue string
		err := tx.QueryRowContext(ctx,
			`SELECT queue FROM records WHERE record_id = ? AND kind = 'decision'`, p.DecisionID).Scan(&queue)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("decision %q: %w", p.DecisionID, ErrNoDecision)
		}
		if err != nil {
			return err
		}
		if queue != p.Queue {
			return fmt.Errorf("queue %q differs from the decision's queue %q", p.Queue, queue)
		}
		return nil
	}
	if _, _, err := s.append(ctx, obj, check); err != nil {
		return fmt.Errorf("ledger: append placement %q: %w", id, err)
	}
	return nil
}

// append stores one record at the head of the chain. The transaction is
// BEGIN IMMEDIATE (the DSN's _txlock), so reading the head and inserting
// happen under the write lock: two appenders, in this process or another,
// never chain from the same head. A duplicate record id is caught by the
// UNIQUE constraint and reported as sluice.ErrDuplicate.
func (s *SQLite) append(ctx context.Context, obj map[string]any,
	check func(context.Context, *sql.Tx) error) (prev, hash string, err error) {
	cols, err := columnsOf(obj)
	if err != nil {
		return "", "", err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", "", err
	}
	defer tx.Rollback()
	if check != nil {
		if err := check(ctx, tx); err != nil {
			return "", "", err
		}
	}
	err = tx.QueryRowContext(ctx, `SELECT hash FROM records ORDER BY seq DESC LIMIT 1`).Scan(&prev)
	if errors.Is(err, sql.ErrNoRows) {
		prev, err = GenesisHash, nil
	}
	if err != nil {
		return "", "", err
	}
	body, hash, err := seal(obj, prev)
	if err != nil {
		return "", "", err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO records
		(kind, record_id, decision_id, queue, body, prev_hash, hash, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		cols.kind, cols.recordID, cols.decisionID, cols.queue, string(body), prev, hash,
		s.now().UTC().Format(time.RFC3339Nano))
	if isUnique(err) {
		return "", "", fmt.Errorf("%s %q: %w", cols.kind, cols.recordID, sluice.ErrDuplicate)
	}
	if err != nil {
		return "", "", err
	}
	if err := tx.Commit(); err != nil {
		return "", "", err
	}
	return prev, hash, nil
}

func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// LiveSlots is the number of slots committed and not released for queue:
// what its decisions' plans cover, less lines that failed to place (see
// liveSlotsSQL; releases will subtract).
func (s *SQLite) LiveSlots(ctx context.Context, queue string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, liveSlotsSQL, queue).Scan(&n); err != nil {
		return 0, fmt.Errorf("ledger: live slots %q: %w", queue, err)
	}
	return n, nil
}

// Verify walks every record in seq order and checks the chain: each body is
// canonical JSON, its hash recomputes (BodyHash) to the stored hash, its
// prev_hash is the previous record's hash (GenesisHash for the first), and
// the indexed columns agree with the body. It returns how many records
// checked out; on the first defect err is a *VerifyError naming the record's
// seq and id, and n counts the good records before it. Verify reads one
// snapshot, so appends may continue while it runs.
func (s *SQLite) Verify(ctx context.Context) (n int, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("ledger: verify: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT seq, kind, record_id, decision_id, queue, body, prev_hash, hash
		FROM records ORDER BY seq`)
	if err != nil {
		return 0, fmt.Errorf("ledger: verify: %w", err)
	}
	defer rows.Close()
	want := GenesisHash
	for rows.Next() {
		var (
			seq  int64
			col  columns
			body string
			prev string
			hash string
		)
		if err := rows.Scan(&seq, &col.kind, &col.recordID, &col.decisionID, &col.queue, &body, &prev, &hash); err != nil {
			return n, fmt.Errorf("ledger: verify: %w", err)
		}
		bad := func(problem, format string, args ...any) error {
			return &VerifyError{Seq: seq, RecordID: col.recordID, Problem: problem, Detail: fmt.Sprintf(format, args...)}
		}
		obj, err := decodeObject([]byte(body))
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		canon, err := encode(obj)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		if string(canon) != body {
			return n, bad(ProblemNotCanonical, "stored body differs from its canonical form")
		}
		computed, err := hashObject(obj)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		if bodyHash, _ := obj["hash"].(string); bodyHash != hash {
			return n, bad(ProblemColumns, "hash column %s, body hash %q", hash, bodyHash)
		}
		if computed != hash {
			return n, bad(ProblemHashMismatch, "stored %s, computed %s", hash, computed)
		}
		if bodyPrev, _ := obj["prev_hash"].(string); bodyPrev != prev {
			return n, bad(ProblemColumns, "prev_hash column %s, body prev_hash %q", prev, bodyPrev)
		}
		if prev != want {
			return n, bad(ProblemBrokenLink, "prev_hash %s, previous record's hash %s", prev, want)
		}
		derived, err := columnsOf(obj)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		if derived != col {
			return n, bad(ProblemColumns, "columns %v, body says %v", col, derived)
		}
		want = hash
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("ledger: verify: %w", err)
	}
	return n, nil
}

// queueOf is the queue a decision record is indexed under.
func queueOf(rec *sluice.DecisionRecord) string {
	if rec.Trigger.Queue != "" {
		return rec.Trigger.Queue
	}
	return rec.Profile.Queue
}
