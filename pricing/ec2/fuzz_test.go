package ec2_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/ec2"
)

func FuzzParsePriceListItem(f *testing.F) {
	for _, d := range recordedDocs(f) {
		f.Add(d)
	}
	f.Add(priceDoc("us-east-1", p4d, "S", "-1"))
	f.Add(priceDoc("us-east-1", p4d, "S", "1e999999999"))
	f.Add(priceDoc("us-east-1", p4d, "S", "0.0000000000"))
	f.Add(priceDoc("us-east-1", p4d, "S.x\\y", "1.190000000000000000001"))
	f.Add(`{"product":{"attributes":{"regionCode":"us-east-1","instanceType":"p4d.24xlarge"}},"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"unit":"Hrs","pricePerUnit":{"USD":"1"}},"c":{"unit":"Hrs","pricePerUnit":{"USD":"1.0"}}}}}}}`)
	f.Add(`not json`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, doc string) {
		it, err := ec2.ParsePriceListItem(doc)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if it.RegionCode == "" || it.InstanceType == "" || !it.Price.IsPositive() {
			t.Fatalf("item %+v", it)
		}
		// The price is exactly the text's value, and the text is kept.
		if d, err := pricing.TextAmount(it.Raw); err != nil || !d.Equal(it.Price) {
			t.Fatalf("raw %q vs price %s", it.Raw, it.Price)
		}
		offers, _ := ec2.OnDemandOffers(it.RegionCode, it.InstanceType, []string{doc}, now, ec2.Config{})
		for _, o := range offers {
			checkOffer(t, o)
		}
	})
}

// FuzzSpotOffers fuzzes the spot item conversion: price text, zone, type and
// timestamps of two items competing for the same zone.
func FuzzSpotOffers(f *testing.F) {
	f.Add("6.791500", "us-east-1a", p4d, int64(0), "7.786400", "us-east-1a", int64(60))
	f.Add("-1", "us-east-1a", p4de, int64(10), "abc", "us-east-1a", int64(10))
	f.Add("1e40", "us-west-2a", p4d, int64(0), "0.000000", "", int64(-5))
	f.Add("1.190000000000000000001", "us-east-1-bos-1a", "m5.large", int64(1), " 1", "us-east-1\x00", int64(1))
	f.Fuzz(func(t *testing.T, p1, az1, typ string, s1 int64, p2, az2 string, s2 int64) {
		base := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
		t1, t2 := base.Add(time.Duration(s1%1e6)*time.Second), base.Add(time.Duration(s2%1e6)*time.Second)
		items := []ec2types.SpotPrice{
			{AvailabilityZone: aws.String(az1), InstanceType: ec2types.InstanceType(typ), ProductDescription: "Linux/UNIX", SpotPrice: aws.String(p1), Timestamp: &t1},
			{AvailabilityZone: aws.String(az2), InstanceType: ec2types.InstanceType(typ), ProductDescription: "Linux/UNIX", SpotPrice: aws.String(p2), Timestamp: &t2},
			{AvailabilityZone: aws.String(az1), InstanceType: p4d, ProductDescription: "Linux/UNIX", SpotPrice: aws.String(p2), Timestamp: &t2},
		}
		offers, dropped := ec2.SpotOffers("us-east-1", items, now, ec2.Config{InstanceTypes: []string{p4d, p4de, typ}})
		if len(offers)+len(dropped) > len(items) {
			t.Fatalf("%d offers + %d dropped from %d items", len(offers), len(dropped), len(items))
		}
		seen := map[string]bool{}
		for _, o := range offers {
			checkOffer(t, o)
			if seen[o.ID] {
				t.Fatalf("duplicate id %s", o.ID)
			}
			seen[o.ID] = true
			if o.Market != sluice.Spot || !o.MinBid.Amount.Equal(o.UnitPrice.Amount) || !strings.HasPrefix(o.ID, "aws:us-east-1:us-east-1") {
				t.Fatalf("%s: market %s min bid %s", o.ID, o.Market, o.MinBid)
			}
			if o.RawPrice != p1 && o.RawPrice != p2 {
				t.Fatalf("%s: raw %q is neither input", o.ID, o.RawPrice)
			}
		}
		for _, d := range dropped {
			if d.Provider != "aws" || d.Ref == "" || d.Reason == "" {
				t.Fatalf("dropped %+v", d)
			}
		}
	})
}

