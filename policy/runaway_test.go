package policy

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// A runaway rule in a compliance working copy must not hold `policy check`
// (or start-up, which runs the tests) for TestTimeout per test: the whole run
// is bounded by MaxTestRun, and the tests it cut count as errors (found by a
// new-user test: an expensive rule ran 5 minutes and more).
func TestRunTestsBoundsARunawayRule(t *testing.T) {
	saved := MaxTestRun
	MaxTestRun = time.Second
	t.Cleanup(func() { MaxTestRun = saved })
	fsys := fstest.MapFS{
		"slow_test.rego": {Data: []byte(`package sluice.slow_test

import rego.v1

test_runaway if {
	every x in numbers.range(1, 100000) {
		every y in numbers.range(1, 100000) {
			x + y > 0
		}
	}
}
`)},
	}
	r, err := RunTests(context.Background(), fsys)
	t.Logf("report %+v, err %v", r, err)
	if err != nil || r.OK() || r.Errored != 1 || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "deadline exceeded") {
		t.Fatalf("want the runaway test cut at the deadline and counted as an error: %+v, %v", r, err)
	}
}

// One evaluation is bounded by EvalTimeout: past it the decision fails with
// the deadline error — it never comes back with offers allowed.
func TestEvaluateIsBounded(t *testing.T) {
	e := newEvaluator(t)
	saved := EvalTimeout
	EvalTimeout = time.Nanosecond
	t.Cleanup(func() { EvalTimeout = saved })
	v, err := e.Evaluate(context.Background(), queue(nil), benchOffers(1000), time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC))
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") || v != nil {
		t.Fatalf("evaluation past its deadline: %d verdicts, err %v; want none and the deadline error", len(v), err)
	}
}
