package runpod_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice/pricing/runpod"
)

const (
	pcieOD1  = "runpod:NVIDIA A100 80GB PCIe:secure:1x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | on-demand | 1.64 USD | min_bid - | raw 1.64/gpu-hour | units 4"
	pcieSp1  = "runpod:NVIDIA A100 80GB PCIe:secure:1x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | spot | 1.19 USD | min_bid 1.19 USD | raw 1.19/gpu-hour | units 4"
	sxmOD1   = "runpod:NVIDIA A100-SXM4-80GB:secure:1x:on-demand | sku=NVIDIA A100-SXM4-80GB A100-80GB x1 | global/ | on-demand | 1.89 USD | min_bid - | raw 1.89/gpu-hour | units 4"
	sxmSp1   = "runpod:NVIDIA A100-SXM4-80GB:secure:1x:spot | sku=NVIDIA A100-SXM4-80GB A100-80GB x1 | global/ | spot | 1.19 USD | min_bid 1.19 USD | raw 1.19/gpu-hour | units 4"
	pcieCOD1 = "runpod:NVIDIA A100 80GB PCIe:community:1x:on-demand | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | on-demand | 0.89 USD | min_bid - | raw 0.89/gpu-hour | units 4"
	pcieCSp1 = "runpod:NVIDIA A100 80GB PCIe:community:1x:spot | sku=NVIDIA A100 80GB PCIe A100-80GB x1 | global/ | spot | 0.6 USD | min_bid 0.6 USD | raw 0.6/gpu-hour | units 4"
)

type parseCase struct {
	name    string
	body    []byte
	want    []string
	dropped []string // "ref: reason"
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			offers, dropped, err := runpod.ParseGPUTypes(tt.body, now, runpod.Config{GPUCounts: []int{1}})
			if err != nil {
				t.Fatal(err)
			}
			diff(t, rows(offers), tt.want)
			var got []string
			for _, d := range dropped {
				if d.Provider != "runpod" {
					t.Errorf("dropped provider %q", d.Provider)
				}
				got = append(got, d.Ref+": "+d.Reason)
			}
			if !slices.Equal(got, tt.dropped) {
				t.Errorf("dropped\n got %q\nwant %q", got, tt.dropped)
			}
		})
	}
}

