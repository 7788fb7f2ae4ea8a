// Package config reads Sluice's YAML configuration (testdata/sluice.yaml is the
// documented example) into root types. Every error names the file and the field.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice"
)

// ErrBadConfig wraps every validation error, so callers can exit 2 on it.
var ErrBadConfig = errors.New("bad config")

// Config is the whole configuration.
type Config struct {
	// Source is the file the config was read from (named in errors).
	Source string
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
	// Placement chooses the broker that places lines and the settings its
	// provider adapters launch with (the placement: section).
	Placement Placement
}

// Placement modes (Placement.Mode).
const (
	// PlaceSandbox places with the offline sandbox broker (the default).
	PlaceSandbox = "sandbox"
	// PlaceProviders places through each enabled provider's adapter
	// (brokers/router) at providers.<name>.endpoint.
	PlaceProviders = "providers"
)

// Placement is the placement: section. The application's environment
// variables (SLUICE_PLACEMENT, SLUICE_PLACEMENT_ENDPOINTS,
// SLUICE_SANDBOX_STATE; app/brokers.go) override it when set.
type Placement struct {
	// Mode is PlaceSandbox (default) or PlaceProviders.
	Mode string
	// Launch are the settings each provider's adapter launches capacity with,
	// by provider name; a provider without an entry uses its adapter's
	// defaults (placeholder images: set them for real runs).
	Launch map[string]Launch
	// Drain are the release settings.
	Drain Drain
}

// Launch is what one provider's placement adapter needs beyond the quote
// settings (brokers/<provider> Config).
type Launch struct {
	// Image is the machine or container image: the EC2 AMI ("ami-…",
	// RunInstances ImageId), the ECS image id (RunInstances ImageId), RunPod's
	// imageName, Vast.ai's image, AutoDL's image_uuid. "" = the adapter's default.
	Image string
	// SecurityGroupID ("sg-…") and VSwitchID ("vsw-…") are sent with Alibaba
	// ECS RunInstances (SecurityGroupId, VSwitchId); Alibaba only.
	SecurityGroupID, VSwitchID string
}

// Drain are the drain settings.
type Drain struct {
	// IdleWindow is how long a queue must have had depth 0 before a trigger
	// reporting depth 0 releases its capacity (sluice.Drainer.IdleWindow); 0
	// (default) releases at once. An OK trigger with depth above 0 is not
	// delayed.
	IdleWindow time.Duration
}

// Quotes are the quote-collection settings.
type Quotes struct {
	SourceTimeout  time.Duration // per source deadline (default 2s)
	OverallTimeout time.Duration // whole fan-out deadline (default 3s)
	TTL            time.Duration // quote lifetime (default 5m)
	// MinPricePerGPUHour is the price floor below which an offer is not
	// believed (default 0.01 in the billing currency).
	MinPricePerGPUHour sluice.Money
	// MaxPricePerGPUHour is the sanity ceiling above which an offer is not
	// believed (a CNY price labelled USD, a per-instance price read as per GPU;
	// default 8 USD when billing in USD, else required).
	MaxPricePerGPUHour sluice.Money
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
	// Regions and InstanceTypes narrow region-based providers (AWS, Alibaba, AutoDL).
	Regions       []string
	InstanceTypes []string
	// GPUNames are the provider's own GPU names to ask for (AutoDL).
	GPUNames []string
	// PriceList is a dated list of prices for a provider that publishes no
	// price API (AutoDL): the offers say their price comes from it.
	PriceList *PriceList
}

// PriceList is a dated price list from config.
type PriceList struct {
	AsOf   time.Time
	Source string
	Prices []ListPrice
}

