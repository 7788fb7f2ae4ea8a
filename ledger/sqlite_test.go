package ledger

import (
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// sampleDecision is a fixed, fully populated decision record for queue.
func sampleDecision(id, queue string) sluice.DecisionRecord {
	cst := time.FixedZone("CST", 8*3600)
	t0 := time.Date(2025, 3, 14, 9, 26, 53, 589000000, time.UTC)
	usd := func(a string) sluice.Money { return sluice.MustMoney(a, "USD") }
	cny := func(a string) sluice.Money { return sluice.MustMoney(a, "CNY") }
	fx := sluice.FXRate{Base: "USD", Quote: "CNY", Rate: dec("7.1072"), AsOf: time.Date(2025, 3, 14, 9, 15, 0, 0, cst), Source: "CFETS central parity"}
	bid := usd("1.05")
	profile := sluice.QueueProfile{
		Queue: queue, GPUModels: []string{"A100-80GB", "A100-40GB"}, GPUsPerSlot: 8, HoursPerSlot: dec("2.5"),
		MaxSlots: 4, Checkpointable: true, CheckpointIntervalMinutes: 30, DataClass: "public",
		Tier: sluice.TierEmergency, Team: "vision", MaxPricePerGPUHour: cny("14.2144"),
	}
	return sluice.DecisionRecord{
		Kind:       "decision",
		DecisionID: id,
		Status:     sluice.StatusPlanned,
		DecidedAt:  t0.Add(1500 * time.Millisecond),
		Trigger: sluice.Trigger{
			AlarmName: queue + "-depth", AlarmARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + queue + "-depth",
			State: sluice.StateAlarm, StateChangeTime: t0, Region: "us-east-1", Queue: queue, Depth: 3,
			DepthSource: "alarm-datapoint", Delivery: "sns",
		},
		Profile: profile,
		Demand:  sluice.NewDemand(profile, 3, 1),
		Sources: []sluice.SourceReport{{Provider: "vast", Offers: 1, LatencyMS: 212},
			{Provider: "runpod", Error: "context deadline exceeded", LatencyMS: 2000}},
		Offers: []sluice.Offer{{
			ID: "vast:1234:bid", Provider: "vast", SKU: "1234", GPUModel: "A100-80GB", GPUsPerUnit: 8,
			Region: "US", City: "Austin, TX", Market: sluice.Spot, UnitPrice: usd("12.345678901234"),
			Basis: sluice.PerOfferHour, RawPrice: "12.345678901234", MinBid: usd("1.05"), UnitsAvailable: 2,
			FetchedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), Source: "GET https://console.vast.ai/api/v0/bundles/",
		}},
		Verdicts: []sluice.Verdict{{OfferID: "vast:1234:bid", Allow: true, Zone: sluice.ZoneOverseas,
			Reasons: []sluice.Reason{{Code: "note", Rule: "residency.export", Message: "export approved <public> & logged"}}}},
		BillingCurrency: "CNY",
		Plan: sluice.Plan{
			Lines: []sluice.Line{{
				OfferID: "vast:1234:bid", Provider: "vast", SKU: "1234", Region: "US", Zone: sluice.ZoneOverseas,
				Market: sluice.Spot, GPUModel: "A100-80GB", Units: 2, GPUs: 16, Slots: 2,
				UnitPrice: usd("12.345678901234"), Bid: &bid, Hours: dec("2.5"),
				BaseCost: usd("61.72839450617"), ReworkCost: usd("0.000000000001"), ExpectedCost: usd("61.728394506171"),
				ExpectedCostBilling: cny("438.7160245941"), FX: &fx,
			}},
			SlotsWanted: 2, SlotsCovered: 2, TotalExpectedCost: cny("438.7160245941"),
			Rejected: []sluice.Rejection{{Provider: "aliyun", OfferID: "aliyun:ecs.gn7e:cn-beijing", Reasons: []sluice.Reason{
				{Code: sluice.ReasonPrice, Message: "price 15.00 CNY > ceiling 14.2144 CNY"}}}},
		},
		FX:             []sluice.FXRate{fx},
		PolicyRevision: "sha256:9f2c",
		CodeVersion:    "v0.0.0-test",
	}
}

