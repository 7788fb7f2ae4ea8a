package pricing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Error classes of a failed or late quote source, recorded in the decision's
// SourceReport.ErrorClass.
const (
	ClassTimeout     = "timeout"      // no answer within the deadline
	ClassThrottled   = "throttled"    // HTTP 429, RequestLimitExceeded, Throttling
	ClassAuth        = "auth"         // HTTP 401/403, bad or missing credentials
	ClassBadResponse = "bad-response" // an answer that is not what the API documents
	ClassUnavailable = "unavailable"  // HTTP 5xx, connection refused or reset
)

// Classed is implemented by a provider's error types that know their class.
type Classed interface{ ErrorClass() string }

// Classify returns the class of err: the first Classed error in its chain,
// else timeout for a context deadline, unavailable for network errors, and
// bad-response for anything else. It returns "" for nil.
func Classify(err error) string {
	if err == nil {
		return ""
	}
	var c Classed
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return ClassTimeout
		}
		return ClassUnavailable
	}
	return ClassBadResponse
}

// MaxBody caps every provider response body read by ReadBody (8 MiB).
const MaxBody = 8 << 20

// HTTPError is a provider HTTP answer that is not a success, or a body that
// is too large or of the wrong content type. Body holds at most 512 bytes of
// the response (never a request, so never a credential).
type HTTPError struct {
	Provider   string
	Op         string
	Status     int
	RetryAfter time.Duration // from a Retry-After header on 429/503, else 0
	Body       string
	Reason     string // e.g. "content type text/html, want application/json"
	Class      string
}

// Error reads "vast POST bundles: HTTP 429 (throttled): {…}".
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d (%s)", e.Provider, e.Op, e.Status, e.Class)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// ErrorClass is the class recorded for this error.
func (e *HTTPError) ErrorClass() string { return e.Class }

// ReadBody reads a provider response: at most MaxBody bytes (a larger body is
// a bad-response error, never silently truncated), a non-2xx status becomes an
// *HTTPError classed by status (401/403 auth, 429 throttled, 5xx unavailable,
// other bad-response) with Retry-After parsed, and when wantTypes is not empty
// the Content-Type's media type must be one of them. It closes the body.
func ReadBody(resp *http.Response, provider, op string, wantTypes ...string) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading response: %w", provider, op, err)
	}
	he := &HTTPError{Provider: provider, Op: op, Status: resp.StatusCode, Body: snippet(body)}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		switch {
		case resp.StatusCode == 401 || resp.StatusCode == 403:
			he.Class = ClassAuth
		case resp.StatusCode == 429:
			he.Class = ClassThrottled
		case resp.StatusCode >= 500:
			he.Class = ClassUnavailable
		default:
			he.Class = ClassBadResponse
		}
		he.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return body, he
	}
	he.Class = ClassBadResponse
	if len(body) > MaxBody {
		he.Body, he.Reason = "", fmt.Sprintf("body larger than %d bytes", MaxBody)
		return nil, he
	}
	if len(wantTypes) > 0 {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		ok := false
		for _, w := range wantTypes {
			ok = ok || mt == w
		}
		if !ok {
			he.Reason = fmt.Sprintf("content type %q, want %v", resp.Header.Get("Content-Type"), wantTypes)
			return nil, he
		}
	}
	return body, nil
}

// RetryAfter parses a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). It returns 0 when absent or unparsable.
func RetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func snippet(b []byte) string {
	const n = 512
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
