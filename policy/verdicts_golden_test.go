package policy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/verdicts.json.gz from the current evaluator")

// goldenProfiles exercise every rule family: residency classes, export
// approval, interruptibility, each budget tier (and an unknown one), and both
// suitability rules.
func goldenProfiles() map[string]sluice.QueueProfile {
	q := policy.QueueProfile
	return map[string]sluice.QueueProfile{
		"bench":                 policy.BenchProfile(),
		"beijing-only, elastic": q(nil),
		"domestic, not checkpointable, emergency": q(func(p *sluice.QueueProfile) {
			p.DataClass, p.Checkpointable, p.CheckpointIntervalMinutes, p.Tier = "cn-domestic", false, 0, sluice.TierEmergency
		}),
		"public without export approval, base": q(func(p *sluice.QueueProfile) { p.DataClass, p.Tier = "public", sluice.TierBase }),
		"public, elastic, interval too long, inference": q(func(p *sluice.QueueProfile) {
			p.DataClass, p.ExportApproved, p.CheckpointIntervalMinutes, p.Workload = "public", true, 90, "long-lived-inference"
		}),
		"public, emergency, nvlink, local storage east-china": q(func(p *sluice.QueueProfile) {
			p.DataClass, p.ExportApproved, p.Tier, p.CrossNodeNVLink, p.LocalStorageOnly, p.StorageZone = "public", true, sluice.TierEmergency, true, true, "east-china"
		}),
		"unknown class and tier, unknown storage zone": q(func(p *sluice.QueueProfile) {
			p.DataClass, p.Tier, p.LocalStorageOnly, p.StorageZone = "secret", "platinum", true, "mars"
		}),
	}
}

// mixedCurrencies is the benchmark set with every 7th offer in CNY (a
// currency with a ceiling) and every 11th in EUR (none), and a few offers
// without GPUs.
func mixedCurrencies() []sluice.Offer {
	offers := policy.BenchOffers(1000)
	for i := range offers {
		switch {
		case i%7 == 0:
			offers[i].UnitPrice.Currency = "CNY"
		case i%11 == 0:
			offers[i].UnitPrice.Currency = "EUR"
		case i%97 == 0:
			offers[i].GPUsPerUnit = 0
		}
	}
	return offers
}

// TestVerdictsGolden compares the full verdict set (every offer: allow, zone,
// every reason's code, rule and message) with the verdicts recorded from the
// evaluator before its batching changed (testdata/verdicts.json.gz), on the
// replay market and the 1,000-offer benchmark set, for several profiles.
// Refresh with `go test ./policy -run TestVerdictsGolden -update` only when a
// rule is meant to change.
func TestVerdictsGolden(t *testing.T) {
	ev, err := policy.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]sluice.Offer{
		"replay":         replayMarket(t),
		"bench1000":      policy.BenchOffers(1000),
		"mixed-currency": mixedCurrencies(),
	}
	got := map[string][]sluice.Verdict{}
	for sname, offers := range sets {
		for pname, p := range goldenProfiles() {
			vs, err := ev.Evaluate(context.Background(), p, offers, policy.BenchNow)
			if err != nil {
				t.Fatalf("%s / %s: %v", sname, pname, err)
			}
			got[sname+" / "+pname] = vs
		}
	}
	path := filepath.Join("testdata", "verdicts.json.gz")
	if *update {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		enc := json.NewEncoder(zw)
		enc.SetIndent("", " ")
		if err := enc.Encode(got); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]sluice.Verdict
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Errorf("golden has %d (set, profile) cases, the test %d", len(want), len(got))
	}
	for name, wv := range want {
		gv, ok := got[name]
		if !ok {
			t.Errorf("%s: not evaluated", name)
			continue
		}
		if len(gv) != len(wv) {
			t.Errorf("%s: %d verdicts, golden %d", name, len(gv), len(wv))
			continue
		}
		allowed, diffs := 0, 0
		for i := range wv {
			g, w := verdictText(gv[i]), verdictText(wv[i])
			if g != w {
				if diffs++; diffs <= 3 {
					t.Errorf("%s: offer %d:\n got  %s\n want %s", name, i, g, w)
				}
			}
			if gv[i].Allow {
				allowed++
			}
		}
		if diffs > 0 {
			t.Errorf("%s: %d of %d verdicts differ", name, diffs, len(wv))
		}
		t.Logf("%s: %d of %d allowed", name, allowed, len(wv))
	}
}

func verdictText(v sluice.Verdict) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
