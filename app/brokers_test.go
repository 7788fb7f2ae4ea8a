package app

import (
	"strings"
	"testing"
)

// FuzzPlacementFromEnv: any environment text is accepted or refused as bad
// config, never a panic; an accepted endpoint list names each provider once
// with an http(s) URL.
func FuzzPlacementFromEnv(f *testing.F) {
	f.Add("providers", "aws=http://127.0.0.1:9001,vast=http://127.0.0.1:9002", "after-place-1")
	f.Add("sandbox", "", "")
	f.Add("", "aws=", "before-outcome")
	f.Add("live", "=http://x,aws", "")
	f.Fuzz(func(t *testing.T, mode, endpoints, crash string) {
		env := map[string]string{EnvPlacement: mode, EnvPlacementEndpoints: endpoints, EnvCrashAt: crash}
		p, err := PlacementFromEnv(func(k string) string { return env[k] })
		if err != nil {
			if !IsBadInput(err) {
				t.Fatalf("error %v is not a bad-config error", err)
			}
			return
		}
		if p.Mode != mode || p.CrashAt != crash {
			t.Fatalf("mode %q crash %q, got %+v", mode, crash, p)
		}
		for k, u := range p.Endpoints {
			if k == "" || !strings.HasPrefix(u, "http") {
				t.Fatalf("accepted endpoint %q=%q", k, u)
			}
		}
	})
}
