package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// BenchmarkHandleWarm is a warm invocation of the burst handler in process:
// an EventBridge alarm whose decision is already recorded (Lambda's retry, or
// the same alarm through a second delivery), with EMF on. Under the runtime
// interface emulator (go test ./functions) the same call takes the figures in
// infra/README.md.
func BenchmarkHandleWarm(b *testing.B) {
	a, err := Open(context.Background(), Options{
		ConfigPath: "../testdata/sluice.yaml", ReplayDir: "../testdata/replay",
		LedgerPath: filepath.Join(b.TempDir(), "ledger.db"),
		Clock:      sluice.ClockFunc(func() time.Time { return decisionAt }), CodeVersion: "test",
	})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	raw, err := os.ReadFile("../testdata/events/alarm-eventbridge-burst.json")
	if err != nil {
		b.Fatal(err)
	}
	var emf bytes.Buffer
	h := &Handler{App: a, Function: FunctionBurst, Metrics: &metrics.Writer{W: &emf, Namespace: metrics.Namespace}}
	if res, err := h.Handle(context.Background(), raw); err != nil || len(res.Decisions) != 1 {
		b.Fatalf("%+v %v", res, err)
	}
	b.ResetTimer()
	for b.Loop() {
		emf.Reset()
		res, err := h.Handle(context.Background(), raw)
		if err != nil || !res.Decisions[0].Replayed {
			b.Fatalf("%+v %v", res, err)
		}
	}
}
