// Package app wires the main job from configuration: quote sources (live or
// replayed), the embedded policy, the SQLite ledger and the sandbox broker.
// The CLI (cmd/sluice) and the Lambda function (functions/burst) both use it,
// so they run the same core.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/sandbox"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/ledger"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/aliyun"
	"github.com/sluicehq/sluice/pricing/autodl"
	"github.com/sluicehq/sluice/pricing/ec2"
	ecbfx "github.com/sluicehq/sluice/pricing/fx"
	"github.com/sluicehq/sluice/pricing/replay"
	"github.com/sluicehq/sluice/pricing/runpod"
	"github.com/sluicehq/sluice/pricing/vast"
	"github.com/sluicehq/sluice/secrets"
)

// Options say where things are. ConfigPath and LedgerPath are required.
type Options struct {
	ConfigPath string
	// Config, when set, is used instead of loading ConfigPath.
	Config *config.Config
	// ReplayDir, when set, starts loopback servers answering each provider's
	// endpoints with the recorded bodies in it, and points the real clients at them.
	ReplayDir  string
	LedgerPath string
	// LedgerTable, when set, is a DynamoDB ledger table used instead of
	// LedgerPath (functions: SLUICE_LEDGER_TABLE), through the AWS SDK's
	// default configuration.
	LedgerTable string
	// Clock defaults to the wall clock.
	Clock sluice.Clock
	// Getenv reads credentials (default os.Getenv).
	Getenv func(string) string
	// Secrets, when set and not replaying, resolves the credential names the
	// config gives (credential_env, secret_env) once at Open; Getenv then
	// reads the resolved values. Lambda: secrets.Chain{secrets.Env{}, sm}.
	Secrets secrets.Resolver
	// FXURL is where live rates are read when not replaying: "" = the ECB
	// daily reference rates (ecbfx.URL), "off" = the config's rates only.
	FXURL string
	// CodeVersion defaults to the build's VCS revision, or "dev".
	CodeVersion string
	// Policy says where the policy comes from (policy.go): a directory
	// (Policy.Dir, `--policy DIR`) or a bundle file / S3 object; zero = the
	// SLUICE_POLICY_* environment, else the embedded policy.
	Policy PolicySource
	// Placement chooses the placement broker (brokers.go); nil = the
	// config's placement: section with the environment over it
	// (PlacementFor), which defaults to the sandbox.
	Placement *Placement
	// AdoptAfter is reconcile's grace before adopting an unrecorded line
	// (0 = sluice.DefaultAdoptAfter, negative = at once).
	AdoptAfter time.Duration
}

// App is a wired main job. Close releases the ledger and the replay servers.
type App struct {
	// credentials are the secret values handed to sources; the collector
	// redacts them from every error and reason it records.
	credentials []string

	Config *config.Config
	Burst  *sluice.Burst
	// Ledger is the SQLite file at Options.LedgerPath, or the DynamoDB table
	// Options.LedgerTable when set (app/ledger.go).
	Ledger ledger.Store
	Policy *policy.Evaluator
	Replay *replay.Server
	// Broker is the sandbox broker when placement is sandboxed (nil otherwise);
	// Placer is the broker in use (brokers.go).
	Broker *sandbox.Broker
	Placer sluice.Broker

	placement  Placement
	cost       func(sluice.Placement, time.Time) (sluice.Money, int64)
	adoptAfter time.Duration
}

