// Package archive copies a ledger chain to S3 in hourly NDJSON batches, each
// with a digest that lists its records' hashes and chains to the previous
// digest, as CloudTrail's log file integrity digests do
// (../shared/reference/opa-and-audit.md §F). Every object is written with
// If-None-Match: * so a batch or digest is never overwritten; infra puts the
// bucket under versioning and Object Lock in compliance mode, so what is
// written stays as written for the retention period.
//
// Layout under Prefix:
//
//	records/YYYY/MM/DD/HH/seq-<first>-<last>.ndjson   one canonical record body per line, chain order
//	digests/YYYY/MM/DD/HH/seq-<first>-<last>.json     Digest
//
// A record belongs to the UTC hour of its own time (decision: decided_at;
// placement: placed_at; release: at), never earlier than the record before
// it, so hours follow chain order and keys sort in chain order. An hour is
// archived once it is over (before the hour of Now); a record that arrives
// for an hour already archived goes into a new batch of that hour (its key
// names its own seq range).
package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/ledger"
)

// Digest is one batch's digest object (JSON).
type Digest struct {
	Version int    `json:"version"` // 1
	Batch   string `json:"batch"`   // key of the NDJSON object
	// BatchSHA256 is the hex SHA-256 of the NDJSON object's bytes.
	BatchSHA256 string `json:"batch_sha256"`
	Hour        string `json:"hour"` // YYYY-MM-DDTHH:00:00Z
	FirstSeq    int64  `json:"first_seq"`
	LastSeq     int64  `json:"last_seq"`
	// Records are the batch's records in chain order: seq, record id, hash.
	Records []DigestRecord `json:"records"`
	// PrevHash of the first record (links the batch to the chain before it).
	PrevHash string `json:"prev_hash"`
	// PreviousDigest and PreviousDigestSHA256 name the digest before this one
	// and the hex SHA-256 of its bytes ("" and ledger.GenesisHash for the first).
	PreviousDigest       string    `json:"previous_digest"`
	PreviousDigestSHA256 string    `json:"previous_digest_sha256"`
	CreatedAt            time.Time `json:"created_at"`
}

// DigestRecord is one record's entry in a digest.
type DigestRecord struct {
	Seq      int64  `json:"seq"`
	RecordID string `json:"record_id"`
	Hash     string `json:"hash"`
}

// S3 is what the archiver needs of an S3 client (*s3.Client).
type S3 interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Archiver writes batches of one ledger to one bucket.
type Archiver struct {
	S3     S3
	Bucket string
	// Prefix is prepended to every key, e.g. "sluice/prod/" (may be "").
	Prefix string
	// Now decides which hours are over (default time.Now).
	Now func() time.Time
}

// ErrConflict is returned when an object already exists with other bytes
// than the archiver would write: the archive and the ledger disagree.
var ErrConflict = errors.New("archive: object exists with different content")

// Result is what one Archive run wrote.
type Result struct {
	Batches []Digest
	// Pending is the number of records of hours not over yet.
	Pending int
}

// Archive writes every closed hour of recs (a whole chain, in order) that
// is not archived yet. It first reads the last digest to find where the
// archive ends, checks that the chain still has that record with that
// hash, then writes batch and digest for each closed hour after it. It is
// safe to run again (nothing new is written) and from several processes
// (If-None-Match: an object already written with the same bytes counts as
// written; other bytes are ErrConflict).
func (a *Archiver) Archive(ctx context.Context, recs []ledger.Stored) (Result, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	cutoff := now().UTC().Truncate(time.Hour)
	last, lastKey, lastSum, err := a.lastDigest(ctx)
	if err != nil {
		return Result{}, err
	}
	start := 0
	var prevHour time.Time
	if last != nil {
		i := slices.IndexFunc(recs, func(r ledger.Stored) bool { return r.Seq == last.LastSeq })
		if i < 0 || recs[i].Hash != last.Records[len(last.Records)-1].Hash {
			return Result{}, fmt.Errorf("archive: the last archived record (seq %d) is not in the chain with hash %s", last.LastSeq,
				last.Records[len(last.Records)-1].Hash)
		}
		start = i + 1
		if prevHour, err = time.Parse(time.RFC3339, last.Hour); err != nil {
			return Result{}, fmt.Errorf("archive: digest %s: hour %q", lastKey, last.Hour)
		}
	}
	var res Result
	for i := start; i < len(recs); {
		h, err := hourOf(recs[i], prevHour)
		if err != nil {
			return res, err
		}
		j := i + 1
		for ; j < len(recs); j++ {
			hj, err := hourOf(recs[j], h)
			if err != nil {
				return res, err
			}
			if !hj.Equal(h) {
				break
			}
		}
		if !h.Before(cutoff) {
			res.Pending = len(recs) - i
			break
		}
		d, key, sum, err := a.write(ctx, recs[i:j], h, lastKey, lastSum, now().UTC())
		if err != nil {
			return res, err
		}
		res.Batches = append(res.Batches, d)
		lastKey, lastSum, prevHour, i = key, sum, h, j
	}
	return res, nil
}

