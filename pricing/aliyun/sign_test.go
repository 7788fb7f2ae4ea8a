package aliyun

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The worked example published by Alibaba Cloud in "V3版本请求体&签名机制"
// (https://help.aliyun.com/zh/sdk/product-overview/v3-request-structure-and-signature,
// also reproduced in the Function Compute "签名机制" page): AccessKeyId
// "YourAccessKeyId", AccessKeySecret "YourAccessKeySecret", POST
// https://ecs.cn-shanghai.aliyuncs.com/?ImageId=…&RegionId=cn-shanghai, RunInstances
// 2014-05-26, x-acs-date 2023-10-26T10:22:32Z, nonce 3156853299f313e23d1673dc12e1703d,
// empty body. The document gives the hashed canonical request and the signature.
const (
	docKeyID     = "YourAccessKeyId"
	docSecret    = "YourAccessKeySecret"
	docNonce     = "3156853299f313e23d1673dc12e1703d"
	docDate      = "2023-10-26T10:22:32Z"
	docQuery     = "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai"
	docHashedCR  = "7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259"
	docSignature = "06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
	emptySHA256  = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	docSigned    = "host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version"
)

func docRequest(t *testing.T, rawQuery string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://ecs.cn-shanghai.aliyuncs.com/?"+rawQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-acs-action", "RunInstances")
	req.Header.Set("x-acs-version", "2014-05-26")
	return req
}

func TestSignPublishedExample(t *testing.T) {
	now, _ := time.Parse(DateFormat, docDate)
	// Parameters given out of order: Sign must sort them.
	req := docRequest(t, "RegionId=cn-shanghai&ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd")
	if err := Sign(req, docKeyID, docSecret, nil, now, docNonce); err != nil {
		t.Fatal(err)
	}
	want := "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=" + docSigned + ",Signature=" + docSignature
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization\n got %s\nwant %s", got, want)
	}
	for h, v := range map[string]string{
		"x-acs-date": docDate, "x-acs-signature-nonce": docNonce, "x-acs-content-sha256": emptySHA256,
	} {
		if got := req.Header.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	if req.URL.RawQuery != docQuery {
		t.Errorf("query sent = %q, want the canonical %q", req.URL.RawQuery, docQuery)
	}
}

// TestCanonicalRequestPublishedExample checks the intermediate values of the
// published example: the canonical header block and the hashed canonical request.
func TestCanonicalRequestPublishedExample(t *testing.T) {
	now, _ := time.Parse(DateFormat, docDate)
	req := docRequest(t, docQuery)
	if err := Sign(req, docKeyID, docSecret, nil, now, docNonce); err != nil {
		t.Fatal(err)
	}
	block, signed := canonicalHeaders(req.Header, req.URL.Host)
	wantBlock := "host:ecs.cn-shanghai.aliyuncs.com\n" +
		"x-acs-action:RunInstances\n" +
		"x-acs-content-sha256:" + emptySHA256 + "\n" +
		"x-acs-date:" + docDate + "\n" +
		"x-acs-signature-nonce:" + docNonce + "\n" +
		"x-acs-version:2014-05-26\n"
	if block != wantBlock || signed != docSigned {
		t.Fatalf("canonical headers\n%s\n%s", block, signed)
	}
	cr := canonicalRequest("POST", "/", docQuery, block, signed, emptySHA256)
	if got := hexSHA256([]byte(cr)); got != docHashedCR {
		t.Errorf("hashed canonical request = %s, want %s\n%s", got, docHashedCR, cr)
	}
	if got := signature(docSecret, cr); got != docSignature {
		t.Errorf("signature = %s, want %s", got, docSignature)
	}
}

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{
		"AZaz09-_.~":        "AZaz09-_.~",
		"a b":               "a%20b",
		"*":                 "%2A",
		"a+b/c=d&e:f":       "a%2Bb%2Fc%3Dd%26e%3Af",
		"2026-11-29T23:00Z": "2026-11-29T23%3A00Z",
		"é":                 "%C3%A9",
		"\"'()!":            "%22%27%28%29%21",
	} {
		if got := PercentEncode(in); got != want {
			t.Errorf("PercentEncode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCanonicalQuery(t *testing.T) {
	got, err := canonicalQuery("b=2&a=x+y&a=%2A&c&d=%7E")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a=%2A&a=x%20y&b=2&c=&d=~"; got != want {
		t.Errorf("canonicalQuery = %q, want %q", got, want)
	}
}

func TestSignRefusesIncompleteRequests(t *testing.T) {
	now := time.Unix(0, 0)
	for name, tc := range map[string]struct {
		mutate             func(*http.Request)
		key, secret, nonce string
	}{
		"no key":     {func(*http.Request) {}, "", "s", "n"},
		"no secret":  {func(*http.Request) {}, "k", "", "n"},
		"no nonce":   {func(*http.Request) {}, "k", "s", ""},
		"no action":  {func(r *http.Request) { r.Header.Del("x-acs-action") }, "k", "s", "n"},
		"no version": {func(r *http.Request) { r.Header.Del("x-acs-version") }, "k", "s", "n"},
	} {
		req := docRequest(t, docQuery)
		tc.mutate(req)
		if err := Sign(req, tc.key, tc.secret, nil, now, tc.nonce); err == nil {
			t.Errorf("%s: Sign succeeded", name)
		} else if !strings.HasPrefix(err.Error(), "aliyun sign: ") {
			t.Errorf("%s: error %q does not name the source", name, err)
		}
	}
}

func TestSignHashesBody(t *testing.T) {
	req := docRequest(t, "")
	if err := Sign(req, "k", "s", []byte("abc"), time.Unix(0, 0), "n"); err != nil {
		t.Fatal(err)
	}
	// SHA-256("abc"), FIPS 180-2 example.
	if got, want := req.Header.Get("x-acs-content-sha256"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("x-acs-content-sha256 = %s, want %s", got, want)
	}
}