// Open loads the config, prepares the policy, opens the ledger and builds the
// quote sources. Errors wrap config.ErrBadConfig when the config is at fault.
func Open(ctx context.Context, o Options) (*App, error) {
	cfg, err := o.Config, error(nil)
	if cfg == nil {
		if cfg, err = config.Load(o.ConfigPath); err != nil {
			return nil, err
		}
	}
	if o.Clock == nil {
		o.Clock = sluice.ClockFunc(time.Now)
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.CodeVersion == "" {
		o.CodeVersion = CodeVersion()
	}
	if o.ReplayDir == "" {
		if o.Secrets != nil {
			vals, err := secrets.Resolve(ctx, o.Secrets, credentialNames(cfg)...)
			if err != nil {
				// A missing credential fails its own source (reported, class
				// auth) at quote time, never the whole decision.
				slog.Warn("resolving provider credentials", "error", err)
			}
			o.Getenv = vals.Getenv
		}
		live := *cfg // the caller's Config is not modified
		live.FX = LiveFX(ctx, cfg.FX, o.FXURL, o.Clock.Now())
		cfg = &live
	}
	a := &App{Config: cfg}
	if a.Policy, err = OpenPolicy(ctx, o.Policy, nil); err != nil {
		return nil, fmt.Errorf("preparing policy: %w", err)
	}
	if o.ReplayDir != "" {
		if a.Replay, err = replay.Start(o.ReplayDir); err != nil {
			return nil, fmt.Errorf("starting replay servers from %s: %w", o.ReplayDir, err)
		}
	}
	if a.Ledger, err = openLedger(ctx, o); err != nil {
		a.Close()
		return nil, fmt.Errorf("opening ledger %s: %w", o.LedgerPath, err)
	}
	if err := a.wireBroker(ctx, o); err != nil {
		a.Close()
		return nil, err
	}
	a.adoptAfter = o.AdoptAfter
	a.Burst = &sluice.Burst{
		Profiles: cfg.Profile,
		Quotes:   a.collector(ctx, o),
		Policy:   a.Policy, Ledger: a.Ledger, Broker: a.Placer, Clock: o.Clock,
		BillingCurrency: cfg.BillingCurrency, FX: cfg.FX, InterruptionsPerHour: cfg.InterruptionsPerHour,
		Budgets: cfg.Budgets, CodeVersion: o.CodeVersion,
		Step: crashHook(a.placement.CrashAt), Cost: a.cost, Owner: processOwner(), OwnerAlive: ownerAlive,
	}
	return a, nil
}

// Close releases what Open acquired.
func (a *App) Close() {
	if a.Ledger != nil {
		_ = a.Ledger.Close()
	}
	if a.Replay != nil {
		a.Replay.Close()
	}
}

// collector is the quote fan-out of a decision: every enabled source, the
// configured deadlines, and the offer hygiene (sanity band, max age, known
// currencies and GPU models) applied before policy sees an offer.
func (a *App) collector(ctx context.Context, o Options) *pricing.Collector {
	cfg := a.Config
	sources := a.sources(ctx, o) // fills a.credentials
	creds := a.credentials
	return &pricing.Collector{
		Sources: sources,
		// A provider that echoes a key in its error body must not get it into a
		// decision record (which is hash-chained and cannot be scrubbed later).
		Redact:         func(s string) string { return secrets.Redact(s, creds...) },
		SourceTimeout:  cfg.Quotes.SourceTimeout,
		OverallTimeout: cfg.Quotes.OverallTimeout,
		FX:             cfg.FX,
		Now:            o.Clock.Now,
		Hygiene: &pricing.Hygiene{
			MinPricePerGPUHour: cfg.Quotes.MinPricePerGPUHour,
			MaxPricePerGPUHour: cfg.Quotes.MaxPricePerGPUHour,
			MaxAge:             cfg.Quotes.TTL,
			KnownCurrencies:    pricing.Currencies(cfg.FX, cfg.BillingCurrency),
			KnownGPUModels:     config.GPUModels,
		},
	}
}

// sources builds one quote source per enabled provider, in a fixed order.
// In replay mode every client points at its loopback server; a provider with
// no recordings gets a source that fails (it never reaches the internet).
func (a *App) sources(ctx context.Context, o Options) []sluice.QuoteSource {
	cfg := a.Config
	now := o.Clock.Now
	client := &http.Client{Timeout: cfg.Quotes.SourceTimeout}
	// Read-only quote searches whose auth can be re-sent (API keys) retry 429
	// and 5xx inside the source deadline. Not Alibaba (a signed request's nonce
	// is single-use), not AWS (the SDK retries and re-signs), never a broker.
	retrying := &http.Client{Timeout: cfg.Quotes.SourceTimeout, Transport: &pricing.RetryTransport{}}
	endpoint := func(name, path string) (string, bool) {
		if a.Replay == nil {
			return cfg.Providers[name].Endpoint, true
		}
		u := a.Replay.URL(name)
		return u + path, u != ""
	}
	cred := func(env string) string {
		if a.Replay != nil {
			return "replay"
		}
		if env == "" {
			return ""
		}
		v := o.Getenv(env)
		if v != "" {
			a.credentials = append(a.credentials, v)
		}
		return v
	}
	var out []sluice.QuoteSource
	for _, name := range config.Providers {
		p, ok := cfg.Providers[name]
		if !ok || !p.Enabled {
			continue
		}
		var src sluice.QuoteSource
		switch name {
		case "runpod":
			u, ok := endpoint(name, "/graphql")
			if !ok {
				src = missing(name, o.ReplayDir)
				break
			}
			src = runpod.New(runpod.Config{BaseURL: u, APIKey: cred(p.CredentialEnv), MaxUnits: p.MaxUnits,
				TTL: cfg.Quotes.TTL, HTTPClient: retrying, Now: now})
		case "vast":
			u, ok := endpoint(name, "")
			if !ok {
				src = missing(name, o.ReplayDir)
				break
			}
			src = vast.New(vast.Config{BaseURL: u, APIKey: cred(p.CredentialEnv), TTL: cfg.Quotes.TTL, HTTPClient: retrying, Now: now})
		case "aliyun":
			u, ok := endpoint(name, "")
			if !ok {
				src = missing(name, o.ReplayDir)
				break
			}
			src = aliyun.New(aliyun.Config{Endpoint: u, AccessKeyID: cred(p.CredentialEnv), AccessKeySecret: cred(p.SecretEnv),
				Regions: p.Regions, InstanceTypes: p.InstanceTypes, MaxUnits: p.MaxUnits, TTL: cfg.Quotes.TTL,
				HTTPClient: client, Now: now})
		case "aws":
			ec2URL, ok1 := endpoint("aws-ec2", "")
			priceURL, ok2 := endpoint("aws-pricing", "")
			if a.Replay == nil { // production: the SDK's own endpoints unless configured
				ec2URL, priceURL = p.Endpoint, ""
			}
			if !ok1 || !ok2 {
				src = missing(name, o.ReplayDir)
				break
			}
			// The SDK's own buildable HTTP client (no HTTPClient here): it honours
			// AWS_CA_BUNDLE and the like; the source deadline bounds each call.
			c := ec2.Config{Regions: p.Regions, InstanceTypes: p.InstanceTypes, EC2Endpoint: ec2URL, PricingEndpoint: priceURL,
				MaxUnits: p.MaxUnits, TTL: cfg.Quotes.TTL, Now: now}
			if a.Replay != nil {
				c.AccessKeyID, c.SecretAccessKey = "replay", "replay"
			}
			client, err := ec2.New(ctx, c)
			if err != nil {
				src = failing{name, fmt.Errorf("aws: %w", err)}
				break
			}
			src = client
		case "autodl":
			u, ok := endpoint(name, "")
			if !ok {
				src = missing(name, o.ReplayDir)
				break
			}
			c := autodl.Config{BaseURL: u, Token: cred(p.CredentialEnv), Regions: p.Regions, GPUNames: p.GPUNames,
				TTL: cfg.Quotes.TTL, HTTPClient: retrying, Now: now}
			if pl := p.PriceList; pl != nil {
				c.PriceList = autodl.PriceList{AsOf: pl.AsOf, Source: pl.Source}
				for _, lp := range pl.Prices {
					c.PriceList.Prices = append(c.PriceList.Prices, autodl.Price{GPUName: lp.GPUName, GPUModel: lp.GPUModel, PerGPUHour: lp.PerGPUHour})
				}
			}
			if err := c.PriceList.Validate(); err != nil {
				src = failing{name, fmt.Errorf("autodl: providers.autodl.price_list: %w", err)}
				break
			}
			src = autodl.New(c)
		}
		out = append(out, src)
	}
	return out
}

type failing struct {
	name string
	err  error
}

func (f failing) Name() string { return f.name }
func (f failing) Offers(context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	return nil, nil, f.err
}

func missing(name, dir string) sluice.QuoteSource {
	return failing{name, fmt.Errorf("%s: no recordings in %s/%s", name, dir, name)}
}

// CodeVersion is the VCS revision the binary was built from ("dev" when unknown).
func CodeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "dev"
}