func samplePlacement(decisionID, queue string, line, slots int) sluice.Placement {
	return sluice.Placement{
		DecisionID: decisionID, Line: line, Queue: queue, Provider: "vast", OfferID: "vast:1234:bid",
		ClientToken: sluice.ClientToken(decisionID, line), ExternalIDs: []string{"inst-" + strconv.Itoa(line)},
		Market: sluice.Spot, Units: slots, Slots: slots, Price: sluice.MustMoney("12.345678901234", "USD"),
		PlacedAt: time.Date(2025, 3, 14, 9, 27, 0, 0, time.UTC),
	}
}

func open(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newLedger(t *testing.T) (*SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	return open(t, path), path
}

// roundTrip returns v after a JSON encode/decode, the way a record comes back.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, s *SQLite, where string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM records WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustVerify(t *testing.T, s *SQLite, want int) {
	t.Helper()
	n, err := s.Verify(t.Context())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n != want {
		t.Fatalf("Verify checked %d records, want %d", n, want)
	}
}

// tamper runs raw SQL on the file, as someone bypassing the ledger would:
// it drops the append-only triggers first.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append([]string{`DROP TRIGGER records_no_update`, `DROP TRIGGER records_no_delete`}, stmts...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestAppendDecisionReadBack(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)

	if _, ok, err := s.Decision(ctx, "dec-missing"); err != nil || ok {
		t.Fatalf("Decision(missing) = ok %v, err %v; want false, nil", ok, err)
	}

	rec := sampleDecision("dec-1", "train-a")
	rec.Kind = "" // the ledger sets it
	if err := s.AppendDecision(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Kind != KindDecision || rec.PrevHash != GenesisHash || len(rec.Hash) != 64 {
		t.Fatalf("after append: kind %q prev %q hash %q", rec.Kind, rec.PrevHash, rec.Hash)
	}

	got, ok, err := s.Decision(ctx, "dec-1")
	if err != nil || !ok {
		t.Fatalf("Decision = ok %v, err %v", ok, err)
	}
	if want := roundTrip(t, rec); !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		wb, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("read back differs:\ngot  %s\nwant %s", gb, wb)
	}
	if a := got.Lines[0].UnitPrice.Amount.String(); a != "12.345678901234" {
		t.Errorf("unit price read back as %s", a)
	}
	if a := got.Offers[0].UnitPrice.Amount.String(); a != "12.345678901234" {
		t.Errorf("offer price read back as %s", a)
	}
	if a := got.Lines[0].ReworkCost.Amount.String(); a != "0.000000000001" {
		t.Errorf("rework cost read back as %s", a)
	}

	// The stored body is canonical, contains the exact amount string, and
	// hashes to the record's Hash.
	var body string
	if err := s.db.QueryRow(`SELECT body FROM records WHERE record_id = 'dec-1'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `{"amount":"12.345678901234","currency":"USD"}`) {
		t.Errorf("body lacks the exact amount: %s", body)
	}
	if h, err := BodyHash([]byte(body)); err != nil || h != rec.Hash {
		t.Errorf("BodyHash(stored) = %s, %v; want %s", h, err, rec.Hash)
	}
	c, err := Canonical(rec)
	if err != nil || string(c) != body {
		t.Errorf("Canonical(rec) differs from the stored body (err %v)", err)
	}
	mustVerify(t, s, 1)
}

func TestAppendDecisionRejects(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	withPlacement := sampleDecision("dec-p", "q")
	withPlacement.Placements = []sluice.Placement{samplePlacement("dec-p", "q", 0, 1)}
	for name, rec := range map[string]*sluice.DecisionRecord{
		"nil":        nil,
		"no id":      {Kind: KindDecision},
		"wrong kind": {Kind: "placement", DecisionID: "dec-x"},
		"placements": &withPlacement,
	} {
		if err := s.AppendDecision(ctx, rec); err == nil {
			t.Errorf("%s: AppendDecision succeeded", name)
		}
	}
	if n := count(t, s, `1`); n != 0 {
		t.Fatalf("%d records after rejected appends", n)
	}
}

func TestDuplicateDecision(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	first := sampleDecision("dec-dup", "q")
	if err := s.AppendDecision(ctx, &first); err != nil {
		t.Fatal(err)
	}
	again := sampleDecision("dec-dup", "q")
	again.Status = sluice.StatusPlaced // a different body, same id
	err := s.AppendDecision(ctx, &again)
	if !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("second append: %v, want ErrDuplicate", err)
	}
	if again.Hash != "" || again.PrevHash != "" {
		t.Errorf("failed append changed the record: prev %q hash %q", again.PrevHash, again.Hash)
	}
	if n := count(t, s, `kind = 'decision'`); n != 1 {
		t.Fatalf("%d decisions stored, want 1", n)
	}
	got, _, _ := s.Decision(ctx, "dec-dup")
	if got.Status != sluice.StatusPlanned || got.Hash != first.Hash {
		t.Errorf("stored decision changed: status %q hash %s", got.Status, got.Hash)
	}
	mustVerify(t, s, 1)
}

func TestPlacementsAndLiveSlots(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	live := func(q string) int {
		t.Helper()
		n, err := s.LiveSlots(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, d := range []struct{ id, queue string }{{"dec-a1", "train-a"}, {"dec-a2", "train-a"}, {"dec-b1", "train-b"}} {
		rec := sampleDecision(d.id, d.queue)
		if err := s.AppendDecision(ctx, &rec); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := live("train-a"), live("train-b"); a != 0 || b != 0 {
		t.Fatalf("live before placements: a %d b %d", a, b)
	}

	// Out of line order on purpose: Decision returns them sorted by line.
	for _, p := range []sluice.Placement{
		samplePlacement("dec-a1", "train-a", 2, 3),
		samplePlacement("dec-a1", "train-a", 0, 2),
		samplePlacement("dec-a1", "train-a", 1, 1),
		samplePlacement("dec-a2", "train-a", 0, 4),
		samplePlacement("dec-b1", "train-b", 0, 5),
	} {
		if err := s.AppendPlacement(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if a, b, c := live("train-a"), live("train-b"), live("train-c"); a != 10 || b != 5 || c != 0 {
		t.Fatalf("live: a %d b %d c %d; want 10 5 0", a, b, c)
	}

	// Same decision + line again: duplicate, and LiveSlots unchanged.
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "train-b", 0, 7)); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("duplicate placement: %v, want ErrDuplicate", err)
	}
	// Unknown decision, wrong queue, bad input: refused, nothing stored.
	if err := s.AppendPlacement(ctx, samplePlacement("dec-none", "train-a", 0, 1)); !errors.Is(err, ErrNoDecision) {
		t.Fatalf("placement of unknown decision: %v, want ErrNoDecision", err)
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "train-a", 1, 1)); err == nil {
		t.Fatal("placement in the wrong queue accepted")
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "", 1, 1)); err == nil {
		t.Fatal("placement without queue accepted")
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-b1", "train-b", 1, -1)); err == nil {
		t.Fatal("placement with negative slots accepted")
	}
	if a, b := live("train-a"), live("train-b"); a != 10 || b != 5 {
		t.Fatalf("live after refused appends: a %d b %d; want 10 5", a, b)
	}
	if n := count(t, s, `kind = 'placement'`); n != 5 {
		t.Fatalf("%d placements stored, want 5", n)
	}

	got, ok, err := s.Decision(ctx, "dec-a1")
	if err != nil || !ok {
		t.Fatalf("Decision: ok %v err %v", ok, err)
	}
	want := []sluice.Placement{
		samplePlacement("dec-a1", "train-a", 0, 2),
		samplePlacement("dec-a1", "train-a", 1, 1),
		samplePlacement("dec-a1", "train-a", 2, 3),
	}
	if !reflect.DeepEqual(got.Placements, roundTrip(t, want)) {
		t.Fatalf("placements:\ngot  %+v\nwant %+v", got.Placements, want)
	}
	// The decision's hash covers the record as appended, without placements.
	got.Placements = nil
	if c, _ := Canonical(got); hashOf(t, c) != got.Hash {
		t.Error("decision hash does not recompute once placements are cleared")
	}
	mustVerify(t, s, 8)
}

// hashOf recomputes the hash of a canonical record with its hash field.
func hashOf(t *testing.T, canonical []byte) string {
	t.Helper()
	h, err := BodyHash(canonical)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestChainLinks(t *testing.T) {
	ctx := t.Context()
	s, _ := newLedger(t)
	r1, r2 := sampleDecision("dec-1", "q"), sampleDecision("dec-2", "q")
	if err := s.AppendDecision(ctx, &r1); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendPlacement(ctx, samplePlacement("dec-1", "q", 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendDecision(ctx, &r2); err != nil {
		t.Fatal(err)
	}
	if r1.PrevHash != GenesisHash {
		t.Errorf("first PrevHash = %s, want genesis", r1.PrevHash)
	}
	var pPrev, pHash string
	if err := s.db.QueryRow(`SELECT prev_hash, hash FROM records WHERE kind = 'placement'`).Scan(&pPrev, &pHash); err != nil {
		t.Fatal(err)
	}
	if pPrev != r1.Hash || r2.PrevHash != pHash {
		t.Errorf("links: placement prev %s (want %s), second decision prev %s (want %s)", pPrev, r1.Hash, r2.PrevHash, pHash)
	}

	// Decisions only, no placement between: 2nd PrevHash = 1st Hash.
	s2, _ := newLedger(t)
	a, b := sampleDecision("dec-a", "q"), sampleDecision("dec-b", "q")
	if err := s2.AppendDecision(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := s2.AppendDecision(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if b.PrevHash != a.Hash || a.Hash == b.Hash {
		t.Errorf("second PrevHash %s, first Hash %s", b.PrevHash, a.Hash)
	}
	mustVerify(t, s, 3)
	mustVerify(t, s2, 2)
}

// chain5 makes a ledger of 5 records: dec-0..dec-2 with placements of dec-0, dec-1.
func chain5(t *testing.T) (*SQLite, string) {
	t.Helper()
	ctx := t.Context()
	s, path := newLedger(t)
	for i := range 3 {
		rec := sampleDecision(fmt.Sprintf("dec-%d", i), "q")
		if err := s.AppendDecision(ctx, &rec); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if err := s.AppendPlacement(ctx, samplePlacement(rec.DecisionID, "q", 0, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustVerify(t, s, 5)
	return s, path
}

func wantVerifyError(t *testing.T, s *SQLite, seq int64, problem string, good int) *VerifyError {
	t.Helper()
	n, err := s.Verify(t.Context())
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("Verify = %d, %v; want a *VerifyError", n, err)
	}
	if ve.Seq != seq || ve.Problem != problem || n != good {
		t.Fatalf("Verify = %d, %v; want seq %d, %q, %d good", n, err, seq, problem, good)
	}
	t.Logf("Verify: %v", err)
	return ve
}

func TestAppendOnlyTriggers(t *testing.T) {
	s, _ := chain5(t)
	if _, err := s.db.Exec(`UPDATE records SET queue = 'x' WHERE seq = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("UPDATE: %v, want append-only error", err)
	}
	if _, err := s.db.Exec(`DELETE FROM records WHERE seq = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("DELETE: %v, want append-only error", err)
	}
	mustVerify(t, s, 5)
}

func TestVerifyTamperedBody(t *testing.T) {
	s, path := chain5(t)
	tamper(t, path, `UPDATE records SET body = replace(body, '12.345678901234', '12.345678901235') WHERE seq = 3`)
	ve := wantVerifyError(t, s, 3, ProblemHashMismatch, 2)
	if ve.RecordID != "dec-1" {
		t.Errorf("record id %q, want dec-1", ve.RecordID)
	}
	if !strings.Contains(ve.Error(), "seq 3") || !strings.Contains(ve.Error(), "hash mismatch") {
		t.Errorf("message %q does not name seq 3 and the problem", ve.Error())
	}
}

func TestVerifyRehashedBody(t *testing.T) {
	// A tamperer who also fixes the record's own hash breaks the next link.
	s, path := chain5(t)
	var body string
	if err := s.db.QueryRow(`SELECT body FROM records WHERE seq = 2`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	obj, err := decodeObject([]byte(strings.Replace(body, `"slots":1`, `"slots":9`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	newBody, newHash, err := seal(obj, obj["prev_hash"].(string))
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, path, fmt.Sprintf(`UPDATE records SET body = '%s', hash = '%s' WHERE seq = 2`, newBody, newHash))
	if n, _ := s.LiveSlots(t.Context(), "q"); n != 10 {
		t.Fatalf("tampered live slots %d, want 10", n)
	}
	wantVerifyError(t, s, 3, ProblemBrokenLink, 2)
}

func TestVerifyDeletedRow(t *testing.T) {
	s, path := chain5(t)
	tamper(t, path, `DELETE FROM records WHERE seq = 3`)
	ve := wantVerifyError(t, s, 4, ProblemBrokenLink, 2)
	if ve.RecordID != PlacementRecordID("dec-1", 0) {
		t.Errorf("record id %q", ve.RecordID)
	}
}

func TestVerifyTamperedColumn(t *testing.T) {
	// The queue column is outside the hash but feeds LiveSlots: Verify checks it against the body.
	s, path := chain5(t)
	tamper(t, path, `UPDATE records SET queue = 'other' WHERE seq = 4`)
	wantVerifyError(t, s, 4, ProblemColumns, 3)
}

func TestVerifyNotCanonical(t *testing.T) {
	s, path := chain5(t)
	tamper(t, path, `UPDATE records SET body = ' ' || body WHERE seq = 5`)
	wantVerifyError(t, s, 5, ProblemNotCanonical, 4)
}

func TestConcurrentAppends(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	h1, h2 := open(t, path), open(t, path) // two handles: two connection pools on one file
	const goroutines, perG = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perG*2)
	for g := range goroutines {
		s := h1
		if g%2 == 1 {
			s = h2
		}
		wg.Go(func() {
			for i := range perG {
				id := fmt.Sprintf("dec-g%d-%d", g, i)
				rec := sampleDecision(id, fmt.Sprintf("q%d", g%3))
				if err := s.AppendDecision(ctx, &rec); err != nil {
					errs <- err
					continue
				}
				if err := s.AppendPlacement(ctx, samplePlacement(id, rec.Trigger.Queue, 0, 1)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := goroutines * perG * 2
	mustVerify(t, h1, want)
	mustVerify(t, h2, want)
	if n := count(t, h1, `1`); n != want {
		t.Fatalf("%d records, want %d", n, want)
	}
	total := 0
	for q := range 3 {
		n, err := h2.LiveSlots(ctx, fmt.Sprintf("q%d", q))
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != goroutines*perG {
		t.Fatalf("live slots %d, want %d", total, goroutines*perG)
	}
}

const helperEnv = "SLUICE_LEDGER_TEST_HELPER" // "path|prefix|n"

// TestHelperAppender is not a test: TestTwoProcesses runs the test binary
// again with helperEnv set, and this appends to the named ledger file.
func TestHelperAppender(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	s := open(t, parts[0])
	for i := range n {
		rec := sampleDecision(fmt.Sprintf("%s-%d", parts[1], i), "q")
		if err := s.AppendDecision(t.Context(), &rec); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path)
	const perProc = 25
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperAppender$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|dec-proc%d|%d", helperEnv, path, p, perProc))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("helper %d: %v\n%s", p, err, out)
			}
		})
	}
	for i := range perProc { // and this process at the same time
		rec := sampleDecision(fmt.Sprintf("dec-main-%d", i), "q")
		if err := s.AppendDecision(ctx, &rec); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	mustVerify(t, s, 3*perProc)
}

func TestOpenRejectsBadPath(t *testing.T) {
	for _, p := range []string{"", ":memory:", "x.db?mode=ro"} {
		if s, err := OpenSQLite(t.Context(), p); err == nil {
			s.Close()
			t.Errorf("OpenSQLite(%q) succeeded", p)
		}
	}
}

func TestReopenKeepsChain(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s1, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := sampleDecision("dec-a", "q")
	if err := s1.AppendDecision(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, path)
	b := sampleDecision("dec-b", "q")
	if err := s2.AppendDecision(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if b.PrevHash != a.Hash {
		t.Fatalf("after reopen PrevHash %s, want %s", b.PrevHash, a.Hash)
	}
	var mode string
	if err := s2.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
	mustVerify(t, s2, 2)
}

func TestCanonical(t *testing.T) {
	type inner struct {
		Z string `json:"z"`
		A string `json:"a"`
	}
	c, err := Canonical(map[string]any{
		"b": inner{Z: "<&>", A: "x"},
		"a": json.Number("12.345678901234"),
		"m": sluice.MustMoney("0.10", "USD"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":12.345678901234,"b":{"a":"x","z":"<&>"},"m":{"amount":"0.1","currency":"USD"}}`
	if string(c) != want {
		t.Fatalf("Canonical = %s\nwant        %s", c, want)
	}
	again, err := Canonical(json.RawMessage(c))
	if err != nil || string(again) != string(c) {
		t.Fatalf("Canonical not idempotent: %s, %v", again, err)
	}
	if _, err := Canonical(json.RawMessage(`{"a":1} {"b":2}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

// TestGolden pins the canonical bytes and the hash of a fixed decision record
// and placement record. Run with -update to rewrite testdata/.
func TestGolden(t *testing.T) {
	rec := sampleDecision("dec-0123456789abcdef0123456789abcdef", "train-a")
	rec.PrevHash, rec.Hash = GenesisHash, ""
	pl := PlacementRecord{Kind: KindPlacement, Placement: samplePlacement(rec.DecisionID, "train-a", 0, 2),
		PrevHash: strings.Repeat("ab", 32)}
	for _, g := range []struct {
		name string
		v    any
	}{{"decision", rec}, {"placement", pl}} {
		t.Run(g.name, func(t *testing.T) {
			c, err := Canonical(g.v)
			if err != nil {
				t.Fatal(err)
			}
			hash := HashRecord(c) // "hash" is "" in c: this is the record hash
			if h, err := BodyHash(c); err != nil || h != hash {
				t.Fatalf("BodyHash = %s, %v; want %s", h, err, hash)
			}
			jsonPath := filepath.Join("testdata", g.name+".canonical.json")
			hashPath := filepath.Join("testdata", g.name+".hash")
			if *update {
				if err := os.WriteFile(jsonPath, c, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(hashPath, []byte(hash+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantJSON, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatalf("%v (run go test ./ledger -run TestGolden -update)", err)
			}
			wantHash, err := os.ReadFile(hashPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(c) != string(wantJSON) {
				t.Errorf("canonical JSON differs from %s:\ngot  %s\nwant %s", jsonPath, c, wantJSON)
			}
			if hash != strings.TrimSpace(string(wantHash)) {
				t.Errorf("hash %s, golden %s", hash, strings.TrimSpace(string(wantHash)))
			}
		})
	}
}
