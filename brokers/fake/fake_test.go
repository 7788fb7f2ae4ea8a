package fake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The /_fake/ control API drives a fake from another process.
func TestControlAPI(t *testing.T) {
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	srv := New()
	srv.Now = func() time.Time { return now }
	hs := httptest.NewServer(srv.Handler("vast"))
	defer hs.Close()
	post := func(path, body string) *http.Response {
		resp, err := http.Post(hs.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post("/_fake/faults", `{"kind":"capacity","times":1}`); r.StatusCode != 200 {
		t.Fatalf("add fault: %d", r.StatusCode)
	}
	if r := post("/_fake/faults", `{}`); r.StatusCode != 400 {
		t.Fatalf("fault without kind: %d", r.StatusCode)
	}
	if r := post("/_fake/prices", `{"sku":"7","price":"2.5"}`); r.StatusCode != 204 {
		t.Fatalf("price: %d", r.StatusCode)
	}
	rent := func() int {
		req, _ := http.NewRequest(http.MethodPut, hs.URL+"/api/v0/asks/7/", strings.NewReader(`{"client_id":"me","image":"img","label":"sluice-x"}`))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := rent(); c != 410 {
		t.Fatalf("rent with a capacity fault: %d", c)
	}
	if c := rent(); c != 200 {
		t.Fatalf("rent: %d", c)
	}
	resp, err := http.Get(hs.URL + "/_fake/instances")
	if err != nil {
		t.Fatal(err)
	}
	var insts []Instance
	_ = json.NewDecoder(resp.Body).Decode(&insts)
	resp.Body.Close()
	if len(insts) != 1 || insts[0].Price != "2.5" || insts[0].Market != "on-demand" {
		t.Fatalf("instances: %+v", insts)
	}
	now = now.Add(90 * time.Second)
	resp, _ = http.Get(hs.URL + "/_fake/bill")
	var bills []Bill
	_ = json.NewDecoder(resp.Body).Decode(&bills)
	resp.Body.Close()
	// 90 s at 2.5 USD per hour, per second: 0.0625.
	if len(bills) != 1 || bills[0].BilledSeconds != 90 || bills[0].Cost.Amount.String() != "0.0625" {
		t.Fatalf("bills: %+v", bills)
	}
	req, _ := http.NewRequest(http.MethodDelete, hs.URL+"/_fake/faults", nil)
	if r, _ := http.DefaultClient.Do(req); r.StatusCode != 204 {
		t.Fatalf("clear: %d", r.StatusCode)
	}
}

// EC2 bills 60 s at least; the state file keeps everything across Open.
func TestBillsAndPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return t0 }
	s.mu.Lock()
	s.addLocked(&Instance{Provider: "aws", ID: "i-1", Price: "36", Currency: "USD", Market: "spot"})
	s.saveLocked()
	s.mu.Unlock()
	s.Now = func() time.Time { return t0.Add(10 * time.Second) }
	b, err := s.Bills("aws")
	if err != nil || len(b) != 1 || b[0].BilledSeconds != 60 || b[0].Cost.Amount.String() != "0.6" {
		t.Fatalf("bills: %+v %v", b, err)
	}
	s.Fail(Fault{Provider: "aws", Kind: Throttle})
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.Instances("aws"); len(got) != 1 || got[0].ID != "i-1" || len(s2.st.Faults) != 1 {
		t.Fatalf("reloaded: %+v faults %v", got, s2.st.Faults)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.json")); err != nil {
		t.Fatalf("missing state file: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("corrupt state accepted")
	}
}
