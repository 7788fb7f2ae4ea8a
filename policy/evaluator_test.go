package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/util"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

func newEvaluator(t *testing.T) *Evaluator {
	t.Helper()
	e, err := New(context.Background())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// queue is a Beijing-only, checkpointable (30 min), elastic-tier queue;
// cases change one field at a time.
func queue(change func(*sluice.QueueProfile)) sluice.QueueProfile {
	p := sluice.QueueProfile{
		Queue:                     "train-llm",
		GPUModels:                 []string{"A100-80GB"},
		GPUsPerSlot:               8,
		HoursPerSlot:              decimal.RequireFromString("4"),
		MaxSlots:                  4,
		Checkpointable:            true,
		CheckpointIntervalMinutes: 30,
		DataClass:                 "cn-beijing-only",
		Tier:                      sluice.TierElastic,
		Team:                      "research",
		MaxPricePerGPUHour:        sluice.MustMoney("30", "CNY"),
	}
	if change != nil {
		change(&p)
	}
	return p
}

func offer(id, provider, region, city string, market sluice.Market) sluice.Offer {
	return sluice.Offer{
		ID: id, Provider: provider, SKU: "sku", GPUModel: "A100-80GB", GPUsPerUnit: 8,
		Region: region, City: city, Market: market, UnitPrice: sluice.MustMoney("20.5", "CNY"),
		UnitsAvailable: 2, FetchedAt: benchNow, ExpiresAt: benchNow.Add(5 * 60e9),
	}
}

// want is the expected verdict: allowed, or refused with these code/rule pairs.
type want struct {
	zone    sluice.Zone
	refused []string // "code rule", sorted like the verdict's reasons
}

func rulesOf(v sluice.Verdict) []string {
	var out []string
	for _, r := range v.Reasons {
		out = append(out, r.Code+" "+r.Rule)
	}
	return out
}

func TestEvaluate(t *testing.T) {
	e := newEvaluator(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		profile sluice.QueueProfile
		offer   sluice.Offer
		want    want
	}{
		{
			name:    "beijing-only queue refuses Alibaba Hangzhou",
			profile: queue(nil),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-hangzhou:on-demand", "aliyun", "cn-hangzhou", "", sluice.OnDemand),
			want:    want{sluice.ZoneEastChina, []string{"residency residency.zone_not_allowed"}},
		},
		{
			name:    "beijing-only queue refuses a Vast host in the US",
			profile: queue(func(p *sluice.QueueProfile) { p.ExportApproved = true }),
			offer:   offer("vast:4123456:on-demand", "vast", "US", "Dallas", sluice.OnDemand),
			want:    want{sluice.ZoneOverseas, []string{"residency residency.zone_not_allowed"}},
		},
		{
			name:    "beijing-only queue allows Alibaba Beijing",
			profile: queue(nil),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-beijing:on-demand", "aliyun", "cn-beijing", "", sluice.OnDemand),
			want:    want{sluice.ZoneBeijing, nil},
		},
		{
			name:    "beijing-only queue allows a Vast host in Beijing",
			profile: queue(nil),
			offer:   offer("vast:4123457:on-demand", "vast", "CN", "Beijing", sluice.OnDemand),
			want:    want{sluice.ZoneBeijing, nil},
		},
		{
			name:    "unmapped region is refused, never defaulted",
			profile: queue(func(p *sluice.QueueProfile) { p.DataClass = "public"; p.ExportApproved = true }),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-qingdao:on-demand", "aliyun", "cn-qingdao", "", sluice.OnDemand),
			want:    want{"", []string{"residency residency.unmapped"}},
		},
		{
			name:    "public queue without export approval refuses RunPod",
			profile: queue(func(p *sluice.QueueProfile) { p.DataClass = "public" }),
			offer:   offer("runpod:NVIDIA A100-SXM4-80GB:secure:8:on-demand", "runpod", "US-KS-2", "", sluice.OnDemand),
			want:    want{sluice.ZoneOverseas, []string{"residency residency.export_not_approved"}},
		},
		{
			name: "non-checkpointable queue refuses spot",
			profile: queue(func(p *sluice.QueueProfile) {
				p.Checkpointable, p.CheckpointIntervalMinutes, p.Tier = false, 0, sluice.TierEmergency
			}),
			offer: offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-beijing:spot", "aliyun", "cn-beijing", "", sluice.Spot),
			want:  want{sluice.ZoneBeijing, []string{"interruptibility interruptibility.not_checkpointable"}},
		},
		{
			name:    "checkpoint interval over the limit refuses spot",
			profile: queue(func(p *sluice.QueueProfile) { p.CheckpointIntervalMinutes, p.Tier = 90, sluice.TierEmergency }),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-beijing:spot", "aliyun", "cn-beijing", "", sluice.Spot),
			want:    want{sluice.ZoneBeijing, []string{"interruptibility interruptibility.checkpoint_interval_too_long"}},
		},
		{
			name:    "elastic tier refuses spot",
			profile: queue(nil),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-beijing:spot", "aliyun", "cn-beijing", "", sluice.Spot),
			want:    want{sluice.ZoneBeijing, []string{"budget-tier budget_tier.market_not_allowed"}},
		},
		{
			name:    "emergency tier allows spot",
			profile: queue(func(p *sluice.QueueProfile) { p.Tier = sluice.TierEmergency }),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-beijing:spot", "aliyun", "cn-beijing", "", sluice.Spot),
			want:    want{sluice.ZoneBeijing, nil},
		},
		{
			name:    "reasons of several policies, sorted by code then rule",
			profile: queue(func(p *sluice.QueueProfile) { p.Checkpointable, p.CheckpointIntervalMinutes = false, 0 }),
			offer:   offer("aliyun:ecs.gn7e-c16g1.32xlarge:cn-hangzhou:spot", "aliyun", "cn-hangzhou", "", sluice.Spot),
			want: want{sluice.ZoneEastChina, []string{
				"budget-tier budget_tier.market_not_allowed",
				"interruptibility interruptibility.not_checkpointable",
				"residency residency.zone_not_allowed",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := e.Evaluate(ctx, tt.profile, []sluice.Offer{tt.offer}, benchNow)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != 1 {
				t.Fatalf("got %d verdicts, want 1", len(vs))
			}
			v := vs[0]
			if v.OfferID != tt.offer.ID {
				t.Errorf("OfferID = %q, want %q", v.OfferID, tt.offer.ID)
			}
			if v.Zone != tt.want.zone {
				t.Errorf("Zone = %q, want %q", v.Zone, tt.want.zone)
			}
			if got := rulesOf(v); !slices.Equal(got, tt.want.refused) {
				t.Errorf("reasons = %q, want %q", got, tt.want.refused)
			}
			if v.Allow != (len(tt.want.refused) == 0) {
				t.Errorf("Allow = %v with reasons %q", v.Allow, rulesOf(v))
			}
			for _, r := range v.Reasons {
				if r.Message == "" {
					t.Errorf("reason %s has no message", r.Rule)
				}
			}
		})
	}
}

func TestEvaluateMessageNamesTheValues(t *testing.T) {
	e := newEvaluator(t)
	vs, err := e.Evaluate(context.Background(), queue(nil),
		[]sluice.Offer{offer("a", "aliyun", "cn-hangzhou", "", sluice.OnDemand)}, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	want := []sluice.Reason{{
		Code:    sluice.ReasonResidency,
		Rule:    "residency.zone_not_allowed",
		Message: "region cn-hangzhou maps to east-china; data class cn-beijing-only allows beijing",
	}}
	if !reflect.DeepEqual(vs[0].Reasons, want) {
		t.Errorf("reasons = %+v, want %+v", vs[0].Reasons, want)
	}
}

func TestBaseTierRefusesEverything(t *testing.T) {
	e := newEvaluator(t)
	p := benchProfile()
	p.Tier = sluice.TierBase
	offers := benchOffers(300)
	vs, err := e.Evaluate(context.Background(), p, offers, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v.Allow || !slices.ContainsFunc(v.Reasons, func(r sluice.Reason) bool {
			return r.Code == sluice.ReasonBudgetTier && r.Rule == "budget_tier.base_never_bought"
		}) {
			t.Fatalf("offer %d %s (%s %s %s): %+v, want refused by budget_tier.base_never_bought", i, v.OfferID, offers[i].Provider, offers[i].Region, offers[i].Market, v)
		}
	}
}

func TestEvaluateKeepsOrderAndDuplicates(t *testing.T) {
	e := newEvaluator(t)
	offers := []sluice.Offer{
		offer("1", "aliyun", "cn-beijing", "", sluice.OnDemand),
		offer("2", "aliyun", "cn-hangzhou", "", sluice.OnDemand),
		offer("3", "aliyun", "cn-beijing", "", sluice.OnDemand), // same combination as 1
		offer("4", "vast", "CN", "Beijing", sluice.Reserved),
	}
	vs, err := e.Evaluate(context.Background(), queue(nil), offers, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.OfferID)
	}
	if !slices.Equal(ids, []string{"1", "2", "3", "4"}) {
		t.Fatalf("offer ids = %q", ids)
	}
	if !vs[0].Allow || vs[1].Allow || !vs[2].Allow || !vs[3].Allow {
		t.Errorf("allow = %v %v %v %v, want true false true true", vs[0].Allow, vs[1].Allow, vs[2].Allow, vs[3].Allow)
	}

	// A caller appending to one verdict's reasons must not touch another's.
	vs2, err := e.Evaluate(context.Background(), queue(nil), []sluice.Offer{offers[1], offers[1]}, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(vs2[0].Reasons, sluice.Reason{Code: "x"})
	if len(vs2[1].Reasons) != 1 || vs2[1].Reasons[0].Code != sluice.ReasonResidency {
		t.Errorf("second verdict changed: %+v", vs2[1].Reasons)
	}

	empty, err := e.Evaluate(context.Background(), queue(nil), nil, benchNow)
	if err != nil || len(empty) != 0 {
		t.Errorf("no offers: %v, %v", empty, err)
	}
}

func TestDecideLimits(t *testing.T) {
	e := newEvaluator(t)
	ctx := context.Background()
	d, err := e.Decide(ctx, queue(nil), []sluice.Offer{offer("a", "aliyun", "cn-beijing", "", sluice.OnDemand)}, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	want := []sluice.Money{sluice.MustMoney("40.00", "CNY"), sluice.MustMoney("5.50", "USD")}
	if len(d.Limits.MaxPricePerGPUHour) != 2 ||
		d.Limits.MaxPricePerGPUHour[0].String() != want[0].String() ||
		d.Limits.MaxPricePerGPUHour[1].String() != want[1].String() {
		t.Errorf("limits = %v, want %v", d.Limits.MaxPricePerGPUHour, want)
	}
	if m, ok := d.Limits.MaxPriceIn("USD"); !ok || m.Amount.String() != "5.5" || m.Amount.StringFixed(2) != "5.50" {
		t.Errorf("MaxPriceIn(USD) = %v, %v", m, ok)
	}
	if d.Locations != 1 || d.Markets != 1 || d.Prices != 1 {
		t.Errorf("distinct locations %d, markets %d, prices %d; want 1 each", d.Locations, d.Markets, d.Prices)
	}

	d, err = e.Decide(ctx, queue(func(p *sluice.QueueProfile) { p.Tier = sluice.TierBase }), nil, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Limits.MaxPricePerGPUHour) != 0 {
		t.Errorf("base tier limits = %v, want none", d.Limits.MaxPricePerGPUHour)
	}
}

// The batched evaluation must give exactly what one evaluation per offer gives.
func TestBatchedEqualsEach(t *testing.T) {
	e := newEvaluator(t)
	ctx := context.Background()
	offers := benchOffers(1000)
	profiles := map[string]sluice.QueueProfile{
		"bench":        benchProfile(),
		"beijing-only": queue(nil),
		"domestic, not checkpointable, emergency": queue(func(p *sluice.QueueProfile) {
			p.DataClass, p.Checkpointable, p.CheckpointIntervalMinutes, p.Tier = "cn-domestic", false, 0, sluice.TierEmergency
		}),
		"public without export approval, base": queue(func(p *sluice.QueueProfile) {
			p.DataClass, p.Tier = "public", sluice.TierBase
		}),
	}
	for name, p := range profiles {
		t.Run(name, func(t *testing.T) {
			batched, err := e.Evaluate(ctx, p, offers, benchNow)
			if err != nil {
				t.Fatal(err)
			}
			each, err := e.EvaluateEach(ctx, p, offers, benchNow)
			if err != nil {
				t.Fatal(err)
			}
			if len(batched) != len(offers) || len(each) != len(offers) {
				t.Fatalf("got %d batched and %d single verdicts for %d offers", len(batched), len(each), len(offers))
			}
			allowed := 0
			for i := range offers {
				if !reflect.DeepEqual(batched[i], each[i]) {
					t.Fatalf("offer %d %s:\nbatched  %+v\nper-offer %+v", i, offers[i].ID, batched[i], each[i])
				}
				if batched[i].Allow {
					allowed++
				}
			}
			t.Logf("%d of %d offers allowed", allowed, len(offers))
		})
	}
}

// policyFS copies the embedded policy into a MapFS that a test can change.
func policyFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(embedded, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(embedded, name)
		m[name] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRevision(t *testing.T) {
	ctx := context.Background()
	a, b := newEvaluator(t), newEvaluator(t)
	if a.Revision() != b.Revision() || len(a.Revision()) != 64 {
		t.Fatalf("revision not stable: %q vs %q", a.Revision(), b.Revision())
	}

	// The revision is `sha256sum <runtime files> | sha256sum` (see Revision).
	var listing strings.Builder
	for _, name := range a.Files() {
		data, err := fs.ReadFile(embedded, name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&listing, "%x  %s\n", sha256.Sum256(data), name)
	}
	sum := sha256.Sum256([]byte(listing.String()))
	if got := hex.EncodeToString(sum[:]); got != a.Revision() {
		t.Errorf("Revision = %s, sha256sum recipe gives %s", a.Revision(), got)
	}
	wantFiles := []string{"budget.rego", "data/cities.json", "data/regions.json", "data/settings.json", "decision.rego", "interruptibility.rego", "lib.rego", "residency.rego", "suitability.rego"}
	if !slices.Equal(a.Files(), wantFiles) {
		t.Errorf("Files = %q, want %q", a.Files(), wantFiles)
	}

	same, err := NewFromFS(ctx, policyFS(t))
	if err != nil {
		t.Fatal(err)
	}
	if same.Revision() != a.Revision() {
		t.Errorf("copied policy: revision %s, embedded %s", same.Revision(), a.Revision())
	}

	change := func(name, from, to string) string {
		t.Helper()
		fsys := policyFS(t)
		text := string(fsys[name].Data)
		if !strings.Contains(text, from) {
			t.Fatalf("%s does not contain %q", name, from)
		}
		fsys[name] = &fstest.MapFile{Data: []byte(strings.Replace(text, from, to, 1))}
		e, err := NewFromFS(ctx, fsys)
		if err != nil {
			t.Fatalf("NewFromFS with %s changed: %v", name, err)
		}
		return e.Revision()
	}
	if r := change("residency.rego", "# zones maps", "# zones map"); r == a.Revision() {
		t.Error("changing a comment in residency.rego left the revision unchanged")
	}
	if r := change("data/regions.json", `"cn-heyuan": "cn-other",`, `"cn-heyuan": "cn-other", "cn-qingdao": "cn-other",`); r == a.Revision() {
		t.Error("adding a region to data/regions.json left the revision unchanged")
	}
	if r := change("residency_test.rego", "Add a row to add a case.", "Add a row."); r != a.Revision() {
		t.Error("changing a test file changed the revision (tests are not part of it)")
	}
}

// A compliance working copy is evaluated as written: adding a region maps it.
func TestNewFromFSUsesTheGivenPolicy(t *testing.T) {
	ctx := context.Background()
	fsys := policyFS(t)
	text := strings.Replace(string(fsys["data/regions.json"].Data), `"cn-heyuan": "cn-other",`, `"cn-heyuan": "cn-other", "cn-qingdao": "cn-other",`, 1)
	fsys["data/regions.json"] = &fstest.MapFile{Data: []byte(text)}
	e, err := NewFromFS(ctx, fsys)
	if err != nil {
		t.Fatal(err)
	}
	p := queue(func(p *sluice.QueueProfile) { p.DataClass = "cn-domestic" })
	vs, err := e.Evaluate(ctx, p, []sluice.Offer{offer("q", "aliyun", "cn-qingdao", "", sluice.OnDemand)}, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	if !vs[0].Allow || vs[0].Zone != sluice.ZoneCNOther {
		t.Errorf("cn-qingdao after adding it: %+v", vs[0])
	}
}

func TestNewFromFSErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := NewFromFS(ctx, fstest.MapFS{}); err == nil {
		t.Error("empty policy: no error")
	}
	bad := policyFS(t)
	bad["lib.rego"] = &fstest.MapFile{Data: []byte("package sluice.lib\n\nx := \n")}
	if _, err := NewFromFS(ctx, bad); err == nil {
		t.Error("policy that does not parse: no error")
	}
	unused := policyFS(t)
	unused["extra.rego"] = &fstest.MapFile{Data: []byte("package sluice.extra\n\nimport data.sluice.lib\n\nx := 1\n")}
	if _, err := NewFromFS(ctx, unused); err == nil {
		t.Error("unused import: no error (strict mode should refuse it, like opa check --strict)")
	}
}

// Malformed answers are errors, never allows.
func TestMalformedPolicyAnswersAreErrors(t *testing.T) {
	ctx := context.Background()
	o := []sluice.Offer{offer("a", "aliyun", "cn-beijing", "", sluice.OnDemand)}
	tests := map[string]struct{ file, from, to string }{
		"price limit as a number":   {"data/settings.json", `"USD": "5.50"`, `"USD": 5.50`},
		"price limit not a decimal": {"data/settings.json", `"USD": "5.50"`, `"USD": "five"`},
		"verdict without reasons":   {"decision.rego", `batch := {"locations": by_location,`, `batch := {"locations": {l: {"zone": v.zone} | some l, v in by_location},`},
		"allowed without zone":      {"decision.rego", `{location: {"zone": zone, "reasons": reasons} |`, `{location: {"zone": trim(zone, zone), "reasons": reasons} |`},
		"market left out":           {"decision.rego", `some market in lib.markets`, `some market in lib.markets; market != "on-demand"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fsys := policyFS(t)
			text := string(fsys[tt.file].Data)
			if !strings.Contains(text, tt.from) {
				t.Fatalf("%s does not contain %q", tt.file, tt.from)
			}
			fsys[tt.file] = &fstest.MapFile{Data: []byte(strings.Replace(text, tt.from, tt.to, 1))}
			e, err := NewFromFS(ctx, fsys)
			if err != nil {
				t.Fatalf("NewFromFS: %v", err)
			}
			if vs, err := e.Evaluate(ctx, queue(nil), o, benchNow); err == nil {
				t.Errorf("no error; verdicts %+v", vs)
			}
		})
	}
}

// TestRegoUnitTests runs the *_test.rego files (the same as `opa test policy/`)
// and fails on any failing or erroring Rego test or test case.
func TestRegoUnitTests(t *testing.T) {
	ctx := context.Background()
	loaded, err := loader.NewFileLoader().
		WithFS(embedded).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotation(true).
		All([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	store := inmem.NewFromObject(loaded.Documents)
	ch, err := tester.NewRunner().
		SetStore(store).
		SetModules(loaded.ParsedModules()).
		RaiseBuiltinErrors(true).
		RunTests(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := range ch {
		n++
		name := r.Package + "." + r.Name
		switch {
		case r.Error != nil:
			t.Errorf("%s: error: %v", name, r.Error)
		case r.Fail:
			var failed []string
			for path, sr := range r.SubResults.Iter {
				if sr.Fail && len(sr.SubResults) == 0 {
					failed = append(failed, strings.Join(path, " / "))
				}
			}
			t.Errorf("%s: FAIL %s %q", name, r.Location, failed)
		case r.Skip:
			t.Logf("%s: skipped", name)
		}
	}
	if n < 20 {
		t.Errorf("ran %d Rego tests, expected the whole suite", n)
	}
	t.Logf("ran %d Rego tests", n)
}

// Every deny rule carries the METADATA the reasons are built from.
func TestDenyRulesAreAnnotated(t *testing.T) {
	e := newEvaluator(t)
	found := 0
	for _, name := range e.Files() {
		if !strings.HasSuffix(name, ".rego") {
			continue
		}
		src, err := fs.ReadFile(embedded, name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m.Rules {
			// deny, deny_price, deny_market, deny_location, ...
			if !strings.HasPrefix(string(r.Head.Name), "deny") && (len(r.Head.Reference) == 0 || !strings.HasPrefix(r.Head.Reference[0].String(), "deny")) {
				continue
			}
			found++
			where := fmt.Sprintf("%s:%d", name, r.Location.Row)
			if len(r.Annotations) != 1 {
				t.Errorf("%s: deny rule without a METADATA block", where)
				continue
			}
			a := r.Annotations[0]
			code, _ := a.Custom["code"].(string)
			rule, _ := a.Custom["rule"].(string)
			if a.Title == "" || a.Description == "" || code == "" || rule == "" {
				t.Errorf("%s: METADATA needs title, description, custom.code and custom.rule; got %+v", where, a)
			}
			if !strings.HasPrefix(rule, strings.ReplaceAll(code, "-", "_")+".") {
				t.Errorf("%s: rule %q does not start with its code %q", where, rule, code)
			}
		}
	}
	if found < 16 {
		t.Errorf("found %d deny rules, want all of them (at least 16)", found)
	}
}

// The data files parse and use only the four zones (also checked in Rego).
func TestRegionData(t *testing.T) {
	b, err := fs.ReadFile(embedded, "data/regions.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sluice struct {
			Regions map[string]map[string]sluice.Zone `json:"regions"`
		} `json:"sluice"`
	}
	if err := util.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, provider := range []string{"aliyun", "autodl", "aws", "runpod", "vast"} {
		if len(doc.Sluice.Regions[provider]) == 0 {
			t.Errorf("no regions for %s", provider)
		}
	}
	for provider, regions := range doc.Sluice.Regions {
		for region, zone := range regions {
			switch zone {
			case sluice.ZoneBeijing, sluice.ZoneEastChina, sluice.ZoneCNOther, sluice.ZoneOverseas:
			default:
				t.Errorf("%s %s: unknown zone %q", provider, region, zone)
			}
		}
	}
}

// One Evaluator serves concurrent decisions (run with -race).
func TestEvaluateConcurrently(t *testing.T) {
	e := newEvaluator(t)
	ctx := context.Background()
	offers := benchOffers(200)
	want, err := e.Evaluate(ctx, benchProfile(), offers, benchNow)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := e.Evaluate(ctx, benchProfile(), offers, benchNow)
			if err == nil && !reflect.DeepEqual(got, want) {
				err = fmt.Errorf("concurrent verdicts differ")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
