package runpod_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pricing/runpod"
)

// lp is one lowestPrice object, each value as raw JSON.
func lp(bid, od, stock string) string {
	return `{"minimumBidPrice":` + bid + `,"uninterruptablePrice":` + od + `,"stockStatus":` + stock + `}`
}

// TestLowestPricePerCount: each count is priced from its own lowestPrice
// alias (per GPU × n), the flat fields only when the alias is missing or
// null; stockStatus gives the units.
func TestLowestPricePerCount(t *testing.T) {
	r := func(cloud, n, market, price, minBid, raw, units string) string {
		return "runpod:NVIDIA A100 80GB PCIe:" + cloud + ":" + n + "x:" + market + " | sku=NVIDIA A100 80GB PCIe A100-80GB x" + n +
			" | global/ | " + market + " | " + price + " | min_bid " + minBid + " | raw " + raw + "/gpu-hour | units " + units
	}
	tests := []struct {
		name    string
		cfg     runpod.Config
		over    map[string]string
		want    []string
		dropped []string
		sources []string // Source of each offer, when checked
	}{
		{
			name: "catalog figures: per-count prices, not n × the 1-GPU price",
			over: map[string]string{
				"lp_s_1": lp("1.19", "1.64", `"High"`), "lp_s_2": lp("1.19", "1.62", `"High"`),
				"lp_s_4": lp("1.19", "1.62", `"Medium"`), "lp_s_8": lp("1.19", "1.62", `"Low"`),
			},
			want: []string{
				r("secure", "1", "on-demand", "1.64 USD", "-", "1.64", "4"),
				r("secure", "2", "on-demand", "3.24 USD", "-", "1.62", "4"),
				r("secure", "4", "on-demand", "6.48 USD", "-", "1.62", "2"),
				r("secure", "8", "on-demand", "12.96 USD", "-", "1.62", "1"),
				r("secure", "1", "spot", "1.19 USD", "1.19 USD", "1.19", "4"),
				r("secure", "2", "spot", "2.38 USD", "2.38 USD", "1.19", "4"),
				r("secure", "4", "spot", "4.76 USD", "4.76 USD", "1.19", "2"),
				r("secure", "8", "spot", "9.52 USD", "9.52 USD", "1.19", "1"),
			},
		},
		{
			name: "lowestPrice wins over the flat fields; missing or null alias falls back to them with MaxUnits",
			cfg:  runpod.Config{GPUCounts: []int{1, 2, 4}},
			over: map[string]string{
				"securePrice": "1.70", "secureSpotPrice": "1.30",
				"lp_s_1": lp("1.19", "1.64", `"High"`), "lp_s_2": "null", // lp_s_4 missing
			},
			want: []string{
				r("secure", "1", "on-demand", "1.64 USD", "-", "1.64", "4"),
				r("secure", "2", "on-demand", "3.4 USD", "-", "1.70", "4"),
				r("secure", "4", "on-demand", "6.8 USD", "-", "1.70", "4"),
				r("secure", "1", "spot", "1.19 USD", "1.19 USD", "1.19", "4"),
				r("secure", "2", "spot", "2.6 USD", "2.6 USD", "1.30", "4"),
				r("secure", "4", "spot", "5.2 USD", "5.2 USD", "1.30", "4"),
			},
			sources: []string{
				"runpod graphql gpuTypes lp_s_1: lowestPrice(gpuCount:1, secureCloud:true)",
				"runpod graphql gpuTypes securePrice (fallback: no lowestPrice for 2 GPUs)",
				"runpod graphql gpuTypes securePrice (fallback: no lowestPrice for 4 GPUs)",
				"runpod graphql gpuTypes lp_s_1: lowestPrice(gpuCount:1, secureCloud:true)",
				"runpod graphql gpuTypes secureSpotPrice (fallback: no lowestPrice for 2 GPUs)",
				"runpod graphql gpuTypes secureSpotPrice (fallback: no lowestPrice for 4 GPUs)",
			},
		},
		{
			name: "a bad flat price is reported once, not per count",
			cfg:  runpod.Config{GPUCounts: []int{1, 2}},
			over: map[string]string{"securePrice": `"1.64"`, "secureSpotPrice": "null"},
			dropped: []string{
				`runpod:NVIDIA A100 80GB PCIe:secure:on-demand: securePrice "\"1.64\"": not a JSON number`,
			},
		},
		{
			name: "stockStatus None and null keep the offer with 0 units; MaxUnits caps High",
			cfg:  runpod.Config{GPUCounts: []int{1, 2, 4}, MaxUnits: 3},
			over: map[string]string{
				"lp_s_1": lp("null", "1.64", `"High"`), "lp_s_2": lp("null", "1.62", `"None"`), "lp_s_4": lp("null", "1.62", "null"),
			},
			want: []string{
				r("secure", "1", "on-demand", "1.64 USD", "-", "1.64", "3"),
				r("secure", "2", "on-demand", "3.24 USD", "-", "1.62", "0"),
				r("secure", "4", "on-demand", "6.48 USD", "-", "1.62", "0"),
			},
		},
		{
			name: "bad lowestPrice values drop only what they price",
			cfg:  runpod.Config{GPUCounts: []int{1, 2, 4, 8}},
			over: map[string]string{
				"lp_s_1": lp("-1", "1.64", `"High"`),     // bad bid: on-demand survives
				"lp_s_2": lp("1.19", `"1.62"`, `"High"`), // bad price: spot survives
				"lp_s_4": lp("1.19", "1.62", `"Plenty"`), // unknown stock: both markets
				"lp_s_8": `[1.62]`,                       // not an object: both markets
			},
			want: []string{
				r("secure", "1", "on-demand", "1.64 USD", "-", "1.64", "4"),
				r("secure", "2", "spot", "2.38 USD", "2.38 USD", "1.19", "4"),
			},
			dropped: []string{
				`runpod:NVIDIA A100 80GB PCIe:secure:4x: lp_s_4.stockStatus "Plenty": not High, Medium, Low or None`,
				`runpod:NVIDIA A100 80GB PCIe:secure:8x: lp_s_8 [1.62]: not an object`,
				`runpod:NVIDIA A100 80GB PCIe:secure:2x:on-demand: lp_s_2.uninterruptablePrice "\"1.62\"": not a JSON number`,
				`runpod:NVIDIA A100 80GB PCIe:secure:1x:spot: lp_s_1.minimumBidPrice "-1": negative`,
			},
		},
		{
			name: "missing price inside a lowestPrice object is dropped; null or 0 is not sold",
			cfg:  runpod.Config{GPUCounts: []int{1, 2}},
			over: map[string]string{"lp_s_1": `{"minimumBidPrice":0,"stockStatus":"Low"}`, "lp_s_2": lp("null", "null", `"Low"`)},
			dropped: []string{
				`runpod:NVIDIA A100 80GB PCIe:secure:1x:on-demand: lp_s_1.uninterruptablePrice: missing`,
			},
		},
		{
			name: "community cloud reads lp_c_<n>; counts above maxGpuCount are ignored",
			cfg:  runpod.Config{GPUCounts: []int{2, 4}},
			over: map[string]string{
				"maxGpuCount": "2", "secureCloud": "false", "communityCloud": "true",
				"lp_s_2": lp("0.5", "0.5", `"High"`), // secure not sold: ignored
				"lp_c_2": lp("0.6", "0.89", `"Low"`),
				"lp_c_4": lp("0.6", "0.89", `"High"`), // above maxGpuCount
			},
			want: []string{
				r("community", "2", "on-demand", "1.78 USD", "-", "0.89", "1"),
				r("community", "2", "spot", "1.2 USD", "1.2 USD", "0.6", "1"),
			},
			sources: []string{
				"runpod graphql gpuTypes lp_c_2: lowestPrice(gpuCount:2, secureCloud:false)",
				"runpod graphql gpuTypes lp_c_2: lowestPrice(gpuCount:2, secureCloud:false)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.GPUTypeIDs = []string{pcie}
			offers, dropped, err := runpod.ParseGPUTypes(body(gpuType(pcie, tt.over)), now, cfg)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, rows(offers), tt.want)
			var got []string
			for _, d := range dropped {
				got = append(got, d.Ref+": "+d.Reason)
			}
			if !slices.Equal(got, tt.dropped) {
				t.Errorf("dropped\n got %q\nwant %q", got, tt.dropped)
			}
			if tt.sources != nil {
				var src []string
				for _, o := range offers {
					src = append(src, o.Source)
				}
				if !slices.Equal(src, tt.sources) {
					t.Errorf("sources\n got %q\nwant %q", src, tt.sources)
				}
			}
		})
	}
}

