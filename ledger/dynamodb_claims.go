package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice"
)

var _ sluice.LineClaims = (*DynamoDB)(nil)

// ClaimLine takes the lease on one decision line for owner until until (the
// burst core's optional line-claim capability; SQLite.ClaimLine is the same
// rule). The claim is the item pk "claim#<decision>", sk the line number:
// operational state, outside the chain and Verify. It is a conditional
// write: put when absent or already owner's; otherwise, when steal(holder,
// holderUntil) says the lease may be taken, an update on condition that the
// holder and its lease end are still the ones read (two stealers cannot
// both win). prev is the holder before the call ("" = never claimed).
func (d *DynamoDB) ClaimLine(ctx context.Context, decisionID string, line int, owner string, until time.Time,
	steal func(holder string, holderUntil time.Time) bool) (prev string, ok bool, err error) {
	if decisionID == "" || owner == "" {
		return "", false, errors.New("ledger: claim line: empty decision id or owner")
	}
	pk, sk := "claim#"+decisionID, strconv.Itoa(line)
	untilS := until.UTC().Format(time.RFC3339Nano)
	for range 5 { // a lost race re-reads the new holder
		item, err := d.get(ctx, pk, sk)
		if err != nil {
			return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
		}
		in := &dynamodb.PutItemInput{TableName: aws.String(d.table),
			Item: map[string]types.AttributeValue{"pk": avS(pk), "sk": avS(sk), "owner": avS(owner), "until": avS(untilS)}}
		cur := ""
		if item == nil {
			in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		} else {
			cur = str(item, "owner")
			curUntil := str(item, "until")
			if cur != owner {
				t, perr := time.Parse(time.RFC3339Nano, curUntil)
				if perr != nil || steal == nil || !steal(cur, t) {
					return cur, false, nil
				}
			}
			in.ConditionExpression = aws.String("#o = :o AND #u = :u")
			in.ExpressionAttributeNames = map[string]string{"#o": "owner", "#u": "until"}
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":o": avS(cur), ":u": avS(curUntil)}
		}
		_, err = d.c.PutItem(ctx, in)
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return cur, true, nil
		case errors.As(err, &ccf):
			continue
		default:
			return "", false, fmt.Errorf("ledger: claim %s line %d: %w", decisionID, line, err)
		}
	}
	return "", false, fmt.Errorf("ledger: claim %s line %d: the claim kept changing hands", decisionID, line)
}