// hourOf is the archive hour of r: the UTC hour of its own time, not before floor.
func hourOf(r ledger.Stored, floor time.Time) (time.Time, error) {
	var t struct {
		DecidedAt time.Time `json:"decided_at"`
		Placement struct {
			PlacedAt time.Time `json:"placed_at"`
		} `json:"placement"`
		At time.Time `json:"at"`
	}
	if err := json.Unmarshal(r.Body, &t); err != nil {
		return time.Time{}, fmt.Errorf("archive: record seq %d (%s): %w", r.Seq, r.RecordID, err)
	}
	at := t.At
	switch r.Kind {
	case ledger.KindDecision:
		at = t.DecidedAt
	case ledger.KindPlacement:
		at = t.Placement.PlacedAt
	}
	h := at.UTC().Truncate(time.Hour)
	if h.Before(floor) {
		h = floor
	}
	return h, nil
}

func (a *Archiver) key(kind string, h time.Time, first, last int64, ext string) string {
	return fmt.Sprintf("%s%s/%s/seq-%012d-%012d.%s", a.Prefix, kind, h.Format("2006/01/02/15"), first, last, ext)
}

// write puts one batch and its digest; it returns the digest, its key and SHA-256.
func (a *Archiver) write(ctx context.Context, batch []ledger.Stored, h time.Time, prevKey, prevSum string, now time.Time) (Digest, string, string, error) {
	first, last := batch[0].Seq, batch[len(batch)-1].Seq
	var nd bytes.Buffer
	d := Digest{Version: 1, Hour: h.Format(time.RFC3339), FirstSeq: first, LastSeq: last, PrevHash: batch[0].PrevHash,
		PreviousDigest: prevKey, PreviousDigestSHA256: prevSum, CreatedAt: now}
	if prevKey == "" {
		d.PreviousDigestSHA256 = ledger.GenesisHash
	}
	for _, r := range batch {
		nd.Write(r.Body)
		nd.WriteByte('\n')
		d.Records = append(d.Records, DigestRecord{Seq: r.Seq, RecordID: r.RecordID, Hash: r.Hash})
	}
	d.Batch = a.key("records", h, first, last, "ndjson")
	d.BatchSHA256 = sum(nd.Bytes())
	if err := a.putOnce(ctx, d.Batch, nd.Bytes(), "application/x-ndjson"); err != nil {
		return d, "", "", err
	}
	dkey := a.key("digests", h, first, last, "json")
	db, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return d, "", "", err
	}
	if err := a.putOnce(ctx, dkey, db, "application/json"); err != nil {
		return d, "", "", err
	}
	got, err := a.get(ctx, dkey) // a concurrent archiver may have written it first (other CreatedAt)
	if err != nil {
		return d, "", "", err
	}
	if err := json.Unmarshal(got, &d); err != nil {
		return d, "", "", fmt.Errorf("archive: digest %s: %w", dkey, err)
	}
	return d, dkey, sum(got), nil
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// putOnce writes key with If-None-Match: *. When the object exists, a batch
// with the same bytes, or a digest of the same batch, counts as written.
func (a *Archiver) putOnce(ctx context.Context, key string, body []byte, contentType string) error {
	_, err := a.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.Bucket, Key: &key, Body: bytes.NewReader(body),
		ContentType: &contentType, IfNoneMatch: aws.String("*")})
	var ae smithy.APIError
	if err == nil || !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		if err != nil {
			return fmt.Errorf("archive: put %s: %w", key, err)
		}
		return nil
	}
	have, err := a.get(ctx, key)
	if err != nil {
		return err
	}
	if bytes.Equal(have, body) {
		return nil
	}
	if strings.HasSuffix(key, ".json") {
		var x, y Digest
		if json.Unmarshal(have, &x) == nil && json.Unmarshal(body, &y) == nil && x.BatchSHA256 == y.BatchSHA256 && x.Batch == y.Batch &&
			x.PreviousDigestSHA256 == y.PreviousDigestSHA256 {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrConflict, key)
}

