package ec2_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdkec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/ec2"
)

func TestCapacityBlockHourly(t *testing.T) {
	for _, tt := range []struct {
		fee                   string
		count, hours, minutes int
		want                  string
	}{
		{"331.20", 1, 24, 0, "13.8"},                            // the recording
		{"100", 1, 6, 35, "15.1898734177"},                      // 6000 ÷ 395 = 15.18987341772…: rounded down
		{"200", 3, 7, 0, "9.5238095238"},                        // 200 ÷ 21 = 9.52380952380…
		{"2", 3, 0, 1, "40"},                                    // 2 × 60 ÷ 3
		{"1.00000000005", 1, 1, 0, "1.0000000001"},              // exactly half: away from zero
		{"1.000000000049999", 1, 1, 0, "1"},                     // just under half
		{"4900", 2, 24, 30, "100"},                              // 4900 × 60 ÷ (2 × 1470)
		{"16000.00", 4, 48, 0, "83.3333333333"},                 // 16000 ÷ 192
		{"0.00000000001", 1, 4368, 0, "0"},                      // rounds to zero (the offer is then dropped)
		{"123456789.123456789", 1, 1, 0, "123456789.123456789"}, // no rounding needed: exact
	} {
		fee := decimal.RequireFromString(tt.fee)
		got, err := ec2.CapacityBlockHourly(fee, tt.count, tt.hours, tt.minutes)
		if err != nil || got.String() != tt.want {
			t.Errorf("CapacityBlockHourly(%s, %d, %d h, %d min) = %s, %v; want %s", tt.fee, tt.count, tt.hours, tt.minutes, got, err, tt.want)
		}
	}
	for _, bad := range [][3]int{{0, 24, 0}, {1, 0, 0}, {1, -1, 30}, {1, 1, -1}} {
		if _, err := ec2.CapacityBlockHourly(decimal.NewFromInt(1), bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("CapacityBlockHourly(1, %v): no error", bad)
		}
	}
}

// cb is a CapacityBlockOffering with the usual fields; over changes it.
func cb(id, typ, az, fee string, hours int32, over func(*ec2types.CapacityBlockOffering)) ec2types.CapacityBlockOffering {
	start := time.Date(2026, 12, 1, 11, 30, 0, 0, time.UTC)
	end := start.Add(time.Duration(hours) * time.Hour)
	o := ec2types.CapacityBlockOffering{
		CapacityBlockOfferingId: aws.String(id), InstanceType: aws.String(typ), AvailabilityZone: aws.String(az),
		InstanceCount: aws.Int32(1), StartDate: &start, EndDate: &end,
		CapacityBlockDurationHours: aws.Int32(hours), CapacityBlockDurationMinutes: aws.Int32(0),
		UpfrontFee: aws.String(fee), CurrencyCode: aws.String("USD"), Tenancy: ec2types.CapacityReservationTenancyDefault,
	}
	if over != nil {
		over(&o)
	}
	return o
}

