package config

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLoadExample(t *testing.T) {
	c, err := Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.BillingCurrency != "USD" || len(c.FX) != 1 || c.FX[0].Rate.String() != "7.1072" || c.FX[0].AsOf.Format("2006-01-02") != "2026-11-27" {
		t.Fatalf("fx: %+v", c.FX)
	}
	p, err := c.Profile("train-beijing")
	if err != nil {
		t.Fatal(err)
	}
	if p.DataClass != "cn-beijing-only" || p.GPUsPerSlot != 4 || p.HoursPerSlot.String() != "6" || p.MaxPricePerGPUHour.String() != "40 CNY" || p.Tier != "elastic" {
		t.Fatalf("profile: %+v", p)
	}
	if c.Budgets["emergency"].String() != "5000 USD" || c.InterruptionsPerHour["vast"].String() != "0.08" {
		t.Fatalf("budgets %v rates %v", c.Budgets, c.InterruptionsPerHour)
	}
	if c.Quotes.SourceTimeout.String() != "2s" || c.Quotes.OverallTimeout.String() != "3s" {
		t.Fatalf("quotes %+v", c.Quotes)
	}
	if c.Quotes.MinPricePerGPUHour.String() != "0.3 USD" || c.Quotes.MaxPricePerGPUHour.String() != "8 USD" {
		t.Fatalf("price floor %s", c.Quotes.MinPricePerGPUHour)
	}
	if d, err := Parse([]byte("billing_currency: USD\n"), "min.yaml"); err != nil || d.Quotes.MinPricePerGPUHour.String() != "0.01 USD" || d.Quotes.MaxPricePerGPUHour.String() != "8 USD" {
		t.Fatalf("default price floor: %v %v", d, err)
	}
	if _, err := c.Profile("nope"); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "sluice.yaml") {
		t.Fatalf("unknown queue: %v", err)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	base := "billing_currency: USD\n"
	q := "queues:\n  - {queue: q, gpu_models: [A100-80GB], gpus_per_slot: 4, hours_per_slot: \"4\", max_slots: 2, data_class: public, budget_tier: elastic%s}\n"
	tests := []struct{ yaml, field string }{
		{"billing_currency: usd\n", "billing_currency"},
		{base + "fx: [{base: USD, quote: CNY, rate: \"-1\", as_of: 2026-11-27, source: x}]\n", "fx[0].rate"},
		{base + "fx: [{base: USD, quote: CNY, rate: \"7.1\", as_of: 27/11/2026, source: x}]\n", "fx[0].as_of"},
		{base + "fx: [{base: USD, quote: CNY, rate: \"7.1\", as_of: 2026-11-27}]\n", "fx[0].source"},
		{base + "budgets: {gold: \"1\"}\n", "budgets.gold"},
		{base + "budgets: {elastic: \"1e\"}\n", "budgets.elastic"},
		{base + "interruptions_per_hour: {vast: \"-0.1\"}\n", "interruptions_per_hour.vast"},
		{base + "quotes: {source_timeout: soon}\n", "quotes.source_timeout"},
		{base + strings.Replace(q, "gpus_per_slot: 4", "gpus_per_slot: 16", 1), "queues[q].gpus_per_slot"},
		{base + strings.Replace(q, `"4"`, `"four"`, 1), "queues[q].hours_per_slot"},
		{base + strings.Replace(q, "public", "secret", 1), "queues[q].data_class"},
		{base + strings.Replace(q, "elastic", "gold", 1), "queues[q].budget_tier"},
		{base + strings.Replace(q, "%s", ", checkpointable: true", 1), "queues[q].checkpoint_interval_minutes"},
		{base + strings.Replace(q, "%s", ", max_price_per_gpu_hour: {amount: \"2\", currency: usd}", 1), "queues[q].max_price_per_gpu_hour"},
		{base + strings.Replace(q, "%s", ", workload: serving", 1), "queues[q].workload"},
		{base + strings.Replace(q, "%s", ", local_storage_only: true", 1), "queues[q].storage_zone"},
		{base + strings.Replace(q, "%s", ", local_storage_only: true, storage_zone: mars", 1), "queues[q].storage_zone"},
		{base + strings.Replace(q, "%s", ", storage_zone: beijing", 1), "queues[q].storage_zone"},
		{base + strings.Replace(q, "%s", ", cross_node_nvlink: \"yes\"", 1), "true or false"},
		{base + "colour: blue\n", "colour"},
		{"", "empty file"},
		{base + strings.Replace(q, "gpus_per_slot: 4", "gpus_per_slot: 4.5", 1), "whole number"},
		{base + strings.Replace(q, "A100-80GB", "A100-80G", 1), "queues[q].gpu_models"},
		{base + strings.Replace(q, "queue: q", "queue: \"q q\"", 1), ".queue"},
		{base + strings.Replace(q, "max_slots: 2", "max_slots: 20000", 1), "queues[q].max_slots"},
		{base + strings.Replace(q, `"4"`, `"1e-400"`, 1), "queues[q].hours_per_slot"},
		{base + strings.Replace(q, `"4"`, `"1e400"`, 1), "queues[q].hours_per_slot"},
		{base + strings.Replace(q, "%s", ", max_price_per_gpu_hour: {amount: \"0\", currency: USD}", 1), "queues[q].max_price_per_gpu_hour"},
		{base + strings.Replace(q, "%s", ", max_price_per_gpu_hour: {amount: \"\", currency: USD}", 1), "queues[q].max_price_per_gpu_hour"},
		{base + strings.Replace(q, "%s", ", max_price_per_gpu_hour: {amount: \"2\", currency: EUR}", 1), "currency EUR"},
		{base + "providers: {runpd: {enabled: true}}\n", "providers.runpd"},
		{base + "providers: {runpod: {enabled: \"yes\"}}\n", "true or false"},
		{base + "providers: {runpod: {max_units: 100000}}\n", "providers.runpod.max_units"},
		{base + "interruptions_per_hour: {runpd: \"0.1\"}\n", "interruptions_per_hour.runpd"},
		{base + "fx: [{base: USD, quote: CNY, rate: \"7.1\", as_of: 2026-11-27, source: x}, {base: CNY, quote: USD, rate: \"0.14\", as_of: 2026-11-27, source: y}]\n", "fx[1]"},
		{base + "fx: [{base: USD, quote: CNY, rate: \"1e-400\", as_of: 2026-11-27, source: x}]\n", "fx[0].rate"},
		{base + "quotes: {source_timeout: 5s, overall_timeout: 3s}\n", "quotes.source_timeout"},
		{base + "quotes: {min_price_per_gpu_hour: {amount: \"-1\", currency: USD}}\n", "quotes.min_price_per_gpu_hour"},
		{base + "quotes: {min_price_per_gpu_hour: {amount: \"9\", currency: USD}}\n", "quotes.min_price_per_gpu_hour"},
		{"billing_currency: CNY\n", "quotes.max_price_per_gpu_hour"},
		{base + "providers: {autodl: {enabled: true}}\n", "providers.autodl.price_list"},
		{base + "providers: {autodl: {enabled: true, price_list: {as_of: 2026-11-01, source: x, prices: [{gpu_name: A, gpu_model: A100-80GB, per_gpu_hour: {amount: \"6.68\", currency: USD}}]}}}\n", "per_gpu_hour"},
		{base + "providers: {autodl: {enabled: true, price_list: {as_of: 2026-11-01, source: x, prices: [{gpu_name: A, gpu_model: A100-80GB, per_gpu_hour: {amount: \"6.68\", currency: CNY}}, {gpu_name: A, gpu_model: A100-80GB, per_gpu_hour: {amount: \"1\", currency: CNY}}]}}}\n", "listed twice"},
		{base + "providers: {autodl: {enabled: true, gpu_names: [H800], price_list: {as_of: 2026-11-01, source: x, prices: [{gpu_name: A, gpu_model: A100-80GB, per_gpu_hour: {amount: \"6.68\", currency: CNY}}]}}}\n", "providers.autodl.gpu_names"},
	}
	for _, tc := range tests {
		y := strings.Replace(tc.yaml, "%s", "", 1)
		_, err := Parse([]byte(y), "x.yaml")
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "x.yaml") {
			t.Errorf("%q: err = %v, want one naming %s", y, err, tc.field)
		}
	}
}

