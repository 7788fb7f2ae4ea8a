package runpod

import "testing"

func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"data":{"myself":{"pods":[{"id":"p1","name":"sluice-dec-0123456789abcdef0123456789abcdef-l0-u0","costPerHr":5.52,"gpuCount":8,"desiredStatus":"RUNNING","lastStartedAt":"2026-11-30T02:00:00.000Z"}]}}}`,
		`{"errors":[{"message":"There are no longer any instances available"}],"data":null}`,
		`{"data":{"podRentInterruptable":{"id":"p","costPerHr":-1}}}`, `{"data":{"myself":{"pods":[{"costPerHr":1e99999}]}}}`, `{}`, `x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, spot := range []bool{true, false} {
			data, err := ParseResponse("op", b, spot)
			if err != nil {
				continue
			}
			if pods, err := ParsePods(data); err == nil {
				for _, p := range pods {
					if p.ID == "" || p.CostPerHr.Amount.IsNegative() {
						t.Fatalf("bad pod %+v", p)
					}
				}
			}
			_, _ = ParsePod(data.Get("podRentInterruptable"))
		}
	})
}
