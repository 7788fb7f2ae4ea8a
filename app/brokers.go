package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/billing"
	"github.com/sluicehq/sluice/brokers/router"
	"github.com/sluicehq/sluice/brokers/sandbox"
	"github.com/sluicehq/sluice/config"
)

// Placement choices (Placement.Mode), the config's placement.mode values.
const (
	// PlaceSandbox places with the offline sandbox broker (the default, `make run`).
	PlaceSandbox = config.PlaceSandbox
	// PlaceProviders places through each provider's adapter (brokers/router)
	// at the configured endpoints (providers.<name>.endpoint, or Endpoints).
	PlaceProviders = config.PlaceProviders
)

// Placement says which broker places lines. The zero value is the sandbox.
type Placement struct {
	// Mode is PlaceSandbox ("" too) or PlaceProviders (config.PlaceSandbox,
	// config.PlaceProviders: the config's placement.mode).
	Mode string
	// Endpoints override providers.<name>.endpoint for placement (the
	// loopback fakes of cmd/fakeproviders). With a replay of recorded quotes,
	// placement against providers needs an endpoint for every enabled provider
	// it may place with: a replay never places at a production endpoint.
	Endpoints map[string]string
	// SandboxState, with the sandbox, keeps the sandbox provider's state in
	// this JSON file (shared by processes: crash tests, concurrent runs).
	SandboxState string
	// CrashAt names a burst step (sluice.StepAfterIntent, "after-place-<n>",
	// sluice.StepAfterFollowUpIntent, sluice.StepBeforeOutcome) at which the
	// process exits at once with status 137, as if killed: fault injection for
	// the crash tests. "" = never.
	CrashAt string
}

// Environment variables PlacementFromEnv reads.
const (
	EnvPlacement          = "SLUICE_PLACEMENT"           // "sandbox" (default) or "providers"
	EnvPlacementEndpoints = "SLUICE_PLACEMENT_ENDPOINTS" // "aws=http://127.0.0.1:9001,vast=…"
	EnvSandboxState       = "SLUICE_SANDBOX_STATE"       // path of the sandbox provider's state file
	EnvCrashAt            = "SLUICE_CRASH_AT"            // a burst step name: exit 137 there
)

// PlacementFromEnv reads the placement choice from the environment
// (EnvPlacement, EnvPlacementEndpoints, EnvSandboxState, EnvCrashAt). An
// error names the variable.
func PlacementFromEnv(getenv func(string) string) (Placement, error) {
	p := Placement{Mode: getenv(EnvPlacement), SandboxState: getenv(EnvSandboxState), CrashAt: getenv(EnvCrashAt)}
	switch p.Mode {
	case "", PlaceSandbox, PlaceProviders:
	default:
		return p, fmt.Errorf("%s %q: want %s or %s: %w", EnvPlacement, p.Mode, PlaceSandbox, PlaceProviders, config.ErrBadConfig)
	}
	if v := getenv(EnvPlacementEndpoints); v != "" {
		p.Endpoints = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			k, u, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" || !strings.HasPrefix(u, "http") {
				return p, fmt.Errorf("%s: %q: want provider=URL: %w", EnvPlacementEndpoints, kv, config.ErrBadConfig)
			}
			p.Endpoints[k] = u
		}
	}
	return p, nil
}

// PlacementFor is the placement of cfg's placement: section with the
// environment over it (PlacementFromEnv): EnvPlacement, when set, replaces
// placement.mode; the endpoints, the sandbox state file and the crash step
// come from the environment only. An error names the variable.
func PlacementFor(cfg *config.Config, getenv func(string) string) (Placement, error) {
	p, err := PlacementFromEnv(getenv)
	if err != nil {
		return p, err
	}
	if p.Mode == "" {
		p.Mode = cfg.Placement.Mode
	}
	return p, nil
}

// routerLaunch is the router options of cfg's placement.launch settings
// (images per provider, Alibaba's security group and vSwitch).
func routerLaunch(cfg *config.Config, o router.Options) router.Options {
	for name, l := range cfg.Placement.Launch {
		if l.Image != "" {
			if o.Images == nil {
				o.Images = map[string]string{}
			}
			o.Images[name] = l.Image
		}
	}
	al := cfg.Placement.Launch["aliyun"]
	o.AliyunSecurityGroupID, o.AliyunVSwitchID = al.SecurityGroupID, al.VSwitchID
	return o
}

// billingRules is what a broker that knows its providers' billing
// granularity offers (brokers/router).
type billingRules interface {
	Billing(provider string) (granularity, minimum time.Duration, err error)
}

// providerRules are brokers/billing's rules by provider name.
type providerRules struct{}

