package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/ledger"
	"github.com/sluicehq/sluice/ledger/archive"
	laudit "github.com/sluicehq/sluice/ledger/audit"
	"github.com/sluicehq/sluice/ledger/audit/chart"
)

const auditUsage = `usage: sluice audit <command> [flags]

commands:
  verify   check the hash chain and recompute every line and total
           sluice audit verify [--ledger PATH | --table NAME]
  export   write placed and planned lines as FOCUS 1.2 CSV
           sluice audit export --format focus --from DATE --to DATE --out FILE [--ledger PATH | --table NAME] [--account ID]
  report   a month's spend, GPU-hours, cost per GPU-hour, queue wait and budget share
           sluice audit report --month YYYY-MM [--by tier|team|provider|zone] [--format table|csv|svg]
                               [--config FILE] [--out FILE] [--ledger PATH | --table NAME]
  archive  copy closed hours of the chain to S3 as NDJSON batches with chained digests,
           then verify the whole archive
           sluice audit archive --bucket NAME [--prefix P] [--path-style] [--ledger PATH | --table NAME]

DATE is YYYY-MM-DD (UTC midnight) or RFC 3339; --to is exclusive. --table reads a
DynamoDB ledger with the AWS SDK's default configuration (AWS_REGION, credentials,
AWS_ENDPOINT_URL_DYNAMODB). Exit status: 0 ok, 1 verification failed or an
error, 2 bad usage.
`

// audit is the "sluice audit" subcommand.
func audit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return dispatch(ctx, "sluice audit", auditUsage, map[string]subcommand{
		"verify": auditVerify, "export": auditExport, "report": auditReport, "archive": auditArchive,
	}, args, stdout, stderr)
}

// storeFlags are --ledger and --table, shared by every audit command.
type storeFlags struct {
	path, table *string
	fs          *flag.FlagSet
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		path:  ledgerFlag(fs),
		table: fs.String("table", "", "DynamoDB ledger table (instead of --ledger)"),
		fs:    fs,
	}
}

// errUsage marks a usage error found after flag parsing (exit 2).
var errUsage = errors.New("usage")

// open opens the ledger read for audit; a SQLite file must exist (opening
// would otherwise create an empty ledger that verifies).
func (f storeFlags) open(ctx context.Context) (ledger.Store, string, error) {
	both := false
	f.fs.Visit(func(fl *flag.Flag) { both = both || (fl.Name == "ledger" && *f.table != "") })
	if both {
		return nil, "", fmt.Errorf("%w: --ledger and --table are alternatives: give one", errUsage)
	}
	if *f.table != "" {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("aws config: %w", err)
		}
		d, err := ledger.OpenDynamoDB(ctx, cfg, *f.table)
		return d, "table " + *f.table, err
	}
	if _, err := os.Stat(*f.path); err != nil {
		return nil, "", fmt.Errorf("ledger %s: %w", *f.path, err)
	}
	s, err := ledger.OpenSQLite(ctx, *f.path)
	return s, "ledger " + *f.path, err
}

func auditVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"audit verify", stderr}
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	if code, ok := c.parseFlagsOnly(fs, args); !ok {
		return code
	}
	s, name, err := sf.open(ctx)
	if err != nil {
		return c.fail(exitCode(err), "%v", err)
	}
	defer s.Close()
	n, err := s.Verify(ctx)
	if err != nil {
		return c.fail(exitErr, "%s: FAIL after %d good records: %v", name, n, err)
	}
	recs, err := s.Records(ctx)
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	decisions, lines, err := laudit.Recompute(recs)
	if err != nil {
		return c.fail(exitErr, "%s: FAIL: %v", name, err)
	}
	headHash := ledger.GenesisHash
	if len(recs) > 0 {
		headHash = recs[len(recs)-1].Hash
	}
	fmt.Fprintf(stdout, "%s: %d records, chain intact, head %s\n", name, n, headHash)
	fmt.Fprintf(stdout, "recomputed %d decisions, %d lines: every line, total, FX conversion, budget figure, placement price and settled cost matches\n", decisions, lines)
	return exitOK
}

// parseDate reads YYYY-MM-DD (UTC midnight) or RFC 3339.
func parseDate(flagName, v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: want YYYY-MM-DD or RFC 3339", flagName, v)
	}
	return t.UTC(), nil
}

// loadBook reads and decodes the whole chain, checking it first (chain and
// recomputation): an export or report of a broken chain would present
// tampered figures as fact.
func loadBook(ctx context.Context, sf storeFlags) (*laudit.Book, error) {
	s, name, err := sf.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if _, err := s.Verify(ctx); err != nil {
		return nil, fmt.Errorf("%s does not verify (run sluice audit verify): %w", name, err)
	}
	recs, err := s.Records(ctx)
	if err != nil {
		return nil, err
	}
	if _, _, err := laudit.Recompute(recs); err != nil {
		return nil, fmt.Errorf("%s does not recompute (run sluice audit verify): %w", name, err)
	}
	return laudit.Load(recs)
}

func auditExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"audit export", stderr}
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	format := fs.String("format", "focus", "export format (only focus)")
	fromS := fs.String("from", "", "first charge period start included (YYYY-MM-DD or RFC 3339)")
	toS := fs.String("to", "", "charge period starts before this are included (exclusive)")
	out := fs.String("out", "", "output CSV file (\"-\" = stdout)")
	account := fs.String("account", "sluice", "BillingAccountId (and BillingAccountName)")
	if code, ok := c.parseFlagsOnly(fs, args); !ok {
		return code
	}
	if *format != "focus" {
		return c.fail(exitBad, "--format %q: only focus is supported", *format)
	}
	if *fromS == "" || *toS == "" || *out == "" {
		return c.fail(exitBad, "--from, --to and --out are required")
	}
	from, err := parseDate("from", *fromS)
	if err != nil {
		return c.fail(exitBad, "%v", err)
	}
	to, err := parseDate("to", *toS)
	if err != nil {
		return c.fail(exitBad, "%v", err)
	}
	if !from.Before(to) {
		return c.fail(exitBad, "--from %s is not before --to %s", *fromS, *toS)
	}
	book, err := loadBook(ctx, sf)
	if err != nil {
		return c.fail(exitCode(err), "%v", err)
	}
	var buf bytes.Buffer
	rows, err := laudit.WriteFOCUS(&buf, book, from, to, laudit.FOCUSOptions{BillingAccountID: *account})
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	if err := writeOut(*out, buf.Bytes(), stdout); err != nil {
		return c.fail(exitErr, "%v", err)
	}
	if *out != "-" {
		fmt.Fprintf(stdout, "wrote %d FOCUS rows (%s to %s) to %s\n", rows, from.Format(laudit.FOCUSTime), to.Format(laudit.FOCUSTime), *out)
	}
	return exitOK
}

func writeOut(path string, b []byte, stdout io.Writer) error {
	if path == "-" || path == "" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func auditReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"audit report", stderr}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	monthS := fs.String("month", "", "month to report, YYYY-MM (UTC)")
	by := fs.String("by", laudit.ByTier, "group by tier, team, provider or zone")
	format := fs.String("format", "table", "table, csv or svg (daily spend by tier)")
	configPath := fs.String("config", "", "configuration file with the tiers' monthly budgets (none: no budget share)")
	out := fs.String("out", "-", "output file (\"-\" = stdout)")
	if code, ok := c.parseFlagsOnly(fs, args); !ok {
		return code
	}
	month, err := time.Parse("2006-01", *monthS)
	if err != nil {
		return c.fail(exitBad, "--month %q: want YYYY-MM", *monthS)
	}
	switch *format {
	case "table", "csv", "svg":
	default:
		return c.fail(exitBad, "--format %q: want table, csv or svg", *format)
	}
	var budgets map[sluice.Tier]sluice.Money
	currency := ""
	if *configPath != "" {
		cfg, err := config.Load(*configPath)
		if err != nil {
			return c.fail(exitBad, "%v", err)
		}
		budgets, currency = cfg.Budgets, cfg.BillingCurrency
	}
	book, err := loadBook(ctx, sf)
	if err != nil {
		return c.fail(exitCode(err), "%v", err)
	}
	r, err := laudit.MonthReportIn(book, month, *by, budgets, currency)
	if err != nil {
		code := exitErr
		if strings.Contains(err.Error(), "--by") {
			code = exitBad
		}
		return c.fail(code, "%v", err)
	}
	var buf bytes.Buffer
	switch *format {
	case "table":
		err = r.WriteTable(&buf)
	case "csv":
		err = r.WriteCSV(&buf)
	case "svg":
		var b []byte
		if b, err = chart.DailySpendByTier(r); err == nil {
			buf.Write(b)
		}
	}
	if err == nil {
		err = writeOut(*out, buf.Bytes(), stdout)
	}
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	return exitOK
}

func auditArchive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := command{"audit archive", stderr}
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	bucket := fs.String("bucket", "", "S3 bucket (versioned, Object Lock in compliance mode)")
	prefix := fs.String("prefix", "", "key prefix, e.g. sluice/prod/")
	pathStyle := fs.Bool("path-style", false, "path-style S3 addressing (S3-compatible servers)")
	if code, ok := c.parseFlagsOnly(fs, args); !ok {
		return code
	}
	if *bucket == "" {
		return c.fail(exitBad, "--bucket is required")
	}
	s, name, err := sf.open(ctx)
	if err != nil {
		return c.fail(exitCode(err), "%v", err)
	}
	defer s.Close()
	if _, err := s.Verify(ctx); err != nil {
		return c.fail(exitErr, "%s does not verify; nothing archived: %v", name, err)
	}
	recs, err := s.Records(ctx)
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c.fail(exitErr, "aws config: %v", err)
	}
	a := &archive.Archiver{S3: s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = *pathStyle }),
		Bucket: *bucket, Prefix: *prefix}
	res, err := a.Archive(ctx, recs)
	if err != nil {
		return c.fail(exitErr, "%v", err)
	}
	for _, d := range res.Batches {
		fmt.Fprintf(stdout, "archived seq %d–%d (%s) to s3://%s/%s\n", d.FirstSeq, d.LastSeq, d.Hour, *bucket, d.Batch)
	}
	n, err := a.Verify(ctx)
	if err != nil {
		return c.fail(exitErr, "archive does not verify: %v", err)
	}
	fmt.Fprintf(stdout, "archive s3://%s/%s: %d records verify; %d records of the current hour wait\n", *bucket, *prefix, n, res.Pending)
	return exitOK
}
