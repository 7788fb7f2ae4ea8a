package placement

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
)

const testDec = "dec-0123456789abcdef0123456789abcdef"

func parseTest(id string) (string, error) {
	if !strings.HasPrefix(id, "runpod:") {
		return "", fmt.Errorf("offer id %q: %w", id, sluice.ErrQuota)
	}
	return strings.TrimPrefix(id, "runpod:"), nil
}

func oneUnit(l sluice.Line) string {
	if l.Units != 1 {
		return "one unit only"
	}
	return ""
}

func TestBegin(t *testing.T) {
	now := time.Date(2026, 11, 30, 4, 0, 0, 0, time.FixedZone("x", 3600))
	usd := func(s string) sluice.Money { return sluice.MustMoney(s, "USD") }
	spot := func(units int, b string) sluice.Line {
		m := usd(b)
		return sluice.Line{OfferID: "runpod:A100:secure:1x:spot", Provider: "runpod", Market: sluice.Spot, Units: units, GPUs: units, Slots: units, UnitPrice: m, Bid: &m}
	}
	tests := []struct {
		name    string
		line    sluice.Line
		lim     bid.Limits
		wantErr string // "" when none
		class   error
		bidSent string
		ref     string
	}{
		{"spot bid recorded", spot(1, "1.2345"), bid.Limits{}, "", nil, "1.234", "A100:secure:1x:spot"},
		{"refused after the bid", spot(2, "1.2345"), bid.Limits{}, "runpod " + sluice.ClientToken(testDec, 4) + ": spot line of 2 units: one unit only: quota",
			sluice.ErrQuota, "1.234", "A100:secure:1x:spot"},
		{"bid under the minimum keeps the bid", spot(1, "1"), bid.Limits{MinBid: usd("2")}, "runpod " + sluice.ClientToken(testDec, 4) + ": ",
			sluice.ErrBidOutOfRange, "1.000", "A100:secure:1x:spot"},
		{"on-demand has no bid", sluice.Line{OfferID: "runpod:x", Provider: "runpod", Market: sluice.OnDemand, Units: 1, GPUs: 1, UnitPrice: usd("3")},
			bid.Limits{}, "", nil, "", "x"},
		{"not the provider's offer", sluice.Line{OfferID: "vast:1:bid", Units: 1}, bid.Limits{}, `offer id "vast:1:bid": quota`, sluice.ErrQuota, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Begin("runpod", parseTest, oneUnit, testDec, 4, tc.line, tc.lim, now)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !errors.Is(err, tc.class)) {
				t.Fatalf("err = %v, want %q (%v)", err, tc.wantErr, tc.class)
			}
			if s.Ref != tc.ref || s.Placement.BidSent != tc.bidSent || s.Bid.Text != tc.bidSent {
				t.Fatalf("start: %+v", s)
			}
			if tc.ref == "" {
				if s.Placement.ClientToken != "" {
					t.Fatalf("placement set for a foreign offer id: %+v", s.Placement)
				}
				return
			}
			if s.Placement.ClientToken != sluice.ClientToken(testDec, 4) || !s.Placement.PlacedAt.Equal(now) || s.Placement.PlacedAt.Location() != time.UTC {
				t.Fatalf("placement: %+v", s.Placement)
			}
		})
	}
}

func TestReleaseEach(t *testing.T) {
	gone := errors.New("not found")
	down := fmt.Errorf("down: %w", sluice.ErrTransient)
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	now := func() time.Time { return at }
	for _, tc := range []struct {
		name   string
		answer map[string]error
		called string
		err    error
	}{
		{"all terminated", nil, "a,b,c", nil},
		{"already gone counts", map[string]error{"b": gone}, "a,b,c", nil},
		{"other error stops", map[string]error{"b": down}, "a,b", down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var called []string
			res, err := ReleaseEach(context.Background(), []string{"a", "b", "c"}, func(_ context.Context, id string) error {
				called = append(called, id)
				return tc.answer[id]
			}, func(err error) bool { return errors.Is(err, gone) }, now)
			if !errors.Is(err, tc.err) || strings.Join(called, ",") != tc.called {
				t.Fatalf("err %v, called %v", err, called)
			}
			if want := (sluice.ReleaseResult{Confirmed: tc.err == nil, At: map[bool]time.Time{true: at}[tc.err == nil]}); res != want {
				t.Fatalf("result %+v, want %+v", res, want)
			}
		})
	}
}

