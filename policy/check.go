package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/tester"
)

// CoverageThreshold is the least line coverage, in percent, `sluice policy
// check` accepts (as `opa test --coverage --threshold 90`).
const CoverageThreshold = 90.0

// TestReport is the outcome of running a policy's Rego tests.
type TestReport struct {
	Passed, Failed, Errored, Skipped int
	// Failures names each failing test (with its failing table rows) or error.
	Failures []string
	// Coverage is the line coverage in percent over every module loaded,
	// tests included (what `opa test --coverage` reports); RuleCoverage over
	// the runtime files only. NotCovered lists "file:line" of runtime lines
	// no test reached.
	Coverage, RuleCoverage float64
	NotCovered             []string
	Duration               time.Duration
}

// OK reports whether every test passed and at least one ran.
func (r TestReport) OK() bool { return r.Failed == 0 && r.Errored == 0 && r.Passed > 0 }

// TestTimeout bounds one Rego test; MaxTestRun the whole test run (the
// embedded policy's 38 tests take well under a second).
var (
	TestTimeout = 30 * time.Second
	MaxTestRun  = 2 * time.Minute
)

// RunTests runs the *_test.rego files in fsys against its policy, in the
// same sandbox as evaluation (forbidden builtins refused, builtin errors
// raised), with coverage. err is for a policy that cannot be loaded or
// compiled; failing tests are in the report.
func RunTests(ctx context.Context, fsys fs.FS) (TestReport, error) {
	// Bound the whole run, not only each test: a runaway rule in a working
	// copy would otherwise take TestTimeout per test.
	ctx, cancel := context.WithTimeout(ctx, MaxTestRun)
	defer cancel()
	start := time.Now()
	set, err := load(fsys, true)
	if err != nil {
		return TestReport{}, err
	}
	compiler, err := compile(set.modules)
	if err != nil {
		return TestReport{}, err
	}
	cov := cover.New()
	ch, err := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(storeOf(set.data)).
		SetModules(set.modules).
		RaiseBuiltinErrors(true).
		SetCoverageQueryTracer(cov).
		SetTimeout(TestTimeout).
		RunTests(ctx, nil)
	if err != nil {
		return TestReport{}, fmt.Errorf("running policy tests: %w", err)
	}
	var r TestReport
	for res := range ch {
		name := strings.TrimPrefix(res.Package, "data.") + "." + res.Name
		switch {
		case res.Error != nil:
			r.Errored++
			r.Failures = append(r.Failures, fmt.Sprintf("%s: ERROR %v", name, res.Error))
		case res.Fail:
			r.Failed++
			var rows []string
			for p, sr := range res.SubResults.Iter {
				if sr.Fail && len(sr.SubResults) == 0 {
					rows = append(rows, strings.Join(p, " / "))
				}
			}
			slices.Sort(rows)
			msg := fmt.Sprintf("%s: FAIL (%s)", name, res.Location)
			if len(rows) > 0 {
				msg += ": " + strings.Join(rows, "; ")
			}
			r.Failures = append(r.Failures, msg)
		case res.Skip:
			r.Skipped++
		default:
			r.Passed++
		}
	}
	report := cov.Report(set.modules)
	r.Coverage = report.Coverage
	var covered, notCovered int
	for _, file := range set.runtime {
		fr, ok := report.Files[file]
		if !ok || !strings.HasSuffix(file, ".rego") {
			continue
		}
		covered += fr.CoveredLines
		notCovered += fr.NotCoveredLines
		for _, rng := range fr.NotCovered {
			for line := rng.Start.Row; line <= rng.End.Row; line++ {
				r.NotCovered = append(r.NotCovered, fmt.Sprintf("%s:%d", file, line))
			}
		}
	}
	if covered+notCovered > 0 {
		r.RuleCoverage = 100 * float64(covered) / float64(covered+notCovered)
	}
	r.Duration = time.Since(start)
	return r, nil
}

// CheckResult is the outcome of Check.
type CheckResult struct {
	// Unformatted lists the .rego files `opa fmt` would change.
	Unformatted []string
	// Problems are compile errors in strict mode (as `opa check --strict`),
	// forbidden builtins (file:line: builtin ...) and load errors.
	Problems []string
	Tests    TestReport
	// Revision is the policy's revision (SHA-256 of the runtime files).
	Revision string
}

// OK reports whether the policy passes every check: formatted, compiles in
// strict mode within the sandbox, every test passes, coverage ≥ CoverageThreshold.
func (c CheckResult) OK() bool {
	return len(c.Unformatted) == 0 && len(c.Problems) == 0 && c.Tests.OK() && c.Tests.Coverage >= CoverageThreshold
}

// Check runs the compliance toolchain on the policy in fsys, in process:
// `opa fmt --fail`, `opa check --strict` (with the sandbox's capabilities),
// and `opa test --coverage` with the threshold.
func Check(ctx context.Context, fsys fs.FS) (CheckResult, error) {
	var res CheckResult
	var regoFiles []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name != "." && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if path.Ext(name) == ".rego" && !strings.HasPrefix(path.Base(name), ".") {
			regoFiles = append(regoFiles, name)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("listing policy files: %w", err)
	}
	if len(regoFiles) == 0 {
		return res, errors.New("no .rego files found")
	}
	slices.Sort(regoFiles)
	for _, name := range regoFiles {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return res, err
		}
		formatted, err := format.SourceWithOpts(name, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if !bytes.Equal(formatted, src) {
			res.Unformatted = append(res.Unformatted, name)
		}
	}
	set, err := load(fsys, true)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
		return res, nil
	}
	res.Revision = set.revision
	if _, err := compile(set.modules); err != nil {
		res.Problems = append(res.Problems, problemLines(err)...)
		return res, nil
	}
	if res.Tests, err = RunTests(ctx, fsys); err != nil {
		res.Problems = append(res.Problems, err.Error())
	}
	return res, nil
}

// problemLines splits a compile error into one line per problem.
func problemLines(err error) []string {
	var errs ast.Errors
	if errors.As(err, &errs) {
		out := make([]string, len(errs))
		for i, e := range errs {
			out[i] = e.Error()
		}
		return out
	}
	return strings.Split(err.Error(), "\n")
}