// ListPrice is one GPU's list price per GPU-hour.
type ListPrice struct {
	GPUName    string       // the provider's name, e.g. "A100-SXM4-80GB"
	GPUModel   string       // canonical, e.g. "A100-80GB"
	PerGPUHour sluice.Money // e.g. 6.68 CNY per GPU-hour
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
		SourceTimeout      string    `yaml:"source_timeout"`
		OverallTimeout     string    `yaml:"overall_timeout"`
		TTL                string    `yaml:"ttl"`
		MinPricePerGPUHour moneyYAML `yaml:"min_price_per_gpu_hour"`
		MaxPricePerGPUHour moneyYAML `yaml:"max_price_per_gpu_hour"`
	} `yaml:"quotes"`
	Budgets              map[string]string `yaml:"budgets"`
	InterruptionsPerHour map[string]string `yaml:"interruptions_per_hour"`
	Providers            map[string]struct {
		Enabled       strictBool `yaml:"enabled"`
		Endpoint      string     `yaml:"endpoint"`
		CredentialEnv string     `yaml:"credential_env"`
		SecretEnv     string     `yaml:"secret_env"`
		MaxUnits      strictInt  `yaml:"max_units"`
		Regions       []string   `yaml:"regions"`
		InstanceTypes []string   `yaml:"instance_types"`
		GPUNames      []string   `yaml:"gpu_names"`
		PriceList     *struct {
			AsOf   string `yaml:"as_of"`
			Source string `yaml:"source"`
			Prices []struct {
				GPUName    string    `yaml:"gpu_name"`
				GPUModel   string    `yaml:"gpu_model"`
				PerGPUHour moneyYAML `yaml:"per_gpu_hour"`
			} `yaml:"prices"`
		} `yaml:"price_list"`
	} `yaml:"providers"`
	Queues []struct {
		Queue                     string     `yaml:"queue"`
		GPUModels                 []string   `yaml:"gpu_models"`
		GPUsPerSlot               strictInt  `yaml:"gpus_per_slot"`
		HoursPerSlot              string     `yaml:"hours_per_slot"`
		MaxSlots                  strictInt  `yaml:"max_slots"`
		Checkpointable            strictBool `yaml:"checkpointable"`
		CheckpointIntervalMinutes strictInt  `yaml:"checkpoint_interval_minutes"`
		DataClass                 string     `yaml:"data_class"`
		ExportApproved            strictBool `yaml:"export_approved"`
		BudgetTier                string     `yaml:"budget_tier"`
		Team                      string     `yaml:"team"`
		MaxPricePerGPUHour        moneyYAML  `yaml:"max_price_per_gpu_hour"`
		Workload                  string     `yaml:"workload"`
		CrossNodeNVLink           strictBool `yaml:"cross_node_nvlink"`
		LocalStorageOnly          strictBool `yaml:"local_storage_only"`
		StorageZone               string     `yaml:"storage_zone"`
	} `yaml:"queues"`
	Placement struct {
		Mode   string `yaml:"mode"`
		Launch map[string]struct {
			Image           string `yaml:"image"`
			SecurityGroupID string `yaml:"security_group_id"`
			VSwitchID       string `yaml:"vswitch_id"`
		} `yaml:"launch"`
		Drain struct {
			IdleWindow string `yaml:"idle_window"`
		} `yaml:"drain"`
	} `yaml:"placement"`
}

// Load reads and validates the YAML file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	return Parse(b, path)
}

// Limits on configured values: beyond them a value is a typo, not a plan.
const (
	maxHoursPerSlot = 720  // 30 days
	maxSlots        = 1000 // slots one decision may buy for a queue
	maxUnits        = 1000 // units assumed per offer
	maxInterruption = 10   // interruptions per running hour
)

// Providers are the quote sources this build knows.
var Providers = []string{"aws", "runpod", "vast", "aliyun", "autodl"}

// listCurrency is the currency a provider's configured price list must be in.
var listCurrency = map[string]string{"autodl": "CNY"}

// GPUModels are the canonical GPU model names offers are normalised to.
var GPUModels = []string{"A100-80GB", "A100-40GB"}

