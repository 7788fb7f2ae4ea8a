package aliyun

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// hangTransport blocks, ignoring the request context, on calls whose
// "Action|RegionId|InstanceType" is in hang, until release is closed; it
// sends every other request on.
type hangTransport struct {
	hang    map[string]bool
	release chan struct{}
}

func (h hangTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.hang[callKey(r)] {
		<-h.release
		return nil, errors.New("released")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func callKey(r *http.Request) string {
	return r.Header.Get("x-acs-action") + "|" + r.URL.Query().Get("RegionId") + "|" + r.URL.Query().Get("InstanceType")
}

// TestDeadlineKeepsFinishedCalls: when calls hang past the deadline, Offers
// returns as soon as ctx ends, with the offers of the calls that finished and
// an error naming the ones that did not.
func TestDeadlineKeepsFinishedCalls(t *testing.T) {
	const deadline = 300 * time.Millisecond

	// Every offer of a full, unhurried run, to subtract the hung calls' from.
	f := newFakeECS(t)
	f.loadReplay()
	base := httptest.NewServer(f)
	all, _, err := New(testConfig(base.URL)).Offers(context.Background())
	base.Close()
	if err != nil || len(all) != 27 {
		t.Fatalf("baseline: %d offers, err %v", len(all), err)
	}
	// lost reports whether an offer id comes from the call "Action|region|type".
	lost := func(id, key string) bool {
		p := strings.Split(key, "|")
		if p[0] == "DescribePrice" {
			return id == OnDemandID(p[1], p[2])
		}
		return strings.HasPrefix(id, "aliyun:"+p[1]+":") && strings.HasSuffix(id, ":"+p[2]+":spot")
	}

	cases := []struct {
		name      string
		hang      []string // calls that never answer
		inServer  bool     // hang in the server until the request is cancelled (else: in a transport that ignores ctx)
		fail      string   // a call answered with an error JSON
		wantErr   string
		wantDrops []string // refs
	}{
		{
			name:     "server holds one call until the request is cancelled",
			hang:     []string{"DescribePrice|cn-beijing|ecs.gn7e-c16g1.16xlarge"},
			inServer: true,
			wantErr:  "aliyun: 1 of 18 calls unfinished at deadline: DescribePrice cn-beijing ecs.gn7e-c16g1.16xlarge: context deadline exceeded",
		},
		{
			name:    "transport ignores the context: Offers does not wait for it",
			hang:    []string{"DescribePrice|cn-beijing|ecs.gn7e-c16g1.16xlarge"},
			wantErr: "aliyun: 1 of 18 calls unfinished at deadline: DescribePrice cn-beijing ecs.gn7e-c16g1.16xlarge: context deadline exceeded",
		},
		{
			name:     "two calls hung, named in call order",
			hang:     []string{"DescribeSpotPriceHistory|cn-shanghai|ecs.gn7e-c16g1.4xlarge", "DescribePrice|cn-hangzhou|ecs.gn7e-c16g1.32xlarge"},
			inServer: true,
			wantErr: "aliyun: 2 of 18 calls unfinished at deadline: DescribePrice cn-hangzhou ecs.gn7e-c16g1.32xlarge, " +
				"DescribeSpotPriceHistory cn-shanghai ecs.gn7e-c16g1.4xlarge: context deadline exceeded",
		},
		{
			name:      "a failed call is dropped, a hung one named",
			hang:      []string{"DescribeSpotPriceHistory|cn-beijing|ecs.gn7e-c16g1.32xlarge"},
			fail:      "DescribePrice|cn-hangzhou|ecs.gn7e-c16g1.4xlarge",
			wantErr:   "aliyun: 1 of 18 calls unfinished at deadline: DescribeSpotPriceHistory cn-beijing ecs.gn7e-c16g1.32xlarge: context deadline exceeded",
			wantDrops: []string{"aliyun:cn-hangzhou:ecs.gn7e-c16g1.4xlarge"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeECS(t)
			f.loadReplay()
			if c.fail != "" {
				delete(f.bodies, c.fail) // the fake answers an unknown key with InvalidInstanceType.NotSupported
			}
			hang := map[string]bool{}
			for _, k := range c.hang {
				hang[k] = true
			}
			var h http.Handler = f
			if c.inServer {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if hang[callKey(r)] {
						<-r.Context().Done()
						return
					}
					f.ServeHTTP(w, r)
				})
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			release := make(chan struct{})
			defer close(release)
			cfg := testConfig(srv.URL)
			if !c.inServer {
				cfg.HTTPClient = &http.Client{Transport: hangTransport{hang: hang, release: release}}
			}

			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			offers, dropped, err := New(cfg).Offers(ctx)
			if took := time.Since(start); took > deadline+time.Second {
				t.Errorf("Offers took %s; want it back right after the %s deadline", took, deadline)
			}
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("err\n  %v\nwant\n  %s", err, c.wantErr)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v does not wrap context.DeadlineExceeded", err)
			}
			var want []string
			for _, o := range all {
				gone := false
				for _, k := range append(slices.Clone(c.hang), c.fail) {
					gone = gone || k != "" && lost(o.ID, k)
				}
				if !gone {
					want = append(want, o.ID+"="+o.UnitPrice.String())
				}
			}
			if got := ids(offers); !slices.Equal(got, want) {
				t.Errorf("offers (%d)\n%s\nwant (%d)\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
			}
			var refs []string
			for _, d := range dropped {
				refs = append(refs, d.Ref)
			}
			if !slices.Equal(refs, c.wantDrops) {
				t.Errorf("dropped %+v, want refs %v", dropped, c.wantDrops)
			}
		})
	}
}

// TestCancelledBeforeStart: with ctx already done no call finishes; the error
// names the first calls and counts the rest.
func TestCancelledBeforeStart(t *testing.T) {
	f := newFakeECS(t)
	f.loadReplay()
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	offers, dropped, err := New(testConfig(srv.URL)).Offers(ctx)
	want := "aliyun: 18 of 18 calls unfinished at deadline: " +
		"DescribePrice cn-beijing ecs.gn7e-c16g1.4xlarge, DescribeSpotPriceHistory cn-beijing ecs.gn7e-c16g1.4xlarge, " +
		"DescribePrice cn-beijing ecs.gn7e-c16g1.16xlarge, DescribeSpotPriceHistory cn-beijing ecs.gn7e-c16g1.16xlarge, " +
		"DescribePrice cn-beijing ecs.gn7e-c16g1.32xlarge, DescribeSpotPriceHistory cn-beijing ecs.gn7e-c16g1.32xlarge" +
		" and 12 more: context canceled"
	if err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Errorf("err\n  %v\nwant\n  %s", err, want)
	}
	if len(offers) != 0 || len(dropped) != 0 {
		t.Errorf("offers %v dropped %+v", ids(offers), dropped)
	}
}
