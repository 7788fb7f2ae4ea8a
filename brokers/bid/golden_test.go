package bid

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

var update = flag.Bool("update", false, "rewrite testdata/brokers golden files")

// TestRulesGolden renders the unit / precision table and one worked example
// per provider into ../../testdata/brokers/bid-rules.golden.
func TestRulesGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString("provider | unit | places | shift | min | max | max/GPU | source\n")
	var names []string
	for p := range Rules {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		r := Rules[p]
		min := r.Min.String()
		if r.MinExclusive {
			min = "> " + min
		} else {
			min = ">= " + min
		}
		fmt.Fprintf(&b, "%s | %s | %d | %d | %s | %s | %s | %s\n", p, r.Unit, r.Places, r.Shift, min, r.Max, r.MaxPerGPU, r.Source)
	}
	b.WriteString("\nexamples (per unit-hour in -> decided per bid unit -> sent text):\n")
	for _, ex := range []struct {
		p, amt, cur string
		gpus        int
	}{{"aws", "12.0870009", "USD", 8}, {"aliyun", "12.3456", "CNY", 1}, {"runpod", "5.52", "USD", 8}, {"runpod", "1", "USD", 3},
		{"vast", "1.2345678", "USD", 2}, {"autodl", "13.36", "CNY", 2}, {"aws", "0.001", "USD", 8}} {
		d, err := Decide(Input{Provider: ex.p, PerUnit: sluice.MustMoney(ex.amt, ex.cur), GPUsPerUnit: ex.gpus})
		res := fmt.Sprintf("%s per %s -> %q", d.Decided, d.Unit, d.Text)
		if err != nil {
			res += " REFUSED: " + err.Error()
		}
		fmt.Fprintf(&b, "%s %s %s × %d GPUs: %s\n", ex.p, ex.amt, ex.cur, ex.gpus, res)
	}
	path := filepath.Join("..", "..", "testdata", "brokers", "bid-rules.golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != b.String() {
		t.Errorf("bid rules differ from %s (run with -update to accept):\n%s", path, b.String())
	}
}
