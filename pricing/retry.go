package pricing

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Retry defaults.
const (
	DefaultMaxAttempts = 3
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 2 * time.Second
)

// drainLimit bounds how much of a response that is about to be retried is
// read (so its connection can be reused) before it is closed.
const drainLimit = 64 << 10

// RetryTransport is an http.RoundTripper for QUOTE SOURCES ONLY: it re-sends a
// request that got HTTP 429 or 5xx (except 501 Not Implemented) or failed to
// connect (refused, reset, EOF before a response), with exponential backoff
// and jitter, honouring Retry-After, and never waiting past the request
// context's deadline.
//
// Re-sending is safe only because every quote call is a read-only search
// (RunPod's gpuTypes query, Vast's POST /bundles/ search, Alibaba's
// Describe* calls, AWS's Describe*/GetProducts): sending one twice changes
// nothing. Never put it under a Broker or any call that buys, creates or
// releases capacity — a retried "create" whose first answer was lost is a
// second purchase.
//
// Requests whose signature is single-use must not go through it either: an
// Alibaba ACS3 request carries a one-time x-acs-signature-nonce, so a re-sent
// copy is refused (SignatureNonceUsed). The AWS SDK retries (and re-signs) by
// itself.
//
// The rules, per attempt:
//   - at most MaxAttempts attempts (default 3); the last answer, good or not,
//     is returned as is;
//   - the wait before retry n (n = 1, 2, …) is d/2 + rand·d/2 with
//     d = min(BaseDelay·2^(n−1), MaxDelay) ("equal jitter": never less than
//     half the backoff, spread so that sources throttled together do not come
//     back together);
//   - a Retry-After header (seconds or HTTP date, RetryAfter) raises the wait
//     to what the server asked; if it asks for more than MaxDelay, the
//     response is returned at once rather than waited on;
//   - if the wait would end at or after the request context's deadline, the
//     last response (or error) is returned at once, without sleeping: a late
//     answer is worth nothing, and the caller should see the real 429/503
//     instead of a bare deadline;
//   - a context cancelled during the wait ends it at once with ctx.Err();
//   - a request with a body is re-sent only when req.GetBody is set
//     (http.NewRequest sets it for bytes, strings and bytes.Reader bodies);
//     each attempt gets a fresh, identical body.
//
// A RetryTransport is safe for concurrent use; do not copy it after first use.
type RetryTransport struct {
	// Base sends each attempt (default http.DefaultTransport).
	Base http.RoundTripper
	// MaxAttempts is the most attempts per request, first included (default 3).
	MaxAttempts int
	// BaseDelay is the backoff before the first retry (default 100ms); it
	// doubles with each retry up to MaxDelay (default 2s).
	BaseDelay, MaxDelay time.Duration
	// Rand is the jitter source (default: math/rand/v2's global source). It is
	// used under a lock, so a deterministic rand.NewPCG works in tests.
	Rand rand.Source
	// Now is the clock for deadlines and Retry-After dates (default time.Now).
	Now func() time.Time

	mu sync.Mutex // guards Rand
}

// RoundTrip sends req, retrying as described on RetryTransport.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	attempts := t.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	now := t.Now
	if now == nil {
		now = time.Now
	}
	ctx := req.Context()
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && req.GetBody == nil {
		attempts = 1 // the body cannot be re-sent
	}

	for n := 1; ; n++ {
		r := req
		if n > 1 {
			r = req.Clone(ctx)
			if hasBody {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := base.RoundTrip(r)
		if n >= attempts || !t.retryable(ctx, resp, err) {
			return resp, err
		}
		wait := t.backoff(n)
		if resp != nil {
			if ra := RetryAfter(resp.Header.Get("Retry-After"), now()); ra > 0 {
				if ra > t.maxDelay() {
					return resp, err
				}
				wait = max(wait, ra)
			}
		}
		if dl, ok := ctx.Deadline(); ok && !now().Add(wait).Before(dl) {
			return resp, err
		}
		if resp != nil {
			_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
			resp.Body.Close()
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// retryable reports whether an attempt's outcome is worth another attempt.
func (t *RetryTransport) retryable(ctx context.Context, resp *http.Response, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		return connectionError(err)
	}
	s := resp.StatusCode
	return s == http.StatusTooManyRequests || s >= 500 && s != http.StatusNotImplemented
}

// connectionError reports whether err is a failure to reach the server or to
// get a response over the connection (refused, reset, closed early), as
// opposed to a TLS verification failure or a malformed request.
func connectionError(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

func (t *RetryTransport) maxDelay() time.Duration {
	if t.MaxDelay > 0 {
		return t.MaxDelay
	}
	return DefaultMaxDelay
}

// backoff is the jittered wait before retry n (n ≥ 1).
func (t *RetryTransport) backoff(n int) time.Duration {
	d := t.BaseDelay
	if d <= 0 {
		d = DefaultBaseDelay
	}
	limit := t.maxDelay()
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + t.jitter(d/2)
}

// jitter is a duration in [0, n] from Rand (integer arithmetic only).
func (t *RetryTransport) jitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	if t.Rand == nil {
		return time.Duration(rand.Int64N(int64(n) + 1))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Duration(rand.New(t.Rand).Int64N(int64(n) + 1))
}
