// Package replay serves recorded provider responses from loopback HTTP
// servers, so quote sources run against their real endpoints and real-format
// bodies in tests and offline runs (DESIGN.md "Real components and their
// local stand-ins").
//
// Start(dir) starts one httptest server on 127.0.0.1 per provider
// subdirectory of dir. Each request is mapped to an ordered list of candidate
// keys (see Keys); the first dir/<provider>/<key>.json or <key>.xml that
// exists is the response body (for each key .json is tried before .xml), served
// with the Content-Type of its kind (see ContentType). A sidecar
// dir/<provider>/<key>.json.meta.json (or <key>.xml.meta.json)
//
//	{"status":429,"delay_ms":1500,"headers":{"Retry-After":"2"}}
//
// may set the status (default 200), a delay before answering (cut short when
// the request's context ends) and response headers. With no recording the
// answer is 404 with a JSON body naming the keys tried. The file naming is
// documented in testdata/replay/README.md.
package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// maxBody caps how much of a request body is read for key derivation and the log.
const maxBody = 4 << 20

// Request is one request a replay server saw.
type Request struct {
	Method string
	Path   string
	// Query is the raw query string.
	Query  string
	Header http.Header
	Body   []byte
	// Keys are the candidate keys tried, in order; Key is the one that matched
	// ("" when none did and the answer was 404).
	Keys []string
	Key  string
	// Status is the status code answered (or about to be, for a delayed reply).
	Status int
	Time   time.Time
}

// Meta is the sidecar <key>.json.meta.json.
type Meta struct {
	Status  int               `json:"status"`
	DelayMS int               `json:"delay_ms"`
	Headers map[string]string `json:"headers"`
}

// Server is a set of loopback servers, one per provider.
type Server struct {
	dir     string
	servers map[string]*httptest.Server

	mu       sync.Mutex
	requests map[string][]Request
}

// Start starts one loopback server per provider subdirectory of dir.
func Start(dir string) (*Server, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replay: reading %s: %w", dir, err)
	}
	s := &Server{dir: dir, servers: map[string]*httptest.Server{}, requests: map[string][]Request{}}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		provider := e.Name()
		s.servers[provider] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serve(provider, w, r)
		}))
	}
	if len(s.servers) == 0 {
		return nil, fmt.Errorf("replay: %s has no provider subdirectories", dir)
	}
	return s, nil
}

// URL is the base URL (http://127.0.0.1:port) of provider's server, or "" if
// dir had no recordings for it.
func (s *Server) URL(provider string) string {
	if ts, ok := s.servers[provider]; ok {
		return ts.URL
	}
	return ""
}

