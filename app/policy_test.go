package app

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sluicehq/sluice/policy"
)

// copyPolicy writes the embedded policy (tests included) to a directory,
// with change applied to the named file ("" = none).
func copyPolicy(t *testing.T, file, from, to string) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(policy.Embedded(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, name), 0o755)
		}
		b, err := fs.ReadFile(policy.Embedded(), name)
		if err != nil {
			return err
		}
		if name == file {
			if !bytes.Contains(b, []byte(from)) {
				t.Fatalf("%s does not contain %q", file, from)
			}
			b = bytes.Replace(b, []byte(from), []byte(to), 1)
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// bundleOf tars and gzips a policy directory, with a .manifest revision.
func bundleOf(t *testing.T, dir, revision string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, b []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		add("/"+filepath.ToSlash(rel), b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if revision != "" {
		add("/.manifest", []byte(`{"revision": "`+revision+`"}`))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func noEnv(string) string { return "" }

// lineOf is the line number of the first line of the embedded lib.rego containing text.
func lineOf(text string) string {
	b, _ := fs.ReadFile(policy.Embedded(), "lib.rego")
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, text) {
			return strconv.Itoa(i + 1)
		}
	}
	return "?"
}

func TestOpenPolicySources(t *testing.T) {
	ctx := context.Background()
	embedded, err := policy.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := OpenPolicy(ctx, PolicySource{}, noEnv)
	if err != nil || ev.Revision() != embedded.Revision() {
		t.Fatalf("default: %v, %v", ev, err)
	}

	// A working copy that maps cn-wuhan-lr: its own revision, its tests pass.
	dir := copyPolicy(t, "data/regions.json", `"cn-heyuan": "cn-other",`, `"cn-heyuan": "cn-other", "cn-wuhan-lr": "cn-other",`)
	ev, err = OpenPolicy(ctx, PolicySource{Dir: dir, VCSRevision: "abc123"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ContentRevision() == embedded.Revision() || !strings.HasSuffix(ev.Revision(), "+abc123") {
		t.Errorf("working copy revision %s (embedded %s)", ev.Revision(), embedded.Revision())
	}
	env := map[string]string{EnvPolicyDir: dir, EnvPolicyRevision: "def456"}
	if ev2, err := OpenPolicy(ctx, PolicySource{}, func(k string) string { return env[k] }); err != nil || ev2.Revision() != ev.ContentRevision()+"+def456" {
		t.Errorf("from %s: %v, %v", EnvPolicyDir, ev2, err)
	}

	// The same as a bundle file.
	file := filepath.Join(t.TempDir(), "policy.tar.gz")
	if err := os.WriteFile(file, bundleOf(t, dir, "v42"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev3, err := OpenPolicy(ctx, PolicySource{Bundle: file}, noEnv); err != nil || ev3.Revision() != ev.ContentRevision()+"+v42" {
		t.Errorf("bundle file: %v, %v", ev3, err)
	}
}

// A policy that fails to compile, calls a forbidden builtin, fails its own
// tests or has none stops start-up with an error naming the source.
func TestOpenPolicyRefuses(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name           string
		file, from, to string
		want           string
		removeTests    bool
		both, notThere bool
	}{
		{name: "does not compile", file: "lib.rego", from: "locations :=", to: "locations =:", want: "rego_parse_error"},
		{name: "forbidden builtin", file: "lib.rego", from: `"message": message,`, to: `"message": message, "x": http.send({"method": "GET", "url": "https://example.com"}),`, want: "lib.rego:" + lineOf(`"message": message,`) + ": builtin http.send is not allowed"},
		{name: "a test fails", file: "data/regions.json", from: `"cn-hangzhou": "east-china",`, to: `"cn-hangzhou": "beijing",`, want: "Rego tests fail"},
		{name: "no tests", removeTests: true, want: "no Rego tests"},
		{name: "no such directory", notThere: true, want: "policy directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPolicy(t, tt.file, tt.from, tt.to)
			if tt.removeTests {
				matches, _ := filepath.Glob(filepath.Join(dir, "*_test.rego"))
				for _, m := range matches {
					os.Remove(m)
				}
			}
			if tt.notThere {
				dir = filepath.Join(dir, "nope")
			}
			_, err := OpenPolicy(ctx, PolicySource{Dir: dir}, noEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if !tt.notThere && !strings.Contains(err.Error(), dir) {
				t.Errorf("err = %v, does not name %s", err, dir)
			}
		})
	}
	if _, err := OpenPolicy(ctx, PolicySource{Dir: t.TempDir(), Bundle: "x.tar.gz"}, noEnv); err == nil {
		t.Error("directory and bundle: no error")
	}
}

// The Lambda reads its policy bundle from S3 (here gofakes3 on loopback).
func TestOpenPolicyFromS3(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sluice-policy")}); err != nil {
		t.Fatal(err)
	}
	good := bundleOf(t, copyPolicy(t, "", "", ""), "git-9f1c2e7")
	bad := bundleOf(t, copyPolicy(t, "data/regions.json", `"cn-hangzhou": "east-china",`, `"cn-hangzhou": "beijing",`), "git-bad")
	for key, body := range map[string][]byte{"good.tar.gz": good, "bad.tar.gz": bad} {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sluice-policy"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	embedded, err := policy.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvPolicyS3: "s3://sluice-policy/good.tar.gz"}
	ev, err := OpenPolicy(ctx, PolicySource{S3: client}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if ev.Revision() != embedded.Revision()+"+git-9f1c2e7" {
		t.Errorf("revision %s, want the embedded policy's %s + the manifest's", ev.Revision(), embedded.Revision())
	}
	if _, err := OpenPolicy(ctx, PolicySource{Bundle: "s3://sluice-policy/bad.tar.gz", S3: client}, noEnv); err == nil || !strings.Contains(err.Error(), "Rego tests fail") {
		t.Errorf("failing bundle: %v", err)
	}
	if _, err := OpenPolicy(ctx, PolicySource{Bundle: "s3://sluice-policy/missing.tar.gz", S3: client}, noEnv); err == nil || !strings.Contains(err.Error(), "s3://sluice-policy/missing.tar.gz") {
		t.Errorf("missing object: %v", err)
	}
	if _, err := OpenPolicy(ctx, PolicySource{Bundle: "s3://sluice-policy", S3: client}, noEnv); err == nil {
		t.Error("no key: no error")
	}
}
