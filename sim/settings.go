package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shopspring/decimal"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice"
)

// Settings are the simulation's own facts, from a small YAML file next to the
// Sluice config (README.md "Settings"): what the owned pool costs, and the
// queue-profile fields a trace row does not carry.
type Settings struct {
	// Source is the file the settings came from.
	Source string
	// OwnedGPUModel is the canonical GPU model of the owned pool (informative).
	OwnedGPUModel string
	// OwnedGPUMonthCost is the amortised cost of one owned GPU per month
	// (purchase over its life, power, hosting), in the billing currency.
	OwnedGPUMonthCost sluice.Money
	// HoursPerMonth converts the monthly cost to hours (default 730 = 8760/12).
	HoursPerMonth decimal.Decimal
	// GPUModels the jobs accept on elastic capacity.
	GPUModels []string
	// CheckpointIntervalMinutes of checkpointable jobs (default 30).
	CheckpointIntervalMinutes int
	// ExportApproved lets "public" data leave China (overseas offers).
	ExportApproved bool
	// MaxSlots caps the slots one decision buys for one queue (default 100).
	MaxSlots int
	// MaxPricePerGPUHour is the profiles' price ceiling (unset = none).
	MaxPricePerGPUHour sluice.Money
	// BurstAfter is how long a job waits before its queue's alarm fires (default 0).
	BurstAfter time.Duration
	// AlarmPeriod is how often an alarm still in ALARM re-evaluates (default 5m).
	AlarmPeriod time.Duration
}

type settingsFile struct {
	Owned struct {
		GPUModel     string `yaml:"gpu_model"`
		GPUMonthCost struct {
			Amount   string `yaml:"amount"`
			Currency string `yaml:"currency"`
		} `yaml:"gpu_month_cost"`
		HoursPerMonth string `yaml:"hours_per_month"`
	} `yaml:"owned"`
	Burst struct {
		GPUModels                 []string `yaml:"gpu_models"`
		CheckpointIntervalMinutes *int     `yaml:"checkpoint_interval_minutes"`
		ExportApproved            bool     `yaml:"export_approved"`
		MaxSlots                  *int     `yaml:"max_slots"`
		MaxPricePerGPUHour        *struct {
			Amount   string `yaml:"amount"`
			Currency string `yaml:"currency"`
		} `yaml:"max_price_per_gpu_hour"`
		After       string `yaml:"after"`
		AlarmPeriod string `yaml:"alarm_period"`
	} `yaml:"burst"`
}

// LoadSettings reads the settings YAML at path.
func LoadSettings(path string) (*Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("simulation settings: %w", err)
	}
	return ParseSettings(b, path)
}

// ParseSettings decodes and validates settings (unknown fields are errors);
// errors name the file and the field.
func ParseSettings(b []byte, name string) (*Settings, error) {
	var f settingsFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("simulation settings %s: empty file", name)
		}
		return nil, fmt.Errorf("simulation settings %s: %v", name, err)
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("simulation settings %s: %s: %s", name, field, fmt.Sprintf(format, a...))
	}
	s := &Settings{Source: name, OwnedGPUModel: f.Owned.GPUModel, GPUModels: f.Burst.GPUModels,
		ExportApproved: f.Burst.ExportApproved, CheckpointIntervalMinutes: 30, MaxSlots: 100,
		HoursPerMonth: decimal.NewFromInt(730), AlarmPeriod: 5 * time.Minute}
	var err error
	if _, err := parseDecimal(f.Owned.GPUMonthCost.Amount); err != nil {
		return nil, bad("owned.gpu_month_cost.amount", "%v", err)
	}
	if s.OwnedGPUMonthCost, err = sluice.NewMoney(f.Owned.GPUMonthCost.Amount, f.Owned.GPUMonthCost.Currency); err != nil {
		return nil, bad("owned.gpu_month_cost", "%v", err)
	}
	if h := f.Owned.HoursPerMonth; h != "" {
		d, err := parseDecimal(h)
		if err != nil || !d.IsPositive() || d.GreaterThan(decimal.NewFromInt(744)) {
			return nil, bad("owned.hours_per_month", "%q: want a decimal in (0, 744]", h)
		}
		s.HoursPerMonth = d
	}
	if len(s.GPUModels) == 0 {
		if s.OwnedGPUModel == "" {
			return nil, bad("burst.gpu_models", "empty, and no owned.gpu_model to default to")
		}
		s.GPUModels = []string{s.OwnedGPUModel}
	}
	if p := f.Burst.CheckpointIntervalMinutes; p != nil {
		if *p <= 0 || *p > 24*60 {
			return nil, bad("burst.checkpoint_interval_minutes", "%d: want 1..1440", *p)
		}
		s.CheckpointIntervalMinutes = *p
	}
	if p := f.Burst.MaxSlots; p != nil {
		if *p <= 0 || *p > 1000 {
			return nil, bad("burst.max_slots", "%d: want 1..1000", *p)
		}
		s.MaxSlots = *p
	}
	if p := f.Burst.MaxPricePerGPUHour; p != nil {
		if _, err := parseDecimal(p.Amount); err != nil {
			return nil, bad("burst.max_price_per_gpu_hour.amount", "%v", err)
		}
		if s.MaxPricePerGPUHour, err = sluice.NewMoney(p.Amount, p.Currency); err != nil || !s.MaxPricePerGPUHour.Amount.IsPositive() {
			return nil, bad("burst.max_price_per_gpu_hour", "want a positive amount and an ISO 4217 currency")
		}
	}
	for _, d := range []struct {
		field, text string
		into        *time.Duration
	}{{"burst.after", f.Burst.After, &s.BurstAfter}, {"burst.alarm_period", f.Burst.AlarmPeriod, &s.AlarmPeriod}} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil || v < 0 || v%time.Minute != 0 {
			return nil, bad(d.field, "%q: want a duration of whole minutes, e.g. 5m", d.text)
		}
		*d.into = v
	}
	if s.AlarmPeriod <= 0 {
		return nil, bad("burst.alarm_period", "must be positive")
	}
	return s, nil
}
