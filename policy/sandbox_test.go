package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sluicehq/sluice"
)

// A policy that calls a builtin reaching outside the process is refused at
// load, with the file, line and builtin named.
func TestForbiddenBuiltinRefusedAtLoad(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, file, src string
		line            int
		builtin         string
	}{
		{"http.send", "exfil.rego", "package sluice.exfil\n\nimport rego.v1\n\nx := http.send({\"method\": \"GET\", \"url\": \"https://example.com\"})\n", 5, "http.send"},
		{"net.lookup_ip_addr", "dns.rego", "package sluice.dns\n\nimport rego.v1\n\nips contains ip if {\n\tsome ip in net.lookup_ip_addr(\"example.com\")\n}\n", 6, "net.lookup_ip_addr"},
		{"opa.runtime", "sub/env.rego", "package sluice.env\n\nimport rego.v1\n\nenv := opa.runtime().env\n", 5, "opa.runtime"},
		{"rand.intn", "dice.rego", "package sluice.dice\n\nimport rego.v1\n\nroll := rand.intn(\"d\", 6)\n", 5, "rand.intn"},
		{"in a test file", "leak_test.rego", "package sluice.leak_test\n\nimport rego.v1\n\ntest_leak if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://x\"})\n}\n", 6, "http.send"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := policyFS(t)
			fsys[tt.file] = &fstest.MapFile{Data: []byte(tt.src)}
			var err error
			if strings.HasSuffix(tt.file, "_test.rego") {
				_, err = RunTests(ctx, fsys) // tests run in the same sandbox
			} else {
				_, err = NewFromFS(ctx, fsys)
			}
			var fe *ForbiddenBuiltinError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a ForbiddenBuiltinError", err)
			}
			if fe.File != tt.file || fe.Line != tt.line || fe.Builtin != tt.builtin {
				t.Errorf("got %s:%d %s, want %s:%d %s", fe.File, fe.Line, fe.Builtin, tt.file, tt.line, tt.builtin)
			}
			want := tt.file + ":" + strconv.Itoa(tt.line) + ": builtin " + tt.builtin + " is not allowed in policy"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q, want it to start %q", err, want)
			}
		})
	}
}

func TestSandboxCapabilities(t *testing.T) {
	for _, name := range []string{"http.send", "net.lookup_ip_addr", "net.cidr_contains", "opa.runtime", "rand.intn", "uuid.rfc4122", "providers.aws.sign_req", "io.jwt.encode_sign"} {
		if !slices.Contains(Forbidden(), name) {
			t.Errorf("%s is not forbidden", name)
		}
		for _, b := range Capabilities().Builtins {
			if b.Name == name {
				t.Errorf("%s is in the sandbox's capabilities", name)
			}
		}
	}
	for _, name := range []string{"time.now_ns", "sprintf", "to_number", "object.get", "regex.match"} {
		if slices.Contains(Forbidden(), name) {
			t.Errorf("%s is forbidden, but policy needs it", name)
		}
	}
	if len(Capabilities().AllowNet) != 0 || Capabilities().AllowNet == nil {
		t.Errorf("AllowNet = %v, want an empty list (no host)", Capabilities().AllowNet)
	}
}

// A builtin that fails is an evaluation error, never a silent allow: with
// strict builtin errors off, to_number("five") would leave the price rule
// undefined and the offer allowed.
func TestBrokenBuiltinDoesNotAllow(t *testing.T) {
	ctx := context.Background()
	o := offer("a", "aliyun", "cn-beijing", "", sluice.OnDemand)
	o.UnitPrice = sluice.MustMoney("200", "CNY") // 25 CNY per GPU-hour: within 40.00, so only the broken call decides
	p := queue(nil)
	ok := newEvaluator(t)
	if vs, err := ok.Evaluate(ctx, p, []sluice.Offer{o}, benchNow); err != nil || !vs[0].Allow {
		t.Fatalf("sound policy: %+v, %v; want the offer allowed", vs, err)
	}

	fsys := policyFS(t)
	fsys["data/settings.json"] = &fstest.MapFile{Data: []byte(strings.Replace(string(fsys["data/settings.json"].Data), `"CNY": "40.00"`, `"CNY": "forty"`, 1))}
	e, err := NewFromFS(ctx, fsys)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.Evaluate(ctx, p, []sluice.Offer{o}, benchNow)
	if err == nil {
		t.Fatalf("no error; verdicts %+v", vs)
	}
	if !strings.Contains(err.Error(), "to_number") {
		t.Errorf("error %q does not name the failing builtin", err)
	}
	for _, v := range vs {
		if v.Allow {
			t.Errorf("offer %s allowed by a policy whose builtin failed", v.OfferID)
		}
	}
	if _, err := e.EvaluateEach(ctx, p, []sluice.Offer{o}, benchNow); err == nil {
		t.Error("EvaluateEach: no error")
	}
}