func TestCapacityBlockOffers(t *testing.T) {
	later := func(o *ec2types.CapacityBlockOffering) {
		s := o.StartDate.Add(48 * time.Hour)
		e := o.EndDate.Add(48 * time.Hour)
		o.StartDate, o.EndDate = &s, &e
	}
	items := []ec2types.CapacityBlockOffering{
		cb("cb-late", p4de, "us-east-1d", "331.20", 24, later),
		cb("cb-early", p4de, "us-east-1d", "331.20", 24, nil),
		cb("cb-1c", p4de, "us-east-1c", "100", 6, func(o *ec2types.CapacityBlockOffering) { o.CapacityBlockDurationMinutes = aws.Int32(35) }),
		cb("cb-other", p4d, "us-east-1a", "300", 24, nil), // another type: ignored
		cb("cb-eur", p4de, "us-east-1a", "300.00", 24, func(o *ec2types.CapacityBlockOffering) { o.CurrencyCode = aws.String("EUR") }),
		cb("cb bad", p4de, "us-east-1a", "1", 24, nil),
		cb("cb-zone", p4de, "us-west-2a", "1", 24, nil),
		cb("cb-two", p4de, "us-east-1a", "1", 24, func(o *ec2types.CapacityBlockOffering) { o.InstanceCount = aws.Int32(2) }),
		cb("cb-nohours", p4de, "us-east-1a", "1", 24, func(o *ec2types.CapacityBlockOffering) { o.CapacityBlockDurationHours = nil }),
		cb("cb-min", p4de, "us-east-1a", "1", 24, func(o *ec2types.CapacityBlockOffering) { o.CapacityBlockDurationMinutes = aws.Int32(60) }),
		cb("cb-long", p4de, "us-east-1a", "1", 4369, nil),
		cb("cb-zero", p4de, "us-east-1a", "0.00", 24, nil),
		cb("cb-comma", p4de, "us-east-1a", "2,916.00", 24, nil),
		cb("cb-nofee", p4de, "us-east-1a", "1", 24, func(o *ec2types.CapacityBlockOffering) { o.UpfrontFee = nil }),
		cb("cb-cur", p4de, "us-east-1a", "1", 24, func(o *ec2types.CapacityBlockOffering) { o.CurrencyCode = aws.String("usd") }),
		cb("cb-tiny", p4de, "us-east-1a", "0.00000000001", 4368, nil),
		cb("cb-early", p4de, "us-east-1d", "331.20", 24, nil), // identical repeat: reported
		cb("cb-1c", p4de, "us-east-1c", "101", 6, nil),        // contradicts item 2: both dropped
	}
	offers, dropped := ec2.CapacityBlockOffers("us-east-1", p4de, items, now, ec2.Config{TTL: time.Minute})
	diff(t, "offers", rows(offers), []string{
		"aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-eur | sku=p4de.24xlarge A100-80GB x8 | us-east-1 | reserved | 12.5 EUR | min_bid - | raw 300.00/instance-hour | units 1 | term 24h",
		"aws:us-east-1:us-east-1d:p4de.24xlarge:reserved:cb-early | sku=p4de.24xlarge A100-80GB x8 | us-east-1 | reserved | 13.8 USD | min_bid - | raw 331.20/instance-hour | units 1 | term 24h",
		"aws:us-east-1:us-east-1d:p4de.24xlarge:reserved:cb-late | sku=p4de.24xlarge A100-80GB x8 | us-east-1 | reserved | 13.8 USD | min_bid - | raw 331.20/instance-hour | units 1 | term 24h",
	})
	diff(t, "dropped", drops(dropped), []string{
		`aws:us-east-1:p4de.24xlarge:reserved: capacityBlockOfferingSet item 5: capacityBlockOfferingId "cb bad": not an offering id`,
		`aws:us-east-1:p4de.24xlarge:reserved: capacityBlockOfferingSet item 6 (cb-zone): availabilityZone "us-west-2a": not a zone of us-east-1`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-two: capacityBlockOfferingSet item 7: instanceCount 2: asked for 1 (a block is bought whole)`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-nohours: capacityBlockOfferingSet item 8: capacityBlockDurationHours missing`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-min: capacityBlockOfferingSet item 9: capacityBlockDurationMinutes 60: not 0..59`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-long: capacityBlockOfferingSet item 10: capacityBlockDurationHours 4369: not 0..4368`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-zero: capacityBlockOfferingSet item 11: upfrontFee "0.00": zero`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-comma: capacityBlockOfferingSet item 12: upfrontFee "2,916.00": not a decimal`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-nofee: capacityBlockOfferingSet item 13: upfrontFee missing`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-cur: capacityBlockOfferingSet item 14: currencyCode "usd": not an ISO 4217 code`,
		`aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-tiny: capacityBlockOfferingSet item 15: upfrontFee "0.00000000001": hourly rate rounds to 0 at 10 places`,
		`aws:us-east-1:us-east-1d:p4de.24xlarge:reserved:cb-early: capacityBlockOfferingSet item 16: duplicate: offering cb-early already seen in this response (item 1)`,
		`aws:us-east-1:us-east-1c:p4de.24xlarge:reserved:cb-1c: capacityBlockOfferingSet item 17: duplicate: offering cb-1c contradicts item 2 (us-east-1c 101 USD for 6 h vs us-east-1c 100 USD for 6 h): every listing dropped`,
		`aws:us-east-1:us-east-1c:p4de.24xlarge:reserved:cb-1c: capacityBlockOfferingSet item 2: duplicate: offering cb-1c contradicts item 17 (us-east-1c 100 USD for 6 h vs us-east-1c 101 USD for 6 h): every listing dropped`,
	})
	for _, o := range offers {
		if o.Market != sluice.Reserved || o.MinBid.IsSet() || !o.ExpiresAt.Equal(now.Add(time.Minute)) || o.Basis != sluice.PerInstanceHour {
			t.Errorf("%s: market %s min bid %v expires %v basis %s", o.ID, o.Market, o.MinBid, o.ExpiresAt, o.Basis)
		}
	}
	if got := offers[1].Source; got != "aws ec2 DescribeCapacityBlockOfferings us-east-1 zone us-east-1d: upfront fee 331.20 USD for 24 h (1 instance, 2026-12-01T11:30:00Z–2026-12-02T11:30:00Z)" {
		t.Errorf("Source = %q", got)
	}

	// Minutes: 6 h 35 min → TermHours 6, rate over 395 minutes, Source names both.
	offers, dropped = ec2.CapacityBlockOffers("us-east-1", p4de, items[2:3], now, ec2.Config{})
	if len(offers) != 1 || len(dropped) != 0 || offers[0].TermHours != 6 || offers[0].UnitPrice.String() != "15.1898734177 USD" ||
		!strings.Contains(offers[0].Source, "upfront fee 100 USD for 6 h 35 min (1 instance, ") {
		t.Errorf("offers %v %q dropped %v", rows(offers), offers[0].Source, drops(dropped))
	}

	// A type this source does not price.
	if _, d := ec2.CapacityBlockOffers("us-east-1", "p5.48xlarge", items, now, ec2.Config{}); len(d) != 1 || d[0].Ref != "aws:us-east-1:p5.48xlarge:reserved" {
		t.Errorf("dropped %v", drops(d))
	}
}

