package ledger

import (
	"testing"
	"time"
)

// Line claims on DynamoDB: first claim wins, the holder renews, another owner
// waits until steal allows, and the steal is a compare-and-set.
func TestDynamoClaimLine(t *testing.T) {
	ctx := t.Context()
	d := newDynamo(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	never := func(string, time.Time) bool { return false }
	expired := func(_ string, until time.Time) bool { return !t0.Add(5 * time.Minute).Before(until) }
	steps := []struct {
		owner string
		until time.Time
		steal func(string, time.Time) bool
		prev  string
		ok    bool
	}{
		{"a", t0.Add(2 * time.Minute), never, "", true},
		{"b", t0.Add(3 * time.Minute), never, "a", false},
		{"a", t0.Add(4 * time.Minute), never, "a", true}, // renew
		{"b", t0.Add(7 * time.Minute), expired, "a", true},
		{"a", t0.Add(8 * time.Minute), never, "b", false},
	}
	for i, s := range steps {
		prev, ok, err := d.ClaimLine(ctx, "dec-claim", 0, s.owner, s.until, s.steal)
		if err != nil || prev != s.prev || ok != s.ok {
			t.Fatalf("step %d (%s): prev %q ok %v err %v; want %q %v", i, s.owner, prev, ok, err, s.prev, s.ok)
		}
	}
	if prev, ok, err := d.ClaimLine(ctx, "dec-claim", 1, "a", t0, never); err != nil || !ok || prev != "" {
		t.Fatalf("another line: %q %v %v", prev, ok, err)
	}
	if _, _, err := d.ClaimLine(ctx, "", 0, "a", t0, never); err == nil {
		t.Fatal("empty decision id accepted")
	}
}
