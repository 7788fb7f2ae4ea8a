package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/policy"
)

// Environment variables that choose the policy when Options.Policy does not
// (the Lambda function is configured this way):
//
//	SLUICE_POLICY_DIR       a policy directory (a compliance working copy)
//	SLUICE_POLICY_BUNDLE    a bundle file (.tar.gz), or s3://bucket/key
//	SLUICE_POLICY_S3        s3://bucket/key of a bundle (same as SLUICE_POLICY_BUNDLE=s3://...)
//	SLUICE_POLICY_REVISION  the VCS revision of a policy directory (a bundle's
//	                        .manifest revision is used when it has one)
const (
	EnvPolicyDir      = "SLUICE_POLICY_DIR"
	EnvPolicyBundle   = "SLUICE_POLICY_BUNDLE"
	EnvPolicyS3       = "SLUICE_POLICY_S3"
	EnvPolicyRevision = "SLUICE_POLICY_REVISION"
)

// PolicySource says where the policy comes from. The zero value means the
// environment (see EnvPolicyDir), and with nothing set there, the policy
// embedded in the binary.
type PolicySource struct {
	// Dir is a policy directory (`--policy DIR`).
	Dir string
	// Bundle is a bundle file path or an s3://bucket/key URI.
	Bundle string
	// VCSRevision is appended to the policy revision (a git commit).
	VCSRevision string
	// S3 reads s3:// bundles; nil = a client from the default AWS config.
	S3 S3GetObjectAPI
}

// S3GetObjectAPI is the one S3 call the policy loader makes.
type S3GetObjectAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// maxPolicyBundle bounds a policy bundle read from S3 or a file.
const maxPolicyBundle = 32 << 20

// OpenPolicy prepares the policy src names (getenv fills what src leaves
// empty; nil = os.Getenv). The embedded policy is used as built (its tests
// ran in `go test ./policy` and `make policy`). Any other policy must load,
// compile in the sandbox and pass its own Rego tests (*_test.rego, at least
// one), or start-up stops with an error naming the source: Sluice never runs
// without a policy, nor with one whose tests fail.
func OpenPolicy(ctx context.Context, src PolicySource, getenv func(string) string) (*policy.Evaluator, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if src.Dir == "" && src.Bundle == "" {
		src.Dir = getenv(EnvPolicyDir)
		src.Bundle = getenv(EnvPolicyBundle)
		if src.Bundle == "" {
			src.Bundle = getenv(EnvPolicyS3)
		}
	}
	if src.VCSRevision == "" {
		src.VCSRevision = getenv(EnvPolicyRevision)
	}
	if src.Dir != "" && src.Bundle != "" {
		return nil, fmt.Errorf("policy: both a directory (%s) and a bundle (%s) given; choose one", src.Dir, src.Bundle)
	}
	if src.Dir == "" && src.Bundle == "" {
		return policy.New(ctx)
	}

	var (
		fsys fs.FS
		name = src.Dir
		vcs  = src.VCSRevision
	)
	if src.Dir != "" {
		info, err := os.Stat(src.Dir)
		if err != nil {
			return nil, fmt.Errorf("policy directory: %w", err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("policy directory %s: not a directory", src.Dir)
		}
		fsys = os.DirFS(src.Dir)
	} else {
		name = src.Bundle
		raw, err := readBundle(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("policy bundle %s: %w", src.Bundle, err)
		}
		var manifestRev string
		if fsys, manifestRev, err = policy.ReadBundle(bytes.NewReader(raw)); err != nil {
			return nil, fmt.Errorf("%s: %w", src.Bundle, err)
		}
		if manifestRev != "" {
			vcs = manifestRev
		}
	}
	report, err := policy.RunTests(ctx, fsys)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	if !report.OK() {
		if report.Passed+report.Failed+report.Errored == 0 {
			return nil, fmt.Errorf("policy %s: no Rego tests (*_test.rego) found; a policy is used only with its tests passing", name)
		}
		return nil, fmt.Errorf("policy %s: %d of %d Rego tests fail:\n  %s", name, report.Failed+report.Errored,
			report.Passed+report.Failed+report.Errored, strings.Join(report.Failures, "\n  "))
	}
	ev, err := policy.NewFromFS(ctx, fsys, policy.WithVCSRevision(vcs))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	slog.Info("policy loaded", "source", name, "revision", ev.Revision(), "tests_passed", report.Passed,
		"coverage_percent", fmt.Sprintf("%.1f", report.Coverage))
	return ev, nil
}

// readBundle reads a bundle from a file or an s3://bucket/key object.
func readBundle(ctx context.Context, src PolicySource) ([]byte, error) {
	rest, isS3 := strings.CutPrefix(src.Bundle, "s3://")
	if !isS3 {
		f, err := os.Open(src.Bundle)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readAtMost(f)
	}
	bucket, key, ok := strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return nil, errors.New("want s3://bucket/key")
	}
	client := src.S3
	if client == nil {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("AWS config: %w", err)
		}
		client = s3.NewFromConfig(cfg)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return readAtMost(out.Body)
}

func readAtMost(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPolicyBundle+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPolicyBundle {
		return nil, fmt.Errorf("larger than %d bytes", maxPolicyBundle)
	}
	return b, nil
}
