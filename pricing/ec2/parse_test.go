package ec2_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing/ec2"
)

// recordedDocs are the PriceList strings of the checked-in recordings.
func recordedDocs(t testing.TB) []string {
	t.Helper()
	var docs []string
	for _, f := range []string{"GetProducts.p4d.24xlarge.json", "GetProducts.p4de.24xlarge.json"} {
		b, err := os.ReadFile("../../testdata/replay/aws-pricing/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range gjson.GetBytes(b, "PriceList").Array() {
			docs = append(docs, d.String())
		}
	}
	return docs
}

func TestParsePriceListItem(t *testing.T) {
	docs := recordedDocs(t)
	it, err := ec2.ParsePriceListItem(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if it.SKU != "QX2K7R9VFA4TNM3E" || it.RegionCode != "us-east-1" || it.InstanceType != "p4d.24xlarge" ||
		it.Raw != "21.9576420000" || it.Price.String() != "21.957642" {
		t.Errorf("item %+v", it)
	}

	dim := func(unit, usd string) string { return `{"unit":` + unit + `,"pricePerUnit":{"USD":` + usd + `}}` }
	doc := func(attrs, onDemand string) string {
		return `{"product":{"sku":"S","attributes":` + attrs + `},"terms":{"OnDemand":` + onDemand + `}}`
	}
	attrs := `{"regionCode":"us-east-1","instanceType":"p4d.24xlarge"}`
	one := func(d string) string { return `{"S.T":{"priceDimensions":{"S.T.R":` + d + `}}}` }
	for _, tt := range []struct{ name, doc, want string }{
		{"not JSON", `{"product":`, `not JSON: {"product":`},
		{"not an object", `["a"]`, `not a JSON object: ["a"]`},
		{"JSON string (double-encoded)", `"{\"product\":{}}"`, `not a JSON object`},
		{"no regionCode", doc(`{"instanceType":"p4d.24xlarge"}`, one(dim(`"Hrs"`, `"1.0"`))), `product.attributes.regionCode missing: not a non-empty string`},
		{"empty instanceType", doc(`{"regionCode":"us-east-1","instanceType":""}`, one(dim(`"Hrs"`, `"1.0"`))), `product.attributes.instanceType "": not a non-empty string`},
		{"numeric regionCode", doc(`{"regionCode":1,"instanceType":"x"}`, one(dim(`"Hrs"`, `"1.0"`))), `product.attributes.regionCode 1: not a non-empty string`},
		{"no OnDemand terms", `{"product":{"attributes":` + attrs + `},"terms":{"Reserved":{}}}`, `terms.OnDemand missing: not an object`},
		{"empty OnDemand terms", doc(attrs, `{}`), `terms.OnDemand {}: no price dimension`},
		{"term without dimensions", doc(attrs, `{"S.T":{}}`), `terms.OnDemand.S.T.priceDimensions missing: not an object`},
		{"unit not Hrs", doc(attrs, one(dim(`"Quantity"`, `"1.0"`))), `terms.OnDemand.S.T.priceDimensions.S.T.R.unit "Quantity": not "Hrs"`},
		{"price as a number", doc(attrs, one(dim(`"Hrs"`, `21.95`))), `terms.OnDemand.S.T.priceDimensions.S.T.R.pricePerUnit.USD 21.95: not a string`},
		{"CNY only", doc(attrs, one(`{"unit":"Hrs","pricePerUnit":{"CNY":"1.0"}}`)), `terms.OnDemand.S.T.priceDimensions.S.T.R.pricePerUnit.USD missing: not a string`},
		{"garbage price", doc(attrs, one(dim(`"Hrs"`, `"21,95"`))), `terms.OnDemand.S.T.priceDimensions.S.T.R.pricePerUnit.USD "21,95": not a decimal`},
		{"negative price", doc(attrs, one(dim(`"Hrs"`, `"-1.0000000000"`))), `terms.OnDemand.S.T.priceDimensions.S.T.R.pricePerUnit.USD "-1.0000000000": negative`},
		{"zero price", doc(attrs, one(dim(`"Hrs"`, `"0.0000000000"`))), `terms.OnDemand.S.T.priceDimensions.S.T.R.pricePerUnit.USD "0.0000000000": zero`},
		{"two different prices", doc(attrs, `{"S.T":{"priceDimensions":{"a":`+dim(`"Hrs"`, `"1.0"`)+`,"b":`+dim(`"Hrs"`, `"2.0"`)+`}}}`),
			`terms.OnDemand.S.T.priceDimensions.b.pricePerUnit.USD "2.0": differs from "1.0" in another price dimension`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ec2.ParsePriceListItem(tt.doc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// The same price in two dimensions is fine (10 and 6 decimals are equal).
	it, err = ec2.ParsePriceListItem(doc(attrs, `{"S.T":{"priceDimensions":{"a":`+dim(`"Hrs"`, `"1.5000000000"`)+`,"b":`+dim(`"Hrs"`, `"1.500000"`)+`}}}`))
	if err != nil || it.Raw != "1.5000000000" {
		t.Errorf("item %+v err %v", it, err)
	}
}

func sp(typ, az, price, ts string) ec2types.SpotPrice {
	s := ec2types.SpotPrice{AvailabilityZone: aws.String(az), InstanceType: ec2types.InstanceType(typ), ProductDescription: "Linux/UNIX"}
	if price != "-" {
		s.SpotPrice = aws.String(price)
	}
	if v, err := time.Parse(time.RFC3339, ts); err == nil {
		s.Timestamp = &v
	}
	return s
}

// TestSpotOffersTies: on a timestamp tie a good price beats a bad one, and
// two different good prices drop the zone (a quote given twice at different
// prices is believed at neither), whatever the wire order; offers by type
// order then zone.
func TestSpotOffersTies(t *testing.T) {
	items := []ec2types.SpotPrice{
		sp(p4de, "us-east-1b", "9.000000", t1),
		sp(p4d, "us-east-1b", "garbage", t1),
		sp(p4d, "us-east-1b", "8.000000", t1),
		sp(p4d, "us-east-1a", "5.000000", t1),
		sp(p4d, "us-east-1a", "4.000000", t1),
		sp(p4d, "us-east-1c", "-", t1),
	}
	cfg := ec2.Config{InstanceTypes: []string{p4d, p4de}, TTL: time.Minute}
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}} {
		var in []ec2types.SpotPrice
		for _, i := range order {
			in = append(in, items[i])
		}
		offers, dropped := ec2.SpotOffers("us-east-1", in, now, cfg)
		diff(t, "offers", rows(offers), []string{
			"aws:us-east-1:us-east-1b:p4d.24xlarge:spot | sku=p4d.24xlarge A100-40GB x8 | us-east-1 | spot | 8 USD | min_bid 8 USD | raw 8.000000/instance-hour | units 2",
			"aws:us-east-1:us-east-1b:p4de.24xlarge:spot | sku=p4de.24xlarge A100-80GB x8 | us-east-1 | spot | 9 USD | min_bid 9 USD | raw 9.000000/instance-hour | units 2",
		})
		diff(t, "dropped", drops(dropped), []string{
			"aws:us-east-1:us-east-1a:p4d.24xlarge:spot: latest items (timestamp 2026-11-29T07:00:00Z): two spotPrices at the same timestamp: 4.000000 and 5.000000",
			"aws:us-east-1:us-east-1c:p4d.24xlarge:spot: latest item (timestamp 2026-11-29T07:00:00Z): spotPrice missing",
		})
		for _, o := range offers {
			if !o.ExpiresAt.Equal(now.Add(time.Minute)) || o.Market != sluice.Spot || o.Basis != sluice.PerInstanceHour {
				t.Errorf("%s: expires %v market %s basis %s", o.ID, o.ExpiresAt, o.Market, o.Basis)
			}
		}
	}
}

// TestOnDemandOffersUnknownType: a type outside the A100 table gives no offer.
func TestOnDemandOffersUnknownType(t *testing.T) {
	offers, dropped := ec2.OnDemandOffers("us-east-1", "p5.48xlarge", recordedDocs(t), now, ec2.Config{})
	if len(offers) != 0 || len(dropped) != 1 || !strings.Contains(dropped[0].Reason, "not an A100 type") {
		t.Errorf("offers %v dropped %v", rows(offers), dropped)
	}
	if m, n, ok := ec2.Shape("p4de.24xlarge"); !ok || m != "A100-80GB" || n != 8 {
		t.Errorf("Shape(p4de) = %s %d %v", m, n, ok)
	}
}