// cbItem is one <item> of a DescribeCapacityBlockOfferings answer.
func cbItem(id, typ, az, fee string, hours int) string {
	return fmt.Sprintf(`<item><capacityBlockOfferingId>%s</capacityBlockOfferingId><instanceType>%s</instanceType>`+
		`<availabilityZone>%s</availabilityZone><instanceCount>1</instanceCount><startDate>2026-12-01T11:30:00.000Z</startDate>`+
		`<endDate>2026-12-02T11:30:00.000Z</endDate><capacityBlockDurationHours>%d</capacityBlockDurationHours>`+
		`<capacityBlockDurationMinutes>0</capacityBlockDurationMinutes><upfrontFee>%s</upfrontFee><currencyCode>USD</currencyCode>`+
		`<tenancy>default</tenancy></item>`, id, typ, az, hours, fee)
}

// TestCapacityBlockCalls: the SDK paginator follows nextToken, the request
// carries the configured duration, one instance and the 14-day window, and a
// throttled region loses only its own calls.
func TestCapacityBlockCalls(t *testing.T) {
	ef := &ec2Fake{
		pages: map[string][]string{"us-east-1": {spotXML("")}},
		blocks: map[string][]string{
			"us-east-1 " + p4de: {
				cbXML("page1", cbItem("cb-a", p4de, "us-east-1a", "662.40", 48)),
				cbXML("", cbItem("cb-b", p4de, "us-east-1b", "700.00", 48)),
			},
		},
		fail: map[string]struct {
			status     int
			code, text string
		}{"us-west-2": {503, "RequestLimitExceeded", "Request limit exceeded."}},
	}
	c := fakeClient(t, ef, &listFake{}, ec2.Config{InstanceTypes: []string{p4de}, CapacityDurationHours: 48})
	offers, dropped, err := c.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "offers", rows(offers), []string{
		"aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cb-a | sku=p4de.24xlarge A100-80GB x8 | us-east-1 | reserved | 13.8 USD | min_bid - | raw 662.40/instance-hour | units 1 | term 48h",
		"aws:us-east-1:us-east-1b:p4de.24xlarge:reserved:cb-b | sku=p4de.24xlarge A100-80GB x8 | us-east-1 | reserved | 14.5833333333 USD | min_bid - | raw 700.00/instance-hour | units 1 | term 48h",
	})
	diff(t, "dropped", drops(dropped), []string{
		"aws:us-east-1:p4de.24xlarge:on-demand: GetProducts: no Price List item for us-east-1 p4de.24xlarge (0 item(s) for other regions or types ignored)",
		"aws:us-east-1:spot: DescribeSpotPriceHistory us-east-1: no spotPriceHistorySet items for p4de.24xlarge",
		"aws:us-west-2:p4de.24xlarge:on-demand: GetProducts: no Price List item for us-west-2 p4de.24xlarge (0 item(s) for other regions or types ignored)",
		"aws:us-west-2:spot: aws DescribeSpotPriceHistory us-west-2: RequestLimitExceeded: Request limit exceeded.",
		"aws:us-west-2:p4de.24xlarge:reserved: aws DescribeCapacityBlockOfferings us-west-2 p4de.24xlarge: RequestLimitExceeded: Request limit exceeded.",
	})
	forms := ef.forms["DescribeCapacityBlockOfferings us-east-1"]
	if len(forms) != 2 || forms[0].Get("NextToken") != "" || forms[1].Get("NextToken") != "page1" {
		t.Fatalf("forms %v", forms)
	}
	f := forms[0]
	if f.Get("CapacityDurationHours") != "48" || f.Get("InstanceType") != p4de || f.Get("InstanceCount") != "1" ||
		f.Get("StartDateRange") != "2026-11-29T09:30:00Z" || f.Get("EndDateRange") != "2026-12-13T09:30:00Z" {
		t.Errorf("form %v", f)
	}
	if n := len(ef.forms["DescribeCapacityBlockOfferings us-west-2"]); n != 1 {
		t.Errorf("us-west-2 Capacity Block calls %d, want 1 (no retry)", n)
	}
}

