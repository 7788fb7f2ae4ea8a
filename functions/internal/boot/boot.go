// Package boot wires one Sluice Lambda function from its environment, once
// per execution environment (the init phase, before the first invocation):
// configuration from SSM Parameter Store or a file in the deployment package,
// provider keys from the environment or Secrets Manager, the OPA policy
// prepared, the ledger opened, the SQS depth reader and the EMF writer built.
// The mains in functions/<name> only call Run.
//
// Environment (all optional):
//
//	SLUICE_CONFIG            config file in the package (default "sluice.yaml", i.e. /var/task/sluice.yaml)
//	SLUICE_CONFIG_PARAMETER  SSM parameter holding the YAML config (SecureString allowed); wins over SLUICE_CONFIG
//	SLUICE_LEDGER            SQLite ledger path (default /tmp/sluice.db: one per execution environment — tests only)
//	SLUICE_LEDGER_TABLE      DynamoDB ledger table (production); wins over SLUICE_LEDGER
//	SLUICE_SECRET_PREFIX     Secrets Manager name prefix for provider keys (default "sluice/")
//	SLUICE_REPLAY            recorded provider responses (the emulator); no provider is called
//	SLUICE_FX_URL            live FX source ("" = ECB, "off" = the config's rates)
//	SLUICE_LIVE_DEPTH        "off" = trust the alarm's datapoint, never call SQS
//	SLUICE_METRICS_NAMESPACE EMF namespace (default "Sluice")
//	SLUICE_BILLING_CURRENCY, SLUICE_BUDGET_ELASTIC, SLUICE_BUDGET_EMERGENCY: see applyOverrides
//
// AWS endpoints and credentials come from the SDK's default chain, so
// AWS_ENDPOINT_URL_<SERVICE> points a function at local emulators.
package boot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/secrets"
)

// ParameterAPI is the SSM call used to read the config
// (*ssm.Client implements it). IAM: ssm:GetParameter on that parameter
// (plus kms:Decrypt for a SecureString under a customer key).
type ParameterAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// LoadConfig reads the config from the SSM parameter param (decrypted), or
// from the file path when param is "". Errors wrap config.ErrBadConfig when
// the text is at fault.
func LoadConfig(ctx context.Context, api ParameterAPI, param, path string) (*config.Config, error) {
	if param == "" {
		return config.Load(path)
	}
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(param), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("ssm GetParameter %s: %w", param, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil || *out.Parameter.Value == "" {
		return nil, fmt.Errorf("%w: ssm parameter %s is empty", config.ErrBadConfig, param)
	}
	return config.Parse([]byte(*out.Parameter.Value), "ssm:"+param)
}

// Env is how Setup reads the environment (os.Getenv in Run).
type Env func(string) string

func (e Env) or(name, def string) string {
	if v := e(name); v != "" {
		return v
	}
	return def
}

// Setup builds the function's Handler. The returned close releases the App.
func Setup(ctx context.Context, function string, getenv Env, stdout io.Writer) (*app.Handler, func(), error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("loading AWS config: %w", err)
	}
	o := app.Options{
		ConfigPath: getenv.or("SLUICE_CONFIG", "sluice.yaml"),
		LedgerPath: getenv.or("SLUICE_LEDGER", "/tmp/sluice.db"),
		ReplayDir:  getenv("SLUICE_REPLAY"),
		FXURL:      getenv("SLUICE_FX_URL"),
		Getenv:     getenv,
	}
	if o.Config, err = LoadConfig(ctx, ssm.NewFromConfig(awsCfg), getenv("SLUICE_CONFIG_PARAMETER"), o.ConfigPath); err != nil {
		return nil, nil, err
	}
	if o.Config, err = applyOverrides(o.Config, getenv); err != nil {
		return nil, nil, err
	}
	// The DynamoDB ledger (production) wins over the SQLite path.
	o.LedgerTable = getenv("SLUICE_LEDGER_TABLE")
	if o.ReplayDir == "" {
		// A variable of the same name wins (local runs, the emulator);
		// otherwise the secret SLUICE_SECRET_PREFIX+name from Secrets Manager.
		sm := &secrets.SecretsManager{Client: smClient(awsCfg), Prefix: getenv.or("SLUICE_SECRET_PREFIX", "sluice/")}
		o.Secrets = secrets.Chain{secrets.Env{Getenv: getenv}, sm}
	}
	a, err := app.Open(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	h := &app.Handler{App: a, Function: function,
		Metrics: &metrics.Writer{W: stdout, Namespace: getenv.or("SLUICE_METRICS_NAMESPACE", metrics.Namespace)}}
	if getenv("SLUICE_LIVE_DEPTH") != "off" {
		h.Depth = &queue.Reader{Client: sqs.NewFromConfig(awsCfg), Timeout: time.Second}
	}
	wire(a, h)
	return h, a.Close, nil
}

// Run is a function's main: JSON logs on stdout, Setup, then lambda.Start
// with the handler. An init failure is logged and exits 1 (Lambda reports
// Runtime.ExitError and retries the init on the next invocation).
func Run(function string) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stdout, nil)))
	ctx := context.Background()
	start := time.Now()
	h, _, err := Setup(ctx, function, os.Getenv, os.Stdout)
	if err != nil {
		slog.Error("init failed", "function", function, "error", err, "bad_config", errors.Is(err, config.ErrBadConfig))
		os.Exit(1)
	}
	slog.Info("init done", "function", function, "init_ms", time.Since(start).Milliseconds(), "policy_revision", h.App.Policy.Revision(), "code_version", app.CodeVersion())
	if function == app.FunctionReconcile {
		lambda.Start(reconcileHandler(h))
		return
	}
	lambda.Start(h.Handle)
}
