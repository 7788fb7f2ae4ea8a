package aliyun

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Alibaba Cloud V3 request signature (ACS3-HMAC-SHA256), as described in
// "V3版本请求体&签名机制" / "Request syntax and signature method V3"
// (https://help.aliyun.com/zh/sdk/product-overview/v3-request-structure-and-signature,
// https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature):
//
//	CanonicalRequest = METHOD \n CanonicalURI \n CanonicalQueryString \n
//	                   CanonicalHeaders \n SignedHeaders \n HashedRequestPayload
//	StringToSign     = "ACS3-HMAC-SHA256" \n hex(SHA-256(CanonicalRequest))
//	Signature        = hex(HMAC-SHA256(AccessKeySecret, StringToSign))
//	Authorization    = ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=<…>,Signature=<…>
//
// CanonicalHeaders are every x-acs-* header plus host and content-type, names in
// lower case, values trimmed, sorted by name, each as "name:value\n".

// SignatureAlgorithm is the V3 signature algorithm name.
const SignatureAlgorithm = "ACS3-HMAC-SHA256"

// DateFormat is the x-acs-date layout: UTC ISO 8601 to the second.
const DateFormat = "2006-01-02T15:04:05Z"

// Sign signs req in place with Alibaba's V3 signature. The caller sets the
// x-acs-action and x-acs-version headers first (and puts every API parameter in
// the query string, RPC style); Sign adds host, x-acs-date (now, UTC),
// x-acs-signature-nonce (nonce), x-acs-content-sha256 (hex SHA-256 of body) and
// Authorization. It rewrites req.URL.RawQuery into its canonical form (sorted,
// RFC 3986 percent-encoding) so the query sent is byte for byte the one signed.
// body must be the exact request body (nil or empty for the Describe* calls).
func Sign(req *http.Request, keyID, secret string, body []byte, now time.Time, nonce string) error {
	switch {
	case req == nil || req.URL == nil:
		return errors.New("aliyun sign: nil request or URL")
	case keyID == "" || secret == "":
		return errors.New("aliyun sign: empty AccessKeyId or AccessKeySecret")
	case nonce == "":
		return errors.New("aliyun sign: empty nonce")
	case req.Header.Get("x-acs-action") == "":
		return errors.New("aliyun sign: x-acs-action header not set")
	case req.Header.Get("x-acs-version") == "":
		return errors.New("aliyun sign: x-acs-version header not set")
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if host == "" {
		return errors.New("aliyun sign: request has no host")
	}
	query, err := canonicalQuery(req.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("aliyun sign: query %q: %w", req.URL.RawQuery, err)
	}
	req.URL.RawQuery = query

	payloadHash := hexSHA256(body)
	req.Header.Set("x-acs-date", now.UTC().Format(DateFormat))
	req.Header.Set("x-acs-signature-nonce", nonce)
	req.Header.Set("x-acs-content-sha256", payloadHash)
	req.Header.Del("Authorization")

	headers, signed := canonicalHeaders(req.Header, host)
	canonical := canonicalRequest(req.Method, canonicalURI(req.URL.Path), query, headers, signed, payloadHash)
	sig := signature(secret, canonical)
	req.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s,SignedHeaders=%s,Signature=%s",
		SignatureAlgorithm, keyID, signed, sig))
	return nil
}

// canonicalRequest joins the six parts with "\n". headers already ends with "\n",
// so a blank line separates it from the signed-header list, as in the published example.
func canonicalRequest(method, uri, query, headers, signedHeaders, payloadHash string) string {
	return strings.Join([]string{strings.ToUpper(method), uri, query, headers, signedHeaders, payloadHash}, "\n")
}

// signature is hex(HMAC-SHA256(secret, "ACS3-HMAC-SHA256\n" + hex(SHA-256(canonical)))).
func signature(secret, canonical string) string {
	stringToSign := SignatureAlgorithm + "\n" + hexSHA256([]byte(canonical))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(stringToSign))
	return hex.EncodeToString(mac.Sum(nil))
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// canonicalHeaders returns the canonical header block and the signed-header
// list: x-acs-*, host and content-type, lower-case names sorted, values trimmed
// (several values of one header joined by ",").
func canonicalHeaders(h http.Header, host string) (block, signed string) {
	vals := map[string]string{"host": strings.TrimSpace(host)}
	for name, vs := range h {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "x-acs-") && lower != "content-type" {
			continue
		}
		trimmed := make([]string, len(vs))
		for i, v := range vs {
			trimmed[i] = strings.TrimSpace(v)
		}
		vals[lower] = strings.Join(trimmed, ",")
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(vals[n])
		b.WriteByte('\n')
	}
	return b.String(), strings.Join(names, ";")
}

// canonicalQuery decodes raw and re-encodes it sorted by name (then value),
// names and values percent-encoded per RFC 3986; a parameter without a value
// becomes "name=".
func canonicalQuery(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		vs := slices.Clone(values[n])
		slices.Sort(vs)
		for _, v := range vs {
			parts = append(parts, PercentEncode(n)+"="+PercentEncode(v))
		}
	}
	return strings.Join(parts, "&"), nil
}

// canonicalURI percent-encodes each "/"-separated segment of path; an empty
// path (RPC style) is "/".
func canonicalURI(path string) string {
	if path == "" {
		return "/"
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = PercentEncode(s)
	}
	return strings.Join(segs, "/")
}

// PercentEncode encodes s as RFC 3986 requires for the V3 signature: A–Z, a–z,
// 0–9, '-', '_', '.', '~' stay; every other byte of the UTF-8 text becomes %XX
// (upper-case hex), so a space is %20 and '*' is %2A.
func PercentEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0x0F])
	}
	return b.String()
}