var (
	queueRE     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$|^[A-Za-z0-9_-]{1,75}\.fifo$`)
	currencyRE  = regexp.MustCompile(`^[A-Z]{3}$`)
	dataClasses = map[string]bool{"cn-beijing-only": true, "cn-domestic": true, "public": true}
	tiers       = map[string]bool{string(sluice.TierBase): true, string(sluice.TierElastic): true, string(sluice.TierEmergency): true}
	// workloads are the queue workload kinds ("" = training).
	workloads = map[string]bool{"": true, "training": true, "batch-inference": true, "long-lived-inference": true}
	// storageZones are the zones a local_storage_only queue's storage_zone may name.
	storageZones = map[string]bool{string(sluice.ZoneBeijing): true, string(sluice.ZoneEastChina): true, string(sluice.ZoneCNOther): true, string(sluice.ZoneOverseas): true}
)

// Parse decodes YAML (unknown fields are errors) and validates it; name is used
// in error messages.
func Parse(b []byte, name string) (*Config, error) {
	var f fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: empty file", ErrBadConfig, name)
		}
		var se *scalarError
		if errors.As(err, &se) {
			var root yaml.Node
			if yaml.Unmarshal(b, &root) == nil {
				if path := pathAt(&root, se.line, se.column); path != "" {
					return nil, fmt.Errorf("%w: %s: %s: %v", ErrBadConfig, name, path, se)
				}
			}
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrBadConfig, name, err)
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s: %s", ErrBadConfig, name, field, fmt.Sprintf(format, a...))
	}
	c := &Config{
		Source:               name,
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
		if rate.LessThan(decimal.New(1, -6)) || rate.GreaterThan(decimal.New(1, 6)) {
			return nil, bad(field+".rate", "%q: outside 0.000001..1000000", r.Rate)
		}
		for _, prev := range c.FX {
			if (prev.Base == r.Base && prev.Quote == r.Quote) || (prev.Base == r.Quote && prev.Quote == r.Base) {
				return nil, bad(field, "a second rate between %s and %s: one rate per pair", r.Base, r.Quote)
			}
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
	if c.Quotes.SourceTimeout > c.Quotes.OverallTimeout {
		return nil, bad("quotes.source_timeout", "%s is longer than overall_timeout %s", c.Quotes.SourceTimeout, c.Quotes.OverallTimeout)
	}
	c.Quotes.MinPricePerGPUHour = sluice.Money{Amount: decimal.New(1, -2), Currency: c.BillingCurrency}
	if mp := f.Quotes.MinPricePerGPUHour; mp.set() {
		if c.Quotes.MinPricePerGPUHour, err = mp.money(); err != nil {
			return nil, bad("quotes.min_price_per_gpu_hour", "%v", err)
		}
	}
	if mp := f.Quotes.MaxPricePerGPUHour; mp.set() {
		if c.Quotes.MaxPricePerGPUHour, err = mp.money(); err != nil {
			return nil, bad("quotes.max_price_per_gpu_hour", "%v", err)
		}
	} else if c.BillingCurrency == "USD" {
		c.Quotes.MaxPricePerGPUHour = sluice.Money{Amount: decimal.NewFromInt(8), Currency: "USD"}
	} else {
		return nil, bad("quotes.max_price_per_gpu_hour", "required when billing in %s (the default band is in USD)", c.BillingCurrency)
	}
	for _, b := range []struct {
		field string
		m     sluice.Money
	}{{"quotes.min_price_per_gpu_hour", c.Quotes.MinPricePerGPUHour}, {"quotes.max_price_per_gpu_hour", c.Quotes.MaxPricePerGPUHour}} {
		if _, _, err := c.FX.Convert(b.m, c.BillingCurrency); err != nil {
			return nil, bad(b.field, "currency %s: %v (add an fx entry)", b.m.Currency, err)
		}
	}
	if c.Quotes.MinPricePerGPUHour.Currency == c.Quotes.MaxPricePerGPUHour.Currency &&
		c.Quotes.MinPricePerGPUHour.Cmp(c.Quotes.MaxPricePerGPUHour) >= 0 {
		return nil, bad("quotes.min_price_per_gpu_hour", "%s is not below max_price_per_gpu_hour %s", c.Quotes.MinPricePerGPUHour, c.Quotes.MaxPricePerGPUHour)
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
		if !slices.Contains(Providers, p) {
			return nil, bad("interruptions_per_hour."+p, "unknown provider (known: %s)", strings.Join(Providers, ", "))
		}
		d, err := decimal.NewFromString(rate)
		if err != nil || d.IsNegative() || d.GreaterThan(decimal.NewFromInt(maxInterruption)) {
			return nil, bad("interruptions_per_hour."+p, "%q: want a decimal in 0..%d", rate, maxInterruption)
		}
		c.InterruptionsPerHour[p] = d
	}
	for name, p := range f.Providers {
		if !slices.Contains(Providers, name) {
			return nil, bad("providers."+name, "unknown provider (known: %s)", strings.Join(Providers, ", "))
		}
		if p.MaxUnits < 0 || p.MaxUnits > maxUnits {
			return nil, bad("providers."+name+".max_units", "%d: want 0..%d", p.MaxUnits, maxUnits)
		}
		prov := Provider{Enabled: bool(p.Enabled), Endpoint: p.Endpoint, CredentialEnv: p.CredentialEnv,
			SecretEnv: p.SecretEnv, MaxUnits: int(p.MaxUnits), Regions: p.Regions, InstanceTypes: p.InstanceTypes,
			GPUNames: p.GPUNames}
		if pl := p.PriceList; pl != nil {
			field := "providers." + name + ".price_list"
			asOf, err := time.Parse(time.DateOnly, pl.AsOf)
			if err != nil {
				return nil, bad(field+".as_of", "%q: want YYYY-MM-DD", pl.AsOf)
			}
			if pl.Source == "" {
				return nil, bad(field+".source", "empty: a price list needs its source")
			}
			if len(pl.Prices) == 0 {
				return nil, bad(field+".prices", "empty")
			}
			prov.PriceList = &PriceList{AsOf: asOf, Source: pl.Source}
			seen := map[string]bool{}
			for i, lp := range pl.Prices {
				f := fmt.Sprintf("%s.prices[%d]", field, i)
				if lp.GPUName == "" || !slices.Contains(GPUModels, lp.GPUModel) {
					return nil, bad(f, "gpu_name %q / gpu_model %q: want a name and one of %s", lp.GPUName, lp.GPUModel, strings.Join(GPUModels, ", "))
				}
				if seen[lp.GPUName] {
					return nil, bad(f+".gpu_name", "%q listed twice: one price per GPU", lp.GPUName)
				}
				seen[lp.GPUName] = true
				m, err := lp.PerGPUHour.money()
				if err != nil {
					return nil, bad(f+".per_gpu_hour", "%v", err)
				}
				if cur, ok := listCurrency[name]; ok && m.Currency != cur {
					return nil, bad(f+".per_gpu_hour", "currency %s: %s bills in %s", m.Currency, name, cur)
				}
				prov.PriceList.Prices = append(prov.PriceList.Prices, ListPrice{lp.GPUName, lp.GPUModel, m})
			}
		}
		if name == "autodl" && prov.Enabled && prov.PriceList == nil {
			return nil, bad("providers.autodl.price_list", "missing: AutoDL publishes no price API, so an enabled AutoDL needs a dated price list")
		}
		for _, g := range prov.GPUNames {
			if prov.PriceList != nil && !slices.ContainsFunc(prov.PriceList.Prices, func(lp ListPrice) bool { return lp.GPUName == g }) {
				return nil, bad("providers."+name+".gpu_names", "%q has no price in price_list", g)
			}
		}
		c.Providers[name] = prov
	}
	for i, q := range f.Queues {
		field := fmt.Sprintf("queues[%d]", i)
		if !queueRE.MatchString(q.Queue) {
			return nil, bad(field+".queue", "%q is not an SQS queue name (1-80 of A-Z a-z 0-9 _ -, or .fifo)", q.Queue)
		}
		field = fmt.Sprintf("queues[%s]", q.Queue)
		if _, dup := c.Queues[q.Queue]; dup {
			return nil, bad(field, "defined twice")
		}
		if len(q.GPUModels) == 0 {
			return nil, bad(field+".gpu_models", "empty")
		}
		for _, m := range q.GPUModels {
			if !slices.Contains(GPUModels, m) {
				return nil, bad(field+".gpu_models", "%q: unknown (known: %s)", m, strings.Join(GPUModels, ", "))
			}
		}
		if q.GPUsPerSlot <= 0 || q.GPUsPerSlot > 8 {
			return nil, bad(field+".gpus_per_slot", "%d: want 1..8 (a slot never spans nodes)", q.GPUsPerSlot)
		}
		hours, err := decimal.NewFromString(q.HoursPerSlot)
		if err != nil || !hours.IsPositive() || hours.GreaterThan(decimal.NewFromInt(maxHoursPerSlot)) || hours.Exponent() < -6 {
			return nil, bad(field+".hours_per_slot", "%q: want a decimal in (0, %d] with at most 6 decimals", q.HoursPerSlot, maxHoursPerSlot)
		}
		if q.MaxSlots <= 0 || q.MaxSlots > maxSlots {
			return nil, bad(field+".max_slots", "%d: want 1..%d", q.MaxSlots, maxSlots)
		}
		if q.CheckpointIntervalMinutes < 0 || (q.Checkpointable && q.CheckpointIntervalMinutes == 0) {
			return nil, bad(field+".checkpoint_interval_minutes", "%d: a checkpointable queue needs a positive interval", q.CheckpointIntervalMinutes)
		}
		if !dataClasses[q.DataClass] {
			return nil, bad(field+".data_class", "%q: want cn-beijing-only, cn-domestic or public", q.DataClass)
		}
		if !tiers[q.BudgetTier] {
			return nil, bad(field+".budget_tier", "%q: want elastic or emergency", q.BudgetTier)
		}
		if sluice.Tier(q.BudgetTier) == sluice.TierBase {
			return nil, bad(field+".budget_tier", "%q: base is the owned pool and is never bought; a queue Sluice buys for is elastic or emergency", q.BudgetTier)
		}
		if !workloads[q.Workload] {
			return nil, bad(field+".workload", "%q: want training, batch-inference or long-lived-inference", q.Workload)
		}
		if bool(q.LocalStorageOnly) && !storageZones[q.StorageZone] {
			return nil, bad(field+".storage_zone", "%q: a local_storage_only queue needs its storage zone (beijing, east-china, cn-other or overseas)", q.StorageZone)
		}
		if !bool(q.LocalStorageOnly) && q.StorageZone != "" {
			return nil, bad(field+".storage_zone", "%q: set only with local_storage_only: true", q.StorageZone)
		}
		var ceiling sluice.Money
		if q.MaxPricePerGPUHour.set() {
			if ceiling, err = q.MaxPricePerGPUHour.money(); err != nil {
				return nil, bad(field+".max_price_per_gpu_hour", "%v", err)
			}
			if _, _, err := c.FX.Convert(sluice.Money{Amount: decimal.NewFromInt(1), Currency: ceiling.Currency}, c.BillingCurrency); err != nil {
				return nil, bad(field+".max_price_per_gpu_hour", "currency %s: %v (add an fx entry)", ceiling.Currency, err)
			}
		}
		c.Queues[q.Queue] = sluice.QueueProfile{
			Queue: q.Queue, GPUModels: q.GPUModels, GPUsPerSlot: int(q.GPUsPerSlot), HoursPerSlot: hours,
			MaxSlots: int(q.MaxSlots), Checkpointable: bool(q.Checkpointable), CheckpointIntervalMinutes: int(q.CheckpointIntervalMinutes),
			DataClass: q.DataClass, ExportApproved: bool(q.ExportApproved), Tier: sluice.Tier(q.BudgetTier), Team: q.Team,
			MaxPricePerGPUHour: ceiling,
			Workload:           q.Workload, CrossNodeNVLink: bool(q.CrossNodeNVLink),
			LocalStorageOnly: bool(q.LocalStorageOnly), StorageZone: sluice.Zone(q.StorageZone),
		}
	}
	if c.Placement, err = parsePlacement(f, bad); err != nil {
		return nil, err
	}
	return c, nil
}

// Launch setting formats: the providers' documented id shapes.
var (
	amiRE   = regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`) // EC2 image ids
	sgRE    = regexp.MustCompile(`^sg-[0-9a-z]{1,64}$`)             // ECS security group ids
	vswRE   = regexp.MustCompile(`^vsw-[0-9a-z]{1,64}$`)            // VPC vSwitch ids
	maxIdle = 7 * 24 * time.Hour                                    // beyond a week the window is a typo
)

