package archive

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ledger"
)

// fakeS3 is gofakes3 on loopback with one bucket.
func fakeS3(t *testing.T) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("ledger-archive")}); err != nil {
		t.Fatal(err)
	}
	return c
}

// decision is a minimal valid decision decided at at, for queue q.
func decision(id, q string, at time.Time) sluice.DecisionRecord {
	return sluice.DecisionRecord{DecisionID: id, Status: sluice.StatusNothingToDo, DecidedAt: at,
		Trigger: sluice.Trigger{Queue: q, State: sluice.StateOK, StateChangeTime: at},
		Profile: sluice.QueueProfile{Queue: q, Tier: sluice.TierEmergency, HoursPerSlot: decimal.NewFromInt(1)},
		Demand:  sluice.Demand{Queue: q, Hours: decimal.NewFromInt(1)}, BillingCurrency: "USD",
		Plan: sluice.Plan{TotalExpectedCost: sluice.MustMoney("0", "USD")}}
}

func appendAt(t *testing.T, s *ledger.SQLite, id string, at time.Time) {
	t.Helper()
	rec := decision(id, "q-"+id, at)
	if err := s.AppendDecision(t.Context(), &rec); err != nil {
		t.Fatal(err)
	}
}

func records(t *testing.T, s *ledger.SQLite) []ledger.Stored {
	t.Helper()
	r, err := s.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Records of three hours; the archive runs at 11:30 (hours 09 and 10 are
// over), again at 11:40 (nothing new), and at 12:05 (hour 11 and a late
// record of hour 10, which lands in a new batch of hour 11's floor). The
// archive verifies end to end; a batch can never be overwritten.
func TestArchive(t *testing.T) {
	ctx := t.Context()
	s, err := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	appendAt(t, s, "dec-a", day.Add(9*time.Hour+5*time.Minute))
	appendAt(t, s, "dec-b", day.Add(9*time.Hour+59*time.Minute))
	appendAt(t, s, "dec-c", day.Add(10*time.Hour+1*time.Minute))
	appendAt(t, s, "dec-d", day.Add(11*time.Hour+7*time.Minute))

	c := fakeS3(t)
	now := day.Add(11*time.Hour + 30*time.Minute)
	a := &Archiver{S3: c, Bucket: "ledger-archive", Prefix: "sluice/test/", Now: func() time.Time { return now }}
	res, err := a.Archive(ctx, records(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Batches) != 2 || res.Pending != 1 || res.Batches[0].Batch != "sluice/test/records/2026/11/29/09/seq-000000000001-000000000002.ndjson" ||
		res.Batches[1].FirstSeq != 3 || res.Batches[1].PreviousDigest != "sluice/test/digests/2026/11/29/09/seq-000000000001-000000000002.json" ||
		res.Batches[0].PreviousDigestSHA256 != ledger.GenesisHash {
		t.Fatalf("first run: %+v", res)
	}
	now = now.Add(10 * time.Minute)
	if res, err := a.Archive(ctx, records(t, s)); err != nil || len(res.Batches) != 0 || res.Pending != 1 {
		t.Fatalf("second run in the same hour: %+v, %v", res, err)
	}
	// A late record for 10:30 arrives after hour 10 was archived.
	appendAt(t, s, "dec-late", day.Add(10*time.Hour+30*time.Minute))
	now = day.Add(12*time.Hour + 5*time.Minute)
	res, err = a.Archive(ctx, records(t, s))
	if err != nil || len(res.Batches) != 1 || res.Batches[0].FirstSeq != 4 || res.Batches[0].LastSeq != 5 || res.Batches[0].Hour != "2026-11-29T11:00:00Z" {
		t.Fatalf("third run: %+v, %v", res, err)
	}
	if n, err := a.Verify(ctx); err != nil || n != 5 {
		t.Fatalf("Verify: %d, %v", n, err)
	}
	// The NDJSON lines are the stored bodies, byte for byte.
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("ledger-archive"), Key: aws.String(res.Batches[0].Batch)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(out.Body)
	recs := records(t, s)
	if want := string(recs[3].Body) + "\n" + string(recs[4].Body) + "\n"; buf.String() != want {
		t.Fatalf("batch body:\n%s\nwant\n%s", buf.String(), want)
	}
	// Overwriting a batch is refused by S3 (If-None-Match: *).
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("ledger-archive"), Key: aws.String(res.Batches[0].Batch),
		Body: strings.NewReader("{}\n"), IfNoneMatch: aws.String("*")})
	if err == nil || !strings.Contains(err.Error(), "PreconditionFailed") {
		t.Fatalf("overwrite with If-None-Match: %v, want 412 PreconditionFailed", err)
	}
	// An archiver whose chain disagrees with the archive writes nothing.
	other, _ := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "other.db"))
	defer other.Close()
	appendAt(t, other, "dec-x", day.Add(9*time.Hour))
	if _, err := a.Archive(ctx, records(t, other)); err == nil || !strings.Contains(err.Error(), "not in the chain") {
		t.Fatalf("foreign chain: %v", err)
	}
}

// A batch changed behind the archive (a bucket without Object Lock) fails Verify.
func TestArchiveVerifyFindsEdit(t *testing.T) {
	ctx := context.Background()
	s, _ := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "l.db"))
	defer s.Close()
	day := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	appendAt(t, s, "dec-a", day)
	c := fakeS3(t)
	a := &Archiver{S3: c, Bucket: "ledger-archive", Now: func() time.Time { return day.Add(2 * time.Hour) }}
	res, err := a.Archive(ctx, records(t, s))
	if err != nil || len(res.Batches) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	body := strings.Replace(string(records(t, s)[0].Body), `"status":"nothing-to-do"`, `"status":"planned"`, 1) + "\n"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("ledger-archive"), Key: aws.String(res.Batches[0].Batch),
		Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("Verify after an edit: %v", err)
	}
	if _, err := a.Archive(ctx, records(t, s)); err != nil && !errors.Is(err, ErrConflict) {
		t.Fatalf("rerun: %v", err)
	}
}
