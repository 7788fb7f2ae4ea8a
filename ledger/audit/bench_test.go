package audit

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/ledger"
)

// BenchmarkVerifyAndRecompute1000: the work of `sluice audit verify` after
// the read, for 1000 chained decisions (the consistent sample, each with a
// fresh id, no budget): chain check then recompute.
func BenchmarkVerifyAndRecompute1000(b *testing.B) {
	t := &testing.T{}
	var recs []ledger.Stored
	prev := ledger.GenesisHash
	for i := range 1000 {
		m := consistent(t)
		id := fmt.Sprintf("dec-%032d", i)
		m["decision_id"], m["budget"], m["prev_hash"], m["hash"] = id, nil, prev, ""
		c, err := ledger.Canonical(m)
		if err != nil {
			b.Fatal(err)
		}
		h := ledger.HashRecord(c)
		m["hash"] = h
		body, _ := ledger.Canonical(m)
		recs = append(recs, ledger.Stored{Seq: int64(i + 1), Kind: ledger.KindDecision, RecordID: id, DecisionID: id,
			Queue: "train-a", Body: body, PrevHash: prev, Hash: h})
		prev = h
	}
	b.ResetTimer()
	for b.Loop() {
		if n, err := ledger.VerifyStored(recs); err != nil || n != 1000 {
			b.Fatal(n, err)
		}
		if d, _, err := Recompute(recs); err != nil || d != 1000 {
			b.Fatal(d, err)
		}
	}
}
