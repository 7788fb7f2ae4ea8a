package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// dynamoWithChain is a DynamoDB ledger holding 2 decisions and 2 placements.
func dynamoWithChain(t *testing.T) *DynamoDB {
	t.Helper()
	d := newDynamo(t)
	a, b := sampleDecision("dec-t1", "train-a"), sampleDecision("dec-t2", "train-b")
	mustAppend(t, d, &a)
	if err := d.AppendPlacement(t.Context(), samplePlacement("dec-t1", "train-a", 0, 2)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, d, &b)
	if err := d.AppendPlacement(t.Context(), samplePlacement("dec-t2", "train-b", 0, 2)); err != nil {
		t.Fatal(err)
	}
	return d
}

// The tamper matrix on DynamoDB: edits made with plain item writes (as
// someone with table access, bypassing the ledger) are found by Verify,
// which names the record; the head item also catches a removed last
// record, which a chain alone cannot.
func TestDynamoTamper(t *testing.T) {
	body := func(d *DynamoDB, seq int64) string {
		item, err := d.get(t.Context(), "chain", seqKey(seq))
		if err != nil || item == nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		return str(item, "body")
	}
	put := func(d *DynamoDB, seq int64, edit func(map[string]types.AttributeValue)) {
		item, _ := d.get(t.Context(), "chain", seqKey(seq))
		edit(item)
		if _, err := d.c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(d *DynamoDB, seq int64) {
		if _, err := d.c.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: key("chain", seqKey(seq))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		tamper func(d *DynamoDB)
		seq    int64
		want   string
	}{
		{"untouched", func(*DynamoDB) {}, 0, ""},
		{"one byte of an amount", func(d *DynamoDB) {
			b := strings.Replace(body(d, 3), `"total_expected_cost":{"amount":"4`, `"total_expected_cost":{"amount":"5`, 1)
			put(d, 3, func(it map[string]types.AttributeValue) { it["body"] = avS(b) })
		}, 3, ProblemHashMismatch},
		{"delete a record", func(d *DynamoDB) { del(d, 2) }, 3, ProblemBrokenLink},
		{"reorder two records", func(d *DynamoDB) {
			i2, _ := d.get(t.Context(), "chain", seqKey(2))
			i3, _ := d.get(t.Context(), "chain", seqKey(3))
			put(d, 2, func(it map[string]types.AttributeValue) {
				for k, v := range i3 {
					if k != "pk" && k != "sk" && k != "seq" {
						it[k] = v
					}
				}
			})
			put(d, 3, func(it map[string]types.AttributeValue) {
				for k, v := range i2 {
					if k != "pk" && k != "sk" && k != "seq" {
						it[k] = v
					}
				}
			})
		}, 2, ProblemBrokenLink},
		{"edit a hash", func(d *DynamoDB) {
			fake := strings.Repeat("ab", 32)
			put(d, 4, func(it map[string]types.AttributeValue) {
				it["body"] = avS(strings.Replace(str(it, "body"), str(it, "hash"), fake, 1))
				it["hash"] = avS(fake)
			})
		}, 4, ProblemHashMismatch},
		{"remove the last record", func(d *DynamoDB) { del(d, 4) }, 4, ProblemBrokenLink},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := dynamoWithChain(t)
			c.tamper(d)
			n, err := d.Verify(t.Context())
			if c.want == "" {
				if err != nil || n != 4 {
					t.Fatalf("untouched: %d, %v", n, err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Seq != c.seq || ve.Problem != c.want {
				t.Fatalf("Verify: %v; want %s at seq %d", err, c.want, c.seq)
			}
			t.Logf("%v", err)
		})
	}
}