// TestCallErrorClass: the class of every failed call, from EC2 XML error
// bodies and JSON 1.1 errors through the real SDK, and from the fields.
func TestCallErrorClass(t *testing.T) {
	for _, tt := range []struct {
		status int
		code   string
		want   string
	}{
		{503, "RequestLimitExceeded", pricing.ClassThrottled}, // EC2 throttles with a 503: the code decides
		{400, "Throttling", pricing.ClassThrottled},
		{401, "AuthFailure", pricing.ClassAuth},
		{403, "UnauthorizedOperation", pricing.ClassAuth},
		{403, "InvalidClientTokenId", pricing.ClassAuth},
		{500, "InternalError", pricing.ClassUnavailable},
		{503, "Unavailable", pricing.ClassUnavailable},
		{502, "SomethingNew", pricing.ClassUnavailable},
		{400, "InvalidParameterValue", pricing.ClassBadResponse},
	} {
		t.Run(tt.code, func(t *testing.T) {
			ef := &ec2Fake{fail: map[string]struct {
				status     int
				code, text string
			}{"us-east-1": {tt.status, tt.code, "fake " + tt.code}}}
			c := fakeClient(t, ef, &listFake{fail: "ThrottlingException"}, ec2.Config{Regions: []string{"us-east-1"}, InstanceTypes: []string{p4d}})
			_, dropped, err := c.Offers(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			var found int
			for _, e := range err.(interface{ Unwrap() error }).Unwrap().(interface{ Unwrap() []error }).Unwrap() {
				var ce *ec2.CallError
				if !errors.As(e, &ce) {
					t.Fatalf("not a *CallError: %v", e)
				}
				switch ce.Op {
				case "GetProducts":
					if ce.ErrorClass() != pricing.ClassThrottled || ce.Code != "ThrottlingException" || ce.Status != 400 {
						t.Errorf("%s: class %q code %q status %d", ce.Op, ce.ErrorClass(), ce.Code, ce.Status)
					}
				default:
					found++
					if ce.ErrorClass() != tt.want || ce.Code != tt.code || ce.Status != tt.status || pricing.Classify(e) != tt.want {
						t.Errorf("%s: class %q code %q status %d, want %q", ce.Op, ce.ErrorClass(), ce.Code, ce.Status, tt.want)
					}
				}
			}
			if found != 2 || len(dropped) != 3 {
				t.Errorf("EC2 call errors %d (want spot + Capacity Blocks), dropped %v", found, drops(dropped))
			}
		})
	}

	// Without an AWS answer the class comes from the cause.
	for _, tt := range []struct {
		ce   ec2.CallError
		want string
	}{
		{ec2.CallError{Err: context.DeadlineExceeded}, pricing.ClassTimeout},
		{ec2.CallError{Err: fmt.Errorf("wrapped: %w", context.DeadlineExceeded)}, pricing.ClassTimeout},
		{ec2.CallError{Err: errors.New("no EC2 client for the region")}, pricing.ClassBadResponse},
		{ec2.CallError{}, pricing.ClassBadResponse},
		{ec2.CallError{Status: http.StatusServiceUnavailable, Err: errors.New("x")}, pricing.ClassUnavailable},
		{ec2.CallError{Status: http.StatusNotFound, Code: "UnknownError"}, pricing.ClassBadResponse},
		{ec2.CallError{Code: "ThrottlingException"}, pricing.ClassThrottled},
	} {
		if got := tt.ce.ErrorClass(); got != tt.want {
			t.Errorf("%+v: class %q, want %q", tt.ce, got, tt.want)
		}
	}
}

// TestCapacityBlockOnlyWithTheAPI: a spot fake without
// DescribeCapacityBlockOfferings (NewWithAPIs) means no reserved calls and
// nothing dropped for them (only the empty spot answer is noted).
func TestCapacityBlockOnlyWithTheAPI(t *testing.T) {
	c := ec2.NewWithAPIs(ec2.Config{Regions: []string{"us-east-1"}, InstanceTypes: []string{p4d}, Now: clock},
		map[string]ec2.SpotPriceAPI{"us-east-1": fakeSpot{pages: []*sdkec2.DescribeSpotPriceHistoryOutput{{}}}}, nil)
	offers, dropped, err := c.Offers(context.Background())
	if err != nil || len(offers) != 0 || len(dropped) != 1 ||
		dropped[0].Reason != "DescribeSpotPriceHistory us-east-1: no spotPriceHistorySet items for p4d.24xlarge" {
		t.Errorf("offers %v dropped %v err %v", rows(offers), drops(dropped), err)
	}
}