func TestNamed(t *testing.T) {
	type pod struct{ id, name string }
	list := []pod{{"1", Name(testDec, 2)}, {"2", "someone-else"}, {"3", UnitName(testDec, 5, 1)}, {"4", NamePrefix + "junk"}}
	got := Named("runpod", list, func(p pod) string { return p.name }, func(p pod) sluice.Instance {
		return sluice.Instance{ExternalID: p.id, State: "RUNNING"}
	})
	want := []sluice.Instance{
		{Provider: "runpod", ExternalID: "1", DecisionID: testDec, Line: 2, State: "RUNNING"},
		{Provider: "runpod", ExternalID: "3", DecisionID: testDec, Line: 5, State: "RUNNING"},
		{Provider: "runpod", ExternalID: "4", State: "RUNNING"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestEarliest(t *testing.T) {
	t1 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	var p sluice.Placement
	for _, s := range []time.Time{{}, t1.Add(time.Hour), t1, {}, t1.Add(2 * time.Hour)} {
		Earliest(&p, s)
	}
	if !p.PlacedAt.Equal(t1) {
		t.Fatalf("PlacedAt %v", p.PlacedAt)
	}
}

// CallJSON against a loopback server: the headers and body sent, the answer
// and ReadBody's error handed back, and the classes of a failed call.
func TestCallJSON(t *testing.T) {
	var gotAuth, gotType, gotBody string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotAuth, gotType, gotBody = r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/busy" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer hs.Close()
	ans, err := CallJSON(context.Background(), hs.Client(), "vast", "PUT asks/1", http.MethodPut, hs.URL+"/ok", Bearer("k"), map[string]any{"price": 1})
	if err != nil || ans.Err != nil || ans.Status != 200 || string(ans.Body) != `{"ok":true}` || gotAuth != "Bearer k" || gotType != "application/json" || gotBody != `{"price":1}` {
		t.Fatalf("ok: %+v %v; sent %q %q %q", ans, err, gotAuth, gotType, gotBody)
	}
	ans, err = CallJSON(context.Background(), hs.Client(), "vast", "GET instances", http.MethodGet, hs.URL+"/busy", Bearer(""), nil)
	if err != nil || ans.Err == nil || ans.Status != 503 || string(ans.Body) != `{"ok":true}` || gotAuth != "" || gotBody != "" {
		t.Fatalf("busy: %+v %v; sent %q %q", ans, err, gotAuth, gotBody)
	}
	if _, err := CallJSON(context.Background(), hs.Client(), "vast", "op", "BAD METHOD", hs.URL, "", nil); !errors.Is(err, sluice.ErrQuota) {
		t.Fatalf("bad request: %v", err)
	}
	hs.Close()
	if _, err := CallJSON(context.Background(), hs.Client(), "vast", "op", http.MethodGet, hs.URL, "", nil); !errors.Is(err, sluice.ErrTransient) {
		t.Fatalf("no answer: %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	if OrTolerance(decimal.Zero).String() != "0.02" || OrTolerance(decimal.RequireFromString("0.05")).String() != "0.05" {
		t.Fatal("tolerance default")
	}
	hc := &http.Client{}
	if OrHTTPClient(nil).Timeout != 30*time.Second || OrHTTPClient(hc) != hc {
		t.Fatal("http client default")
	}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if !OrNow(func() time.Time { return fixed })().Equal(fixed) || OrNow(nil)().IsZero() {
		t.Fatal("now default")
	}
}
