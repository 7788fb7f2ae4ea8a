// Package brokertest is the scaffolding the provider adapter tests
// (brokers/runpod, vast, autodl, aliyun, ec2) share: a brokers/fake server
// on loopback speaking one provider's wire format, a decision id, money
// helpers, and the checks every adapter must pass against the fake's faults
// (a refused call, a create that times out after taking effect, a price read
// back off the bid, a terminate that times out). What is particular to one
// provider stays in its own tests.
package brokertest

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/fake"
	"github.com/sluicehq/sluice/brokers/placement"
)

// Decision is a well-formed decision id ("dec-" and 32 hex digits).
const Decision = "dec-0123456789abcdef0123456789abcdef"

// Hang is how long the fake holds a call it is told to time out
// (fake.Server.Hang): long enough to pass the adapters' deadlines in tests,
// short enough to keep them fast.
const Hang = 100 * time.Millisecond

// Fake starts a fake.Server answering in provider's wire format ("runpod",
// "vast", "autodl", "aliyun", "aws") on a loopback httptest server, closed
// when t ends. It returns the fake and the server's base URL
// ("http://127.0.0.1:<port>").
func Fake(t testing.TB, provider string) (*fake.Server, string) {
	t.Helper()
	srv := fake.New()
	srv.Hang = Hang
	hs := httptest.NewServer(srv.Handler(provider))
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// USD is s US dollars (exact decimal text; panics on bad text).
func USD(s string) sluice.Money { return sluice.MustMoney(s, "USD") }

// CNY is s yuan (exact decimal text; panics on bad text).
func CNY(s string) sluice.Money { return sluice.MustMoney(s, "CNY") }

// Refusal is one fault and the sluice class Place must return for it.
type Refusal struct {
	Kind string // fake.Capacity, fake.Quota, …
	Want error  // sluice.ErrInsufficientCapacity, …
}

// Refusals are the faults every adapter classes the same way.
var Refusals = []Refusal{
	{fake.Capacity, sluice.ErrInsufficientCapacity},
	{fake.Quota, sluice.ErrQuota},
	{fake.Throttle, sluice.ErrTransient},
}

// Unavailable is the refusal of a provider that says a capability is not
// offered (a spot strategy, an instance market): sluice.ErrCapabilityUnavailable
// (EC2, Alibaba).
var Unavailable = Refusal{fake.Unavailable, sluice.ErrCapabilityUnavailable}

// Faults places line (as line 0 of Decision) once per refusal, each on a
// fresh adapter whose fake refuses the next call with r.Kind: Place must
// return an error of class r.Want and the fake must hold no instance.
// newAdapter makes a fresh adapter over a fresh fake (each subtest its own);
// check, when not nil, looks further at the refused placement.
func Faults[A placement.Adapter](t *testing.T, provider string, newAdapter func(t *testing.T) (A, *fake.Server), line sluice.Line,
	refusals []Refusal, check func(t *testing.T, a A, p sluice.Placement, err error)) {
	for _, r := range refusals {
		t.Run(r.Kind, func(t *testing.T) {
			a, srv := newAdapter(t)
			srv.Fail(fake.Fault{Provider: provider, Kind: r.Kind, Times: 1})
			p, err := a.Place(context.Background(), Decision, 0, line, bid.Limits{})
			if !errors.Is(err, r.Want) {
				t.Fatalf("err = %v, want %v", err, r.Want)
			}
			if n := len(srv.Instances(provider)); n != 0 {
				t.Fatalf("%d instances after a refusal", n)
			}
			if check != nil {
				check(t, a, p, err)
			}
		})
	}
}

// TimeoutAfterCreate: the fake makes the first unit of line (lineNo of
// Decision) and then times out. Place is sluice.ErrTransient with that unit
// running; Find finds it; the retried Place adopts it (same first external
// id) and buys only what is missing: line.Units external ids and as many
// instances in the fake.
func TimeoutAfterCreate(t *testing.T, a placement.Adapter, srv *fake.Server, provider string, lineNo int, line sluice.Line) {
	t.Helper()
	srv.Fail(fake.Fault{Provider: provider, Kind: fake.TimeoutAfterCreate, Times: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := a.Place(ctx, Decision, lineNo, line, bid.Limits{}); !errors.Is(err, sluice.ErrTransient) {
		t.Fatalf("err = %v, want ErrTransient", err)
	}
	if n := srv.Running(provider); n != 1 {
		t.Fatalf("fake holds %d running after the timeout, want 1 (created before the timeout)", n)
	}
	f, ok, err := a.Find(ctx, Decision, lineNo)
	if err != nil || !ok || len(f.ExternalIDs) != 1 {
		t.Fatalf("find after the timeout: %+v %v %v", f, ok, err)
	}
	p, err := a.Place(ctx, Decision, lineNo, line, bid.Limits{})
	if err != nil || len(p.ExternalIDs) != line.Units || p.ExternalIDs[0] != f.ExternalIDs[0] {
		t.Fatalf("retry: %+v %v", p, err)
	}
	if n := len(srv.Instances(provider)); n != line.Units {
		t.Fatalf("retry bought again: %d instances for %d units", n, line.Units)
	}
}

// PriceMismatch: the fake bills price (decimal text, the line's currency)
// instead of the bid or unit price. Place returns a *placement.MismatchError
// (sluice.ErrPriceMismatch) whose release is confirmed, the placement
// carries the price read back (wantPrice, e.g. "9.99 USD") and class
// "price-mismatch", and nothing it bought still runs.
func PriceMismatch(t *testing.T, a placement.Adapter, srv *fake.Server, provider string, lineNo int, line sluice.Line, price, wantPrice string) {
	t.Helper()
	before := srv.Running(provider)
	srv.Fail(fake.Fault{Provider: provider, Kind: fake.Price, Price: price, Times: 1})
	p, err := a.Place(context.Background(), Decision, lineNo, line, bid.Limits{})
	var me *placement.MismatchError
	if !errors.Is(err, sluice.ErrPriceMismatch) || !errors.As(err, &me) || !me.Release.Confirmed || me.ReleaseErr != nil {
		t.Fatalf("err = %v", err)
	}
	if p.ErrorClass != "price-mismatch" || len(p.ExternalIDs) == 0 || p.Price.String() != wantPrice {
		t.Fatalf("placement: %+v, want price %s", p, wantPrice)
	}
	if n := srv.Running(provider); n != before {
		t.Fatalf("%d running after the mismatch, want %d", n, before)
	}
}

// TerminateTimeout: the fake times out the next terminate of p. Release is
// sluice.ErrTransient and p's instances still run; the retried Release is
// confirmed and they stop; releasing again (all gone) is confirmed too.
func TerminateTimeout(t *testing.T, a placement.Adapter, srv *fake.Server, provider string, p sluice.Placement) {
	t.Helper()
	before := srv.Running(provider)
	srv.Fail(fake.Fault{Provider: provider, Kind: fake.TerminateTimeout, Times: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := a.Release(ctx, p); !errors.Is(err, sluice.ErrTransient) {
		t.Fatalf("release with the terminate timing out: %v", err)
	}
	if n := srv.Running(provider); n != before {
		t.Fatalf("%d running after a timed-out terminate, want %d", n, before)
	}
	if res, err := a.Release(ctx, p); err != nil || !res.Confirmed || srv.Running(provider) != before-len(p.ExternalIDs) {
		t.Fatalf("retried release: %+v %v, %d running", res, err, srv.Running(provider))
	}
	if res, err := a.Release(ctx, p); err != nil || !res.Confirmed {
		t.Fatalf("release of what is gone: %+v %v", res, err)
	}
}