// IsBadInput reports whether err is the caller's fault (bad config, an
// unknown queue, an implausible alarm time): the CLI exits 2 for it.
func IsBadInput(err error) bool {
	return errors.Is(err, config.ErrBadConfig) || errors.Is(err, sluice.ErrBadTrigger)
}

// credentialNames are the credential variables of the enabled providers.
func credentialNames(cfg *config.Config) []string {
	var names []string
	for _, name := range config.Providers {
		if p, ok := cfg.Providers[name]; ok && p.Enabled {
			names = append(names, p.CredentialEnv, p.SecretEnv) // "" is skipped by Resolve
		}
	}
	return names
}

// Live FX limits: a live rate replaces the config's only when it is recent
// (the ECB publishes on TARGET business days; a week covers holidays) and
// within MaxFXDrift of the config's rate (a larger move is more likely a
// source or parsing fault than a market move, and needs a person).
var (
	// liveFXTimeout bounds the ECB fetch (it runs once per process, before any decision).
	liveFXTimeout = 1500 * time.Millisecond
	MaxFXDrift    = decimal.RequireFromString("0.10")
	MaxFXAge      = 7 * 24 * time.Hour
)

// LiveFX returns table with its USD/CNY rate replaced by the ECB's cross
// rate read from url ("" = ecbfx.URL; "off" = no fetch), or table unchanged
// (with a warning) when the fetch fails, the rate is stale, or it moved more
// than MaxFXDrift. The rate used is stored with each decision with its source
// and date, as the config's would be.
func LiveFX(ctx context.Context, table sluice.FXTable, url string, now time.Time) sluice.FXTable {
	if url == "off" {
		return table
	}
	if url == "" {
		url = ecbfx.URL
	}
	fctx, cancel := context.WithTimeout(ctx, liveFXTimeout)
	defer cancel()
	live, err := ecbfx.Fetch(fctx, nil, url)
	if err != nil {
		slog.Warn("live FX refresh failed; using the config's rates", "error", err)
		return table
	}
	if live.AsOf.After(now.Add(24 * time.Hour)) {
		slog.Warn("live FX rate is dated in the future; using the config's rates", "as_of", live.AsOf.Format(time.DateOnly))
		return table
	}
	if now.Sub(live.AsOf) > MaxFXAge {
		slog.Warn("live FX rate is stale; using the config's rates", "as_of", live.AsOf.Format(time.DateOnly))
		return table
	}
	out := slices.Clone(table)
	for i, r := range out {
		ref := r.Rate
		switch {
		case r.Base == live.Base && r.Quote == live.Quote:
		case r.Base == live.Quote && r.Quote == live.Base:
			ref = decimal.NewFromInt(1).DivRound(r.Rate, sluice.FXScale)
		default:
			continue
		}
		if drift := live.Rate.Sub(ref).Abs().Div(ref); drift.GreaterThan(MaxFXDrift) {
			slog.Warn("live FX rate moved too far from the config's; using the config's", "live", live.Rate.String(), "config", ref.String())
			return table
		}
		out[i] = live
		return out
	}
	return append(out, live)
}
