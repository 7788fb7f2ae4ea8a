package main

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/motoserver"
	"github.com/sluicehq/sluice/ledger"
	laudit "github.com/sluicehq/sluice/ledger/audit"
)

var updateAudit = flag.Bool("update-audit", false, "rewrite the audit golden files under testdata/golden/")

// replayDays are the days the replay ledger's alarms fire on: each event
// file of testdata/events, its StateChangeTime moved to the day, is decided
// 45 s after its alarm. After the first day every open placement is
// released 3 h after it was placed (accrued = price × units × 3 h), so the
// month holds settled and open lines.
var replayDays = []struct {
	day    string
	events []string
}{
	{"2026-11-03", []string{"burst", "nockpt"}},
	{"2026-11-12", []string{"burst", "beijing", "metrics"}},
	{"2026-11-29", []string{"burst", "nockpt", "beijing"}},
}

// buildReplayLedger runs `sluice burst` on the replay quotes for every
// event of replayDays and returns the ledger path.
func buildReplayLedger(t *testing.T) string {
	t.Helper()
	saved := clock
	t.Cleanup(func() { clock = saved })
	dir := t.TempDir()
	db := filepath.Join(dir, "replay.db")
	timeRE := regexp.MustCompile(`2026-11-29T(\d\d:\d\d:\d\d)`)
	for i, d := range replayDays {
		for _, e := range d.events {
			raw, err := os.ReadFile("../../testdata/events/alarm-sns-" + e + ".json")
			if err != nil {
				t.Fatal(err)
			}
			m := timeRE.FindSubmatch(raw)
			if m == nil {
				t.Fatalf("%s: no 2026-11-29 time", e)
			}
			at, err := time.Parse(time.RFC3339, d.day+"T"+string(m[1])+"Z")
			if err != nil {
				t.Fatal(err)
			}
			clock = sluice.ClockFunc(func() time.Time { return at.Add(45 * time.Second) })
			ev := filepath.Join(dir, d.day+"-"+e+".json")
			if err := os.WriteFile(ev, timeRE.ReplaceAll(raw, []byte(d.day+"T$1")), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, _, errOut := sluiceRun(t, burstArgs(db, ev)...); code != 0 {
				t.Fatalf("burst %s on %s: exit %d: %s", e, d.day, code, errOut)
			}
		}
		if i == 0 {
			releaseAll(t, db, 3)
		}
	}
	return db
}

// releaseAll records a released step for every open placement, hours after it was placed.
func releaseAll(t *testing.T, path string, hours int64) {
	t.Helper()
	s, err := ledger.OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	open, err := s.OpenPlacements(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range open {
		at := p.PlacedAt.Add(time.Duration(hours) * time.Hour)
		r := sluice.Release{DecisionID: p.DecisionID, Line: p.Line, Queue: p.Queue, Provider: p.Provider,
			ExternalIDs: p.ExternalIDs, State: sluice.ReleaseReleased, Reason: sluice.ReleaseDrain, Slots: p.Slots,
			RequestedAt: at, At: at, AccruedCost: p.Price.MulInt(p.Units).Mul(decimal.NewFromInt(hours)), BilledSeconds: hours * 3600}
		if err := s.AppendRelease(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// hashRE matches record hashes; they cover each decision's source latencies,
// which differ from run to run, so goldens hold a placeholder.
var hashRE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// golden compares got with testdata/golden/name (rewritten with -update-audit),
// record hashes replaced by "<hash>".
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = hashRE.ReplaceAll(got, []byte("<hash>"))
	path := filepath.Join("../../testdata/golden", name)
	if *updateAudit {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/sluice -run TestAudit -update-audit)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./cmd/sluice -run TestAudit -update-audit to accept):\n%s", name, got)
	}
}

// The replay ledger verifies, exports as FOCUS and reports, each output
// matching its golden file.
func TestAuditReplayGolden(t *testing.T) {
	db := buildReplayLedger(t)
	code, out, errOut := sluiceRun(t, "audit", "verify", "--ledger", db)
	if code != 0 {
		t.Fatalf("verify exit %d: %s", code, errOut)
	}
	t.Log(strings.TrimSpace(out))

	focus := filepath.Join(t.TempDir(), "focus.csv")
	if code, out, errOut := sluiceRun(t, "audit", "export", "--format", "focus", "--from", "2026-11-01", "--to", "2026-12-01",
		"--out", focus, "--ledger", db); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	} else {
		t.Log(strings.TrimSpace(out))
	}
	b, err := os.ReadFile(focus)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "audit-focus-2026-11.csv", b)
	checkFOCUS(t, b)

	for _, c := range []struct{ name, by, format string }{
		{"audit-report-2026-11-tier.txt", "tier", "table"},
		{"audit-report-2026-11-team.csv", "team", "csv"},
		{"audit-report-2026-11-provider.txt", "provider", "table"},
		{"audit-report-2026-11-zone.csv", "zone", "csv"},
		{"audit-report-2026-11.svg", "tier", "svg"},
	} {
		code, out, errOut := sluiceRun(t, "audit", "report", "--month", "2026-11", "--by", c.by, "--format", c.format,
			"--config", "../../testdata/sluice.yaml", "--ledger", db)
		if code != 0 {
			t.Fatalf("report %s: exit %d: %s", c.name, code, errOut)
		}
		golden(t, c.name, []byte(out))
	}
}