// time.now_ns is the decision's clock, not the wall clock.
func TestEvalTimeIsTheDecisionClock(t *testing.T) {
	ctx := context.Background()
	fsys := policyFS(t)
	fsys["clock.rego"] = &fstest.MapFile{Data: []byte(`package sluice.clock

import rego.v1

import data.sluice.lib

# METADATA
# title: Test clock
# description: Refuses every market, naming the evaluation time.
# custom:
#   code: clock
#   rule: clock.now
deny[market] contains lib.reason(rego.metadata.rule(), sprintf("now is %d", [time.now_ns()])) if {
	some market in lib.markets
}
`)}
	fsys["decision.rego"] = &fstest.MapFile{Data: []byte(strings.Replace(strings.Replace(string(fsys["decision.rego"].Data),
		"import data.sluice.budget\n", "import data.sluice.budget\nimport data.sluice.clock\n", 1),
		"object.get(suitability_denials, market, set())", "object.get(suitability_denials, market, set()) | object.get(clock.deny, market, set())", 1))}
	e, err := NewFromFS(ctx, fsys)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.Evaluate(ctx, queue(nil), []sluice.Offer{offer("a", "aliyun", "cn-beijing", "", sluice.OnDemand)}, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	want := "now is " + strconv.FormatInt(benchNow.UnixNano(), 10)
	if len(vs[0].Reasons) != 1 || vs[0].Reasons[0].Message != want {
		t.Errorf("reasons %+v, want one saying %q", vs[0].Reasons, want)
	}
}

func TestPricePerGPUHour(t *testing.T) {
	tests := []struct {
		price string
		gpus  int
		want  string
	}{
		{"20.5", 8, "2.5625"},
		{"10", 3, "3.333333333334"}, // rounded up at 12 places
		{"3.000000000001", 1, "3.000000000001"},
		{"6.000000000001", 2, "3.000000000001"}, // 3.0000000000005 rounds up, so it stays above a 3.00 ceiling
		{"0", 4, "0"},
	}
	for _, tt := range tests {
		got, ok := PricePerGPUHour(sluice.Offer{UnitPrice: sluice.MustMoney(tt.price, "USD"), GPUsPerUnit: tt.gpus})
		if !ok || got.String() != tt.want {
			t.Errorf("%s / %d = %s (%v), want %s", tt.price, tt.gpus, got, ok, tt.want)
		}
	}
	if _, ok := PricePerGPUHour(sluice.Offer{UnitPrice: sluice.MustMoney("1", "USD")}); ok {
		t.Error("no GPUs: ok")
	}
}

// An offer without GPUs is refused in Go (it has no price per GPU-hour).
func TestOfferWithoutGPUsRefused(t *testing.T) {
	e := newEvaluator(t)
	o := offer("a", "aliyun", "cn-beijing", "", sluice.OnDemand)
	o.GPUsPerUnit = 0
	vs, err := e.Evaluate(context.Background(), queue(nil), []sluice.Offer{o}, benchNow)
	if err != nil || vs[0].Allow || len(vs[0].Reasons) != 1 || vs[0].Reasons[0].Rule != "policy.no_gpus_per_unit" {
		t.Fatalf("%+v, %v", vs, err)
	}
	each, err := e.EvaluateEach(context.Background(), queue(nil), []sluice.Offer{o}, benchNow)
	if err != nil || each[0].Allow {
		t.Fatalf("EvaluateEach: %+v, %v", each, err)
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PolicyTarball is the embedded policy as a bundle, as `tar czf` makes it.
func policyTarball(t *testing.T, extra map[string]string) []byte {
	t.Helper()
	files := map[string]string{}
	for name, f := range policyFS(t) {
		files["./"+name] = string(f.Data)
	}
	for k, v := range extra {
		files[k] = v
	}
	return tarGz(t, files)
}

func TestReadBundle(t *testing.T) {
	ctx := context.Background()
	fsys, rev, err := ReadBundle(bytes.NewReader(policyTarball(t, map[string]string{"/.manifest": `{"revision": "3f2a9c1", "roots": [""]}`})))
	if err != nil {
		t.Fatal(err)
	}
	if rev != "3f2a9c1" {
		t.Errorf("manifest revision %q", rev)
	}
	e, err := NewFromFS(ctx, fsys, WithVCSRevision(rev))
	if err != nil {
		t.Fatal(err)
	}
	embeddedEv := newEvaluator(t)
	if e.ContentRevision() != embeddedEv.Revision() || e.Revision() != embeddedEv.Revision()+"+3f2a9c1" {
		t.Errorf("bundle revision %s, embedded %s", e.Revision(), embeddedEv.Revision())
	}
	if ContentRevisionOf(e.Revision()) != embeddedEv.Revision() {
		t.Errorf("ContentRevisionOf(%s)", e.Revision())
	}
	if r, err := RunTests(ctx, fsys); err != nil || !r.OK() {
		t.Errorf("tests in the bundle: %+v, %v", r, err)
	}

	bad := map[string][]byte{
		"not gzip":        []byte("policy"),
		"escaping path":   tarGz(t, map[string]string{"../etc/passwd.rego": "package x"}),
		"empty":           tarGz(t, map[string]string{}),
		"broken manifest": tarGz(t, map[string]string{".manifest": "{", "a.rego": "package a"}),
	}
	for name, b := range bad {
		if _, _, err := ReadBundle(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	res, err := Check(ctx, embedded)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("embedded policy fails its checks: %+v", res)
	}
	t.Logf("tests: %d passed; coverage %.2f%% (runtime files %.2f%%)", res.Tests.Passed, res.Tests.Coverage, res.Tests.RuleCoverage)

	unformatted := policyFS(t)
	unformatted["lib.rego"] = &fstest.MapFile{Data: []byte(strings.Replace(string(unformatted["lib.rego"].Data), "\t", "    ", 3))}
	if res, err := Check(ctx, unformatted); err != nil || !slices.Equal(res.Unformatted, []string{"lib.rego"}) || res.OK() {
		t.Errorf("unformatted lib.rego: %+v, %v", res.Unformatted, err)
	}

	failing := policyFS(t)
	failing["budget_test.rego"] = &fstest.MapFile{Data: []byte(strings.Replace(string(failing["budget_test.rego"].Data), `"refused_by": ["budget_tier.base_never_bought"],`, `"refused_by": [],`, 1))}
	res, err = Check(ctx, failing)
	if err != nil || res.OK() || res.Tests.Failed != 1 || len(res.Tests.Failures) != 1 || !strings.Contains(res.Tests.Failures[0], "base tier") {
		t.Errorf("failing test: %+v, %v", res.Tests, err)
	}

	uncovered := policyFS(t)
	for name := range uncovered {
		if strings.HasSuffix(name, "_test.rego") && name != "testing_test.rego" && name != "decision_test.rego" {
			delete(uncovered, name)
		}
	}
	res, err = Check(ctx, uncovered)
	if err != nil || res.OK() || res.Tests.Coverage >= CoverageThreshold {
		t.Errorf("few tests: coverage %.1f%%, ok %v, %v", res.Tests.Coverage, res.OK(), err)
	}

	strict := policyFS(t)
	strict["extra.rego"] = &fstest.MapFile{Data: []byte("package sluice.extra\n\nimport rego.v1\n\nf(x) := 1\n")}
	if res, err := Check(ctx, strict); err != nil || len(res.Problems) == 0 || !strings.Contains(strings.Join(res.Problems, "\n"), "extra.rego:5") {
		t.Errorf("unused argument (strict): %+v, %v", res.Problems, err)
	}
	if _, err := Check(ctx, fstest.MapFS{}); err == nil {
		t.Error("no files: no error")
	}
}

// A deny rule without its labels is refused at load: its reasons would be unlabelled.
func TestUnlabelledDenyRuleRefused(t *testing.T) {
	fsys := policyFS(t)
	text := string(fsys["budget.rego"].Data)
	from := "# custom:\n#   code: budget-tier\n#   rule: budget_tier.base_never_bought\n"
	if !strings.Contains(text, from) {
		t.Fatal("budget.rego changed")
	}
	fsys["budget.rego"] = &fstest.MapFile{Data: []byte(strings.Replace(text, from, "", 1))}
	_, err := NewFromFS(context.Background(), fsys)
	if err == nil || !strings.Contains(err.Error(), "budget.rego:") || !strings.Contains(err.Error(), "needs a METADATA block") {
		t.Fatalf("err = %v", err)
	}
}

// The integer fast path gives exactly the decimal's text.
func TestPriceTextMatchesDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	amounts := []string{"0", "1", "20.5", "10", "3.000000000001", "6.000000000001", "0.0000001", "123456.789",
		"99999999", "1e-13", "1234567890123456789.5", "7.10720000", "0.000000000001", "5.8394"}
	for range 2000 {
		amounts = append(amounts, fmt.Sprintf("%d.%0*d", rng.IntN(100000), 1+rng.IntN(8), rng.IntN(100000000)))
	}
	for _, a := range amounts {
		for _, g := range []int{1, 2, 3, 4, 6, 7, 8, 10, 16} {
			o := sluice.Offer{UnitPrice: sluice.MustMoney(a, "USD"), GPUsPerUnit: g}
			got, ok := priceText(o)
			want, ok2 := PricePerGPUHour(o)
			if !ok || !ok2 || got != want.String() {
				t.Fatalf("%s / %d: priceText %q, decimal %q", a, g, got, want.String())
			}
		}
	}
}

// FuzzReadBundle: any input is refused or gives files at valid relative
// paths; it never panics.
func FuzzReadBundle(f *testing.F) {
	f.Add(tarGz(&testing.T{}, map[string]string{"a.rego": "package a", ".manifest": `{"revision": "x"}`}))
	f.Add(tarGz(&testing.T{}, map[string]string{"../x.rego": "package a"}))
	f.Add([]byte("not a bundle"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fsys, _, err := ReadBundle(bytes.NewReader(b))
		if err != nil {
			return
		}
		walkErr := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !fs.ValidPath(name) {
				t.Fatalf("invalid path %q", name)
			}
			return nil
		})
		if walkErr != nil {
			t.Fatal(walkErr)
		}
	})
}