// TestMarketsIndependent: each (cloud, market) price stands alone; a bad one
// drops only its own offers, with a reason.
func TestMarketsIndependent(t *testing.T) {
	community := map[string]string{"communityCloud": "true", "communityPrice": "0.89", "communitySpotPrice": "0.6"}
	with := func(base map[string]string, over map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	runParseCases(t, []parseCase{
		{
			name:    "securePrice as a string: spot survives",
			body:    body(gpuType(pcie, map[string]string{"securePrice": `"1.64"`})),
			want:    []string{pcieSp1},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice "\"1.64\"": not a JSON number`},
		},
		{
			name:    "securePrice missing: spot survives",
			body:    body(gpuType(pcie, map[string]string{"securePrice": "-"})),
			want:    []string{pcieSp1},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice: missing`},
		},
		{
			name: "securePrice null: no on-demand, nothing dropped, spot survives",
			body: body(gpuType(pcie, map[string]string{"securePrice": "null"})),
			want: []string{pcieSp1},
		},
		{
			name:    "secureSpotPrice as a string: on-demand survives",
			body:    body(gpuType(pcie, map[string]string{"secureSpotPrice": `"1.19"`})),
			want:    []string{pcieOD1},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:spot: secureSpotPrice "\"1.19\"": not a JSON number`},
		},
		{
			name:    "secureSpotPrice missing: on-demand survives",
			body:    body(gpuType(pcie, map[string]string{"secureSpotPrice": "-"})),
			want:    []string{pcieOD1},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:spot: secureSpotPrice: missing`},
		},
		{
			name:    "bad communityPrice leaves community spot and the secure cloud alone",
			body:    body(gpuType(pcie, with(community, map[string]string{"communityPrice": "true"}))),
			want:    []string{pcieOD1, pcieSp1, pcieCSp1},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:community:on-demand: communityPrice "true": not a JSON number`},
		},
		{
			name:    "bad secureSpotPrice leaves the community cloud alone",
			body:    body(gpuType(pcie, with(community, map[string]string{"secureSpotPrice": "-2"}))),
			want:    []string{pcieOD1, pcieCOD1, pcieCSp1},
			dropped: []string{`runpod:NVIDIA A100 80GB PCIe:secure:spot: secureSpotPrice "-2": negative`},
		},
		{
			name: "both secure prices bad: both dropped, other type untouched",
			body: body(gpuType(pcie, map[string]string{"securePrice": "{}", "secureSpotPrice": "1e99"}),
				gpuType(sxm, map[string]string{"securePrice": "1.89"})),
			want: []string{sxmOD1, sxmSp1},
			dropped: []string{
				`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice "{}": not a JSON number`,
				`runpod:NVIDIA A100 80GB PCIe:secure:spot: secureSpotPrice "1e99": out of range`,
			},
		},
	})
}

// TestDuplicateGPUTypes: a repeat that agrees is reported and the first kept;
// entries that disagree are all dropped, naming both values.
func TestDuplicateGPUTypes(t *testing.T) {
	sxmType := gpuType(sxm, map[string]string{"securePrice": "1.89"})
	runParseCases(t, []parseCase{
		{
			name:    "same type listed twice, same prices: first kept",
			body:    body(sxmType, gpuType(pcie, nil), sxmType),
			want:    []string{sxmOD1, sxmSp1, pcieOD1, pcieSp1},
			dropped: []string{`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB already seen in this response (data.gpuTypes[2] repeats data.gpuTypes[0])`},
		},
		{
			name:    "same price written differently is the same price",
			body:    body(sxmType, gpuType(sxm, map[string]string{"securePrice": "1.890", "secureSpotPrice": "1.1900", "displayName": `"other"`})),
			want:    []string{sxmOD1, sxmSp1},
			dropped: []string{`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB already seen in this response (data.gpuTypes[1] repeats data.gpuTypes[0])`},
		},
		{
			name:    "repeat across aliases",
			body:    []byte(`{"data":{"gpu0":[` + sxmType + `],"gpu1":[` + sxmType + `]}}`),
			want:    []string{sxmOD1, sxmSp1},
			dropped: []string{`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB already seen in this response (data.gpu1[0] repeats data.gpu0[0])`},
		},
		{
			name: "on-demand prices disagree: both dropped, other type survives",
			body: body(sxmType, gpuType(pcie, nil), gpuType(sxm, map[string]string{"securePrice": "9"})),
			want: []string{pcieOD1, pcieSp1},
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[2] (securePrice 1.89 vs 9): all 2 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[2] contradicts data.gpuTypes[0] (securePrice 9 vs 1.89): all 2 entries dropped`,
			},
		},
		{
			name: "spot prices disagree: every offer of the type dropped",
			body: body(sxmType, gpuType(sxm, map[string]string{"securePrice": "1.89", "secureSpotPrice": "0.5"})),
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[1] (secureSpotPrice 1.19 vs 0.5): all 2 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[1] contradicts data.gpuTypes[0] (secureSpotPrice 0.5 vs 1.19): all 2 entries dropped`,
			},
		},
		{
			name: "second entry's price unreadable: contradiction",
			body: body(sxmType, gpuType(sxm, map[string]string{"securePrice": `"1.89"`})),
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[1] (secure on-demand offers at data.gpuTypes[0] only): all 2 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[1] contradicts data.gpuTypes[0] (secure on-demand offers at data.gpuTypes[0] only): all 2 entries dropped`,
			},
		},
		{
			name: "stock disagrees",
			body: body(
				gpuType(sxm, map[string]string{"lp_s_1": `{"minimumBidPrice":1.19,"uninterruptablePrice":1.89,"stockStatus":"High"}`}),
				gpuType(sxm, map[string]string{"lp_s_1": `{"minimumBidPrice":1.19,"uninterruptablePrice":1.89,"stockStatus":"None"}`})),
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[1] (lp_s_1.stockStatus gives 4 vs 0 units): all 2 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[1] contradicts data.gpuTypes[0] (lp_s_1.stockStatus gives 0 vs 4 units): all 2 entries dropped`,
			},
		},
		{
			name: "one entry priced by lowestPrice, the other by the flat field",
			body: body(sxmType, gpuType(sxm, map[string]string{"lp_s_1": `{"minimumBidPrice":1.19,"uninterruptablePrice":1.85,"stockStatus":"High"}`})),
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[1] (securePrice 1.89 vs lp_s_1.uninterruptablePrice 1.85): all 2 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[1] contradicts data.gpuTypes[0] (lp_s_1.uninterruptablePrice 1.85 vs securePrice 1.89): all 2 entries dropped`,
			},
		},
		{
			name: "memory disagrees",
			body: body(sxmType, gpuType(sxm, map[string]string{"securePrice": "1.89", "memoryInGb": "40"})),
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[1] (memoryInGb gives A100-80GB vs A100-40GB): all 2 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[1] contradicts data.gpuTypes[0] (memoryInGb gives A100-40GB vs A100-80GB): all 2 entries dropped`,
			},
		},
		{
			name: "three entries, two agree: all three dropped",
			body: body(sxmType, sxmType, gpuType(sxm, map[string]string{"securePrice": "2.5"})),
			dropped: []string{
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[0] contradicts data.gpuTypes[2] (securePrice 1.89 vs 2.5): all 3 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[1] contradicts data.gpuTypes[2] (securePrice 1.89 vs 2.5): all 3 entries dropped`,
				`runpod:NVIDIA A100-SXM4-80GB: duplicate: NVIDIA A100-SXM4-80GB at data.gpuTypes[2] contradicts data.gpuTypes[0] (securePrice 2.5 vs 1.89): all 3 entries dropped`,
			},
		},
	})
}

// TestGPUTypeIDsAskedOnce: an id configured twice is asked for once, so the
// response does not list it twice.
func TestGPUTypeIDsAskedOnce(t *testing.T) {
	for _, tc := range []struct {
		ids     []string
		aliases int
	}{
		{[]string{sxm, sxm}, 1},
		{[]string{pcie, sxm, pcie}, 2},
	} {
		var query string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			query = gjson.GetBytes(b, "query").String()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body(gpuType(sxm, nil)))
		}))
		_, dropped, err := runpod.New(runpod.Config{BaseURL: srv.URL, GPUTypeIDs: tc.ids, Now: clock}).Offers(context.Background())
		srv.Close()
		if err != nil || len(dropped) != 0 {
			t.Errorf("ids %v: dropped %v, err %v", tc.ids, dropped, err)
		}
		if got := strings.Count(query, ": gpuTypes("); got != tc.aliases {
			t.Errorf("ids %v: %d aliases in %s, want %d", tc.ids, got, query, tc.aliases)
		}
	}
}