// parsePlacement validates the placement: section.
func parsePlacement(f fileConfig, bad func(field, format string, a ...any) error) (Placement, error) {
	fp := f.Placement
	p := Placement{Mode: fp.Mode, Launch: map[string]Launch{}}
	switch p.Mode {
	case "":
		p.Mode = PlaceSandbox
	case PlaceSandbox, PlaceProviders:
	default:
		return p, bad("placement.mode", "%q: want %s or %s", fp.Mode, PlaceSandbox, PlaceProviders)
	}
	for name, l := range fp.Launch {
		field := "placement.launch." + name
		if !slices.Contains(Providers, name) {
			return p, bad(field, "unknown provider (known: %s)", strings.Join(Providers, ", "))
		}
		if name == "aws" && l.Image != "" && !amiRE.MatchString(l.Image) {
			return p, bad(field+".image", "%q is not an AMI id (ami- and 8 or 17 hex digits)", l.Image)
		}
		if strings.TrimSpace(l.Image) != l.Image {
			return p, bad(field+".image", "%q: leading or trailing space", l.Image)
		}
		if name != "aliyun" && (l.SecurityGroupID != "" || l.VSwitchID != "") {
			return p, bad(field, "security_group_id / vswitch_id are Alibaba (aliyun) settings")
		}
		if l.SecurityGroupID != "" && !sgRE.MatchString(l.SecurityGroupID) {
			return p, bad(field+".security_group_id", "%q is not a security group id (sg-…)", l.SecurityGroupID)
		}
		if l.VSwitchID != "" && !vswRE.MatchString(l.VSwitchID) {
			return p, bad(field+".vswitch_id", "%q is not a vSwitch id (vsw-…)", l.VSwitchID)
		}
		p.Launch[name] = Launch{Image: l.Image, SecurityGroupID: l.SecurityGroupID, VSwitchID: l.VSwitchID}
	}
	if w := fp.Drain.IdleWindow; w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d < 0 || d > maxIdle {
			return p, bad("placement.drain.idle_window", "%q: want a duration from 0s to %s", w, maxIdle)
		}
		p.Drain.IdleWindow = d
	}
	return p, nil
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
		return p, fmt.Errorf("%w: %s: queue %q has no profile (configured: %v)", ErrBadConfig, c.Source, queue, names)
	}
	return p, nil
}

