package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/brokers/router"
	"github.com/sluicehq/sluice/config"
)

// The config's placement.mode holds unless SLUICE_PLACEMENT is set; the
// endpoints, state file and crash step come from the environment.
func TestPlacementForConfigAndEnv(t *testing.T) {
	for _, tc := range []struct {
		name, cfgMode string
		env           map[string]string
		want          string
	}{
		{"default config, no env", config.PlaceSandbox, nil, PlaceSandbox},
		{"config providers", config.PlaceProviders, nil, PlaceProviders},
		{"env sandbox over config providers", config.PlaceProviders, map[string]string{EnvPlacement: "sandbox"}, PlaceSandbox},
		{"env providers over config sandbox", config.PlaceSandbox, map[string]string{EnvPlacement: "providers"}, PlaceProviders},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvPlacementEndpoints: "aliyun=http://127.0.0.1:9004", EnvSandboxState: "/tmp/s.json"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg := &config.Config{Placement: config.Placement{Mode: tc.cfgMode}}
			p, err := PlacementFor(cfg, func(k string) string { return env[k] })
			if err != nil || p.Mode != tc.want || p.Endpoints["aliyun"] != "http://127.0.0.1:9004" || p.SandboxState != "/tmp/s.json" {
				t.Fatalf("%+v %v", p, err)
			}
		})
	}
	if _, err := PlacementFor(&config.Config{}, func(k string) string { return map[string]string{EnvPlacement: "live"}[k] }); !IsBadInput(err) {
		t.Fatalf("bad env: %v", err)
	}
}

// placement.mode providers in the config (no SLUICE_PLACEMENT) wires the
// router, and placement.launch reaches the wire: the Alibaba RunInstances
// call the loopback ECS fake receives carries the configured image, security
// group and vSwitch; placement.drain.idle_window reaches the drain.
func TestConfigPlacementReachesTheWire(t *testing.T) {
	cfg, err := config.Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Placement = config.Placement{Mode: config.PlaceProviders,
		Launch: map[string]config.Launch{"aliyun": {Image: "ubuntu_22_04_x64_20G_alibase_20240926.vhd",
			SecurityGroupID: "sg-bp1example0001", VSwitchID: "vsw-bp1example0001"}},
		Drain: config.Drain{IdleWindow: 15 * time.Minute}}

	var mu sync.Mutex
	var runs []url.Values
	fp := fake.New()
	ecs := fp.Handler("aliyun")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Get("Action") == "RunInstances" || r.Header.Get("x-acs-action") == "RunInstances" {
			mu.Lock()
			runs = append(runs, q)
			mu.Unlock()
		}
		ecs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv(EnvPlacement, "")
	t.Setenv(EnvPlacementEndpoints, "aliyun="+srv.URL)
	t.Setenv(EnvSandboxState, "")
	t.Setenv(EnvCrashAt, "")

	at := time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)
	a, err := Open(context.Background(), Options{Config: cfg, ReplayDir: "../testdata/replay",
		LedgerPath: filepath.Join(t.TempDir(), "ledger.db"), Clock: sluice.ClockFunc(func() time.Time { return at }), CodeVersion: "test",
		Getenv: func(k string) string {
			return map[string]string{"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAIloopbackfake", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "loopback-fake"}[k]
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, ok := a.Placer.(*router.Router)
	if !ok || a.Broker != nil {
		t.Fatalf("placer %T, sandbox %v: want the router", a.Placer, a.Broker)
	}
	if got := r.Providers(); len(got) != 1 || got[0] != "aliyun" {
		t.Fatalf("routed providers %v, want [aliyun] (a replay places only where an endpoint is given)", got)
	}
	line := sluice.Line{OfferID: "aliyun:cn-beijing:ecs.gn7e-c16g1.16xlarge:on-demand", Provider: "aliyun", SKU: "ecs.gn7e-c16g1.16xlarge",
		Region: "cn-beijing", Market: sluice.OnDemand, GPUModel: "A100-80GB", Units: 1, GPUs: 4, Slots: 1,
		UnitPrice: sluice.MustMoney("34.742", "CNY"), Hours: sluice.MustMoney("4", "CNY").Amount}
	p, err := a.Placer.Place(context.Background(), "dec-00000000000000000000000000000001", 0, line)
	if err != nil || len(p.ExternalIDs) != 1 {
		t.Fatalf("place: %+v %v", p, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 1 {
		t.Fatalf("%d RunInstances calls, want 1", len(runs))
	}
	for k, want := range map[string]string{"ImageId": "ubuntu_22_04_x64_20G_alibase_20240926.vhd",
		"SecurityGroupId": "sg-bp1example0001", "VSwitchId": "vsw-bp1example0001", "InstanceType": "ecs.gn7e-c16g1.16xlarge"} {
		if got := runs[0].Get(k); got != want {
			t.Errorf("RunInstances %s = %q, want %q", k, got, want)
		}
	}

	// The idle window: a depth-0 OK at 10:05:00 seen at 10:05:30 waits until 10:20:00.
	rep, err := a.Drain(context.Background(), sluice.Trigger{AlarmName: "a", State: sluice.StateOK,
		StateChangeTime: at.Add(-30 * time.Second), Queue: "train-overseas", Depth: 0})
	if err != nil || rep.WaitsUntil == nil || rep.WaitsUntil.Format(time.RFC3339) != "2026-11-29T10:20:00Z" {
		t.Fatalf("drain: %+v %v", rep, err)
	}
}
