// Package ledger stores Sluice's decision records and placements in an
// append-only, hash-chained log. Every record carries prev_hash (the hash of
// the record before it, GenesisHash for the first) and hash (SHA-256 over the
// record's canonical JSON with "hash" set to ""), so any edit, deletion or
// reordering of a stored record breaks the chain and Verify names where.
//
// The ledger never computes or rounds money: amounts travel as the exact
// decimal strings the root types marshal, and are stored as such.
//
// SQLite is the embedded store (one file, WAL mode, safe for several
// processes); a DynamoDB store will implement the same sluice.Ledger interface.
// See README.md for the schema and the exact hash rule.
package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/sluicehq/sluice"
)

// Record kinds, stored in the kind column and in the "kind" field of each body.
const (
	// KindDecision is a sluice.DecisionRecord.
	KindDecision = "decision"
	// KindPlacement is a PlacementRecord: one sluice.Placement of a recorded decision.
	KindPlacement = "placement"
	// KindRelease is a sluice.Release: one step (pending, released, lost) of
	// giving a placement back, including price-mismatch releases and
	// reconcile findings (Reason says which).
	KindRelease = "release"
)

// ReleaseRecordID is the record id of one release step: the placement's
// record id, then "/release/" and the state, e.g.
// "dec-…/placement/0/release/released". An orphan (no decision) is
// "orphan/<provider>/<first external id>/release/<state>".
func ReleaseRecordID(r sluice.Release) string {
	if r.DecisionID == "" {
		ext := ""
		if len(r.ExternalIDs) > 0 {
			ext = r.ExternalIDs[0]
		}
		return "orphan/" + r.Provider + "/" + ext + "/release/" + r.State
	}
	return PlacementRecordID(r.DecisionID, r.Line) + "/release/" + r.State
}

// GenesisHash is the prev_hash of the first record in a ledger: 64 zeros, the
// width of a hex SHA-256, so every prev_hash has the same shape.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// PlacementRecord is the body stored for a placement: a small envelope around
// the sluice.Placement so that it is chained like a decision. Its canonical
// JSON is {"hash":"…","kind":"placement","placement":{…},"prev_hash":"…"}.
type PlacementRecord struct {
	Kind      string           `json:"kind"` // KindPlacement
	Placement sluice.Placement `json:"placement"`
	PrevHash  string           `json:"prev_hash"`
	Hash      string           `json:"hash"`
}

// PlacementRecordID is the record id of a placement: the decision id, then
// "/placement/", then the plan line number, e.g. "dec-…/placement/0".
func PlacementRecordID(decisionID string, line int) string {
	return decisionID + "/placement/" + strconv.Itoa(line)
}

// Canonical returns the canonical JSON of v: v is encoded with encoding/json,
// decoded again into plain Go values (numbers kept as their exact text with
// UseNumber) and re-encoded, so object keys come out sorted. HTML characters
// are not escaped and there is no trailing newline. Canonical is idempotent:
// Canonical(json.RawMessage(Canonical(v))) is Canonical(v).
func Canonical(v any) ([]byte, error) {
	doc, err := toDoc(v)
	if err != nil {
		return nil, err
	}
	return encode(doc)
}

// HashRecord returns the hex SHA-256 of canonical record bytes. For a record
// hash the bytes must be the canonical JSON of the record with "hash" set to "".
func HashRecord(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// BodyHash recomputes the hash of a stored record body (any JSON object,
// typically one holding its own "hash"): the body is decoded, its "hash" set
// to "", and the canonical re-encoding hashed with HashRecord. For a body the
// ledger wrote, BodyHash(body) equals the body's own "hash".
func BodyHash(body []byte) (string, error) {
	obj, err := decodeObject(body)
	if err != nil {
		return "", err
	}
	return hashObject(obj)
}

// hashObject hashes a decoded record with its "hash" field blanked. It
// restores the field before returning.
func hashObject(obj map[string]any) (string, error) {
	old, had := obj["hash"]
	obj["hash"] = ""
	c, err := encode(obj)
	if had {
		obj["hash"] = old
	} else {
		delete(obj, "hash")
	}
	if err != nil {
		return "", err
	}
	return HashRecord(c), nil
}

// seal sets prev_hash and hash on a decoded record and returns its canonical
// body and hash.
func seal(obj map[string]any, prev string) (body []byte, hash string, err error) {
	obj["prev_hash"] = prev
	if hash, err = hashObject(obj); err != nil {
		return nil, "", err
	}
	obj["hash"] = hash
	if body, err = encode(obj); err != nil {
		return nil, "", err
	}
	return body, hash, nil
}

// toDoc marshals v and decodes the result into plain values with UseNumber.
func toDoc(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ledger: canonical json: %w", err)
	}
	return decode(b)
}

