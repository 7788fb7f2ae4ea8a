package aliyun

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

func addRecordings(f *testing.F, prefix string) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "replay", "aliyun", prefix+".*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkOffer holds for every offer a parser returns.
func checkOffer(t *testing.T, o sluice.Offer, region string, market sluice.Market) {
	t.Helper()
	raw, err := decimal.NewFromString(o.RawPrice)
	switch {
	case err != nil:
		t.Fatalf("%s: RawPrice %q is not a decimal", o.ID, o.RawPrice)
	case !raw.Equal(o.UnitPrice.Amount):
		t.Fatalf("%s: UnitPrice %s differs from RawPrice %q", o.ID, o.UnitPrice, o.RawPrice)
	case !o.UnitPrice.Amount.IsPositive():
		t.Fatalf("%s: UnitPrice %s not positive", o.ID, o.UnitPrice)
	case len(o.UnitPrice.Currency) != 3:
		t.Fatalf("%s: currency %q", o.ID, o.UnitPrice.Currency)
	case o.Provider != "aliyun" || o.Region != region || o.Market != market || o.GPUsPerUnit <= 0:
		t.Fatalf("offer %+v", o)
	case !strings.HasPrefix(o.ID, "aliyun:"+region+":"):
		t.Fatalf("ID %s", o.ID)
	}
	if market == sluice.Spot && o.MinBid.Cmp(o.UnitPrice) != 0 {
		t.Fatalf("%s: MinBid %s != UnitPrice %s", o.ID, o.MinBid, o.UnitPrice)
	}
}

func checkDropped(t *testing.T, dropped []sluice.DroppedOffer) {
	t.Helper()
	for _, d := range dropped {
		if d.Provider != "aliyun" || d.Ref == "" || d.Reason == "" {
			t.Fatalf("dropped %+v", d)
		}
	}
}

func FuzzParseDescribePrice(f *testing.F) {
	addRecordings(f, "DescribePrice")
	for _, s := range []string{
		odBody,
		`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":1e3}}}`,
		`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":-0.0}}}`,
		`{"PriceInfo":{"Price":{"Currency":"USD","TradePrice":0.000001}}}`,
		`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":"34.742"}}}`,
		`{"PriceInfo":{"Price":[]}}`,
		`{"Code":"Throttling","Message":"m"}`,
		`{"PriceInfo":{"Price":{"Currency":"CNY","TradePrice":1E+400}}}`,
		`{"PriceInfo":null}`,
		``, `null`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		offers, dropped, err := ParseDescribePrice(body, "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{})
		if err != nil {
			if len(offers) != 0 || len(dropped) != 0 {
				t.Fatalf("error %v with offers %v dropped %v", err, offers, dropped)
			}
			if !strings.HasPrefix(err.Error(), "aliyun DescribePrice cn-beijing ecs.gn7e-c16g1.4xlarge: ") {
				t.Fatalf("error %q does not name provider and action", err)
			}
			return
		}
		if len(offers)+len(dropped) != 1 {
			t.Fatalf("offers %v dropped %v: want exactly one of them", offers, dropped)
		}
		for _, o := range offers {
			checkOffer(t, o, "cn-beijing", sluice.OnDemand)
			if o.ID != "aliyun:cn-beijing:ecs.gn7e-c16g1.4xlarge:on-demand" || o.GPUsPerUnit != 1 {
				t.Fatalf("offer %+v", o)
			}
		}
		checkDropped(t, dropped)
	})
}

func FuzzParseSpotPriceHistory(f *testing.F) {
	addRecordings(f, "DescribeSpotPriceHistory")
	for _, s := range []string{
		spotBody("2", spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "12.5"), spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "12.4")),
		spotBody("", spotEntry("cn-beijing-h", "2026-11-29T23:40:00Z", `"n/a"`), spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "1")),
		spotBody("x", spotEntry("cn-beijing-h", "2026-11-29T23:10:00Z", "12.5")),
		spotBody("", spotEntry("cn-hangzhou-i", "2026-11-29T23:10:00Z", "12.5"), `7`, `{}`, `null`),
		`{"Currency":5,"SpotPrices":{"SpotPriceType":[{"ZoneId":"cn-beijing-a","Timestamp":"2026-11-29T23:10:00Z","SpotPrice":1}]}}`,
		`{"SpotPrices":{}}`,
		`{"SpotPrices":{"SpotPriceType":{}}}`,
		`{"Code":"InvalidParameter","Message":"m","HostId":"h"}`,
		``, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		offers, dropped, err := ParseSpotPriceHistory(body, "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{})
		if err != nil {
			if len(offers) != 0 || len(dropped) != 0 {
				t.Fatalf("error %v with offers %v dropped %v", err, offers, dropped)
			}
			if !strings.HasPrefix(err.Error(), "aliyun DescribeSpotPriceHistory cn-beijing ecs.gn7e-c16g1.4xlarge: ") {
				t.Fatalf("error %q does not name provider and action", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, o := range offers {
			checkOffer(t, o, "cn-beijing", sluice.Spot)
			if seen[o.ID] {
				t.Fatalf("two offers %s", o.ID)
			}
			seen[o.ID] = true
			if !strings.HasPrefix(o.ID, "aliyun:cn-beijing:cn-beijing-") || !strings.HasSuffix(o.ID, ":ecs.gn7e-c16g1.4xlarge:spot") {
				t.Fatalf("ID %s", o.ID)
			}
		}
		checkDropped(t, dropped)
	})
}

// TestFakeServerRejectsBadSignature makes sure the fake server's independent
// signature check is not vacuous.
func TestFakeServerRejectsBadSignature(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/?RegionId=cn-beijing&InstanceType=x", nil)
	req.Header.Set("x-acs-action", "DescribePrice")
	req.Header.Set("x-acs-version", APIVersion)
	if err := Sign(req, testKeyID, "wrong-secret", nil, testNow, "n"); err != nil {
		t.Fatal(err)
	}
	req.Host = req.URL.Host
	if p := checkV3(req); !strings.HasPrefix(p, "Signature ") {
		t.Errorf("checkV3 = %q, want a signature mismatch", p)
	}
	if err := Sign(req, testKeyID, testSecret, nil, testNow, "n"); err != nil {
		t.Fatal(err)
	}
	if p := checkV3(req); p != "" {
		t.Errorf("checkV3 = %q for a good signature", p)
	}
}
