package sluice

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Decision statuses.
const (
	StatusPlaced      = "placed"        // outcome: every chosen line was placed
	StatusPartial     = "partial"       // outcome: some lines failed to place, or the plan is short
	StatusPlacing     = "placing"       // outcome: a line has no placement record yet (being placed, or its process died)
	StatusPlanned     = "planned"       // intent recorded before placement
	StatusNothingToDo = "nothing-to-do" // no slots wanted, or alarm not in ALARM
	StatusNoOffer     = "no-offer"      // slots wanted, nothing allowed could be bought
)

// DecisionRecord ties one trigger to everything Sluice saw and chose. It is the
// ledger entry finance audits, and what `sluice burst --json` prints. Money is
// always a decimal string with its currency.
type DecisionRecord struct {
	Kind       string `json:"kind"` // "decision"
	DecisionID string `json:"decision_id"`
	// Status is as recorded before any placement: "planned", "nothing-to-do" or "no-offer".
	Status string `json:"status"`
	// Outcome is derived, never stored: Status, or for a planned decision
	// "placed" / "partial" given its placement records (see Outcome).
	Outcome   string    `json:"outcome,omitempty"`
	DecidedAt time.Time `json:"decided_at"`

	Trigger Trigger      `json:"trigger"`
	Profile QueueProfile `json:"profile"`
	Demand  Demand       `json:"demand"`

	Sources  []SourceReport `json:"sources"`
	Offers   []Offer        `json:"offers"`
	Verdicts []Verdict      `json:"verdicts"`

	BillingCurrency string `json:"billing_currency"`
	// Budget is the tier's period budget as the plan saw it (null when the tier has none).
	Budget *BudgetState `json:"budget"`
	Plan

	Placements []Placement `json:"placements"`
	// FollowUpOf is set on a follow-up record: the decision whose failed
	// lines (capacity, quota) this record re-plans (see resume.go). Its id is
	// the first decision's id + "-f<n>".
	FollowUpOf string `json:"follow_up_of,omitempty"`
	// FollowUps are the follow-up records of this decision with their
	// placements, derived when the decision is read (never stored with it).
	FollowUps []DecisionRecord `json:"follow_ups,omitempty"`

	FX             []FXRate `json:"fx"`
	PolicyRevision string   `json:"policy_revision"`
	CodeVersion    string   `json:"code_version"`

	// PrevHash and Hash chain the ledger: Hash = SHA-256 over the canonical JSON
	// of the record as appended, with Hash empty. The ledger sets both. A
	// decision is appended before anything is placed, so the hashed body has
	// status "planned" (or "nothing-to-do" / "no-offer") and "placements": null;
	// placements are their own chained records, and the status shown with them
	// ("placed", "partial") is derived into Outcome. To re-hash a record read
	// back, set Placements to nil and Outcome to "" (ledger/README.md).
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// DecisionID derives the idempotency key of a trigger: the first 16 bytes of
// SHA-256(alarm ARN, state-change time in UTC RFC 3339 with milliseconds,
// queue), hex, prefixed "dec-". The same alarm delivered twice gets the same id.
func DecisionID(t Trigger) string {
	h := sha256.Sum256([]byte(strings.Join([]string{
		t.AlarmARN,
		t.StateChangeTime.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		t.Queue,
	}, "\n")))
	return "dec-" + hex.EncodeToString(h[:16])
}

// ClientToken is the idempotency token for one plan line sent to a provider
// (EC2 allows 64 ASCII characters).
func ClientToken(decisionID string, line int) string {
	return fmt.Sprintf("%s-l%d", decisionID, line)
}

// BudgetState is a tier's budget for one period (a UTC calendar month) as a
// decision saw it, all in the billing currency.
type BudgetState struct {
	Tier        Tier      `json:"tier"`
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Budget      Money     `json:"budget"`
	// Spent is the expected cost committed by earlier decisions in the period.
	Spent Money `json:"spent"`
	// Headroom = Budget − Spent, what this decision may commit.
	Headroom Money `json:"headroom"`
}