// checkFOCUS checks the export's shape: every mandatory column present,
// non-null where FOCUS requires, numbers plain decimals, times UTC seconds.
func checkFOCUS(t *testing.T, b []byte) {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 2 {
		t.Fatalf("%d FOCUS rows", len(rows)-1)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	for _, c := range append(slices.Clone(laudit.FOCUSMandatory), "PricingCategory", "RegionId", "ResourceId", "SkuId", "ListUnitPrice",
		"x_DecisionId", "x_PolicyRevision", "x_ResidencyZone", "x_BudgetTier", "x_BidPrice", "x_DenyReasons") {
		if _, ok := col[c]; !ok {
			t.Errorf("column %s missing", c)
		}
	}
	plain := regexp.MustCompile(`^-?\d+(\.\d+)?$`)
	utc := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	for i, r := range rows[1:] {
		for _, c := range laudit.FOCUSMandatory {
			if r[col[c]] == "" && !slices.Contains(laudit.FOCUSNullable, c) {
				t.Errorf("row %d: %s is null", i+1, c)
			}
		}
		for _, c := range []string{"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingQuantity", "ListUnitPrice"} {
			if !plain.MatchString(r[col[c]]) {
				t.Errorf("row %d: %s %q is not a plain decimal", i+1, c, r[col[c]])
			}
		}
		for _, c := range []string{"BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"} {
			if !utc.MatchString(r[col[c]]) {
				t.Errorf("row %d: %s %q is not YYYY-MM-DDTHH:mm:ssZ", i+1, c, r[col[c]])
			}
		}
		if pc := r[col["PricingCategory"]]; !slices.Contains([]string{"Dynamic", "Standard", "Committed"}, pc) {
			t.Errorf("row %d: PricingCategory %q", i+1, pc)
		}
	}
}

// sqlExec runs statements on a ledger file as someone bypassing the ledger
// would (dropping the append-only triggers first).
func sqlExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append([]string{`DROP TRIGGER IF EXISTS records_no_update`, `DROP TRIGGER IF EXISTS records_no_delete`}, stmts...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// rechain rewrites every record from seq on so that the chain links again,
// as an attacker with write access to the whole file would.
func rechain(t *testing.T, path string, from int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var prev string
	if err := db.QueryRow(`SELECT COALESCE((SELECT hash FROM records WHERE seq < ? ORDER BY seq DESC LIMIT 1), ?)`, from, ledger.GenesisHash).Scan(&prev); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT seq, body FROM records WHERE seq >= ? ORDER BY seq`, from)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		seq  int64
		body string
	}
	var all []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.seq, &r.body); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close()
	for _, r := range all {
		body := regexp.MustCompile(`"prev_hash":"[0-9a-f]{64}"`).ReplaceAllString(r.body, `"prev_hash":"`+prev+`"`)
		h, err := ledger.BodyHash([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		body = regexp.MustCompile(`"hash":"[0-9a-f]{64}"`).ReplaceAllString(body, `"hash":"`+h+`"`)
		if _, err := db.Exec(`UPDATE records SET body = ?, prev_hash = ?, hash = ? WHERE seq = ?`, body, prev, h, r.seq); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
}

// Record selectors for editBody.
const (
	firstRelease = `seq = (SELECT MIN(seq) FROM records WHERE kind = 'release' AND body LIKE '%"state":"released"%')`
	firstPlaced  = `seq = (SELECT MIN(seq) FROM records WHERE kind = 'placement' AND body NOT LIKE '%"error%')`
)

// editBody rewrites the body of the one record matching where with edit
// (hashes are left as they are: rechain fixes them).
func editBody(t *testing.T, path, where string, edit func(string) string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DROP TRIGGER IF EXISTS records_no_update`, `DROP TRIGGER IF EXISTS records_no_delete`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var seq int64
	var body string
	if err := db.QueryRow(`SELECT seq, body FROM records WHERE `+where).Scan(&seq, &body); err != nil {
		t.Fatal(err)
	}
	nb := edit(body)
	if nb == body {
		t.Fatalf("seq %d: edit changed nothing in %s", seq, body)
	}
	if _, err := db.Exec(`UPDATE records SET body = ? WHERE seq = ?`, nb, seq); err != nil {
		t.Fatal(err)
	}
}

// The tamper matrix: each change to a copy of the replay ledger makes
// `sluice audit verify` exit 1 naming the record; the untouched ledger
// verifies. Removing the last record of a SQLite file is the documented
// limit of a chain on its own (the DynamoDB store's head item catches it).
func TestAuditTamperMatrix(t *testing.T) {
	orig := buildReplayLedger(t)
	src, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	// A decision with a line (seq 1: the first burst) and its placements follow it.
	cases := []struct {
		name   string
		tamper func(t *testing.T, path string)
		exit   int
		want   string // in stderr (exit 1) or stdout (exit 0)
	}{
		{"untouched", func(*testing.T, string) {}, 0, "chain intact"},
		{"one byte of an amount", func(t *testing.T, p string) {
			sqlExec(t, p, `UPDATE records SET body = replace(body, '"total_expected_cost":{"amount":"1', '"total_expected_cost":{"amount":"2') WHERE seq = 1`)
		}, 1, "record seq 1 (dec-"},
		{"delete a record", func(t *testing.T, p string) {
			sqlExec(t, p, `DELETE FROM records WHERE seq = 2`)
		}, 1, "record seq 3 (dec-"},
		{"reorder two records", func(t *testing.T, p string) {
			sqlExec(t, p, `UPDATE records SET seq = -2 WHERE seq = 2`, `UPDATE records SET seq = 2 WHERE seq = 3`, `UPDATE records SET seq = 3 WHERE seq = -2`)
		}, 1, "record seq 2 (dec-"},
		{"edit a hash", func(t *testing.T, p string) {
			sqlExec(t, p, `UPDATE records SET hash = '`+strings.Repeat("ab", 32)+`', body = replace(body, hash, '`+strings.Repeat("ab", 32)+`') WHERE seq = 4`)
		}, 1, "record seq 4 (dec-"},
		{"amount changed and the whole tail re-chained", func(t *testing.T, p string) {
			sqlExec(t, p, `UPDATE records SET body = replace(body, '"base_cost":{"amount":"', '"base_cost":{"amount":"1') WHERE seq = 1`)
			rechain(t, p, 1)
		}, 1, "record seq 1 (dec-"},
		// Settled money, re-chained so only the recomputation can catch it.
		{"release accrued_cost raised, tail re-chained", func(t *testing.T, p string) {
			editBody(t, p, firstRelease, func(b string) string {
				return strings.Replace(b, `"accrued_cost":{"amount":"`, `"accrued_cost":{"amount":"999`, 1)
			})
			rechain(t, p, 1)
		}, 1, "/release/released): accrued_cost: recorded 999"},
		{"release billed_seconds beyond the run, tail re-chained", func(t *testing.T, p string) {
			editBody(t, p, firstRelease, func(b string) string {
				return regexp.MustCompile(`"billed_seconds":\d+`).ReplaceAllString(b, `"billed_seconds":99999`)
			})
			rechain(t, p, 1)
		}, 1, "/release/released): billed_seconds 99999, more than the 10800 s"},
		{"placement price 5.8394 → 50.8394 USD, tail re-chained", func(t *testing.T, p string) {
			editBody(t, p, firstPlaced, func(b string) string {
				return regexp.MustCompile(`"price":\{"amount":"([0-9]+)\.`).ReplaceAllString(b, `"price":{"amount":"${1}0.`)
			})
			rechain(t, p, 1)
		}, 1, "/placement/0): price "},
		{"placed line's external_ids emptied, tail re-chained", func(t *testing.T, p string) {
			editBody(t, p, firstPlaced, func(b string) string {
				return regexp.MustCompile(`"external_ids":\[[^\]]*\]`).ReplaceAllString(b, `"external_ids":[]`)
			})
			rechain(t, p, 1)
		}, 1, "/placement/0): external_ids: a placed line with no instance ids"},
		{"decided_at moved before the budget period, tail re-chained", func(t *testing.T, p string) {
			editBody(t, p, "seq = 1", func(b string) string {
				return regexp.MustCompile(`"decided_at":"[^"]*"`).ReplaceAllString(b, `"decided_at":"2026-10-15T00:00:00Z"`)
			})
			rechain(t, p, 1)
		}, 1, "record seq 1 (dec-"},
		{"last record removed (undetectable in a lone file)", func(t *testing.T, p string) {
			sqlExec(t, p, `DELETE FROM records WHERE seq = (SELECT MAX(seq) FROM records)`)
		}, 0, "chain intact"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "l.db")
			if err := os.WriteFile(p, src, 0o644); err != nil {
				t.Fatal(err)
			}
			c.tamper(t, p)
			code, out, errOut := sluiceRun(t, "audit", "verify", "--ledger", p)
			msg := out
			if code != 0 {
				msg = errOut
			}
			if code != c.exit || !strings.Contains(msg, c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", code, c.exit, c.want, out, errOut)
			}
			t.Logf("exit %d: %s", code, strings.TrimSpace(msg))
		})
	}
}