// toObject is toDoc for values that must encode as a JSON object.
func toObject(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ledger: canonical json: %w", err)
	}
	return decodeObject(b)
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("ledger: decode json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("ledger: decode json: trailing data after the value")
	}
	return doc, nil
}

func decodeObject(b []byte) (map[string]any, error) {
	doc, err := decode(b)
	if err != nil {
		return nil, err
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("ledger: record is not a JSON object")
	}
	return obj, nil
}

// encode writes decoded JSON values canonically: sorted keys (encoding/json
// sorts map keys), numbers as their decoded text, no HTML escaping, no
// trailing newline.
func encode(doc any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("ledger: canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// columns are the indexed columns of a record, all derived from its body.
type columns struct {
	kind, recordID, decisionID, queue string
}

func (c columns) String() string {
	return fmt.Sprintf("kind=%s record_id=%s decision_id=%s queue=%s", c.kind, c.recordID, c.decisionID, c.queue)
}

// columnsOf derives the indexed columns from a decoded record body. Verify
// uses the same function, so a column edited behind the ledger's back (which
// the hash does not cover) is caught too.
func columnsOf(obj map[string]any) (columns, error) {
	kind, _ := obj["kind"].(string)
	switch kind {
	case KindDecision:
		id, _ := obj["decision_id"].(string)
		if id == "" {
			return columns{}, errors.New("decision without decision_id")
		}
		return columns{kind: kind, recordID: id, decisionID: id, queue: decisionQueue(obj)}, nil
	case KindPlacement:
		p, _ := obj["placement"].(map[string]any)
		if p == nil {
			return columns{}, errors.New("placement record without placement")
		}
		id, _ := p["decision_id"].(string)
		if id == "" {
			return columns{}, errors.New("placement without decision_id")
		}
		n, _ := p["line"].(json.Number)
		line, err := strconv.Atoi(n.String())
		if err != nil {
			return columns{}, fmt.Errorf("placement line %q: not an integer", n)
		}
		queue, _ := p["queue"].(string)
		return columns{kind: kind, recordID: PlacementRecordID(id, line), decisionID: id, queue: queue}, nil
	case KindRelease:
		b, err := encode(obj)
		if err != nil {
			return columns{}, fmt.Errorf("release record: %v", err)
		}
		r, err := decodeRelease(b)
		if err != nil {
			return columns{}, fmt.Errorf("release record: %v", err)
		}
		if r.State == "" {
			return columns{}, errors.New("release record without state")
		}
		return columns{kind: kind, recordID: ReleaseRecordID(r), decisionID: r.DecisionID, queue: r.Queue}, nil
	default:
		return columns{}, fmt.Errorf("unknown record kind %q", kind)
	}
}

// decisionQueue is the queue a decision is about: the trigger's queue, or the
// profile's when the trigger names none.
func decisionQueue(obj map[string]any) string {
	for _, k := range []string{"trigger", "profile"} {
		if m, ok := obj[k].(map[string]any); ok {
			if q, _ := m["queue"].(string); q != "" {
				return q
			}
		}
	}
	return ""
}

// Problems a VerifyError reports.
const (
	// ProblemMalformed: the body is not a JSON object of a known kind.
	ProblemMalformed = "malformed body"
	// ProblemNotCanonical: the body is valid JSON but not in canonical form.
	ProblemNotCanonical = "body not canonical"
	// ProblemHashMismatch: the recomputed hash differs from the stored one.
	ProblemHashMismatch = "hash mismatch"
	// ProblemBrokenLink: prev_hash is not the hash of the record before it.
	ProblemBrokenLink = "broken link"
	// ProblemColumns: an indexed column disagrees with the body.
	ProblemColumns = "column mismatch"
)

// VerifyError is the first defect Verify found in the chain.
type VerifyError struct {
	// Seq and RecordID locate the bad record.
	Seq      int64
	RecordID string
	// Problem is one of the Problem constants; Detail says what differed.
	Problem string
	Detail  string
}

// Error is "ledger: record seq 7 (dec-…): hash mismatch: stored …, computed …".
func (e *VerifyError) Error() string {
	return fmt.Sprintf("ledger: record seq %d (%s): %s: %s", e.Seq, e.RecordID, e.Problem, e.Detail)
}