func checkOffer(t *testing.T, o sluice.Offer) {
	t.Helper()
	if !o.UnitPrice.Amount.IsPositive() || o.UnitPrice.Currency != "USD" || o.Basis != sluice.PerInstanceHour {
		t.Fatalf("%s: price %s basis %s", o.ID, o.UnitPrice, o.Basis)
	}
	if e := o.UnitPrice.Amount.Exponent(); e > pricing.MaxExponent || e < -pricing.MaxExponent {
		t.Fatalf("%s: exponent %d", o.ID, e)
	}
	if o.GPUsPerUnit != 8 || (o.GPUModel != "A100-80GB" && o.GPUModel != "A100-40GB") || o.Provider != "aws" {
		t.Fatalf("%s: %d × %q", o.ID, o.GPUsPerUnit, o.GPUModel)
	}
}

// FuzzCapacityBlockOffers fuzzes the Capacity Block conversion: offering id,
// zone, fee text, currency, duration and count, listed twice (the second
// listing with its fee doubled, so a repeat contradicts unless it is dropped).
func FuzzCapacityBlockOffers(f *testing.F) {
	f.Add("cb-0f3a9c2e7d41b5a86", "us-east-1d", "331.20", "USD", int32(24), int32(0), int32(1))
	f.Add("cb-1", "us-east-1c", "100", "USD", int32(6), int32(35), int32(1))
	f.Add("cb 2", "us-west-2a", "-1", "usd", int32(-1), int32(60), int32(2))
	f.Add("cb-3", "us-east-1a", "1e999999999", "EUR", int32(4368), int32(1), int32(0))
	f.Add("cb-4", "us-east-1a", "0.00000000001", "USD", int32(0), int32(1), int32(1))
	f.Fuzz(func(t *testing.T, id, az, fee, cur string, hours, minutes, count int32) {
		start := time.Date(2026, 12, 1, 11, 30, 0, 0, time.UTC)
		item := ec2types.CapacityBlockOffering{
			CapacityBlockOfferingId: aws.String(id), InstanceType: aws.String(p4de), AvailabilityZone: aws.String(az),
			InstanceCount: aws.Int32(count), StartDate: &start, EndDate: &start,
			CapacityBlockDurationHours: aws.Int32(hours), CapacityBlockDurationMinutes: aws.Int32(minutes),
			UpfrontFee: aws.String(fee), CurrencyCode: aws.String(cur),
		}
		second := item
		second.UpfrontFee = aws.String(fee + "0")
		offers, dropped := ec2.CapacityBlockOffers("us-east-1", p4de, []ec2types.CapacityBlockOffering{item, item, second}, now, ec2.Config{})
		if len(offers) > 1 || len(offers)+len(dropped) > 3 {
			t.Fatalf("%d offers, %d dropped from 3 listings of one offering", len(offers), len(dropped))
		}
		for _, o := range offers {
			if o.Market != sluice.Reserved || o.TermHours != int(hours) || o.RawPrice != fee || o.UnitsAvailable != 1 ||
				!o.UnitPrice.Amount.IsPositive() || o.UnitPrice.Currency != cur || o.GPUsPerUnit != 8 {
				t.Fatalf("offer %+v", o)
			}
			// The rate × duration is the fee to within the rounding.
			d, err := pricing.TextAmount(fee)
			if err != nil {
				t.Fatalf("fee %q accepted but unreadable: %v", fee, err)
			}
			mins := decimal.NewFromInt(int64(hours)*60 + int64(minutes))
			back := o.UnitPrice.Amount.Mul(mins).Div(decimal.NewFromInt(60))
			tol := decimal.New(5, -ec2.HourlyScale-1).Mul(mins).Div(decimal.NewFromInt(60))
			if back.Sub(d).Abs().Cmp(tol) > 0 {
				t.Fatalf("rate %s × %s min ≠ fee %s", o.UnitPrice.Amount, mins, d)
			}
		}
		for _, d := range dropped {
			if d.Provider != "aws" || d.Ref == "" || d.Reason == "" {
				t.Fatalf("dropped %+v", d)
			}
		}
	})
}
