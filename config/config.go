// Package config reads Sluice's YAML configuration (testdata/sluice.yaml is the
// documented example) into root types. Every error names the file and the field.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"time"

	"github.com/shopspring/decimal"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice"
)

// ErrBadConfig wraps every validation error, so callers can exit 2 on it.
var ErrBadConfig = errors.New("bad config")

// Config is the whole configuration.
type Config struct {
	// BillingCurrency is the ISO 4217 currency totals and budgets are kept in.
	BillingCurrency string
	// FX holds the dated rates a decision may use (stored with every decision).
	FX sluice.FXTable
	// Quotes sets fetching deadlines and quote lifetime.
	Quotes Quotes
	// Budgets is the monthly budget per tier, in BillingCurrency. A tier without
	// an entry has no budget limit; base is never bought.
	Budgets map[sluice.Tier]sluice.Money
	// InterruptionsPerHour is the expected spot interruptions per running hour, by provider.
	InterruptionsPerHour map[string]decimal.Decimal
	// Providers by name ("runpod", "vast", "aliyun", ...).
	Providers map[string]Provider
	// Queues by queue name.
	Queues map[string]sluice.QueueProfile
}

// Quotes are the quote-collection settings.
type Quotes struct {
	SourceTimeout  time.Duration // per source deadline (default 2s)
	OverallTimeout time.Duration // whole fan-out deadline (default 3s)
	TTL            time.Duration // quote lifetime (default 5m)
}

// Provider is one quote source's settings.
type Provider struct {
	Enabled bool
	// Endpoint overrides the provider's production base URL ("" = default).
	Endpoint string
	// CredentialEnv names the environment variable holding the API key (or access key id).
	CredentialEnv string
	// SecretEnv names the environment variable holding the secret (Alibaba only).
	SecretEnv string
	// MaxUnits is the units assumed available per offer where the API gives no count.
	MaxUnits int
	// Regions and InstanceTypes narrow region-based providers (Alibaba).
	Regions       []string
	InstanceTypes []string
}

type fileConfig struct {
	BillingCurrency string `yaml:"billing_currency"`
	FX              []struct {
		Base   string `yaml:"base"`
		Quote  string `yaml:"quote"`
		Rate   string `yaml:"rate"`
		AsOf   string `yaml:"as_of"`
		Source string `yaml:"source"`
	} `yaml:"fx"`
	Quotes struct {
		SourceTimeout  string `yaml:"source_timeout"`
		OverallTimeout string `yaml:"overall_timeout"`
		TTL            string `yaml:"ttl"`
	} `yaml:"quotes"`
	Budgets              map[string]string `yaml:"budgets"`
	InterruptionsPerHour map[string]string `yaml:"interruptions_per_hour"`
	Providers            map[string]struct {
		Enabled       bool     `yaml:"enabled"`
		Endpoint      string   `yaml:"endpoint"`
		CredentialEnv string   `yaml:"credential_env"`
		SecretEnv     string   `yaml:"secret_env"`
		MaxUnits      int      `yaml:"max_units"`
		Regions       []string `yaml:"regions"`
		InstanceTypes []string `yaml:"instance_types"`
	} `yaml:"providers"`
	Queues []struct {
		Queue                     string   `yaml:"queue"`
		GPUModels                 []string `yaml:"gpu_models"`
		GPUsPerSlot               int      `yaml:"gpus_per_slot"`
		HoursPerSlot              string   `yaml:"hours_per_slot"`
		MaxSlots                  int      `yaml:"max_slots"`
		Checkpointable            bool     `yaml:"checkpointable"`
		CheckpointIntervalMinutes int      `yaml:"checkpoint_interval_minutes"`
		DataClass                 string   `yaml:"data_class"`
		ExportApproved            bool     `yaml:"export_approved"`
		BudgetTier                string   `yaml:"budget_tier"`
		Team                      string   `yaml:"team"`
		MaxPricePerGPUHour        struct {
			Amount   string `yaml:"amount"`
			Currency string `yaml:"currency"`
		} `yaml:"max_price_per_gpu_hour"`
	} `yaml:"queues"`
}

// Load reads and validates the YAML file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	return Parse(b, path)
}

var (
	currencyRE  = regexp.MustCompile(`^[A-Z]{3}$`)
	dataClasses = map[string]bool{"cn-beijing-only": true, "cn-domestic": true, "public": true}
	tiers       = map[string]bool{string(sluice.TierBase): true, string(sluice.TierElastic): true, string(sluice.TierEmergency): true}
)

