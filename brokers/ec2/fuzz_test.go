package ec2

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/placement"
)

// FuzzOfferID: the offer id is the one text the adapter parses itself (the
// SDK parses EC2's XML answers); a parsed id always names a region and type.
func FuzzOfferID(f *testing.F) {
	for _, s := range []string{"aws:us-east-1:us-east-1a:p4d.24xlarge:spot", "aws:us-east-1:p4de.24xlarge:on-demand",
		"aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cbo-1", "aws:::spot", "sluice-dec-0123456789abcdef0123456789abcdef-l3-u1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := parseOfferID(s); err == nil && (r.Region == "" && r.Type == "") {
			t.Fatalf("%q: empty ref", s)
		}
		if d, l, ok := placement.ParseToken(s); ok && (len(d) != 36 || l < 0) {
			t.Fatalf("%q: token %q %d", s, d, l)
		}
	})
}

// FuzzAnswers feeds arbitrary bodies to the adapter as EC2's answer (status
// 200 and 400): the SDK's parsers and the adapter's reading of their output
// must fail cleanly, never panic, and never report instances without ids.
func FuzzAnswers(f *testing.F) {
	for _, s := range []string{
		`<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-1</instanceId><instanceLifecycle>spot</instanceLifecycle>` +
			`<tagSet><item><key>sluice:decision</key><value>dec-x</value></item><item><key>sluice:line</key><value>-3</value></item></tagSet>` +
			`<placement><availabilityZone>us-east-1a</availabilityZone></placement></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`,
		`<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>m</Message></Error></Errors></Response>`,
		`<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item><spotPrice>-1</spotPrice></item></spotPriceHistorySet></DescribeSpotPriceHistoryResponse>`,
		``, `<`, `not xml`,
	} {
		f.Add([]byte(s), true)
	}
	var body atomic.Value
	var ok200 atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		if !ok200.Load() {
			w.WriteHeader(400)
		}
		b, _ := body.Load().([]byte)
		_, _ = w.Write(b)
	}))
	defer hs.Close()
	a, err := New(context.Background(), Config{Endpoint: hs.URL, AccessKeyID: "AKID", SecretAccessKey: "s", Regions: []string{"us-east-1"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, status200 bool) {
		body.Store(b)
		ok200.Store(status200)
		ctx := context.Background()
		if list, err := a.Instances(ctx); err == nil {
			for _, in := range list {
				if in.Provider != Provider {
					t.Fatalf("bad instance %+v", in)
				}
			}
		}
		if p, ok, err := a.Find(ctx, "dec-0123456789abcdef0123456789abcdef", 0); err == nil && ok && len(p.ExternalIDs) != p.Units {
			t.Fatalf("find: %+v", p)
		}
		_, _ = a.Release(ctx, sluice.Placement{Provider: Provider, ExternalIDs: []string{"i-1"}})
	})
}
