package autodl_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/autodl"
)

// raw builds a one-GPU stock entry from the raw JSON of its stock object.
func raw(name, obj string) string { return `{"` + name + `":` + obj + `}` }

func TestParseGPUStock(t *testing.T) {
	one := autodl.Config{GPUCounts: []int{1}, PriceList: priceList()}
	sxm1 := func(units string) string {
		return "autodl:beijingDC1:A100-SXM4-80GB:1x:on-demand | sku=A100-SXM4-80GB A100-80GB x1 | beijingDC1 | on-demand | 6.68 CNY | raw 6.68/gpu-hour | units " + units
	}
	pcie1 := "autodl:beijingDC1:A100-PCIE-40GB:1x:on-demand | sku=A100-PCIE-40GB A100-40GB x1 | beijingDC1 | on-demand | 4.98 CNY | raw 4.98/gpu-hour | units 3"
	withPrices := func(cfg autodl.Config, ps ...autodl.Price) autodl.Config {
		cfg.PriceList.Prices = append(slices.Clone(cfg.PriceList.Prices), ps...)
		return cfg
	}
	names := func(cfg autodl.Config, ns ...string) autodl.Config {
		cfg.GPUNames = ns
		return cfg
	}
	tests := []struct {
		name    string
		cfg     autodl.Config
		body    string
		want    []string
		dropped []string // "ref: reason"
	}{
		{
			name: "unconfigured GPU names and extra members are ignored",
			cfg:  one,
			body: stock(entry("RTX 4090", 50, 200), entry(sxm, 4, 8), `{"chip_corp":"nvidia","cpu_arch":"x86"}`),
			want: []string{sxm1("4")},
		},
		{
			name: "counts from strings of digits",
			cfg:  one,
			body: stock(raw(sxm, `{"idle_gpu_num":"12","total_gpu_num":"80"}`)),
			want: []string{sxm1("12")},
		},
		{
			name: "total_gpu_num absent is allowed",
			cfg:  one,
			body: stock(raw(sxm, `{"idle_gpu_num":2}`)),
			want: []string{sxm1("2")},
		},
		{
			name: "bad idle counts dropped with reasons, the other GPU stands",
			cfg:  one,
			body: stock(raw(sxm, `{"idle_gpu_num":-1,"total_gpu_num":8}`), entry(pcie, 3, 8)),
			want: []string{pcie1},
			dropped: []string{
				`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num -1: not a non-negative integer ≤ 1000000`,
			},
		},
		{
			name:    "fractional idle count",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":1.5,"total_gpu_num":8}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num 1.5: not a non-negative integer ≤ 1000000`},
		},
		{
			name:    "integral float is still not an integer token",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":2.0}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num 2.0: not a non-negative integer ≤ 1000000`},
		},
		{
			name:    "exponent",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":1e2}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num 1e2: not a non-negative integer ≤ 1000000`},
		},
		{
			name:    "huge",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":99999999999999999999999}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num 99999999999999999999999: not a non-negative integer ≤ 1000000`},
		},
		{
			name:    "just above the bound",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":1000001}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num 1000001: more than 1000000`},
		},
		{
			name:    "string that is not digits",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":"12 "}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num "12 ": not a non-negative integer ≤ 1000000`},
		},
		{
			name: "missing, null, bool, object",
			cfg:  names(one, sxm, pcie, "A100-SXM4-40GB", "A100 80GB PCIe"),
			body: stock(raw(sxm, `{"total_gpu_num":8}`), raw(pcie, `{"idle_gpu_num":null}`),
				raw("A100-SXM4-40GB", `{"idle_gpu_num":true}`), raw("A100 80GB PCIe", `[1]`)),
			dropped: []string{
				`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num missing: not an integer`,
				`autodl:beijingDC1:A100-PCIE-40GB: idle_gpu_num null: not an integer`,
				`autodl:beijingDC1:A100-SXM4-40GB: no list price for A100-SXM4-40GB`,
				`autodl:beijingDC1:A100 80GB PCIe: no list price for A100 80GB PCIe`,
			},
		},
		{
			name: "bad stock for names that do have prices",
			cfg: withPrices(names(one, "A100-SXM4-40GB", "A100 80GB PCIe"),
				autodl.Price{GPUName: "A100-SXM4-40GB", PerGPUHour: sluice.MustMoney("5", "CNY")},
				autodl.Price{GPUName: "A100 80GB PCIe", PerGPUHour: sluice.MustMoney("6", "CNY")}),
			body: stock(raw("A100-SXM4-40GB", `{"idle_gpu_num":true}`), raw("A100 80GB PCIe", `[1]`)),
			dropped: []string{
				`autodl:beijingDC1:A100-SXM4-40GB: idle_gpu_num true: not an integer`,
				`autodl:beijingDC1:A100 80GB PCIe: stock [1]: not an object`,
			},
		},
		{
			name:    "idle above total",
			cfg:     one,
			body:    stock(entry(sxm, 9, 8), entry(pcie, 3, 3)),
			want:    []string{pcie1},
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: idle_gpu_num 9 > total_gpu_num 8`},
		},
		{
			name:    "bad total",
			cfg:     one,
			body:    stock(raw(sxm, `{"idle_gpu_num":1,"total_gpu_num":-8}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: total_gpu_num -8: not a non-negative integer ≤ 1000000`},
		},
		{
			name:    "no list price",
			cfg:     names(one, sxm, "A100-SXM4-40GB"),
			body:    stock(entry("A100-SXM4-40GB", 5, 5), entry(sxm, 1, 1)),
			want:    []string{sxm1("1")},
			dropped: []string{`autodl:beijingDC1:A100-SXM4-40GB: no list price for A100-SXM4-40GB`},
		},
		{
			name: "memory not in the name: dropped, never guessed from A100",
			cfg: withPrices(names(one, "A100", "A100-SXM4", "A800-80GB", "A100-24GB"),
				autodl.Price{GPUName: "A100", PerGPUHour: sluice.MustMoney("5", "CNY")}),
			body: stock(entry("A100", 2, 2), entry("A100-SXM4", 2, 2), entry("A800-80GB", 2, 2), entry("A100-24GB", 2, 2)),
			dropped: []string{
				`autodl:beijingDC1:A100: gpu name "A100": no memory size (80GB or 40GB) in the name; the model is not guessed from "A100" alone`,
				`autodl:beijingDC1:A100-SXM4: gpu name "A100-SXM4": no memory size (80GB or 40GB) in the name; the model is not guessed from "A100" alone`,
				`autodl:beijingDC1:A800-80GB: gpu name "A800-80GB": not an A100`,
				`autodl:beijingDC1:A100-24GB: gpu name "A100-24GB": memory 24GB is not an A100 size (40 or 80)`,
			},
		},
		{
			name: "bad list prices drop their GPU only",
			cfg: autodl.Config{GPUCounts: []int{1}, GPUNames: []string{sxm, pcie, "A100-SXM4-40GB", "A100 80G"}, PriceList: autodl.PriceList{
				AsOf: priceList().AsOf, Source: "s",
				Prices: []autodl.Price{
					{GPUName: sxm, GPUModel: "A100-40GB", PerGPUHour: sluice.MustMoney("6.68", "CNY")},
					{GPUName: pcie, PerGPUHour: sluice.MustMoney("0.69", "USD")},
					{GPUName: "A100-SXM4-40GB", PerGPUHour: sluice.MustMoney("6680", "CNY")},
					{GPUName: "A100 80G", PerGPUHour: sluice.MustMoney("7", "CNY")},
					{GPUName: "A100 80G", PerGPUHour: sluice.MustMoney("7.5", "CNY")},
				},
			}},
			body: stock(entry(sxm, 1, 1), entry(pcie, 1, 1), entry("A100-SXM4-40GB", 1, 1), entry("A100 80G", 1, 1)),
			dropped: []string{
				`autodl:beijingDC1:A100-SXM4-80GB: list price for A100-SXM4-80GB: model "A100-40GB", but the name says A100-80GB`,
				`autodl:beijingDC1:A100-PCIE-40GB: list price for A100-PCIE-40GB: currency "USD", want CNY (AutoDL bills in yuan)`,
				`autodl:beijingDC1:A100-SXM4-40GB: list price for A100-SXM4-40GB: 6680 CNY per GPU-hour is implausible (milli-yuan in the yuan field? ¥6.68/h is 6.68)`,
				`autodl:beijingDC1:A100 80G: price list has 2 different prices for A100 80G (7 CNY, 7.5 CNY)`,
			},
		},
		{
			name: "GPU counts capped by idle; units are idle / n; idle 0 gives nothing",
			cfg:  autodl.Config{PriceList: priceList()},
			body: stock(entry(sxm, 5, 8), entry(pcie, 0, 8)),
			want: []string{
				sxm1("5"),
				"autodl:beijingDC1:A100-SXM4-80GB:2x:on-demand | sku=A100-SXM4-80GB A100-80GB x2 | beijingDC1 | on-demand | 13.36 CNY | raw 6.68/gpu-hour | units 2",
				"autodl:beijingDC1:A100-SXM4-80GB:4x:on-demand | sku=A100-SXM4-80GB A100-80GB x4 | beijingDC1 | on-demand | 26.72 CNY | raw 6.68/gpu-hour | units 1",
			},
		},
		{
			name: "price beyond float64 precision survives exactly",
			cfg: autodl.Config{GPUCounts: []int{8}, PriceList: autodl.PriceList{AsOf: priceList().AsOf, Prices: []autodl.Price{
				{GPUName: sxm, PerGPUHour: sluice.MustMoney("6.680000000000000000001", "CNY")}}}},
			body: stock(entry(sxm, 8, 8)),
			want: []string{
				"autodl:beijingDC1:A100-SXM4-80GB:8x:on-demand | sku=A100-SXM4-80GB A100-80GB x8 | beijingDC1 | on-demand | 53.440000000000000000008 CNY | raw 6.680000000000000000001/gpu-hour | units 1",
			},
		},
		{
			name:    "same GPU listed twice with the same counts: first kept",
			cfg:     one,
			body:    stock(entry(sxm, 4, 8), entry(pcie, 3, 3), entry(sxm, 4, 8)),
			want:    []string{sxm1("4"), pcie1},
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: duplicate: A100-SXM4-80GB at data[2] repeats data[0]`},
		},
		{
			name:    "same GPU listed twice with different counts: both dropped",
			cfg:     one,
			body:    stock(entry(sxm, 4, 8), entry(pcie, 3, 3), entry(sxm, 1, 8)),
			want:    []string{pcie1},
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: A100-SXM4-80GB listed 2 times with different counts (data[0] idle 4, data[2] idle 1): all dropped`},
		},
		{
			name:    "repeat with a bad count: all dropped",
			cfg:     one,
			body:    stock(entry(sxm, 4, 8), raw(sxm, `{"idle_gpu_num":"x"}`)),
			dropped: []string{`autodl:beijingDC1:A100-SXM4-80GB: A100-SXM4-80GB listed 2 times and data[1]: idle_gpu_num "x": not a non-negative integer ≤ 1000000: all dropped`},
		},
		{
			name: "an element with two GPUs; non-object elements dropped by position",
			cfg:  one,
			body: stock(`{"A100-SXM4-80GB":{"idle_gpu_num":4},"A100-PCIE-40GB":{"idle_gpu_num":3}}`, `"x"`, `null`),
			want: []string{sxm1("4"), pcie1},
			dropped: []string{
				`autodl:beijingDC1:data[1]: stock entry "x": not an object`,
				`autodl:beijingDC1:data[2]: stock entry null: not an object`,
			},
		},
		{
			name: "data null is no stock",
			cfg:  one,
			body: `{"code":"Success","msg":"","data":null}`,
		},
		{
			name: "data empty",
			cfg:  one,
			body: stock(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offers, dropped, err := autodl.ParseGPUStock([]byte(tt.body), "beijingDC1", now, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, rows(offers), tt.want)
			for _, d := range dropped {
				if d.Provider != "autodl" {
					t.Errorf("dropped provider %q", d.Provider)
				}
			}
			if got := dropRows(dropped); !slices.Equal(got, tt.dropped) {
				t.Errorf("dropped\n got %q\nwant %q", got, tt.dropped)
			}
		})
	}
}

func TestParseGPUStockErrors(t *testing.T) {
	tests := []struct {
		name, body, want, class string
	}{
		{"not JSON", `<html>502 Bad Gateway</html>`, "autodl gpu_stock westDC2: not JSON: <html>502 Bad Gateway</html>", pricing.ClassBadResponse},
		{"a list", `[]`, "autodl gpu_stock westDC2: not a JSON object: []", pricing.ClassBadResponse},
		{"code missing", `{"data":[]}`, "autodl gpu_stock westDC2: code missing: not a string", pricing.ClassBadResponse},
		{"code a number", `{"code":0,"data":[]}`, "autodl gpu_stock westDC2: code 0: not a string", pricing.ClassBadResponse},
		{"code not Success", `{"code":"BadRequest","msg":"无当前资源访问权限"}`, "autodl gpu_stock westDC2: code BadRequest (auth): 无当前资源访问权限", pricing.ClassAuth},
		{"code case matters", `{"code":"success","data":[]}`, "autodl gpu_stock westDC2: code success (bad-response): ", pricing.ClassBadResponse},
		{"data missing", `{"code":"Success","msg":""}`, "autodl gpu_stock westDC2: data missing: not a list", pricing.ClassBadResponse},
		{"data an object", `{"code":"Success","data":{"A100-SXM4-80GB":{"idle_gpu_num":1}}}`, `autodl gpu_stock westDC2: data {"A100-SXM4-80GB":{"idle_gpu_num":1}}: not a list`, pricing.ClassBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offers, dropped, err := autodl.ParseGPUStock([]byte(tt.body), "westDC2", now, autodl.Config{PriceList: priceList()})
			if err == nil || err.Error() != tt.want || pricing.Classify(err) != tt.class {
				t.Errorf("err %v (%s), want %s (%s)", err, pricing.Classify(err), tt.want, tt.class)
			}
			if len(offers) != 0 || len(dropped) != 0 {
				t.Errorf("offers %v dropped %v beside an error", offers, dropped)
			}
		})
	}
	_, _, err := autodl.ParseGPUStock([]byte(`{"code":"BadRequest","msg":"登录超时，请重新登录","data":null}`), "beijingDC2", now, autodl.Config{})
	var ae *autodl.APIError
	if !errors.As(err, &ae) || *ae != (autodl.APIError{Region: "beijingDC2", Code: "BadRequest", Msg: "登录超时，请重新登录"}) {
		t.Errorf("err %#v", err)
	}
}

func TestGPUModel(t *testing.T) {
	for name, want := range map[string]string{
		"A100-SXM4-80GB": "A100-80GB", "A100-PCIE-40GB": "A100-40GB", "A100 80GB PCIe": "A100-80GB",
		"a100-sxm4-40gb": "A100-40GB", "A100-80G": "A100-80GB", "NVIDIA A100 (80GB)": "A100-80GB",
		"A100-SXM4-80GB*2": "A100-80GB",
	} {
		if got, err := autodl.GPUModel(name); got != want || err != nil {
			t.Errorf("GPUModel(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for name, want := range map[string]string{
		"A100":           "no memory size",
		"A100-SXM4":      "no memory size",
		"A100X-80GB":     "not an A100",
		"H100-80GB":      "not an A100",
		"A100-40GB-80GB": "more than one memory size",
		"A100-48GB":      "not an A100 size",
		"A100-80GBX":     "no memory size",
		"":               "not an A100",
	} {
		if _, err := autodl.GPUModel(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GPUModel(%q) err %v, want %q", name, err, want)
		}
	}
}

func TestYuanAndMilliYuan(t *testing.T) {
	for _, c := range []struct {
		f         func(string) (sluice.Money, error)
		in, want  string
		wantError string
	}{
		{autodl.Yuan, "6.68", "6.68 CNY", ""},
		{autodl.Yuan, " 4.98 ", "4.98 CNY", ""},
		{autodl.Yuan, "6.680000000000000000001", "6.680000000000000000001 CNY", ""},
		{autodl.Yuan, "-1", "", `yuan "-1": negative`},
		{autodl.Yuan, "six", "", `yuan "six": not a decimal`},
		{autodl.Yuan, "1e99", "", `yuan "1e99": out of range`},
		{autodl.MilliYuan, "6680", "6.68 CNY", ""},
		{autodl.MilliYuan, "9000", "9 CNY", ""},
		{autodl.MilliYuan, "10", "0.01 CNY", ""},
		{autodl.MilliYuan, "1580.5", "1.5805 CNY", ""},
		{autodl.MilliYuan, "-10", "", `milli-yuan "-10": negative`},
	} {
		got, err := c.f(c.in)
		switch {
		case c.wantError != "":
			if err == nil || err.Error() != c.wantError {
				t.Errorf("%q: err %v, want %s", c.in, err, c.wantError)
			}
		case err != nil || got.String() != c.want:
			t.Errorf("%q: %v %v, want %s", c.in, got, err, c.want)
		}
	}
	if p, err := autodl.NewPrice(sxm, "", "6.68"); err != nil || p.PerGPUHour.String() != "6.68 CNY" || p.GPUName != sxm {
		t.Errorf("NewPrice: %+v %v", p, err)
	}
	if _, err := autodl.NewPrice(sxm, "", "6680"); err == nil || !strings.Contains(err.Error(), "milli-yuan in the yuan field") {
		t.Errorf("NewPrice milli-yuan in yuan: %v", err)
	}
	if _, err := autodl.NewPrice("A100", "", "6.68"); err == nil || !strings.Contains(err.Error(), "no memory size") {
		t.Errorf("NewPrice A100: %v", err)
	}
}

func TestPriceListValidate(t *testing.T) {
	if err := priceList().Validate(); err != nil {
		t.Errorf("good list: %v", err)
	}
	bad := autodl.PriceList{Prices: []autodl.Price{
		{GPUName: "", PerGPUHour: sluice.MustMoney("1", "CNY")},
		{GPUName: sxm, PerGPUHour: sluice.MustMoney("0", "CNY")},
		{GPUName: pcie, PerGPUHour: sluice.MustMoney("4.98", "CNY")},
		{GPUName: pcie, PerGPUHour: sluice.MustMoney("4.980", "CNY")}, // the same price
		{GPUName: "A100 80G", PerGPUHour: sluice.MustMoney("7", "CNY")},
		{GPUName: "A100 80G", PerGPUHour: sluice.MustMoney("8", "CNY")},
	}}
	err := bad.Validate()
	want := []string{
		"autodl: price list has no as-of date",
		"autodl: price list has no source",
		"list price with no GPU name",
		"list price for A100-SXM4-80GB: 0 CNY: not positive",
		"price list has 2 different prices for A100 80G (7 CNY, 8 CNY)",
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("Validate:\n got %q\nwant %q", got, want)
	}
	if err := (autodl.PriceList{AsOf: time.Now(), Source: "x"}).Validate(); err == nil || !strings.Contains(err.Error(), "no price list configured") {
		t.Errorf("empty list: %v", err)
	}
}