// Providers lists the providers served, sorted.
func (s *Server) Providers() []string {
	var ps []string
	for p := range s.servers {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// Requests returns a copy of the requests provider's server has seen, in arrival order.
func (s *Server) Requests(provider string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests[provider])
}

// Close shuts every server down.
func (s *Server) Close() {
	for _, ts := range s.servers {
		ts.Close()
	}
}

func (s *Server) serve(provider string, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	keys := Keys(provider, r, body)
	rec := Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
		Keys:   keys,
		Time:   time.Now(),
	}

	var (
		payload []byte
		file    string
		meta    Meta
		err     error
	)
lookup:
	for _, k := range keys {
		for _, ext := range extensions {
			payload, err = os.ReadFile(filepath.Join(s.dir, provider, k+ext))
			if err == nil {
				rec.Key, file = k, k+ext
				break lookup
			}
		}
	}
	if rec.Key == "" {
		rec.Status = http.StatusNotFound
		s.log(provider, rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"error":      "replay: no recording",
			"provider":   provider,
			"method":     r.Method,
			"path":       r.URL.Path,
			"keys_tried": keys,
		})
		return
	}
	meta, err = readMeta(filepath.Join(s.dir, provider, file+".meta.json"))
	if err != nil {
		rec.Status = http.StatusInternalServerError
		s.log(provider, rec)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	rec.Status = meta.Status
	s.log(provider, rec)

	if meta.DelayMS > 0 {
		t := time.NewTimer(time.Duration(meta.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return // the client gave up
		}
	}
	w.Header().Set("Content-Type", ContentType(provider, file))
	for k, v := range meta.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(meta.Status)
	_, _ = w.Write(payload)
}

// extensions are the recording file kinds, in lookup order for each key.
var extensions = []string{".json", ".xml"}

// Content types of recordings.
const (
	ContentTypeJSON      = "application/json"
	ContentTypeXML       = "text/xml;charset=UTF-8"     // the EC2 Query API's
	ContentTypeAmzJSON11 = "application/x-amz-json-1.1" // AWS JSON 1.1 protocol (Price List)
)

// ContentType is the Content-Type a recording file is served with: text/xml
// for .xml, application/x-amz-json-1.1 for aws-pricing's .json, else
// application/json. A sidecar header may override it.
func ContentType(provider, file string) string {
	switch {
	case strings.HasSuffix(file, ".xml"):
		return ContentTypeXML
	case provider == "aws-pricing":
		return ContentTypeAmzJSON11
	}
	return ContentTypeJSON
}

func (s *Server) log(provider string, rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[provider] = append(s.requests[provider], rec)
}

// readMeta reads a sidecar; a missing one means status 200, no delay, no headers.
func readMeta(path string) (Meta, error) {
	m := Meta{Status: http.StatusOK}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("replay: reading %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("replay: %s: %w", path, err)
	}
	if m.Status == 0 {
		m.Status = http.StatusOK
	}
	if m.Status < 100 || m.Status > 999 {
		return m, fmt.Errorf("replay: %s: status %d: not an HTTP status", path, m.Status)
	}
	return m, nil
}

// Keys returns the candidate recording keys for a request to provider, most
// specific first; body is the request body.
//
//   - runpod, POST /graphql: "graphql.<operationName>" (when the JSON body has
//     one), then "graphql"
//   - vast, POST /api/v0/bundles/: "bundles.<type>" (the JSON body's "type"),
//     then "bundles"
//   - aliyun, any path: "<Action>.<RegionId>.<InstanceType>", "<Action>.<RegionId>",
//     "<Action>"; Action from the x-acs-action header or the Action query/form
//     parameter, RegionId and InstanceType from the query or form body; parts
//     that are absent are left out (no Action: the generic key)
//   - aws-ec2 (EC2 Query API, form-encoded POST): "<Action>.<region>", "<Action>";
//     Action from the form body (or query), region from the SigV4 credential
//     scope of the Authorization header (Credential=AKID/20261129/us-east-1/ec2/aws4_request);
//     no region: "<Action>" only
//   - aws-pricing (AWS JSON 1.1): "<op>.<instanceType>", "<op>"; op is the
//     X-Amz-Target header after its last "." (AWSPriceListService.GetProducts →
//     GetProducts), instanceType the Value of the JSON body's Filters entry whose
//     Field is instanceType (left out when there is none)
//   - autodl, POST /api/v1/dev/machine/region/gpu_stock: "gpu_stock.<region_sign>"
//     (the JSON body's "region_sign", when it is a non-empty string), then "gpu_stock"
//   - otherwise: "<METHOD>_<path with / replaced by _, leading and trailing _ trimmed>",
//     e.g. GET /v1/pods/ → "GET_v1_pods"
//
// Every part taken from the request is cleaned to [A-Za-z0-9._-] (anything
// else becomes "_"), so a key never leaves the provider's directory.
func Keys(provider string, r *http.Request, body []byte) []string {
	path := r.URL.Path
	switch {
	case provider == "runpod" && r.Method == http.MethodPost && strings.TrimRight(path, "/") == "/graphql":
		var keys []string
		if op := jsonString(body, "operationName"); op != "" {
			keys = append(keys, "graphql."+clean(op))
		}
		return append(keys, "graphql")
	case provider == "vast" && r.Method == http.MethodPost && strings.TrimRight(path, "/") == "/api/v0/bundles":
		var keys []string
		if t := jsonString(body, "type"); t != "" {
			keys = append(keys, "bundles."+clean(t))
		}
		return append(keys, "bundles")
	case provider == "autodl" && r.Method == http.MethodPost && strings.TrimRight(path, "/") == "/api/v1/dev/machine/region/gpu_stock":
		var keys []string
		if rs := jsonString(body, "region_sign"); rs != "" {
			keys = append(keys, "gpu_stock."+clean(rs))
		}
		return append(keys, "gpu_stock")
	case provider == "aliyun":
		form := formValues(r, body)
		action := r.Header.Get("x-acs-action")
		if action == "" {
			action = form.Get("Action")
		}
		if action != "" {
			action = clean(action)
			var keys []string
			region, itype := clean(form.Get("RegionId")), clean(form.Get("InstanceType"))
			if region != "" && itype != "" {
				keys = append(keys, action+"."+region+"."+itype)
			}
			if region != "" {
				keys = append(keys, action+"."+region)
			}
			return append(keys, action)
		}
	case provider == "aws-ec2":
		if action := clean(formValues(r, body).Get("Action")); action != "" {
			var keys []string
			if region := clean(sigV4Region(r.Header.Get("Authorization"))); region != "" {
				keys = append(keys, action+"."+region)
			}
			return append(keys, action)
		}
	case provider == "aws-pricing":
		target := r.Header.Get("X-Amz-Target")
		if op := clean(target[strings.LastIndex(target, ".")+1:]); op != "" {
			var keys []string
			if it := clean(filterValue(body, "instanceType")); it != "" {
				keys = append(keys, op+"."+it)
			}
			return append(keys, op)
		}
	}
	p := strings.Trim(strings.ReplaceAll(path, "/", "_"), "_")
	if p == "" {
		return []string{clean(r.Method)}
	}
	return []string{clean(r.Method + "_" + p)}
}

// sigV4Region is the region of a SigV4 Authorization header's credential scope
// ("AWS4-HMAC-SHA256 Credential=AKID/20261129/us-east-1/ec2/aws4_request, SignedHeaders=…"),
// or "" when the header has none.
func sigV4Region(auth string) string {
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	// AKID / date / region / service / aws4_request
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return ""
	}
	return parts[2]
}