// strictInt is a YAML integer that refuses 4.5, "4" and true (yaml.v3 would
// truncate a float into an int silently).
type strictInt int

// wholeRE is a YAML integer written in decimal digits; yaml.v3 tags one too
// large for int64 as !!float.
var wholeRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

// UnmarshalYAML accepts only a node tagged !!int that fits an int.
func (i *strictInt) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && wholeRE.MatchString(n.Value) && n.ShortTag() != "!!int" {
		return &scalarError{n.Line, n.Column, fmt.Sprintf("%q: out of range (too large for a whole number)", n.Value)}
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return &scalarError{n.Line, n.Column, fmt.Sprintf("%q: want a whole number", n.Value)}
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return &scalarError{n.Line, n.Column, fmt.Sprintf("%q: out of range (too large for a whole number)", n.Value)}
	}
	*i = strictInt(v)
	return nil
}

// scalarError is a strictInt or strictBool refusal; Parse adds the field
// path of the node at Line:Column (pathAt) to it.
type scalarError struct {
	line, column int
	msg          string
}

func (e *scalarError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// pathAt returns the field path of the scalar at line:column under n, in the
// form errors use ("queues[train-overseas].max_slots", "providers.vast.max_units",
// "fx[0].rate"), or "" when no node is there. A sequence item that is a mapping
// with a queue: key is named by that queue, others by index.
func pathAt(n *yaml.Node, line, column int) string {
	var walk func(n *yaml.Node, prefix string) (string, bool)
	walk = func(n *yaml.Node, prefix string) (string, bool) {
		if n.Kind != yaml.DocumentNode && n.Line == line && n.Column == column {
			return prefix, prefix != ""
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if p, ok := walk(c, prefix); ok {
					return p, true
				}
			}
		case yaml.MappingNode:
			for k := 0; k+1 < len(n.Content); k += 2 {
				key, val := n.Content[k], n.Content[k+1]
				p := key.Value
				if prefix != "" {
					p = prefix + "." + key.Value
				}
				if got, ok := walk(val, p); ok {
					return got, true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", prefix, i)
				if c.Kind == yaml.MappingNode {
					for k := 0; k+1 < len(c.Content); k += 2 {
						if c.Content[k].Value == "queue" && c.Content[k+1].Kind == yaml.ScalarNode && queueRE.MatchString(c.Content[k+1].Value) {
							p = fmt.Sprintf("%s[%s]", prefix, c.Content[k+1].Value)
						}
					}
				}
				if got, ok := walk(c, p); ok {
					return got, true
				}
			}
		}
		return "", false
	}
	p, _ := walk(n, "")
	return p
}

// strictBool is a YAML boolean that refuses "yes" and other strings.
type strictBool bool

// UnmarshalYAML accepts only a node tagged !!bool.
func (b *strictBool) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return &scalarError{n.Line, n.Column, fmt.Sprintf("%q: want true or false", n.Value)}
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		return err
	}
	*b = strictBool(v)
	return nil
}

// moneyYAML is {amount: "2.50", currency: USD} as written in the file.
type moneyYAML struct {
	Amount   string `yaml:"amount"`
	Currency string `yaml:"currency"`
}

func (m moneyYAML) set() bool { return m.Amount != "" || m.Currency != "" }

// money parses m; the amount must be positive.
func (m moneyYAML) money() (sluice.Money, error) {
	v, err := sluice.NewMoney(m.Amount, m.Currency)
	if err != nil {
		return v, err
	}
	if !v.Amount.IsPositive() {
		return v, fmt.Errorf("amount %q: must be positive", m.Amount)
	}
	return v, nil
}
