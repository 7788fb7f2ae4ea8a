package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// value is the secret the fake Secrets Manager holds; no test output may contain it.
const value = "rpa_S3CR3T-7f0c1e9a-value"

// fakeSM speaks the Secrets Manager JSON 1.1 protocol for GetSecretValue:
// POST / with X-Amz-Target secretsmanager.GetSecretValue and a body
// {"SecretId": …}; answers {"ARN","Name","SecretString",…} or an error
// {"__type": "ResourceNotFoundException", "message": …} with HTTP 400.
// secrets maps a SecretId to the raw response body to send (status 200);
// a missing id gets ResourceNotFoundException.
type fakeSM struct {
	t       *testing.T
	mu      sync.Mutex
	secrets map[string]string
	status  map[string]int
	asked   []string
}

func (f *fakeSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		t.Errorf("request %s %s, want POST /", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Amz-Target"); got != "secretsmanager.GetSecretValue" {
		t.Errorf("X-Amz-Target %q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-amz-json-1.1" {
		t.Errorf("Content-Type %q", got)
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/secretsmanager/aws4_request") {
		t.Errorf("Authorization %q: want a SigV4 signature for secretsmanager", auth)
	}
	var in struct {
		SecretID string `json:"SecretId"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		t.Errorf("request body %s: %v", body, err)
	}
	f.mu.Lock()
	f.asked = append(f.asked, in.SecretID)
	resp, ok := f.secrets[in.SecretID]
	status := f.status[in.SecretID]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", "4e1c6a4f-1b2c-4d5e-8f90-123456789abc")
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
		return
	}
	if status != 0 {
		w.WriteHeader(status)
	}
	io.WriteString(w, resp)
}

func secretBody(id, s string) string {
	b, _ := json.Marshal(map[string]any{
		"ARN":           "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + id + "-AbCdEf",
		"Name":          id,
		"VersionId":     "EXAMPLE1-90ab-cdef-fedc-ba987EXAMPLE",
		"SecretString":  s,
		"VersionStages": []string{"AWSCURRENT"},
		"CreatedDate":   1.764e9,
	})
	return string(b)
}

// newSM starts the fake and returns a resolver using the real SDK client
// pointed at it (BaseEndpoint, static credentials, no retries).
func newSM(t *testing.T, f *fakeSM) *SecretsManager {
	t.Helper()
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := sm.New(sm.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "not-a-real-secret-key", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       srv.Client(),
	})
	return &SecretsManager{Client: client, Prefix: "sluice/"}
}

func TestSecretsManagerGet(t *testing.T) {
	f := &fakeSM{secrets: map[string]string{"sluice/RUNPOD_API_KEY": secretBody("sluice/RUNPOD_API_KEY", value)}}
	r := newSM(t, f)
	got, err := r.Get(context.Background(), "RUNPOD_API_KEY")
	if err != nil {
		t.Fatal(err)
	}
	if got != value {
		t.Fatalf("got %q", Redact(got, value))
	}
	if len(f.asked) != 1 || f.asked[0] != "sluice/RUNPOD_API_KEY" {
		t.Fatalf("asked %v, want [sluice/RUNPOD_API_KEY]", f.asked)
	}
}

func TestSecretsManagerNotFound(t *testing.T) {
	r := newSM(t, &fakeSM{})
	_, err := r.Get(context.Background(), "VAST_API_KEY")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
	if want := `secrets: secretsmanager "sluice/VAST_API_KEY": GetSecretValue: ResourceNotFoundException (HTTP 400)`; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

// TestErrorsNeverHoldTheSecret: whatever goes wrong after the secret has
// been on the wire, the returned error does not contain it.
func TestErrorsNeverHoldTheSecret(t *testing.T) {
	good := secretBody("sluice/K", value)
	cases := []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"truncated JSON", good[:len(good)-20], 0, "malformed response"},
		{"SecretString of the wrong type", `{"Name":"sluice/K","SecretString":` + "[\"" + value + "\"]}", 0, "malformed response"},
		{"server error echoing the value", `{"__type":"InternalServiceError","message":"failed for ` + value + `"}`, 500, "InternalServiceError"},
		{"access denied echoing the value", `{"__type":"AccessDeniedException","Message":"` + value + `"}`, 400, "AccessDeniedException"},
		{"HTML error page with the value", `<html>` + value + `</html>`, 502, "(HTTP 502)"},
		{"binary secret only", `{"Name":"sluice/K","SecretBinary":"` + "c2VjcmV0" + `"}`, 0, "no SecretString"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSM{secrets: map[string]string{"sluice/K": c.body}, status: map[string]int{"sluice/K": c.status}}
			r := newSM(t, f)
			got, err := r.Get(context.Background(), "K")
			if err == nil {
				t.Fatalf("no error, got %q", Redact(got, value))
			}
			t.Logf("error: %v", err)
			assertNoSecret(t, "error", err.Error())
			assertNoSecret(t, "%+v", fmt.Sprintf("%+v", err))
			assertNoSecret(t, "%#v", fmt.Sprintf("%#v", err))
			for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
				assertNoSecret(t, "unwrapped error", u.Error())
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"sluice/K"`) {
				t.Fatalf("error %q, want it to name the secret and say %q", err, c.want)
			}
		})
	}
}

func TestSecretsManagerDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	r := &SecretsManager{Prefix: "sluice/", Client: sm.New(sm.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "x", ""), RetryMaxAttempts: 1})}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := r.Get(ctx, "K")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want DeadlineExceeded", err)
	}
}

func TestEnv(t *testing.T) {
	env := Env{Getenv: mapEnvT{"RUNPOD_API_KEY": value}.get}
	if v, err := env.Get(context.Background(), "RUNPOD_API_KEY"); err != nil || v != value {
		t.Fatalf("got %q, %v", Redact(v, value), err)
	}
	_, err := env.Get(context.Background(), "VAST_API_KEY")
	if !errors.Is(err, ErrNotFound) || err.Error() != `secrets: env "VAST_API_KEY": not set` {
		t.Fatalf("error %v", err)
	}
	t.Setenv("SLUICE_SECRETS_TEST", "from-os")
	if v, err := (Env{}).Get(context.Background(), "SLUICE_SECRETS_TEST"); err != nil || v != "from-os" {
		t.Fatalf("default Getenv: %q, %v", v, err)
	}
}

func (m mapEnvT) get(k string) string { return m[k] }

type mapEnvT map[string]string

func TestChain(t *testing.T) {
	f := &fakeSM{secrets: map[string]string{"sluice/VAST_API_KEY": secretBody("sluice/VAST_API_KEY", "from-sm")}}
	chain := Chain{Env{Getenv: mapEnvT{"RUNPOD_API_KEY": "from-env"}.get}, newSM(t, f)}
	ctx := context.Background()
	if v, err := chain.Get(ctx, "RUNPOD_API_KEY"); err != nil || v != "from-env" {
		t.Fatalf("env first: %q, %v", v, err)
	}
	if len(f.asked) != 0 {
		t.Fatalf("Secrets Manager asked %v although the environment had the value", f.asked)
	}
	if v, err := chain.Get(ctx, "VAST_API_KEY"); err != nil || v != "from-sm" {
		t.Fatalf("fall through: %q, %v", v, err)
	}
	_, err := chain.Get(ctx, "ALIBABA_CLOUD_ACCESS_KEY_ID")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
	for _, want := range []string{`env "ALIBABA_CLOUD_ACCESS_KEY_ID": not set`, `secretsmanager "sluice/ALIBABA_CLOUD_ACCESS_KEY_ID": GetSecretValue: ResourceNotFoundException`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("chain error %q lacks %q", err, want)
		}
	}
	// A failing resolver is skipped; the error is not ErrNotFound when one failed.
	f.secrets["sluice/X"] = "{"
	_, err = Chain{newSM(t, f), Env{Getenv: mapEnvT{}.get}}.Get(ctx, "X")
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "malformed response") {
		t.Fatalf("error %v, want a failure that is not ErrNotFound", err)
	}
}

