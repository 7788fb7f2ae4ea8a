package aliyun

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pricing"
)

// TestAPIErrorClass: the ECS error codes Alibaba documents, and the status
// fallback, map to the collector's error classes.
func TestAPIErrorClass(t *testing.T) {
	cases := []struct {
		code   string
		status int
		want   string
	}{
		{"Throttling", 400, pricing.ClassThrottled},
		{"Throttling.User", 400, pricing.ClassThrottled},
		{"Throttling.Api", 503, pricing.ClassThrottled},
		{"Throttling.Resource", 400, pricing.ClassThrottled},
		{"InvalidAccessKeyId.NotFound", 404, pricing.ClassAuth},
		{"InvalidAccessKeyId.Inactive", 400, pricing.ClassAuth},
		{"SignatureDoesNotMatch", 400, pricing.ClassAuth},
		{"IncompleteSignature", 400, pricing.ClassAuth},
		{"SignatureNonceUsed", 400, pricing.ClassAuth},
		{"Forbidden.RAM", 403, pricing.ClassAuth},
		{"Forbidden.NotAuthorized", 403, pricing.ClassAuth},
		{"ServiceUnavailable", 503, pricing.ClassUnavailable},
		{"InternalError", 500, pricing.ClassUnavailable},
		{"UnknownError", 500, pricing.ClassUnavailable},
		{"OperationDenied.Backend", 502, pricing.ClassUnavailable}, // by status
		{"SomethingNew", 429, pricing.ClassThrottled},              // by status
		{"InvalidInstanceType.NotSupported", 400, pricing.ClassBadResponse},
		{"InvalidParameter", 400, pricing.ClassBadResponse},
		{"MissingParameter", 400, pricing.ClassBadResponse},
		{"ThrottlingX", 400, pricing.ClassBadResponse}, // not a Throttling code
		{"Throttling", 0, pricing.ClassThrottled},      // parsed from a 200 body
	}
	for _, c := range cases {
		e := &APIError{Action: "DescribePrice", Region: "cn-beijing", InstanceType: "ecs.gn7e-c16g1.4xlarge", HTTPStatus: c.status, Code: c.code}
		if got := e.ErrorClass(); got != c.want {
			t.Errorf("Code %q HTTP %d: class %q, want %q", c.code, c.status, got, c.want)
		}
		if got := pricing.Classify(fmt.Errorf("wrapped: %w", e)); got != c.want {
			t.Errorf("Classify(Code %q): %q, want %q", c.code, got, c.want)
		}
	}
}

// TestClassedOverHTTP: each answer the client can get is classed the way the
// decision record reports it, through the client's own error.
func TestClassedOverHTTP(t *testing.T) {
	const throttling = `{"RequestId":"5C2B7A9E-0000","HostId":"ecs.aliyuncs.com","Code":"Throttling","Message":"Request was denied due to request throttling.","Recommend":"https://api.aliyun.com/troubleshoot?q=Throttling"}`
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        string
		wantText    string
	}{
		{"throttling JSON", 400, "application/json;charset=utf-8", throttling, pricing.ClassThrottled,
			`HTTP 400: Code "Throttling", Message "Request was denied due to request throttling."`},
		{"bare throttling JSON on 429", 429, "application/json", `{"Code":"Throttling","Message":"Request was denied due to request throttling."}`, pricing.ClassThrottled,
			`HTTP 429: Code "Throttling"`},
		{"bad key", 404, "application/json", `{"Code":"InvalidAccessKeyId.NotFound","Message":"Specified access key is not found."}`, pricing.ClassAuth, "InvalidAccessKeyId.NotFound"},
		{"bad signature", 400, "application/json", `{"Code":"SignatureDoesNotMatch","Message":"Specified signature is not matched with our calculation."}`, pricing.ClassAuth, "SignatureDoesNotMatch"},
		{"internal error", 500, "application/json", `{"Code":"InternalError","Message":"The request processing has failed due to some unknown error."}`, pricing.ClassUnavailable, "InternalError"},
		{"gateway HTML", 502, "text/html", `<html><body>502 Bad Gateway</body></html>`, pricing.ClassUnavailable, "HTTP 502 (unavailable)"},
		{"captive portal 200", 200, "text/html", `<html>login</html>`, pricing.ClassBadResponse, `content type "text/html"`},
		{"not JSON with JSON type", 200, "application/json", `oops`, pricing.ClassBadResponse, "response is not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			_, _, err := New(oneTypeConfig(srv.URL)).Offers(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if got := pricing.Classify(err); got != c.want {
				t.Errorf("class %q, want %q (err %v)", got, c.want, err)
			}
			if !strings.Contains(err.Error(), c.wantText) || !strings.Contains(err.Error(), "aliyun DescribePrice cn-beijing ecs.gn7e-c16g1.4xlarge") {
				t.Errorf("err %v\nwant it to name the call and contain %q", err, c.wantText)
			}
			var apiErr *APIError
			if isJSON := strings.HasPrefix(c.body, "{"); errors.As(err, &apiErr) != isJSON {
				t.Errorf("*APIError in chain = %v, want %v", !isJSON, isJSON)
			}
		})
	}
}

// TestParsedThrottlingClassed: the error JSON read by the Parse* functions
// (a 200 carrying Code) is classed too.
func TestParsedThrottlingClassed(t *testing.T) {
	body := []byte(`{"Code":"Throttling","Message":"Request was denied due to request throttling."}`)
	_, _, err := ParseDescribePrice(body, "cn-beijing", "ecs.gn7e-c16g1.4xlarge", testNow, Config{})
	if got := pricing.Classify(err); got != pricing.ClassThrottled {
		t.Errorf("class %q (err %v)", got, err)
	}
}
