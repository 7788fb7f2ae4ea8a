package boot

import (
	"fmt"
	"maps"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
)

// applyOverrides applies the stack's parameters (infra/template.yaml passes
// them as environment variables) to cfg, returning a copy:
//
//	SLUICE_BILLING_CURRENCY   must equal the config's billing_currency (a guard: the
//	                          config's budgets and FX are written in it; it is never converted)
//	SLUICE_BUDGET_ELASTIC     monthly elastic budget, a non-negative decimal in that currency
//	SLUICE_BUDGET_EMERGENCY   monthly emergency budget, likewise
//
// An empty variable leaves the config's value. Errors wrap config.ErrBadConfig.
func applyOverrides(cfg *config.Config, getenv Env) (*config.Config, error) {
	out := *cfg
	out.Budgets = maps.Clone(cfg.Budgets) // the caller's config is not modified
	if out.Budgets == nil {
		out.Budgets = map[sluice.Tier]sluice.Money{}
	}
	if c := getenv("SLUICE_BILLING_CURRENCY"); c != "" && c != cfg.BillingCurrency {
		return nil, fmt.Errorf("%w: SLUICE_BILLING_CURRENCY %q: the config (%s) keeps budgets in %s; deploy a config in %s",
			config.ErrBadConfig, c, cfg.Source, cfg.BillingCurrency, c)
	}
	for tier, name := range map[sluice.Tier]string{sluice.TierElastic: "SLUICE_BUDGET_ELASTIC", sluice.TierEmergency: "SLUICE_BUDGET_EMERGENCY"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		d, err := decimal.NewFromString(v)
		if err != nil || d.IsNegative() {
			return nil, fmt.Errorf("%w: %s %q: not a non-negative decimal", config.ErrBadConfig, name, v)
		}
		out.Budgets[tier] = sluice.Money{Amount: d, Currency: cfg.BillingCurrency}
	}
	return &out, nil
}