func (a *Archiver) get(ctx context.Context, key string) ([]byte, error) {
	out, err := a.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: &a.Bucket, Key: &key})
	if err != nil {
		return nil, fmt.Errorf("archive: get %s: %w", key, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// digestKeys lists every digest key in order.
func (a *Archiver) digestKeys(ctx context.Context) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(a.S3, &s3.ListObjectsV2Input{Bucket: &a.Bucket, Prefix: aws.String(a.Prefix + "digests/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("archive: list digests: %w", err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// lastDigest reads the newest digest (nil when the archive is empty).
func (a *Archiver) lastDigest(ctx context.Context) (*Digest, string, string, error) {
	keys, err := a.digestKeys(ctx)
	if err != nil || len(keys) == 0 {
		return nil, "", "", err
	}
	k := keys[len(keys)-1]
	b, err := a.get(ctx, k)
	if err != nil {
		return nil, "", "", err
	}
	var d Digest
	if err := json.Unmarshal(b, &d); err != nil || len(d.Records) == 0 {
		return nil, "", "", fmt.Errorf("archive: digest %s: not a digest (%v)", k, err)
	}
	return &d, k, sum(b), nil
}

// Verify reads the whole archive and checks it: each digest names the
// digest before it with that object's SHA-256, each batch's bytes hash to
// its digest's batch_sha256, each line's recomputed hash (ledger.BodyHash)
// is the digest's, and prev_hash links every record to the one before,
// across batches. It returns the number of records checked.
func (a *Archiver) Verify(ctx context.Context) (int, error) {
	keys, err := a.digestKeys(ctx)
	if err != nil {
		return 0, err
	}
	prevKey, prevSum, want, n := "", ledger.GenesisHash, ledger.GenesisHash, 0
	for _, k := range keys {
		b, err := a.get(ctx, k)
		if err != nil {
			return n, err
		}
		var d Digest
		if err := json.Unmarshal(b, &d); err != nil {
			return n, fmt.Errorf("archive: digest %s: %w", k, err)
		}
		if d.PreviousDigest != prevKey || d.PreviousDigestSHA256 != prevSum {
			return n, fmt.Errorf("archive: digest %s: previous digest %s (%s), the archive has %s (%s)", k,
				d.PreviousDigest, d.PreviousDigestSHA256, prevKey, prevSum)
		}
		nd, err := a.get(ctx, d.Batch)
		if err != nil {
			return n, err
		}
		if sum(nd) != d.BatchSHA256 {
			return n, fmt.Errorf("archive: batch %s: SHA-256 %s, digest says %s", d.Batch, sum(nd), d.BatchSHA256)
		}
		lines := bytes.Split(bytes.TrimSuffix(nd, []byte("\n")), []byte("\n"))
		if len(lines) != len(d.Records) {
			return n, fmt.Errorf("archive: batch %s: %d lines, digest lists %d records", d.Batch, len(lines), len(d.Records))
		}
		for i, line := range lines {
			h, err := ledger.BodyHash(line)
			if err != nil {
				return n, fmt.Errorf("archive: batch %s line %d: %w", d.Batch, i+1, err)
			}
			var links struct {
				PrevHash string `json:"prev_hash"`
			}
			json.Unmarshal(line, &links)
			r := d.Records[i]
			if h != r.Hash || links.PrevHash != want {
				return n, fmt.Errorf("archive: batch %s record seq %d (%s): hash %s prev %s, digest %s, chain %s",
					d.Batch, r.Seq, r.RecordID, h, links.PrevHash, r.Hash, want)
			}
			want = h
			n++
		}
		prevKey, prevSum = k, sum(b)
	}
	return n, nil
}
