package autodl

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"code":"Success","msg":"","data":{"list":[{"uuid":"c1","deployment_uuid":"d1","status":"running","price":6680.0,"started_at":"2026-11-30T10:00:00+08:00"}]}}`,
		`{"code":"NoEnoughResource","msg":"库存不足","data":null}`, `{"code":"Success","data":{"list":[{"uuid":"a/b","deployment_uuid":"d"}]}}`,
		`{"code":"Success","data":{"list":[{"uuid":"c","deployment_uuid":"d","price":-1}]}}`, `{"code":1}`, `x`,
	} {
		f.Add([]byte(s), 200)
	}
	f.Fuzz(func(t *testing.T, b []byte, status int) {
		data, err := ParseEnvelope("op", status, b)
		if err != nil {
			return
		}
		if cs, err := ParseContainers(data); err == nil {
			for _, c := range cs {
				if c.UUID == "" || c.Deployment == "" || c.Price.Amount.IsNegative() {
					t.Fatalf("bad container %+v", c)
				}
			}
		}
	})
}