// Billing returns provider's granularity and minimum (billing.For).
func (providerRules) Billing(provider string) (granularity, minimum time.Duration, err error) {
	r, err := billing.For(provider)
	return r.Granularity, r.Minimum, err
}

// wireBroker chooses and builds the placement broker (a.Placer; a.Broker too
// when it is the sandbox), the cost rule of releases, and the crash hook.
func (a *App) wireBroker(ctx context.Context, o Options) error {
	pl := Placement{}
	if o.Placement != nil {
		pl = *o.Placement
	} else {
		var err error
		if pl, err = PlacementFor(a.Config, os.Getenv); err != nil {
			return err
		}
	}
	a.placement = pl
	switch pl.Mode {
	case "", PlaceSandbox:
		a.Broker = &sandbox.Broker{Now: o.Clock.Now, StatePath: pl.SandboxState}
		a.Placer = a.Broker
		// The sandbox stands in for the real providers, so its releases are
		// priced by their billing rules too (e.g. AWS's 60 s minimum).
		a.cost = costWith(providerRules{})
		return nil
	}
	// The router places with every enabled provider; from a replay run only
	// with those given a placement endpoint (no production endpoint is ever
	// called from a replay): the others are refused as not configured for
	// placement (sluice.ErrQuota, which never moves work across zones).
	cfg := *a.Config
	cfg.Providers = map[string]config.Provider{}
	for name, p := range a.Config.Providers {
		if _, ok := pl.Endpoints[name]; !ok && o.ReplayDir != "" {
			p.Enabled = false
		}
		cfg.Providers[name] = p
	}
	r, err := router.FromConfig(ctx, &cfg, routerLaunch(a.Config,
		router.Options{Getenv: o.Getenv, Endpoints: pl.Endpoints, Records: a.Ledger, Now: o.Clock.Now}))
	if err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	a.Placer = r
	a.cost = costWith(r)
	return nil
}

// costWith prices a placement at its provider's billing granularity
// (brokers/billing via the broker): the running time from PlacedAt to end
// rounded up to the granularity, at least the minimum (billing.Rule.Billed),
// then Price × Units × seconds ÷ 3600, the division rounded half away from
// zero to sluice.AccruedScale places (the one rounding point, as in
// sluice.PerSecond). A provider without a rule is priced per second.
func costWith(b billingRules) func(sluice.Placement, time.Time) (sluice.Money, int64) {
	return func(p sluice.Placement, end time.Time) (sluice.Money, int64) {
		g, m, err := b.Billing(p.Provider)
		if err != nil {
			slog.Warn("no billing rule; pricing per second", "provider", p.Provider, "error", err)
			return sluice.PerSecond(p, end)
		}
		secs := int64(billing.Rule{Granularity: g, Minimum: m}.Billed(p.PlacedAt, end) / time.Second)
		amount := p.Price.Amount.Mul(decimal.NewFromInt(int64(p.Units)*secs)).DivRound(decimal.NewFromInt(3600), sluice.AccruedScale)
		return sluice.Money{Amount: amount, Currency: p.Price.Currency}, secs
	}
}

// crashHook returns the Burst.Step hook that exits the process with status
// 137 (as if killed by SIGKILL: no deferred calls, no cleanup) at step.
func crashHook(step string) func(string) {
	if step == "" {
		return nil
	}
	return func(s string) {
		if s == step {
			fmt.Fprintf(os.Stderr, "sluice: %s=%s: exiting hard\n", EnvCrashAt, s)
			os.Exit(137)
		}
	}
}

// placementProviders are the providers reconcile lists: the router's, or the
// enabled providers for the sandbox.
func (a *App) placementProviders() []string {
	if r, ok := a.Placer.(*router.Router); ok {
		return r.Providers()
	}
	var out []string
	for _, name := range config.Providers {
		if p, ok := a.Config.Providers[name]; ok && p.Enabled {
			out = append(out, name)
		}
	}
	return out
}

// processOwner names this process in line claims: "<hostname>/pid-<pid>".
func processOwner() string {
	host, _ := os.Hostname()
	return host + "/pid-" + strconv.Itoa(os.Getpid())
}

// ownerAlive says whether a line claim's holder (processOwner, plus the
// burst's "/<n>") is still running: a process on this host is looked up by
// pid (signal 0); one elsewhere (another Lambda container) is presumed alive
// until its lease expires.
func ownerAlive(owner string) bool {
	host, rest, ok := strings.Cut(owner, "/pid-")
	if me, _ := os.Hostname(); !ok || host != me {
		return true
	}
	pidText, _, _ := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