// filterValue is the string Value of the first entry of a Price List request's
// Filters whose Field is field (compared case-insensitively), or "".
func filterValue(body []byte, field string) string {
	if !gjson.ValidBytes(body) {
		return ""
	}
	var v string
	gjson.GetBytes(body, "Filters").ForEach(func(_, f gjson.Result) bool {
		if strings.EqualFold(f.Get("Field").String(), field) && f.Get("Value").Type == gjson.String {
			v = f.Get("Value").String()
			return false
		}
		return true
	})
	return v
}

// jsonString is the string member name of a JSON object body, or "".
func jsonString(body []byte, name string) string {
	if !gjson.ValidBytes(body) {
		return ""
	}
	v := gjson.GetBytes(body, name)
	if v.Type != gjson.String {
		return ""
	}
	return v.String()
}

// formValues merges the query string and a form-encoded body (query first).
func formValues(r *http.Request, body []byte) url.Values {
	v := url.Values{}
	for k, vs := range r.URL.Query() {
		v[k] = append(v[k], vs...)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" || (ct == "" && len(body) > 0 && !gjson.ValidBytes(body)) {
		if f, err := url.ParseQuery(string(body)); err == nil {
			for k, vs := range f {
				v[k] = append(v[k], vs...)
			}
		}
	}
	return v
}

// clean maps every byte outside [A-Za-z0-9._-] to "_".
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
