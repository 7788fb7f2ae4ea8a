package boot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/internal/motoserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}

const root = "../../../"

func putParam(t *testing.T, c *ssm.Client, value string) string {
	t.Helper()
	name := "/" + motoserver.Unique("sluice") + "/config"
	if _, err := c.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value),
		Type: ssmtypes.ParameterTypeSecureString, Tier: ssmtypes.ParameterTierAdvanced}); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestLoadConfigFromSSM(t *testing.T) {
	c := ssm.NewFromConfig(motoserver.Config(t))
	yml, err := os.ReadFile(root + "testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	name := putParam(t, c, string(yml))
	cfg, err := LoadConfig(context.Background(), c, name, "does-not-exist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := config.Load(root + "testdata/sluice.yaml")
	if cfg.BillingCurrency != want.BillingCurrency || len(cfg.Queues) != len(want.Queues) {
		t.Errorf("config from SSM differs from the file: %+v", cfg)
	}
	// A broken config in SSM is a bad config naming the parameter.
	bad := putParam(t, c, "billing_currency: USD\nnot_a_key: 1\n")
	if _, err := LoadConfig(context.Background(), c, bad, ""); !errors.Is(err, config.ErrBadConfig) || !strings.Contains(err.Error(), "ssm:"+bad) {
		t.Errorf("bad SSM config: %v", err)
	}
	if _, err := LoadConfig(context.Background(), c, "/missing/param", ""); err == nil || !strings.Contains(err.Error(), "ssm GetParameter /missing/param") {
		t.Errorf("missing parameter: %v", err)
	}
}

// TestSetupFromEnvironment builds the burst handler as the function does at
// init, with the config in SSM (moto_server) and replayed providers, and
// decides one alarm through it.
func TestSetupFromEnvironment(t *testing.T) {
	e := motoserver.Endpoint(t)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": e, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		t.Setenv(k, v)
	}
	yml, _ := os.ReadFile(root + "testdata/sluice.yaml")
	name := putParam(t, ssm.NewFromConfig(motoserver.Config(t)), string(yml))
	env := map[string]string{
		"SLUICE_CONFIG_PARAMETER": name, "SLUICE_REPLAY": root + "testdata/replay",
		"SLUICE_LEDGER": filepath.Join(t.TempDir(), "l.db"), "SLUICE_FX_URL": "off",
	}
	var out bytes.Buffer
	h, closeFn, err := Setup(context.Background(), app.FunctionBurst, func(k string) string { return env[k] }, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if h.Depth == nil || h.Metrics == nil || h.Function != "burst" {
		t.Fatalf("handler %+v", h)
	}
	raw, _ := os.ReadFile(root + "testdata/events/alarm-lambda-burst.json")
	res, err := h.Handle(context.Background(), raw)
	if err != nil || len(res.Decisions) != 1 || res.Decisions[0].Outcome != "placed" {
		t.Fatalf("%+v %v", res, err)
	}
	// The queue does not exist on moto: the depth falls back to the datapoint.
	if res.Decisions[0].DepthSource != "alarm-datapoint" || !strings.Contains(out.String(), `"Decisions":1`) {
		t.Errorf("%+v\n%s", res.Decisions[0], out.String())
	}
}

func TestOverrides(t *testing.T) {
	cfg, err := config.Load(root + "testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) Env { return func(k string) string { return m[k] } }
	out, err := applyOverrides(cfg, env(map[string]string{"SLUICE_BILLING_CURRENCY": "USD", "SLUICE_BUDGET_EMERGENCY": "750.25"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Budgets["emergency"].String(); got != "750.25 USD" {
		t.Errorf("emergency %s", got)
	}
	if out.Budgets["elastic"].String() != "20000 USD" || cfg.Budgets["emergency"].String() != "5000 USD" {
		t.Errorf("elastic %s; the caller's config changed: %s", out.Budgets["elastic"], cfg.Budgets["emergency"])
	}
	for m, want := range map[string]string{
		"SLUICE_BILLING_CURRENCY=CNY": `SLUICE_BILLING_CURRENCY "CNY": the config`,
		"SLUICE_BUDGET_ELASTIC=-1":    `SLUICE_BUDGET_ELASTIC "-1": not a non-negative decimal`,
		"SLUICE_BUDGET_ELASTIC=1e3x":  `SLUICE_BUDGET_ELASTIC "1e3x"`,
	} {
		k, v, _ := strings.Cut(m, "=")
		if _, err := applyOverrides(cfg, env(map[string]string{k: v})); !errors.Is(err, config.ErrBadConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", m, err)
		}
	}
}
