package ledger

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
)

// Store is a ledger as Sluice and the audit commands use it: the decision
// ledger, the release steps of drain and reconcile, and the raw chain for
// verification and export. SQLite and DynamoDB implement it; the shared
// conformance suite (conformance_test.go) runs against both.
type Store interface {
	sluice.ReleaseLedger
	// Records returns every stored record in chain order.
	Records(ctx context.Context) ([]Stored, error)
	// Verify walks the chain (see VerifyStored) and returns how many records
	// checked out; on the first defect the error is a *VerifyError.
	Verify(ctx context.Context) (int, error)
	Close() error
}

// Stored is one record as a store holds it: the canonical body (prev_hash and
// hash included) and the columns the store indexes it by, which are derived
// from the body and re-checked by VerifyStored.
type Stored struct {
	Seq        int64
	Kind       string
	RecordID   string
	DecisionID string
	Queue      string
	Body       []byte
	PrevHash   string
	Hash       string
}

// VerifyStored checks a chain given in order: each body is a JSON object in
// canonical form, its "hash" and "prev_hash" equal the stored copies, its
// recomputed hash (BodyHash) equals the stored hash, prev_hash is the hash of
// the record before it (GenesisHash for the first), seq numbers increase, and
// the indexed columns agree with the body. It stops at the first defect and
// returns how many records checked out before it and a *VerifyError naming
// the record (seq and record id) and the problem.
func VerifyStored(recs []Stored) (n int, err error) {
	want := GenesisHash
	var lastSeq int64
	for i, r := range recs {
		col := columns{kind: r.Kind, recordID: r.RecordID, decisionID: r.DecisionID, queue: r.Queue}
		bad := func(problem, format string, args ...any) error {
			return &VerifyError{Seq: r.Seq, RecordID: r.RecordID, Problem: problem, Detail: fmt.Sprintf(format, args...)}
		}
		if i > 0 && r.Seq <= lastSeq {
			return n, bad(ProblemBrokenLink, "seq %d after seq %d", r.Seq, lastSeq)
		}
		lastSeq = r.Seq
		obj, err := decodeObject(r.Body)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		canon, err := encode(obj)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		if string(canon) != string(r.Body) {
			return n, bad(ProblemNotCanonical, "stored body differs from its canonical form")
		}
		computed, err := hashObject(obj)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		if bodyHash, _ := obj["hash"].(string); bodyHash != r.Hash {
			return n, bad(ProblemColumns, "hash column %s, body hash %q", r.Hash, bodyHash)
		}
		if computed != r.Hash {
			return n, bad(ProblemHashMismatch, "stored %s, computed %s", r.Hash, computed)
		}
		if bodyPrev, _ := obj["prev_hash"].(string); bodyPrev != r.PrevHash {
			return n, bad(ProblemColumns, "prev_hash column %s, body prev_hash %q", r.PrevHash, bodyPrev)
		}
		if r.PrevHash != want {
			return n, bad(ProblemBrokenLink, "prev_hash %s, previous record's hash %s", r.PrevHash, want)
		}
		derived, err := columnsOf(obj)
		if err != nil {
			return n, bad(ProblemMalformed, "%v", err)
		}
		if derived != col {
			return n, bad(ProblemColumns, "columns %v, body says %v", col, derived)
		}
		want = r.Hash
		n++
	}
	return n, nil
}
