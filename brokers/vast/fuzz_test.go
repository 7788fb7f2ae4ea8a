package vast

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"success":true,"new_contract":1234568}`,
		`{"instances":[{"id":1000001,"label":"sluice-x","is_bid":true,"dph_total":1.234567,"actual_status":"running","start_date":1764468000.5}]}`,
		`{"success":false,"error":"invalid_price","msg":"error 400/3467"}`, `{"detail":"API requests too frequent endpoint threshold=4.5"}`,
		`{"instances":[{"id":-1,"dph_total":1e999}]}`, `{"new_contract":1.5,"success":true}`, `[]`, ``,
	} {
		f.Add([]byte(s), 200)
	}
	f.Fuzz(func(t *testing.T, b []byte, status int) {
		if id, err := ParseCreate(b); err == nil && (id == "" || id[0] == '-' || id == "0") {
			t.Fatalf("bad id %q", id)
		}
		if list, err := ParseInstances(b); err == nil {
			for _, in := range list {
				if in.ID == "" || in.Price.Amount.IsNegative() {
					t.Fatalf("bad instance %+v", in)
				}
			}
		}
		if e, ok := ParseError("op", status, b); ok && e.Unwrap() == nil {
			t.Fatal("error without class")
		}
	})
}
