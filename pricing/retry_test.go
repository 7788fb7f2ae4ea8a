package pricing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// vastSearch is a Vast.ai bundles search body, the kind of read-only POST the
// transport re-sends.
const vastSearch = `{"verified":{"eq":true},"rentable":{"eq":true},"gpu_name":{"in":["A100 SXM4","A100 PCIE"]},"type":"ondemand","order":[["dph_total","asc"]]}`

func retryClient(rt *RetryTransport) *http.Client {
	if rt.Rand == nil {
		rt.Rand = rand.NewPCG(1, 2)
	}
	return &http.Client{Transport: rt}
}

// TestRetryTwo503ThenOK: two 503s then a 200 succeed on the third attempt, and
// every attempt carries the same body.
func TestRetryTwo503ThenOK(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n <= 2 {
			http.Error(w, `{"error":"upstream overloaded"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"offers":[{"id":9310001,"dph_total":0.76}]}`)
	}))
	defer srv.Close()

	rt := &RetryTransport{BaseDelay: 5 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v0/bundles/", strings.NewReader(vastSearch))
	resp, err := retryClient(rt).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := ReadBody(resp, "vast", "POST bundles", "application/json")
	if err != nil || !strings.Contains(string(body), "9310001") {
		t.Fatalf("body %q err %v", body, err)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d attempts, want 3", len(bodies))
	}
	for i, b := range bodies {
		if b != vastSearch {
			t.Errorf("attempt %d sent %q, want %q", i+1, b, vastSearch)
		}
	}
}

// TestRetryAfterBeyondDeadline: a 429 asking for 1 s under a 300 ms deadline
// is returned at once, Retry-After and all, without sleeping.
func TestRetryAfterBeyondDeadline(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"detail":"API requests too frequent endpoint threshold=4.5"}`)
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(vastSearch))
	start := time.Now()
	resp, err := retryClient(&RetryTransport{}).Do(req)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadBody(resp, "vast", "POST bundles", "application/json")
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 429 || he.Class != ClassThrottled || he.RetryAfter != time.Second {
		t.Fatalf("err %v (%+v), want the 429 with Retry-After 1s", err, he)
	}
	if calls.Load() != 1 {
		t.Errorf("%d attempts, want 1", calls.Load())
	}
	if took > 100*time.Millisecond {
		t.Errorf("took %s: slept instead of returning the 429", took)
	}
}

// TestRetryAfterHonoured: a short Retry-After is waited out (not the shorter backoff).
func TestRetryAfterHonoured(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	start := time.Now()
	resp, err := retryClient(&RetryTransport{BaseDelay: time.Millisecond}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || took < time.Second || took > 1500*time.Millisecond {
		t.Errorf("status %d after %s, want 200 after ≈1s", resp.StatusCode, took)
	}
}

// TestRetryCancelMidBackoff: cancelling the context while the transport waits
// ends the wait at once.
func TestRetryCancelMidBackoff(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	_, err := retryClient(&RetryTransport{BaseDelay: 2 * time.Second, MaxDelay: 2 * time.Second}).Do(req)
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Errorf("took %s after a cancel at 50ms", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d attempts, want 1", calls.Load())
	}
}

// TestRetryBounded: MaxAttempts bounds the attempts; the last 5xx is returned.
func TestRetryBounded(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	resp, err := retryClient(&RetryTransport{BaseDelay: time.Millisecond}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || calls.Load() != DefaultMaxAttempts {
		t.Errorf("status %d after %d attempts, want 503 after %d", resp.StatusCode, calls.Load(), DefaultMaxAttempts)
	}
}

// TestRetryNotRetried: 4xx other than 429, and 501, are final.
func TestRetryNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 501} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(status)
		}))
		resp, err := retryClient(&RetryTransport{BaseDelay: time.Millisecond}).Get(srv.URL)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if calls.Load() != 1 {
			t.Errorf("HTTP %d: %d attempts, want 1", status, calls.Load())
		}
	}
}

// TestRetryConnectionRefused: a refused connection is retried, then reported.
func TestRetryConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	var attempts atomic.Int32
	rt := &RetryTransport{BaseDelay: time.Millisecond, Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		attempts.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, err = retryClient(rt).Get("http://" + addr + "/")
	if err == nil || Classify(err) != ClassUnavailable {
		t.Fatalf("err %v (class %q), want unavailable", err, Classify(err))
	}
	if attempts.Load() != DefaultMaxAttempts {
		t.Errorf("%d attempts, want %d", attempts.Load(), DefaultMaxAttempts)
	}
}

// TestRetryBodyWithoutGetBody: a body that cannot be re-read is sent once.
func TestRetryBodyWithoutGetBody(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(bytes.NewBufferString(vastSearch)))
	req.GetBody = nil
	resp, err := retryClient(&RetryTransport{BaseDelay: time.Millisecond}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if calls.Load() != 1 {
		t.Errorf("%d attempts, want 1", calls.Load())
	}
}

// TestBackoffJitter: the waits double up to MaxDelay and stay within
// [d/2, d); the same seed gives the same waits.
func TestBackoffJitter(t *testing.T) {
	waits := func() []time.Duration {
		rt := &RetryTransport{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Rand: rand.NewPCG(7, 7)}
		var out []time.Duration
		for n := 1; n <= 6; n++ {
			out = append(out, rt.backoff(n))
		}
		return out
	}
	a, b := waits(), waits()
	for i, d := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		d *= time.Millisecond
		if a[i] < d/2 || a[i] >= d {
			t.Errorf("retry %d: wait %s outside [%s, %s)", i+1, a[i], d/2, d)
		}
		if a[i] != b[i] {
			t.Errorf("retry %d: %s then %s with the same seed", i+1, a[i], b[i])
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
