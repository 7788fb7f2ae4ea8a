package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/policy"
)

// copyPolicyDir writes the embedded policy to a directory, with one
// replacement in one file (file "" = none).
func copyPolicyDir(t *testing.T, file, from, to string) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(policy.Embedded(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, name), 0o755)
		}
		b, err := fs.ReadFile(policy.Embedded(), name)
		if err != nil {
			return err
		}
		if name == file {
			if !strings.Contains(string(b), from) {
				t.Fatalf("%s does not contain %q", file, from)
			}
			b = []byte(strings.Replace(string(b), from, to, 1))
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// lineOf is the line number of the first line of an embedded policy file containing text.
func lineOf(t *testing.T, file, text string) string {
	t.Helper()
	b, err := fs.ReadFile(policy.Embedded(), file)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, text) {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return ""
}

func TestPolicyCheck(t *testing.T) {
	code, out, errOut := sluiceRun(t, "policy", "check", "../../policy")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"ok   fmt", "ok   check", "ok   test", "ok   coverage", "PASS ../../policy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	broken := copyPolicyDir(t, "data/regions.json", `"cn-hangzhou": "east-china",`, `"cn-hangzhou": "beijing",`)
	code, out, _ = sluiceRun(t, "policy", "check", broken)
	if code != 1 || !strings.Contains(out, "FAIL test") || !strings.Contains(out, "beijing-only queue, Alibaba Hangzhou: refused") {
		t.Errorf("a failing case: exit %d\n%s", code, out)
	}

	leaky := copyPolicyDir(t, "lib.rego", `"message": message,`, `"message": message, "x": http.send({"method": "GET", "url": "https://example.com"}),`)
	code, out, _ = sluiceRun(t, "policy", "check", leaky)
	if code != 1 || !strings.Contains(out, "lib.rego:"+lineOf(t, "lib.rego", `"message": message,`)+": builtin http.send is not allowed in policy") {
		t.Errorf("http.send: exit %d\n%s", code, out)
	}

	if code, _, _ := sluiceRun(t, "policy", "check", "nowhere"); code != 2 {
		t.Errorf("missing directory: exit %d, want 2", code)
	}
}

func explainArgs(extra ...string) []string {
	return append([]string{"policy", "explain", "--event", "../../testdata/events/alarm-sns-burst.json",
		"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay"}, extra...)
}

func TestPolicyExplainEvent(t *testing.T) {
	code, out, errOut := sluiceRun(t, explainArgs()...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"queue     train-overseas",
		"offers    63 allowed, 12 refused, of 75",
		"aliyun:cn-hangzhou:ecs.gn7e-c16g1.16xlarge:on-demand",
		"budget_tier.above_tier_price (Price above the budget tier's ceiling)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = sluiceRun(t, explainArgs("--offer", "aliyun:cn-hangzhou:ecs.gn7e-c16g1.16xlarge:on-demand")...)
	if code != 0 {
		t.Fatalf("--offer: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"REFUSED (zone east-china) for queue train-overseas",
		`offer.price_per_gpu_hour = 34.742`,
		`profile.budget_tier = "emergency"`,
		"budget_tier.above_tier_price  [budget-tier]  Price above the budget tier's ceiling",
		"where:   budget.rego:",
		"because: price per GPU-hour is above the emergency tier's ceiling of 22.00 CNY",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--offer output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = sluiceRun(t, explainArgs("--json")...)
	var x policy.Explanation
	if code != 0 || json.Unmarshal([]byte(out), &x) != nil || len(x.Offers) != 75 {
		t.Fatalf("--json: exit %d, %d offers", code, len(x.Offers))
	}

	// --policy explains with a working copy (here with a reworded rule description).
	dir := copyPolicyDir(t, "budget.rego", "# description: The offer's price per GPU-hour is above the ceiling", "# description: Reworded, the offer's price per GPU-hour is above the ceiling")
	code, out, errOut = sluiceRun(t, explainArgs("--policy", dir, "--offer", "aliyun:cn-hangzhou:ecs.gn7e-c16g1.16xlarge:on-demand")...)
	if code != 0 || !strings.Contains(out, "what:    Reworded, the offer's price per GPU-hour") {
		t.Errorf("--policy %s: exit %d %s\n%s", dir, code, errOut, out)
	}

	for _, args := range [][]string{
		{"policy", "explain"},
		{"policy", "explain", "--decision", "dec-x"},
		{"policy", "explain", "--event", "x.json", "--decision", "dec-x"},
		{"policy", "nope"},
	} {
		if code, _, _ := sluiceRun(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// A recorded decision is re-evaluated under the revision it recorded, and
// matches the record; under another revision the command says which one.
func TestPolicyExplainDecision(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	code, out, errOut := sluiceRun(t, burstArgs(db, "../../testdata/events/alarm-sns-burst.json", "--json")...)
	if code != 0 {
		t.Fatalf("burst: exit %d: %s", code, errOut)
	}
	var rec sluice.DecisionRecord
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = sluiceRun(t, "policy", "explain", "--decision", rec.DecisionID, "--ledger", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "re-evaluated, 0 differ") || !strings.Contains(out, "offers    63 allowed, 12 refused, of 75") || errOut != "" {
		t.Errorf("output:\n%s\nstderr: %s", out, errOut)
	}

	other := copyPolicyDir(t, "data/regions.json", `"cn-heyuan": "cn-other",`, `"cn-heyuan": "cn-other", "cn-wuhan-lr": "cn-other",`)
	code, _, errOut = sluiceRun(t, "policy", "explain", "--decision", rec.DecisionID, "--ledger", db, "--policy", other)
	if code != 1 || !strings.Contains(errOut, "was decided under policy revision "+rec.PolicyRevision) {
		t.Errorf("other revision: exit %d: %s", code, errOut)
	}
	if code, _, errOut := sluiceRun(t, "policy", "explain", "--decision", "dec-none", "--ledger", db); code != 1 || !strings.Contains(errOut, "not in ledger") {
		t.Errorf("unknown decision: exit %d: %s", code, errOut)
	}
}

// burst --policy decides with a working copy (its revision is recorded) and
// refuses one whose tests fail, before anything is recorded.
func TestBurstPolicyFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	broken := copyPolicyDir(t, "data/regions.json", `"cn-hangzhou": "east-china",`, `"cn-hangzhou": "beijing",`)
	code, _, errOut := sluiceRun(t, burstArgs(db, "../../testdata/events/alarm-sns-burst.json", "--policy", broken)...)
	if code != 1 || !strings.Contains(errOut, "Rego tests fail") {
		t.Fatalf("failing policy: exit %d: %s", code, errOut)
	}
	if d, _ := countRecords(t, db); d != 0 {
		t.Fatalf("%d decisions recorded with a failing policy", d)
	}
	dir := copyPolicyDir(t, "", "", "")
	code, out, errOut := sluiceRun(t, burstArgs(db, "../../testdata/events/alarm-sns-burst.json", "--policy", dir, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rec sluice.DecisionRecord
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	ev, err := policy.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rec.PolicyRevision != ev.Revision() || rec.TotalExpectedCost.String() != "103.06683 USD" {
		t.Errorf("revision %s total %s; want the embedded policy's %s and 103.06683 USD", rec.PolicyRevision, rec.TotalExpectedCost, ev.Revision())
	}
}

// An offer id the queue does not see is bad input: exit 2.
func TestPolicyExplainUnknownOfferIsBadInput(t *testing.T) {
	code, _, errOut := sluiceRun(t, "policy", "explain", "--event", "../../testdata/events/alarm-sns-beijing.json",
		"--config", "../../testdata/sluice.yaml", "--replay", "../../testdata/replay", "--offer", "nope:offer")
	if code != 2 || !strings.Contains(errOut, `no offer "nope:offer"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the offer", code, errOut)
	}
}