func TestQuery(t *testing.T) {
	q := runpod.Query([]string{sxm}, []int{1, 0, 8, 1})
	want := `query GpuTypes { gpu0: gpuTypes(input:{id:"NVIDIA A100-SXM4-80GB"}) { id displayName memoryInGb maxGpuCount secureCloud communityCloud ` +
		`securePrice communityPrice secureSpotPrice communitySpotPrice ` +
		`lp_s_1: lowestPrice(input:{gpuCount:1, secureCloud:true}) { minimumBidPrice uninterruptablePrice stockStatus } ` +
		`lp_c_1: lowestPrice(input:{gpuCount:1, secureCloud:false}) { minimumBidPrice uninterruptablePrice stockStatus } ` +
		`lp_s_8: lowestPrice(input:{gpuCount:8, secureCloud:true}) { minimumBidPrice uninterruptablePrice stockStatus } ` +
		`lp_c_8: lowestPrice(input:{gpuCount:8, secureCloud:false}) { minimumBidPrice uninterruptablePrice stockStatus } } }`
	if q != want {
		t.Errorf("Query\n got %s\nwant %s", q, want)
	}
	if a := runpod.LowestPriceAlias("community", 4); a != "lp_c_4" {
		t.Errorf("alias %q", a)
	}
	if strings.Count(runpod.Query([]string{pcie, sxm}, runpod.DefaultGPUCounts), "lowestPrice(") != 16 {
		t.Error("want 16 lowestPrice fields for 2 types × 4 counts × 2 clouds")
	}
}
