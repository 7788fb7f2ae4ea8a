package bid

import (
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

func usd(s string) sluice.Money { return sluice.MustMoney(s, "USD") }
func cny(s string) sluice.Money { return sluice.MustMoney(s, "CNY") }

func TestDecide(t *testing.T) {
	tests := []struct {
		name                string
		in                  Input
		unit                sluice.BidUnit
		decided, sent, text string
		err                 error // nil: success
	}{
		{name: "runpod 8-GPU spot offer: whole-unit price becomes a per-GPU bid",
			in:   Input{Provider: "runpod", PerUnit: usd("5.52"), GPUsPerUnit: 8, Limits: Limits{MinBid: usd("5.52"), OnDemand: usd("14.32")}},
			unit: sluice.BidPerGPU, decided: "0.69", sent: "0.69", text: "0.690"},
		{name: "runpod 3-GPU: inexact division rounds the sent bid down, decided keeps 10 places",
			in:   Input{Provider: "runpod", PerUnit: usd("1"), GPUsPerUnit: 3},
			unit: sluice.BidPerGPU, decided: "0.3333333333", sent: "0.333", text: "0.333"},
		{name: "runpod 4-GPU: rounding down below the min bid is refused",
			in:  Input{Provider: "runpod", PerUnit: usd("2.75"), GPUsPerUnit: 4, Limits: Limits{MinBid: usd("2.75")}},
			err: sluice.ErrBidOutOfRange, unit: sluice.BidPerGPU, decided: "0.6875", sent: "0.687", text: "0.687"},
		{name: "vast interruptible: price per machine, carried as is",
			in:   Input{Provider: "vast", PerUnit: usd("1.234567"), GPUsPerUnit: 2, Limits: Limits{MinBid: usd("1.234567")}},
			unit: sluice.BidPerMachine, decided: "1.234567", sent: "1.234567", text: "1.234567"},
		{name: "vast above 128 per machine refused",
			in: Input{Provider: "vast", PerUnit: usd("130"), GPUsPerUnit: 8}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerMachine, decided: "130", sent: "130", text: "130.000000"},
		{name: "vast above 32 per GPU refused",
			in: Input{Provider: "vast", PerUnit: usd("33"), GPUsPerUnit: 1}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerMachine, decided: "33", sent: "33", text: "33.000000"},
		{name: "aws 0.001 refused before the call",
			in: Input{Provider: "aws", PerUnit: usd("0.001"), GPUsPerUnit: 8}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerInstance, decided: "0.001", sent: "0.001", text: "0.001000"},
		{name: "aws under 0.001 refused",
			in: Input{Provider: "aws", PerUnit: usd("0.0005"), GPUsPerUnit: 8}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerInstance, decided: "0.0005", sent: "0.0005", text: "0.000500"},
		{name: "aws 0.0011 rounds down to 0.001 and is refused",
			in: Input{Provider: "aws", PerUnit: usd("0.0010009"), GPUsPerUnit: 8}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerInstance, decided: "0.0010009", sent: "0.001", text: "0.001000"},
		{name: "aws per instance 6 places",
			in:   Input{Provider: "aws", PerUnit: usd("12.0870009"), GPUsPerUnit: 8, Limits: Limits{OnDemand: usd("32.7726")}},
			unit: sluice.BidPerInstance, decided: "12.0870009", sent: "12.087", text: "12.087000"},
		{name: "aws above on-demand refused",
			in: Input{Provider: "aws", PerUnit: usd("40"), GPUsPerUnit: 8, Limits: Limits{OnDemand: usd("32.7726")}}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerInstance, decided: "40"},
		{name: "aliyun limit with 4 decimals rounded down to 3",
			in:   Input{Provider: "aliyun", PerUnit: cny("12.3456"), GPUsPerUnit: 1, Limits: Limits{MinBid: cny("12.3"), OnDemand: cny("34.7")}},
			unit: sluice.BidPerInstance, decided: "12.3456", sent: "12.345", text: "12.345"},
		{name: "aliyun 4 decimals equal to min bid: rounding down would go below it, refused",
			in: Input{Provider: "aliyun", PerUnit: cny("12.3456"), GPUsPerUnit: 1, Limits: Limits{MinBid: cny("12.3456")}}, err: sluice.ErrBidOutOfRange,
			unit: sluice.BidPerInstance, decided: "12.3456", sent: "12.345", text: "12.345"},
		{name: "autodl ceiling per GPU in milli-yuan",
			in:   Input{Provider: "autodl", PerUnit: cny("13.36"), GPUsPerUnit: 2},
			unit: sluice.BidPerGPU, decided: "6.68", sent: "6.68", text: "6680"},
		{name: "autodl sub-milli-yuan rounds down",
			in:   Input{Provider: "autodl", PerUnit: cny("6.6809"), GPUsPerUnit: 1},
			unit: sluice.BidPerGPU, decided: "6.6809", sent: "6.68", text: "6680"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Decide(tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if b.Unit != tc.unit {
				t.Errorf("unit = %q, want %q", b.Unit, tc.unit)
			}
			if got := b.Decided.Amount.String(); got != tc.decided {
				t.Errorf("decided = %s, want %s", got, tc.decided)
			}
			if tc.sent != "" {
				if got := b.Sent.Amount.String(); got != tc.sent {
					t.Errorf("sent = %s, want %s", got, tc.sent)
				}
				if b.Text != tc.text {
					t.Errorf("text = %q, want %q", b.Text, tc.text)
				}
			}
		})
	}
}

func TestForLine(t *testing.T) {
	bidAmt := usd("0.40")
	vast := sluice.Line{OfferID: "vast:1:bid", Provider: "vast", Market: sluice.Spot, Units: 1, GPUs: 2, Bid: &bidAmt}
	b, ok, err := ForLine(vast, Limits{})
	if err != nil || !ok || b.Text != "0.400000" || b.Unit != sluice.BidPerMachine {
		t.Fatalf("vast interruptible: %+v %v %v", b, ok, err)
	}
	vast.Bid = nil
	if _, ok, err := ForLine(vast, Limits{}); !ok || err == nil || !strings.Contains(err.Error(), "carries no bid") {
		t.Fatalf("vast interruptible without a price must be refused: ok=%v err=%v", ok, err)
	}
	od := sluice.Line{Provider: "aws", Market: sluice.OnDemand, Units: 1, GPUs: 8}
	if _, ok, err := ForLine(od, Limits{}); ok || err != nil {
		t.Fatalf("on-demand sends no bid: ok=%v err=%v", ok, err)
	}
	adl := sluice.Line{Provider: "autodl", Market: sluice.OnDemand, Units: 2, GPUs: 4, UnitPrice: cny("13.36")}
	if b, ok, err := ForLine(adl, Limits{}); !ok || err != nil || b.Text != "6680" {
		t.Fatalf("autodl ceiling: %+v %v %v", b, ok, err)
	}
}

func TestLimitsFor(t *testing.T) {
	offers := []sluice.Offer{
		{ID: "aws:us-east-1:us-east-1a:p4d.24xlarge:spot", Provider: "aws", SKU: "p4d.24xlarge", Region: "us-east-1", GPUsPerUnit: 8,
			Market: sluice.Spot, UnitPrice: usd("12.5"), MinBid: usd("12.5")},
		{ID: "aws:us-east-1:p4d.24xlarge:on-demand", Provider: "aws", SKU: "p4d.24xlarge", Region: "us-east-1", GPUsPerUnit: 8,
			Market: sluice.OnDemand, UnitPrice: usd("32.7726")},
		{ID: "aws:us-west-2:p4d.24xlarge:on-demand", Provider: "aws", SKU: "p4d.24xlarge", Region: "us-west-2", GPUsPerUnit: 8,
			Market: sluice.OnDemand, UnitPrice: usd("1")},
	}
	lim := LimitsFor(offers, offers[0].ID)
	if lim.MinBid.String() != "12.5 USD" || lim.OnDemand.String() != "32.7726 USD" {
		t.Fatalf("limits = %+v", lim)
	}
	if lim := LimitsFor(offers, "nope"); lim.MinBid.IsSet() || lim.OnDemand.IsSet() {
		t.Fatalf("unknown offer: %+v", lim)
	}
}

// FuzzDecide checks the rounding: the sent bid has at most the provider's
// places, never exceeds the decided bid, is less than one step below it, and
// a success never goes below the min bid or the provider's bounds.
func FuzzDecide(f *testing.F) {
	for _, s := range []struct {
		p, amt, min string
		gpus        int
	}{{"runpod", "5.52", "5.52", 8}, {"aws", "0.0011", "", 8}, {"aliyun", "12.3456", "1", 1}, {"vast", "1.234567", "0.5", 2}, {"autodl", "6.6809", "", 1}} {
		f.Add(s.p, s.amt, s.min, s.gpus)
	}
	f.Fuzz(func(t *testing.T, provider, amt, minBid string, gpus int) {
		r, ok := Rules[provider]
		if !ok || gpus < 1 || gpus > sluice.MaxGPUsPerUnit {
			return
		}
		per, err := sluice.NewMoney(amt, "USD")
		if err != nil || per.Amount.Exponent() < -30 || per.Amount.Exponent() > 10 {
			return
		}
		in := Input{Provider: provider, PerUnit: per, GPUsPerUnit: gpus}
		if m, err := sluice.NewMoney(minBid, "USD"); err == nil && m.Amount.Exponent() > -30 && m.Amount.Exponent() < 10 {
			in.Limits.MinBid = m
		}
		b, err := Decide(in)
		if err != nil && !errors.Is(err, sluice.ErrBidOutOfRange) {
			t.Fatalf("unexpected error class: %v", err)
		}
		if b.Text == "" {
			return
		}
		factor := decimal.NewFromInt(1)
		if r.Unit == sluice.BidPerGPU {
			factor = decimal.NewFromInt(int64(gpus))
		}
		sentUnit := b.Sent.Amount.Mul(factor)
		if sentUnit.GreaterThan(per.Amount) {
			t.Fatalf("sent %s × %s > decided %s", b.Sent.Amount, factor, per.Amount)
		}
		step := decimal.New(1, -(r.Places + r.Shift))
		if b.Sent.Amount.Add(step).Mul(factor).LessThanOrEqual(per.Amount) {
			t.Fatalf("sent %s is a full step or more below %s / %s", b.Sent.Amount, per.Amount, factor)
		}
		wire, werr := decimal.NewFromString(b.Text)
		if werr != nil || !wire.Equal(b.Sent.Amount.Shift(r.Shift)) || wire.Exponent() < -r.Places && !wire.Equal(wire.Truncate(r.Places)) {
			t.Fatalf("text %q does not match sent %s", b.Text, b.Sent.Amount)
		}
		if err == nil && in.Limits.MinBid.IsSet() && sentUnit.LessThan(in.Limits.MinBid.Amount) {
			t.Fatalf("accepted bid %s below min %s", sentUnit, in.Limits.MinBid.Amount)
		}
		if err == nil && (wire.LessThan(r.Min) || r.MinExclusive && wire.Equal(r.Min)) {
			t.Fatalf("accepted wire %s below the provider minimum %s", wire, r.Min)
		}
	})
}
