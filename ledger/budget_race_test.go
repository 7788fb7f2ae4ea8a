package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/sandbox"
)

// fixedQuotes is a quote source holding one recorded-style offer: a RunPod
// spot A100-80GB 8-GPU unit at 10 USD per unit-hour (1.25 USD per GPU-hour).
type fixedQuotes struct{ now time.Time }

func (q fixedQuotes) Collect(context.Context) ([]sluice.Offer, []sluice.SourceReport) {
	return []sluice.Offer{{
		ID: "runpod:NVIDIA A100-SXM4-80GB:secure:8:spot", Provider: "runpod", SKU: "NVIDIA A100-SXM4-80GB",
		GPUModel: "A100-80GB", GPUsPerUnit: 8, Region: "global", Market: sluice.Spot,
		UnitPrice: usd("10"), Basis: sluice.PerGPUHour, RawPrice: "1.25", MinBid: usd("10"), UnitsAvailable: 1000,
		FetchedAt: q.now, ExpiresAt: q.now.Add(5 * time.Minute), Source: "test",
	}}, []sluice.SourceReport{{Provider: "runpod", Offers: 1}}
}

// allowAll is the policy of this test: every offer allowed, in the overseas
// zone (the race is about the ledger; package policy has its own tests).
type allowAll struct{}

func (allowAll) Evaluate(_ context.Context, _ sluice.QueueProfile, offers []sluice.Offer, _ time.Time) ([]sluice.Verdict, error) {
	vs := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		vs[i] = sluice.Verdict{OfferID: o.ID, Allow: true, Zone: sluice.ZoneOverseas}
	}
	return vs, nil
}

func (allowAll) Revision() string { return "sha256:test-allow-all" }

// 50 alarms for 50 queues of the emergency tier fire at once; the tier's
// monthly budget is 1000 USD and each queue wants 2 slots (2 units × 2 h ×
// 10 USD + rework 0.05/h × 2 h × 30 min / 120 × 10 USD per unit = 40.5 USD).
// Whatever the interleaving, 24 decisions buy 2 slots (972 USD), one is cut
// to the 1 slot that fits the 28 USD left (20.25 USD, reason budget), and the
// other 25 buy nothing (reason budget): 992.25 USD committed, exactly. A
// decision that exhausts the burst core's stale retries is redelivered, as
// SNS/Lambda would, until it is recorded; every alarm ends with exactly one
// decision record, and the chain verifies.
func TestBudgetRace(t *testing.T) {
	const alarms = 50
	now := time.Date(2026, 11, 15, 10, 0, 0, 0, time.UTC)
	pol := allowAll{}
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			b := &sluice.Burst{
				Profiles: func(q string) (sluice.QueueProfile, error) {
					return sluice.QueueProfile{Queue: q, GPUModels: []string{"A100-80GB"}, GPUsPerSlot: 8,
						HoursPerSlot: dec("2"), MaxSlots: 2, Checkpointable: true, CheckpointIntervalMinutes: 30,
						DataClass: "public", ExportApproved: true, Tier: sluice.TierEmergency, Team: "vision",
						MaxPricePerGPUHour: usd("3")}, nil
				},
				Quotes: fixedQuotes{now}, Policy: pol, Ledger: s, Broker: &sandbox.Broker{Now: func() time.Time { return now }},
				Clock: sluice.ClockFunc(func() time.Time { return now }), BillingCurrency: "USD",
				InterruptionsPerHour: map[string]decimal.Decimal{"runpod": dec("0.05")},
				Budgets:              map[sluice.Tier]sluice.Money{sluice.TierEmergency: usd("1000")},
				CodeVersion:          "test",
			}
			var (
				wg                     sync.WaitGroup
				redeliveries, replayed atomic.Int64
				mu                     sync.Mutex
				ids                    = map[string]sluice.DecisionRecord{}
			)
			start := time.Now()
			for i := range alarms {
				wg.Go(func() {
					q := fmt.Sprintf("train-%02d", i)
					trig := sluice.Trigger{AlarmName: q + "-depth", AlarmARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + q + "-depth",
						State: sluice.StateAlarm, StateChangeTime: now.Add(-time.Minute), Region: "us-east-1", Queue: q, Depth: 2,
						DepthSource: "alarm-datapoint", Delivery: "sns"}
					for try := 0; ; try++ {
						rec, again, err := b.Decide(ctx, trig)
						if err == nil {
							if again {
								replayed.Add(1)
							}
							mu.Lock()
							ids[rec.DecisionID] = rec
							mu.Unlock()
							return
						}
						if !errors.Is(err, sluice.ErrStale) || try == 100 {
							t.Errorf("%s: %v", q, err)
							return
						}
						redeliveries.Add(1)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			if len(ids) != alarms {
				t.Fatalf("%d alarms decided, want %d", len(ids), alarms)
			}
			recs, err := s.Records(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			accepted, full, cut, none, lines, placements := decimal.Zero, 0, 0, 0, 0, 0
			for _, r := range recs {
				seen[r.RecordID]++
				switch r.Kind {
				case KindDecision:
					rec := ids[r.DecisionID]
					accepted = accepted.Add(rec.TotalExpectedCost.Amount)
					lines += len(rec.Lines)
					budgetShort := len(rec.Short) == 1 && rec.Short[0].Code == sluice.ReasonBudget
					switch {
					case rec.SlotsCovered == 2 && len(rec.Short) == 0:
						full++
					case rec.SlotsCovered == 1 && budgetShort:
						cut++
					case rec.SlotsCovered == 0 && budgetShort:
						none++
					default:
						t.Errorf("%s: covered %d short %+v", rec.DecisionID, rec.SlotsCovered, rec.Short)
					}
				case KindPlacement:
					placements++
				}
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("record %s stored %d times", id, c)
				}
			}
			if len(seen) != alarms+lines || placements != lines {
				t.Errorf("%d records (%d placements), want %d decisions + %d placements", len(seen), placements, alarms, lines)
			}
			if accepted.String() != "992.25" || full != 24 || cut != 1 || none != 25 {
				t.Errorf("accepted %s USD (full %d, cut %d, none %d), want 992.25 (24, 1, 25)", accepted, full, cut, none)
			}
			if spent, err := s.TierSpend(ctx, sluice.TierEmergency, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
				time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil || !spent.Equal(accepted) || spent.GreaterThan(dec("1000")) {
				t.Errorf("TierSpend %s (%v), want %s ≤ 1000", spent, err, accepted)
			}
			if n, err := s.Verify(ctx); err != nil || n != len(recs) {
				t.Fatalf("Verify: %d %v", n, err)
			}
			t.Logf("%s: %d alarms → %d records in %v; accepted %s USD of 1000 (full %d, cut %d, none %d); %d redeliveries after stale retries, %d replayed",
				name, alarms, len(recs), elapsed.Round(time.Millisecond), accepted, full, cut, none, redeliveries.Load(), replayed.Load())
		})
	}
}
