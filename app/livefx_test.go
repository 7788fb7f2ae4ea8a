package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
)

func TestLiveFXWiring(t *testing.T) {
	body, _ := os.ReadFile("../testdata/fx/eurofxref-daily.xml")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.Write(body)
	}))
	defer srv.Close()
	cfg, err := config.Load("../testdata/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 10, 5, 30, 0, time.UTC)
	got := LiveFX(context.Background(), cfg.FX, srv.URL, now)
	if len(got) != 1 || got[0].Rate.String() != "7.109200922" || got[0].Source[:3] != "ECB" {
		t.Fatalf("%+v", got)
	}
	if cfg.FX[0].Rate.String() != "7.1072" {
		t.Fatal("config modified")
	}
	if got := LiveFX(context.Background(), cfg.FX, srv.URL, now.AddDate(0, 0, 30)); got[0].Rate.String() != "7.1072" {
		t.Fatalf("stale accepted: %+v", got)
	}
	if got := LiveFX(context.Background(), cfg.FX, "http://127.0.0.1:1/", now); got[0].Rate.String() != "7.1072" {
		t.Fatalf("failed fetch: %+v", got)
	}
	if got := LiveFX(context.Background(), cfg.FX, "off", now); got[0].Rate.String() != "7.1072" {
		t.Fatalf("off: %+v", got)
	}
}
