package aliyun

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"RequestId":"r","InstanceIdSet":{"InstanceIdSets":["i-bp1","i-bp2"]}}`,
		`{"Instances":{"Instance":[{"InstanceId":"i-1","SpotStrategy":"SpotWithPriceLimit","Tags":{"Tag":[{"TagKey":"sluice:line","TagValue":"2"}]},"CreationTime":"2026-11-30T02:00Z"}]},"TotalCount":1}`,
		`{"Currency":"CNY","SpotPrices":{"SpotPriceType":[{"ZoneId":"z","SpotPrice":12.345,"Timestamp":"2026-11-30T02:00:00Z"}]}}`,
		`{"RequestId":"r","Code":"Throttling.User","Message":"m"}`,
		`{"SpotPrices":{"SpotPriceType":[{"SpotPrice":1e999}]}}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ids, err := ParseRunInstances(b); err == nil && len(ids) == 0 {
			t.Fatal("no ids without error")
		}
		_, _, _ = ParseDescribeInstances(b)
		if m, err := ParseSpotPrice(b, ""); err == nil && (m.Amount.IsNegative() || m.Currency == "") {
			t.Fatalf("bad price %v", m)
		}
		if e, ok := ParseError("X", 400, b); ok && (e.Code == "" || e.Unwrap() == nil) {
			t.Fatal("error without code or class")
		}
	})
}