// sluice audit archive copies the replay ledger to S3 (gofakes3 on
// loopback) and verifies the archive; a second run writes nothing.
func TestAuditArchive(t *testing.T) {
	db := buildReplayLedger(t)
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	args := []string{"audit", "archive", "--bucket", "ledger-archive", "--prefix", "sluice/test/", "--path-style", "--ledger", db}
	code, out, errOut := sluiceRun(t, args...)
	if code != 0 || !strings.Contains(out, "archive s3://ledger-archive/sluice/test/: 19 records verify") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	t.Log(out)
	code, out, errOut = sluiceRun(t, args...)
	if code != 0 || strings.Contains(out, "archived seq") {
		t.Fatalf("second run: exit %d:\n%s%s", code, out, errOut)
	}
}

// The replay chain copied into a DynamoDB ledger (moto_server) record by
// record through the store's own appends ends with the same head hash, and
// `sluice audit verify --table` and `report --table` read it like the file.
func TestAuditDynamoTable(t *testing.T) {
	// No other test of this package uses moto; stop the server this test
	// binary may have started (a package TestMain would be the usual place).
	t.Cleanup(motoserver.Stop)
	db := buildReplayLedger(t)
	ctx := t.Context()
	src, err := ledger.OpenSQLite(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	recs, err := src.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := motoserver.Config(t)
	table := motoserver.Unique("audit-cli")
	if err := ledger.CreateDynamoTable(ctx, cfg, table); err != nil {
		t.Fatal(err)
	}
	d, err := ledger.OpenDynamoDB(ctx, cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		switch r.Kind {
		case ledger.KindDecision:
			var rec sluice.DecisionRecord
			if err := json.Unmarshal(r.Body, &rec); err != nil {
				t.Fatal(err)
			}
			err = d.AppendDecision(ctx, &rec)
		case ledger.KindPlacement:
			var pr ledger.PlacementRecord
			if err := json.Unmarshal(r.Body, &pr); err != nil {
				t.Fatal(err)
			}
			err = d.AppendPlacement(ctx, pr.Placement)
		case ledger.KindRelease:
			var rr ledger.ReleaseRecord
			if err := json.Unmarshal(r.Body, &rr); err != nil {
				t.Fatal(err)
			}
			err = d.AppendRelease(ctx, rr.Release)
		}
		if err != nil {
			t.Fatalf("seq %d %s: %v", r.Seq, r.RecordID, err)
		}
	}
	got, err := d.Records(ctx)
	if err != nil || len(got) != len(recs) || got[len(got)-1].Hash != recs[len(recs)-1].Hash {
		t.Fatalf("dynamodb chain: %d records (%v), head %s; sqlite %d, head %s", len(got), err,
			got[len(got)-1].Hash, len(recs), recs[len(recs)-1].Hash)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", *cfg.BaseEndpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	code, out, errOut := sluiceRun(t, "audit", "verify", "--table", table)
	if code != 0 || !strings.Contains(out, "19 records, chain intact, head "+recs[len(recs)-1].Hash) {
		t.Fatalf("verify --table: exit %d\n%s%s", code, out, errOut)
	}
	t.Log(strings.TrimSpace(out))
	code, out, errOut = sluiceRun(t, "audit", "report", "--month", "2026-11", "--config", "../../testdata/sluice.yaml", "--table", table)
	if code != 0 {
		t.Fatalf("report --table: exit %d: %s", code, errOut)
	}
	golden(t, "audit-report-2026-11-tier.txt", []byte(out))
}

// --ledger and --table are alternatives: giving both is a usage error
// (exit 2), not a silent choice of DynamoDB.
func TestAuditLedgerAndTableTogether(t *testing.T) {
	for _, sub := range [][]string{
		{"audit", "verify"},
		{"audit", "report", "--month", "2026-11"},
		{"audit", "export", "--format", "focus", "--from", "2026-11-01", "--to", "2026-12-01", "--out", "-"},
	} {
		code, _, errOut := sluiceRun(t, append(sub, "--ledger", "x.db", "--table", "t")...)
		if code != 2 || !strings.Contains(errOut, "--ledger and --table are alternatives") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming both flags", sub, code, errOut)
		}
	}
}
