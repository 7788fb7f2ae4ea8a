package vast_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pricing"
	"github.com/sluicehq/sluice/pricing/vast"
)

// TestReservedSearch: type "reserved" offers are Market reserved at
// dph_total, with TermHours = duration ÷ 3600 rounded down (0 without one).
func TestReservedSearch(t *testing.T) {
	res := func(id, term string) string {
		s := "vast:" + id + ":reserved | sku=" + id + " A100-80GB x1 | US/Georgia | reserved | 1.33 USD | min_bid - | raw 1.33/offer-hour | units 1"
		if term != "" {
			s += " | term " + term + "h"
		}
		return s
	}
	d := func(v string) map[string]string { return map[string]string{"duration": v} }
	runBundleCases(t, []bundleCase{
		{
			name: "duration to whole hours",
			typ:  "reserved",
			body: bundles(
				offer(1, d("86400")),     // 24 h
				offer(2, d("90000.5")),   // 25.0001 h → 25
				offer(3, d("3599.999")),  // under an hour → 0
				offer(4, nil),            // no duration → 0
				offer(5, d("null")),      // null → 0
				offer(6, d("2592000.0")), // 30 days
				offer(7, d("315360000")), // exactly MaxTermHours
			),
			want: []string{res("1", "24"), res("2", "25"), res("3", ""), res("4", ""), res("5", ""), res("6", "720"), res("7", "87600")},
		},
		{
			name: "unusable duration drops the offer",
			typ:  "reserved",
			body: bundles(offer(1, d("-1")), offer(2, d(`"86400"`)), offer(3, d("1e40")), offer(4, d("315363600")), offer(5, d("86400"))),
			want: []string{res("5", "24")},
			dropped: []string{
				`vast:1:reserved: duration "-1": negative`,
				`vast:2:reserved: duration "\"86400\"": not a JSON number`,
				`vast:3:reserved: duration "1e40": out of range`,
				`vast:4:reserved: duration 315363600: more than 87600 hours`,
			},
		},
		{
			name: "duration is not read for on-demand",
			typ:  "ondemand",
			body: bundles(offer(1, d("-1"))),
			want: []string{"vast:1:ondemand | sku=1 A100-80GB x1 | US/Georgia | on-demand | 1.33 USD | min_bid - | raw 1.33/offer-hour | units 1"},
		},
		{
			name: "reserved needs dph_total, not min_bid",
			typ:  "reserved",
			body: bundles(offer(1, map[string]string{"dph_total": "null"}), offer(2, map[string]string{"min_bid": "-"})),
			want: []string{res("2", "")},
			dropped: []string{
				`vast:1:reserved: dph_total null: missing`,
			},
		},
		{
			name: "listings that differ on duration contradict",
			typ:  "reserved",
			body: bundles(offer(1, d("86400")), offer(1, d("172800"))),
			dropped: []string{
				`vast:1:reserved: duplicate: vast:1:reserved at offers[0] contradicts offers[1] (duration gives 24 vs 48 term hours): all 2 listings dropped`,
				`vast:1:reserved: duplicate: vast:1:reserved at offers[1] contradicts offers[0] (duration gives 48 vs 24 term hours): all 2 listings dropped`,
			},
		},
	})
}

// TestErrorClasses: every failed search carries its class and Retry-After.
func TestErrorClasses(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name       string
		status     int
		ct         string
		retryAfter string
		body       string
		class      string
		check      func(t *testing.T, err error)
	}{
		{"429 with Retry-After seconds", 429, "application/json", "2", `{"detail":"API requests too frequent endpoint threshold=4.5"}`, pricing.ClassThrottled,
			func(t *testing.T, err error) {
				var te *vast.ThrottledError
				if !errors.As(err, &te) || te.RetryAfter != 2*time.Second || te.Detail != "API requests too frequent endpoint threshold=4.5" || te.SearchType != "ondemand" {
					t.Errorf("err = %#v", err)
				}
			}},
		{"429 with Retry-After date", 429, "application/json", date, `{"detail":"slow down"}`, pricing.ClassThrottled,
			func(t *testing.T, err error) {
				var te *vast.ThrottledError
				if !errors.As(err, &te) || te.RetryAfter < 80*time.Second || te.RetryAfter > 90*time.Second {
					t.Errorf("err = %#v", err)
				}
			}},
		{"429 with a text body and no Retry-After", 429, "text/plain", "", `Too Many Requests`, pricing.ClassThrottled,
			func(t *testing.T, err error) {
				var te *vast.ThrottledError
				if !errors.As(err, &te) || te.RetryAfter != 0 || te.Detail != "" {
					t.Errorf("err = %#v", err)
				}
			}},
		{"401", 401, "application/json", "", `{"error":"invalid_user_key"}`, pricing.ClassAuth, nil},
		{"403", 403, "application/json", "", `{"error":"forbidden"}`, pricing.ClassAuth, nil},
		{"503 with Retry-After", 503, "text/html", "30", `<html>maintenance</html>`, pricing.ClassUnavailable,
			func(t *testing.T, err error) {
				var he *vast.HTTPError
				if !errors.As(err, &he) || he.Status != 503 || he.RetryAfter != 30*time.Second ||
					err.Error() != "vast: bundles search type=ondemand: HTTP 503 Service Unavailable (unavailable): <html>maintenance</html>" {
					t.Errorf("err = %v", err)
				}
			}},
		{"404", 404, "application/json", "", `{"error":"not_found"}`, pricing.ClassBadResponse, nil},
		{"200 as text/html", 200, "text/html", "", `{"offers":[]}`, pricing.ClassBadResponse, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ct)
				if c.retryAfter != "" {
					w.Header().Set("Retry-After", c.retryAfter)
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			defer srv.Close()
			offers, _, err := vast.New(vast.Config{BaseURL: srv.URL, Types: []string{"ondemand"}}).Offers(context.Background())
			if err == nil || len(offers) != 0 {
				t.Fatalf("offers %d err %v", len(offers), err)
			}
			if got := pricing.Classify(err); got != c.class {
				t.Errorf("class %q, want %q: %v", got, c.class, err)
			}
			if c.check != nil {
				c.check(t, err)
			}
		})
	}
}
