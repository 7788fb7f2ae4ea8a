package autodl_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing/autodl"
)

func FuzzParseGPUStock(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/replay/autodl/gpu_stock.*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		stock(entry(sxm, 12, 80), entry(pcie, 3, 16), entry(sxm, 12, 80)),
		stock(raw(sxm, `{"idle_gpu_num":"7","total_gpu_num":"9"}`), raw(pcie, `{"idle_gpu_num":1e1}`)),
		stock(raw(sxm, `{"idle_gpu_num":-0}`), raw(pcie, `{"idle_gpu_num":99999999999999999999}`)),
		stock(`{"A100-SXM4-80GB":{"idle_gpu_num":4},"A100-PCIE-40GB":{"idle_gpu_num":3}}`, `1`, `null`, `[]`),
		stock(entry("A100", 3, 3), entry("A100-SXM4-40GB", 3, 3)),
		`{"code":"BadRequest","msg":"无当前资源访问权限"}`,
		`{"code":"Success","msg":"","data":null}`,
		`{"code":"Success","data":{}}`,
		`{"code":0}`,
		``, `null`, `"x"`, `[]`,
	} {
		f.Add([]byte(s))
	}
	cfg := autodl.Config{GPUNames: []string{sxm, pcie, "A100", "A100-SXM4-40GB"}, PriceList: priceList()}
	cfg.PriceList.Prices = append(cfg.PriceList.Prices, autodl.Price{GPUName: "A100", PerGPUHour: sluice.MustMoney("1", "CNY")})
	counts := autodl.DefaultGPUCounts
	f.Fuzz(func(t *testing.T, body []byte) {
		offers, dropped, err := autodl.ParseGPUStock(body, "beijingDC1", now, cfg)
		if err != nil {
			if len(offers) != 0 || len(dropped) != 0 {
				t.Fatalf("error %v with %d offers, %d dropped", err, len(offers), len(dropped))
			}
			if !strings.HasPrefix(err.Error(), "autodl gpu_stock beijingDC1: ") {
				t.Fatalf("error %q does not name the region", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, o := range offers {
			if ids[o.ID] {
				t.Fatalf("offer id %s twice", o.ID)
			}
			ids[o.ID] = true
			per, perr := decimal.NewFromString(o.RawPrice)
			switch {
			case perr != nil || !per.Mul(decimal.NewFromInt(int64(o.GPUsPerUnit))).Equal(o.UnitPrice.Amount):
				t.Fatalf("%s: unit price %s is not raw %q × %d", o.ID, o.UnitPrice, o.RawPrice, o.GPUsPerUnit)
			case !o.UnitPrice.Amount.IsPositive() || o.UnitPrice.Currency != "CNY":
				t.Fatalf("%s: price %s", o.ID, o.UnitPrice)
			case o.Market != sluice.OnDemand || o.Basis != sluice.PerGPUHour || o.Region != "beijingDC1" || o.Provider != "autodl":
				t.Fatalf("offer %+v", o)
			case !slices.Contains(counts, o.GPUsPerUnit) || o.UnitsAvailable < 1 || o.UnitsAvailable > autodl.MaxGPUCount:
				t.Fatalf("%s: %d GPUs × %d units", o.ID, o.GPUsPerUnit, o.UnitsAvailable)
			case o.GPUModel != "A100-80GB" && o.GPUModel != "A100-40GB":
				t.Fatalf("%s: model %q", o.ID, o.GPUModel)
			case o.SKU != sxm && o.SKU != pcie:
				t.Fatalf("%s: SKU %q is not a configured name with a usable price", o.ID, o.SKU)
			case !strings.HasPrefix(o.ID, "autodl:beijingDC1:"+o.SKU+":"):
				t.Fatalf("ID %s", o.ID)
			}
		}
		for _, d := range dropped {
			if d.Provider != "autodl" || d.Ref == "" || d.Reason == "" {
				t.Fatalf("dropped %+v", d)
			}
		}
	})
}