// Parse decodes YAML (unknown fields are errors) and validates it; name is used
// in error messages.
func Parse(b []byte, name string) (*Config, error) {
	var f fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadConfig, name, err)
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s: %s", ErrBadConfig, name, field, fmt.Sprintf(format, a...))
	}
	c := &Config{
		BillingCurrency:      f.BillingCurrency,
		Budgets:              map[sluice.Tier]sluice.Money{},
		InterruptionsPerHour: map[string]decimal.Decimal{},
		Providers:            map[string]Provider{},
		Queues:               map[string]sluice.QueueProfile{},
	}
	if !currencyRE.MatchString(c.BillingCurrency) {
		return nil, bad("billing_currency", "%q is not an ISO 4217 code", c.BillingCurrency)
	}
	for i, r := range f.FX {
		field := fmt.Sprintf("fx[%d]", i)
		rate, err := decimal.NewFromString(r.Rate)
		if err != nil || !rate.IsPositive() {
			return nil, bad(field+".rate", "%q is not a positive decimal", r.Rate)
		}
		if !currencyRE.MatchString(r.Base) || !currencyRE.MatchString(r.Quote) || r.Base == r.Quote {
			return nil, bad(field, "base %q / quote %q: want two different ISO 4217 codes", r.Base, r.Quote)
		}
		asOf, err := time.Parse(time.DateOnly, r.AsOf)
		if err != nil {
			return nil, bad(field+".as_of", "%q: want YYYY-MM-DD", r.AsOf)
		}
		if r.Source == "" {
			return nil, bad(field+".source", "empty: every rate needs its source")
		}
		c.FX = append(c.FX, sluice.FXRate{Base: r.Base, Quote: r.Quote, Rate: rate, AsOf: asOf, Source: r.Source})
	}
	var err error
	if c.Quotes.SourceTimeout, err = duration(f.Quotes.SourceTimeout, 2*time.Second); err != nil {
		return nil, bad("quotes.source_timeout", "%v", err)
	}
	if c.Quotes.OverallTimeout, err = duration(f.Quotes.OverallTimeout, 3*time.Second); err != nil {
		return nil, bad("quotes.overall_timeout", "%v", err)
	}
	if c.Quotes.TTL, err = duration(f.Quotes.TTL, 5*time.Minute); err != nil {
		return nil, bad("quotes.ttl", "%v", err)
	}
	for tier, amount := range f.Budgets {
		if !tiers[tier] {
			return nil, bad("budgets."+tier, "unknown tier (want base, elastic or emergency)")
		}
		m, err := sluice.NewMoney(amount, c.BillingCurrency)
		if err != nil {
			return nil, bad("budgets."+tier, "%v", err)
		}
		c.Budgets[sluice.Tier(tier)] = m
	}
	for p, rate := range f.InterruptionsPerHour {
		d, err := decimal.NewFromString(rate)
		if err != nil || d.IsNegative() {
			return nil, bad("interruptions_per_hour."+p, "%q is not a non-negative decimal", rate)
		}
		c.InterruptionsPerHour[p] = d
	}
	for name, p := range f.Providers {
		if p.MaxUnits < 0 {
			return nil, bad("providers."+name+".max_units", "%d: negative", p.MaxUnits)
		}
		c.Providers[name] = Provider{Enabled: p.Enabled, Endpoint: p.Endpoint, CredentialEnv: p.CredentialEnv,
			SecretEnv: p.SecretEnv, MaxUnits: p.MaxUnits, Regions: p.Regions, InstanceTypes: p.InstanceTypes}
	}
	for i, q := range f.Queues {
		field := fmt.Sprintf("queues[%d]", i)
		if q.Queue == "" {
			return nil, bad(field+".queue", "empty")
		}
		field = fmt.Sprintf("queues[%s]", q.Queue)
		if _, dup := c.Queues[q.Queue]; dup {
			return nil, bad(field, "defined twice")
		}
		if len(q.GPUModels) == 0 {
			return nil, bad(field+".gpu_models", "empty")
		}
		if q.GPUsPerSlot <= 0 || q.GPUsPerSlot > 8 {
			return nil, bad(field+".gpus_per_slot", "%d: want 1..8 (a slot never spans nodes)", q.GPUsPerSlot)
		}
		hours, err := decimal.NewFromString(q.HoursPerSlot)
		if err != nil || !hours.IsPositive() {
			return nil, bad(field+".hours_per_slot", "%q is not a positive decimal", q.HoursPerSlot)
		}
		if q.MaxSlots <= 0 {
			return nil, bad(field+".max_slots", "%d: must be positive", q.MaxSlots)
		}
		if q.CheckpointIntervalMinutes < 0 || (q.Checkpointable && q.CheckpointIntervalMinutes == 0) {
			return nil, bad(field+".checkpoint_interval_minutes", "%d: a checkpointable queue needs a positive interval", q.CheckpointIntervalMinutes)
		}
		if !dataClasses[q.DataClass] {
			return nil, bad(field+".data_class", "%q: want cn-beijing-only, cn-domestic or public", q.DataClass)
		}
		if !tiers[q.BudgetTier] {
			return nil, bad(field+".budget_tier", "%q: want base, elastic or emergency", q.BudgetTier)
		}
		var ceiling sluice.Money
		if q.MaxPricePerGPUHour.Amount != "" {
			if ceiling, err = sluice.NewMoney(q.MaxPricePerGPUHour.Amount, q.MaxPricePerGPUHour.Currency); err != nil {
				return nil, bad(field+".max_price_per_gpu_hour", "%v", err)
			}
		}
		c.Queues[q.Queue] = sluice.QueueProfile{
			Queue: q.Queue, GPUModels: q.GPUModels, GPUsPerSlot: q.GPUsPerSlot, HoursPerSlot: hours,
			MaxSlots: q.MaxSlots, Checkpointable: q.Checkpointable, CheckpointIntervalMinutes: q.CheckpointIntervalMinutes,
			DataClass: q.DataClass, ExportApproved: q.ExportApproved, Tier: sluice.Tier(q.BudgetTier), Team: q.Team,
			MaxPricePerGPUHour: ceiling,
		}
	}
	return c, nil
}

func duration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", s)
	}
	return d, nil
}

// Profile returns the profile of queue, or an error naming the queue.
func (c *Config) Profile(queue string) (sluice.QueueProfile, error) {
	p, ok := c.Queues[queue]
	if !ok {
		names := make([]string, 0, len(c.Queues))
		for n := range c.Queues {
			names = append(names, n)
		}
		sort.Strings(names)
		return p, fmt.Errorf("%w: queue %q has no profile (configured: %v)", ErrBadConfig, queue, names)
	}
	return p, nil
}
