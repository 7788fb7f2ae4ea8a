package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// releaseFixture records one decision of queue "train-a" with two 1-slot
// lines, both placed: line 0 at 12.345678901234 USD/h, line 1 at 20 USD/h
// (billing CNY at 7.1072 CNY per USD).
func releaseFixture(t *testing.T) (*SQLite, string) {
	t.Helper()
	s, path := newLedger(t)
	rec := sampleDecision("dec-r", "train-a")
	splitLine(&rec)
	appendDecision(t, s, &rec)
	p0 := samplePlacement("dec-r", "train-a", 0, 1)
	p1 := samplePlacement("dec-r", "train-a", 1, 1)
	p1.Price = usd("20")
	for _, p := range []sluice.Placement{p0, p1} {
		if err := s.AppendPlacement(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	return s, path
}

func release(p sluice.Placement, state string, at time.Time, cost string, billed int64) sluice.Release {
	r := sluice.Release{DecisionID: p.DecisionID, Line: p.Line, Queue: p.Queue, Provider: p.Provider,
		ExternalIDs: p.ExternalIDs, State: state, Reason: sluice.ReleaseDrain, Slots: p.Slots,
		RequestedAt: time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC), At: at, BilledSeconds: billed}
	if cost != "" {
		r.AccruedCost = usd(cost)
	}
	return r
}

func openIDs(t *testing.T, s *SQLite, queue string) string {
	t.Helper()
	ops, err := s.OpenPlacements(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, op := range ops {
		parts = append(parts, op.DecisionID+"/"+string(rune('0'+op.Line))+":"+op.ReleaseState)
	}
	return strings.Join(parts, " ")
}

func live(t *testing.T, s *SQLite, queue string) int {
	t.Helper()
	n, err := s.LiveSlots(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReleaseStepsAndLiveSlots(t *testing.T) {
	s, _ := releaseFixture(t)
	p0 := samplePlacement("dec-r", "train-a", 0, 1)
	p1 := samplePlacement("dec-r", "train-a", 1, 1)

	// Most expensive first: line 1 (20 USD/h) before line 0 (12.35 USD/h).
	if got := openIDs(t, s, "train-a"); got != "dec-r/1: dec-r/0:" {
		t.Fatalf("open placements %q", got)
	}
	if got := openIDs(t, s, ""); got != "dec-r/1: dec-r/0:" {
		t.Fatalf("open placements of every queue %q", got)
	}
	if got := openIDs(t, s, "train-b"); got != "" {
		t.Fatalf("open placements of train-b %q", got)
	}
	if n := live(t, s, "train-a"); n != 2 {
		t.Fatalf("live %d, want 2", n)
	}

	// Pending: still open, still live.
	if err := s.AppendRelease(t.Context(), release(p1, sluice.ReleasePending, time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC), "", 0)); err != nil {
		t.Fatal(err)
	}
	if got := openIDs(t, s, "train-a"); got != "dec-r/1:release-pending dec-r/0:" {
		t.Fatalf("open placements %q", got)
	}
	if n := live(t, s, "train-a"); n != 2 {
		t.Fatalf("live %d after a pending release, want 2", n)
	}
	// A second pending record for the same placement is a duplicate.
	if err := s.AppendRelease(t.Context(), release(p1, sluice.ReleasePending, time.Date(2025, 3, 14, 10, 1, 0, 0, time.UTC), "", 0)); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("second pending: %v, want ErrDuplicate", err)
	}

	// Released: gone from the open list, its slot back to the queue.
	// 09:27:00 → 10:03:00.5 = 2160.5 s, billed per second: 2161 s × 20 USD/h = 12.0055… USD.
	if err := s.AppendRelease(t.Context(), release(p1, sluice.ReleaseReleased,
		time.Date(2025, 3, 14, 10, 3, 0, 500000000, time.UTC), "12.0055555556", 2161)); err != nil {
		t.Fatal(err)
	}
	if got := openIDs(t, s, "train-a"); got != "dec-r/0:" {
		t.Fatalf("open placements %q", got)
	}
	if n := live(t, s, "train-a"); n != 1 {
		t.Fatalf("live %d after a release, want 1", n)
	}
	// A placement is released or lost once.
	for _, st := range []string{sluice.ReleaseReleased, sluice.ReleaseLost} {
		err := s.AppendRelease(t.Context(), release(p1, st, time.Date(2025, 3, 14, 11, 0, 0, 0, time.UTC), "1", 1))
		if !errors.Is(err, sluice.ErrDuplicate) {
			t.Fatalf("%s after released: %v, want ErrDuplicate", st, err)
		}
	}
	if err := s.AppendRelease(t.Context(), release(p1, sluice.ReleasePending, time.Date(2025, 3, 14, 11, 0, 0, 0, time.UTC), "", 0)); !errors.Is(err, sluice.ErrDuplicate) {
		t.Fatalf("pending after released: %v, want ErrDuplicate", err)
	}

	// Lost (reconcile): no pending step needed.
	if err := s.AppendRelease(t.Context(), release(p0, sluice.ReleaseLost, time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC), "1", 1)); err != nil {
		t.Fatal(err)
	}
	if got := openIDs(t, s, "train-a"); got != "" {
		t.Fatalf("open placements %q", got)
	}
	if n := live(t, s, "train-a"); n != 0 {
		t.Fatalf("live %d after release + loss, want 0", n)
	}

	// An orphan: no decision, no slots.
	orphan := sluice.Release{Provider: "vast", ExternalIDs: []string{"inst-x"}, State: sluice.ReleaseReleased,
		Reason: sluice.ReleaseOrphan, RequestedAt: time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC),
		At: time.Date(2025, 3, 14, 12, 0, 1, 0, time.UTC), AccruedCost: usd("0.01"), BilledSeconds: 2}
	if err := s.AppendRelease(t.Context(), orphan); err != nil {
		t.Fatal(err)
	}
	// decision + 2 placements + pending + released + lost + orphan.
	mustVerify(t, s, 7)
	var id string
	if err := s.db.QueryRow(`SELECT record_id FROM records WHERE seq = 5`).Scan(&id); err != nil || id != "dec-r/placement/1/release/released" {
		t.Fatalf("record id %q, %v", id, err)
	}
}