func TestResolveValues(t *testing.T) {
	r := Env{Getenv: mapEnvT{"A": "alpha", "B": "beta"}.get}
	v, err := Resolve(context.Background(), r, "A", "", "B", "A")
	if err != nil {
		t.Fatal(err)
	}
	if v.Getenv("A") != "alpha" || v.Getenv("B") != "beta" || v.Getenv("C") != "" || len(v) != 2 {
		t.Fatalf("values %v", v)
	}
	if s := fmt.Sprint(v); strings.Contains(s, "alpha") || strings.Contains(s, "beta") {
		t.Fatalf("printing Values shows a value: %s", s)
	}
	v, err = Resolve(context.Background(), r, "A", "C", "D")
	if !errors.Is(err, ErrNotFound) || v.Getenv("A") != "alpha" || len(v) != 1 {
		t.Fatalf("missing C and D: %v, values %v", err, v)
	}
	if want := "secrets: env \"C\": not set\nsecrets: env \"D\": not set"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret(value)
	type creds struct {
		Provider string
		Key      Secret
		Ptr      *Secret
	}
	c := creds{"runpod", s, &s}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s", "%T"} {
		assertNoSecret(t, format, fmt.Sprintf(format, s))
		assertNoSecret(t, format+" in a struct", fmt.Sprintf(format, c))
		assertNoSecret(t, format+" in a slice", fmt.Sprintf(format, []Secret{s}))
		assertNoSecret(t, format+" in a map", fmt.Sprintf(format, map[string]Secret{"k": s}))
	}
	if got := fmt.Sprintf("%v|%+v|%#v|%q", s, s, s, s); got != `[redacted]|[redacted]|[redacted]|"[redacted]"` {
		t.Errorf("formats: %s", got)
	}
	if got := fmt.Sprint(s) + s.String(); got != "[redacted][redacted]" {
		t.Errorf("Sprint/String: %s", got)
	}
	if s.Reveal() != value {
		t.Error("Reveal lost the value")
	}

	j, err := json.Marshal(map[string]any{"secret": s, "creds": c, "list": []Secret{s}})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, "json", string(j))
	if !strings.Contains(string(j), `"Key":"[redacted]"`) {
		t.Errorf("json %s", j)
	}

	for name, h := range map[string]func(io.Writer) slog.Handler{
		"json": func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) },
		"text": func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("resolved", "key", s, "creds", c, slog.Any("any", s), slog.Group("g", "k", s))
		log.With("bound", s).Warn("again", "list", []Secret{s})
		assertNoSecret(t, "slog "+name, buf.String())
		if !strings.Contains(buf.String(), Redacted) {
			t.Errorf("slog %s: %s", name, buf.String())
		}
	}
}

func TestRedact(t *testing.T) {
	cases := []struct {
		in      string
		secrets []string
		want    string
	}{
		{"Bearer abc123 and abc123", []string{"abc123"}, "Bearer [redacted] and [redacted]"},
		{"key=abc123xyz", []string{"abc", "abc123xyz"}, "key=[redacted]"}, // the longer first
		{"nothing here", []string{"", "zzz"}, "nothing here"},
		{"", []string{"a"}, ""},
		{"a:b", nil, "a:b"},
	}
	for _, c := range cases {
		if got := Redact(c.in, c.secrets...); got != c.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", c.in, c.secrets, got, c.want)
		}
	}
}

func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, value) || strings.Contains(s, fmt.Sprintf("%x", value)) || strings.Contains(s, "S3CR3T") {
		t.Errorf("%s shows the secret: %s", what, Redact(s, value))
	}
}

// An echoed key cut by a body snippet, or re-cased by the provider, is still blanked.
func TestRedactCutAndCase(t *testing.T) {
	const key = "rpa_K7Q2M9X4T8W1Z6B3N5V0C2L8H4J7D9F1G3S6A2"
	for _, tc := range []struct{ in, want string }{
		{`{"error":"bad key Bearer ` + key + `"}`, `{"error":"bad key Bearer [redacted]"}`},
		{"padding…xxxx" + key[:40] + "…", "padding…xxxx[redacted]…"},
		{"BEARER " + strings.ToUpper(key), "BEARER [redacted]"},
		{"bearer sk-secret-123", "bearer [redacted]"},
		{"rpa_K7 is only a prefix of 6", "[redacted] is only a prefix of 6"},
		{"rpa_K and nothing else", "rpa_K and nothing else"},
	} {
		if got := Redact(tc.in, key, "sk-SECRET-123"); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