// The exact messages for a base-tier queue and for whole numbers yaml.v3
// cannot hold (L6, L7): the field path is named, not only the YAML line.
func TestConfigErrorsExactText(t *testing.T) {
	base := "billing_currency: USD\n"
	q := "queues:\n  - queue: q\n    gpu_models: [A100-80GB]\n    gpus_per_slot: 4\n    hours_per_slot: \"4\"\n    max_slots: 2\n    data_class: public\n    budget_tier: elastic\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"base tier", base + strings.Replace(q, "elastic", "base", 1),
			`bad config: x.yaml: queues[q].budget_tier: "base": base is the owned pool and is never bought; a queue Sluice buys for is elastic or emergency`},
		{"unknown tier", base + strings.Replace(q, "elastic", "gold", 1),
			`bad config: x.yaml: queues[q].budget_tier: "gold": want elastic or emergency`},
		{"max_slots overflow", base + strings.Replace(q, "max_slots: 2", "max_slots: 99999999999999999999", 1),
			`bad config: x.yaml: queues[q].max_slots: line 7: "99999999999999999999": out of range (too large for a whole number)`},
		{"negative overflow", base + strings.Replace(q, "gpus_per_slot: 4", "gpus_per_slot: -99999999999999999999", 1),
			`bad config: x.yaml: queues[q].gpus_per_slot: line 5: "-99999999999999999999": out of range (too large for a whole number)`},
		{"flow style", base + "queues: [{queue: q2, max_slots: 4.5}]\n",
			`bad config: x.yaml: queues[q2].max_slots: line 2: "4.5": want a whole number`},
		{"second queue", base + q + "  - queue: r\n    checkpoint_interval_minutes: 1e30\n",
			`bad config: x.yaml: queues[r].checkpoint_interval_minutes: line 11: "1e30": want a whole number`},
		{"provider", base + "providers:\n  vast:\n    max_units: 18446744073709551616\n",
			`bad config: x.yaml: providers.vast.max_units: line 4: "18446744073709551616": out of range (too large for a whole number)`},
		{"bool", base + "providers: {runpod: {enabled: \"yes\"}}\n",
			`bad config: x.yaml: providers.runpod.enabled: line 2: "yes": want true or false`},
		{"int as mapping", base + "queues: [{queue: q, max_slots: {a: 1}}]\n",
			`bad config: x.yaml: queues[q].max_slots: line 2: "": want a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "x.yaml")
			if !errors.Is(err, ErrBadConfig) || err.Error() != tc.want {
				t.Errorf("err = %v\nwant  %s", err, tc.want)
			}
		})
	}
}

// The example config buys for no base-tier queue (base is the owned pool).
func TestConfigExampleHasNoBaseQueue(t *testing.T) {
	c, err := Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range c.Queues {
		if p.Tier == "base" {
			t.Errorf("queue %s has budget_tier base", name)
		}
	}
}

// FuzzParse: any input either parses into a config whose queues are usable
// or is refused with ErrBadConfig; it never panics.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../testdata/sluice.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("billing_currency: USD\nqueues: [{queue: q}]\n"))
	f.Add([]byte("billing_currency: USD\nplacement: {mode: providers, launch: {aliyun: {image: x, security_group_id: sg-1, vswitch_id: vsw-1}}, drain: {idle_window: 15m}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error does not wrap ErrBadConfig: %v", err)
			}
			return
		}
		if p := c.Placement; (p.Mode != PlaceSandbox && p.Mode != PlaceProviders) || p.Drain.IdleWindow < 0 {
			t.Fatalf("unusable placement accepted: %+v", p)
		}
		for name, q := range c.Queues {
			if q.GPUsPerSlot <= 0 || q.MaxSlots <= 0 || !q.HoursPerSlot.IsPositive() || name != q.Queue {
				t.Fatalf("unusable queue accepted: %+v", q)
			}
		}
	})
}

// The job-kind fields the policy's suitability and interruptibility rules read.
func TestQueueJobKind(t *testing.T) {
	c, err := Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Profile("serve-beijing")
	if err != nil {
		t.Fatal(err)
	}
	if p.Workload != "long-lived-inference" || !p.LocalStorageOnly || p.StorageZone != "beijing" || p.CrossNodeNVLink {
		t.Fatalf("serve-beijing: %+v", p)
	}
	p, err = c.Profile("pretrain-tp")
	if err != nil {
		t.Fatal(err)
	}
	if !p.CrossNodeNVLink || p.Workload != "training" || p.LocalStorageOnly || p.StorageZone != "" {
		t.Fatalf("pretrain-tp: %+v", p)
	}
	if p, _ := c.Profile("train-beijing"); p.Workload != "" || p.CrossNodeNVLink || p.LocalStorageOnly {
		t.Fatalf("train-beijing has job-kind fields it does not set: %+v", p)
	}
}

// The example's placement section is absent (make run stays on the sandbox);
// its commented example, uncommented, parses to these values.
func TestPlacementExample(t *testing.T) {
	c, err := Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Placement.Mode != PlaceSandbox || len(c.Placement.Launch) != 0 || c.Placement.Drain.IdleWindow != 0 {
		t.Fatalf("default placement: %+v", c.Placement)
	}
	b, err := os.ReadFile("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "# --- placement example ---\n")
	end := strings.Index(text, "# --- end placement example ---")
	if start < 0 || end < start {
		t.Fatal("no placement example in testdata/sluice.yaml")
	}
	var example strings.Builder
	for _, line := range strings.Split(text[start:end], "\n")[1:] {
		example.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ") + "\n")
	}
	c, err = Parse([]byte(text[:start]+example.String()), "sluice.yaml (example uncommented)")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Placement
	if p.Mode != PlaceProviders || p.Drain.IdleWindow != 15*time.Minute || len(p.Launch) != 5 {
		t.Fatalf("placement: %+v", p)
	}
	want := map[string]Launch{
		"aws":    {Image: "ami-0123456789abcdef0"},
		"aliyun": {Image: "ubuntu_22_04_x64_20G_alibase_20240926.vhd", SecurityGroupID: "sg-bp1example0001", VSwitchID: "vsw-bp1example0001"},
		"runpod": {Image: "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"},
		"vast":   {Image: "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-devel"},
		"autodl": {Image: "base-image-l2t43iu6uk"},
	}
	for name, l := range want {
		if p.Launch[name] != l {
			t.Errorf("launch.%s = %+v, want %+v", name, p.Launch[name], l)
		}
	}
}

func TestPlacementSettings(t *testing.T) {
	base := "billing_currency: USD\nplacement:\n"
	for _, tc := range []struct {
		yaml     string
		mode     string
		idle     time.Duration
		aliyunSG string
	}{
		{"", PlaceSandbox, 0, ""},
		{"  mode: sandbox\n", PlaceSandbox, 0, ""},
		{"  mode: providers\n  drain: {idle_window: 0s}\n", PlaceProviders, 0, ""},
		{"  drain: {idle_window: 1h30m}\n", PlaceSandbox, 90 * time.Minute, ""},
		{"  launch: {aliyun: {security_group_id: sg-2ze0001}}\n", PlaceSandbox, 0, "sg-2ze0001"},
	} {
		c, err := Parse([]byte(base+tc.yaml), "x.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if p := c.Placement; p.Mode != tc.mode || p.Drain.IdleWindow != tc.idle || p.Launch["aliyun"].SecurityGroupID != tc.aliyunSG {
			t.Errorf("%q: %+v", tc.yaml, p)
		}
	}
	for _, tc := range []struct{ yaml, field string }{
		{"  mode: real\n", "placement.mode"},
		{"  mode: Providers\n", "placement.mode"},
		{"  launch: {aws: {image: ubuntu}}\n", "placement.launch.aws.image"},
		{"  launch: {aws: {image: ami-123}}\n", "placement.launch.aws.image"},
		{"  launch: {runpd: {image: x}}\n", "placement.launch.runpd"},
		{"  launch: {vast: {image: \" pytorch\"}}\n", "placement.launch.vast.image"},
		{"  launch: {aws: {security_group_id: sg-1}}\n", "placement.launch.aws"},
		{"  launch: {aliyun: {security_group_id: sgx-1}}\n", "placement.launch.aliyun.security_group_id"},
		{"  launch: {aliyun: {vswitch_id: vpc-1}}\n", "placement.launch.aliyun.vswitch_id"},
		{"  launch: {aws: {subnet: subnet-1}}\n", "subnet"},
		{"  drain: {idle_window: soon}\n", "placement.drain.idle_window"},
		{"  drain: {idle_window: -5m}\n", "placement.drain.idle_window"},
		{"  drain: {idle_window: 200h}\n", "placement.drain.idle_window"},
	} {
		_, err := Parse([]byte(base+tc.yaml), "x.yaml")
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "x.yaml") {
			t.Errorf("%q: err = %v, want one naming %s", tc.yaml, err, tc.field)
		}
	}
}