func TestAppendReleaseRefuses(t *testing.T) {
	s, _ := releaseFixture(t)
	p0 := samplePlacement("dec-r", "train-a", 0, 1)
	at := time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		edit func(r *sluice.Release)
		want string
	}{
		{"unknown state", func(r *sluice.Release) { r.State = "done" }, "state"},
		{"no reason", func(r *sluice.Release) { r.Reason = "" }, "empty reason"},
		{"unknown placement", func(r *sluice.Release) { r.Line = 7 }, "no such decision"},
		{"other queue", func(r *sluice.Release) { r.Queue = "train-b" }, "queue"},
		{"other slots", func(r *sluice.Release) { r.Slots = 2 }, "slots"},
		{"negative seconds", func(r *sluice.Release) { r.BilledSeconds = -1 }, "negative"},
		{"orphan without ids", func(r *sluice.Release) { r.DecisionID, r.ExternalIDs, r.Slots = "", nil, 0 }, "orphan"},
		{"orphan with slots", func(r *sluice.Release) { r.DecisionID = "" }, "no slots"},
	}
	for _, c := range cases {
		r := release(p0, sluice.ReleasePending, at, "", 0)
		c.edit(&r)
		err := s.AppendRelease(t.Context(), r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	mustVerify(t, s, 3)
}

func TestReleaseOfFailedPlacementRefused(t *testing.T) {
	s, _ := newLedger(t)
	rec := sampleDecision("dec-f", "train-a")
	appendDecision(t, s, &rec)
	if err := s.AppendPlacement(t.Context(), failedPlacement("dec-f", "train-a", 0, 2, "insufficient capacity")); err != nil {
		t.Fatal(err)
	}
	p := failedPlacement("dec-f", "train-a", 0, 2, "")
	err := s.AppendRelease(t.Context(), release(p, sluice.ReleaseReleased, time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC), "0", 0))
	if !errors.Is(err, ErrNoDecision) {
		t.Fatalf("release of a failed placement: %v, want ErrNoDecision", err)
	}
	if got := openIDs(t, s, "train-a"); got != "" {
		t.Fatalf("a failed placement is not open: %q", got)
	}
}

func TestVerifyTamperedRelease(t *testing.T) {
	s, path := releaseFixture(t)
	p1 := samplePlacement("dec-r", "train-a", 1, 1)
	if err := s.AppendRelease(t.Context(), release(p1, sluice.ReleaseReleased, time.Date(2025, 3, 14, 10, 3, 0, 0, time.UTC), "12", 2160)); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, s, 4)
	// Moving the accrued cost down breaks the chain at the release record.
	tamper(t, path, `UPDATE records SET body = replace(body, '"amount":"12"', '"amount":"1"') WHERE seq = 4`)
	wantVerifyError(t, s, 4, ProblemHashMismatch, 3)
}

func TestClaimLine(t *testing.T) {
	s, _ := newLedger(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	never := func(string, time.Time) bool { return false }
	expired := func(_ string, until time.Time) bool { return !t0.Add(3 * time.Minute).Before(until) }
	steps := []struct {
		owner string
		steal func(string, time.Time) bool
		prev  string
		ok    bool
	}{
		{"a", never, "", true},    // first claim
		{"b", never, "a", false},  // held by a
		{"a", never, "a", true},   // a renews
		{"b", expired, "a", true}, // a's lease (t0+2m) has expired at t0+3m: b takes over
		{"a", never, "b", false},  // now b holds it
	}
	for i, st := range steps {
		prev, ok, err := s.ClaimLine(ctx, "dec-1", 0, st.owner, t0.Add(2*time.Minute), st.steal)
		if err != nil || prev != st.prev || ok != st.ok {
			t.Fatalf("step %d (%s): prev %q ok %v err %v; want %q %v", i, st.owner, prev, ok, err, st.prev, st.ok)
		}
	}
	// Another line is independent; claims are outside the chain.
	if prev, ok, err := s.ClaimLine(ctx, "dec-1", 1, "a", t0, never); err != nil || !ok || prev != "" {
		t.Fatalf("line 1: %q %v %v", prev, ok, err)
	}
	mustVerify(t, s, 0)
}
