package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// DynamoDB is the production ledger: the same hash chain, record bodies and
// rules as SQLite, in one DynamoDB table with a string partition key "pk" and
// a string sort key "sk" (CreateDynamoTable). Items (README.md, "DynamoDB"):
//
//	pk "chain",          sk seq as 20 digits   one chained record (body, prev_hash, hash, columns)
//	pk "head",           sk "head"             the chain head: seq and hash of the last record
//	pk "dec#<decision>", sk <record id>        index of a decision's records (seq, kind, settled line)
//	pk "live#<queue>",   sk "live"             the queue's live slots
//	pk "spend#<tier>",   sk "YYYY-MM"          the tier's committed spend in that UTC month (decimal text + currency)
//
// Every append is one TransactWriteItems: put the record with
// attribute_not_exists, put its index item with attribute_not_exists (the
// idempotency key: a second record with the same id fails as
// sluice.ErrDuplicate), move the head on condition that it still holds the
// prev_hash the record was sealed with, and update the live-slot and spend
// items on condition that they still hold the values read (the budget
// reservation: the spend item is a compare-and-set on its exact decimal
// text). When the head moved (another writer appended), the store reads again
// and retries; when what the decision assumed no longer holds it returns
// sluice.ErrStale, as SQLite does.
type DynamoDB struct {
	c     *dynamodb.Client
	table string
	now   func() time.Time
	// MaxAttempts bounds the retries of one append when other writers keep
	// moving the head (default 200).
	MaxAttempts int
	// SerialTransactions makes this store send one TransactWriteItems at a
	// time. Real DynamoDB isolates transactions (they are serializable); moto
	// 5.2.1 does not: it applies a transaction's operations one by one and,
	// when one fails, restores a deep copy of the whole table taken at the
	// start, with no lock, so a concurrent transaction's writes are wiped
	// (moto/dynamodb/models/__init__.py, transact_write_items). Tests on moto
	// set it; reads and planning still run concurrently, only the commit is
	// one at a time, which is the guarantee DynamoDB itself gives.
	SerialTransactions bool
	txMu               sync.Mutex
}

var _ Store = (*DynamoDB)(nil)

// OpenDynamoDB uses table (which must exist: CreateDynamoTable, or infra)
// through the given AWS config.
func OpenDynamoDB(ctx context.Context, cfg aws.Config, table string) (*DynamoDB, error) {
	if table == "" {
		return nil, errors.New("ledger: dynamodb: empty table name")
	}
	c := dynamodb.NewFromConfig(cfg)
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
		return nil, fmt.Errorf("ledger: dynamodb table %s: %w", table, err)
	}
	return &DynamoDB{c: c, table: table, now: time.Now, MaxAttempts: 200}, nil
}

// CreateDynamoTable creates the ledger table (pk S hash, sk S range,
// on-demand billing) and waits until it is active.
func CreateDynamoTable(ctx context.Context, cfg aws.Config, table string) error {
	c := dynamodb.NewFromConfig(cfg)
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("ledger: create table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(c)
	return w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute)
}

// Close does nothing (the client holds no resources); it completes Store.
func (d *DynamoDB) Close() error { return nil }

// Table is the table name.
func (d *DynamoDB) Table() string { return d.table }

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func avN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": avS(pk), "sk": avS(sk)}
}

func str(item map[string]types.AttributeValue, k string) string {
	if v, ok := item[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(item map[string]types.AttributeValue, k string) (int64, bool) {
	if v, ok := item[k].(*types.AttributeValueMemberN); ok {
		i, err := strconv.ParseInt(v.Value, 10, 64)
		return i, err == nil
	}
	return 0, false
}

func seqKey(seq int64) string { return fmt.Sprintf("%020d", seq) }

// monthKey is the spend item's sort key for the UTC month of t.
func monthKey(t time.Time) string { return t.UTC().Format("2006-01") }

func (d *DynamoDB) get(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	out, err := d.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// head is the chain head as read: seq 0 and GenesisHash on an empty ledger.
type chainHead struct {
	seq    int64
	hash   string
	exists bool
}

func (d *DynamoDB) head(ctx context.Context) (chainHead, error) {
	item, err := d.get(ctx, "head", "head")
	if err != nil || item == nil {
		return chainHead{hash: GenesisHash}, err
	}
	seq, _ := num(item, "seq")
	return chainHead{seq: seq, hash: str(item, "hash"), exists: true}, nil
}

// counter is an item read for a compare-and-set: its old value text ("" when absent).
type counter struct {
	pk, sk, attr string
	old          string
	exists       bool
}

// update is the conditional update that sets c to v (and extra attributes).
func (d *DynamoDB) update(c counter, v types.AttributeValue, extra map[string]types.AttributeValue) types.TransactWriteItem {
	vals := map[string]types.AttributeValue{":v": v}
	names := map[string]string{"#a": c.attr}
	expr := "SET #a = :v"
	for k, x := range extra {
		names["#"+k] = k
		vals[":"+k] = x
		expr += ", #" + k + " = :" + k
	}
	cond := "attribute_not_exists(pk)"
	if c.exists {
		cond = "#a = :old"
		if _, isN := v.(*types.AttributeValueMemberN); isN {
			vals[":old"] = &types.AttributeValueMemberN{Value: c.old}
		} else {
			vals[":old"] = avS(c.old)
		}
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &d.table, Key: key(c.pk, c.sk), UpdateExpression: &expr, ConditionExpression: &cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
	}}
}

func (d *DynamoDB) readCounter(ctx context.Context, pk, sk, attr string) (counter, error) {
	item, err := d.get(ctx, pk, sk)
	c := counter{pk: pk, sk: sk, attr: attr}
	if err != nil || item == nil {
		return c, err
	}
	c.exists = true
	switch v := item[attr].(type) {
	case *types.AttributeValueMemberN:
		c.old = v.Value
	case *types.AttributeValueMemberS:
		c.old = v.Value
	}
	return c, nil
}

// spendItem is a tier-month spend item as read.
type spendItem struct {
	counter
	amount   decimal.Decimal
	currency string
}

func (d *DynamoDB) readSpend(ctx context.Context, tier sluice.Tier, month string) (spendItem, error) {
	item, err := d.get(ctx, "spend#"+string(tier), month)
	sp := spendItem{counter: counter{pk: "spend#" + string(tier), sk: month, attr: "amount"}}
	if err != nil || item == nil {
		return sp, err
	}
	sp.exists, sp.old, sp.currency = true, str(item, "amount"), str(item, "currency")
	if sp.amount, err = decimal.NewFromString(sp.old); err != nil {
		return sp, fmt.Errorf("spend item %s %s: amount %q: %w", tier, month, sp.old, err)
	}
	return sp, nil
}

// change is what one append does besides putting the record: the counters it
// moves, with the conditions on their old values.
type change struct {
	items []types.TransactWriteItem
}

// appendRecord seals obj on the current head and writes it in one
// transaction with the index item and whatever prepare returns. prepare runs
// after the head is read on every attempt (so the values it reads are at
// least as new as the head); it returns the extra writes or an error that
// ends the append (ErrStale, ErrNoDecision, ...). settles, when ≥ 0, marks
// the index item as settling that plan line (TrueUps).
func (d *DynamoDB) appendRecord(ctx context.Context, obj map[string]any, settles int,
	prepare func(ctx context.Context, seq int64) (change, error)) (prev, hash string, err error) {
	cols, err := columnsOf(obj)
	if err != nil {
		return "", "", err
	}
	attempts := max(d.MaxAttempts, 1)
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			// Jittered backoff: losers of a round do not all retry at once.
			wait := time.Duration(rand.IntN(10*min(attempt, 10))+1) * time.Millisecond
			select {
			case <-ctx.Done():
				return "", "", ctx.Err()
			case <-time.After(wait):
			}
		}
		h, err := d.head(ctx)
		if err != nil {
			return "", "", err
		}
		idx, err := d.get(ctx, "dec#"+cols.decisionID, cols.recordID)
		if err != nil {
			return "", "", err
		}
		if idx != nil {
			return "", "", fmt.Errorf("%s %q: %w", cols.kind, cols.recordID, sluice.ErrDuplicate)
		}
		seq := h.seq + 1
		var ch change
		if prepare != nil {
			if ch, err = prepare(ctx, seq); err != nil {
				return "", "", err
			}
		}
		body, hash, err := seal(obj, h.hash)
		if err != nil {
			return "", "", err
		}
		rec := map[string]types.AttributeValue{
			"pk": avS("chain"), "sk": avS(seqKey(seq)), "seq": avN(seq), "kind": avS(cols.kind), "record_id": avS(cols.recordID),
			"decision_id": avS(cols.decisionID), "queue": avS(cols.queue), "body": avS(string(body)),
			"prev_hash": avS(h.hash), "hash": avS(hash), "recorded_at": avS(d.now().UTC().Format(time.RFC3339Nano)),
		}
		index := map[string]types.AttributeValue{"pk": avS("dec#" + cols.decisionID), "sk": avS(cols.recordID),
			"seq": avN(seq), "kind": avS(cols.kind)}
		if settles >= 0 {
			index["settles"] = avN(int64(settles))
		}
		headCond := "attribute_not_exists(pk)"
		headVals := map[string]types.AttributeValue{":seq": avN(seq), ":hash": avS(hash)}
		if h.exists {
			headCond = "#h = :prev"
			headVals[":prev"] = avS(h.hash)
		}
		items := []types.TransactWriteItem{
			{Put: &types.Put{TableName: &d.table, Item: rec, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			{Put: &types.Put{TableName: &d.table, Item: index, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			{Update: &types.Update{TableName: &d.table, Key: key("head", "head"),
				UpdateExpression: aws.String("SET #s = :seq, #h = :hash"), ConditionExpression: &headCond,
				ExpressionAttributeNames: map[string]string{"#s": "seq", "#h": "hash"}, ExpressionAttributeValues: headVals}},
		}
		items = append(items, ch.items...)
		err = d.transact(ctx, items, h)
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			return h.hash, hash, nil
		case errors.As(err, &tce):
			if r := tce.CancellationReasons; len(r) > 1 && aws.ToString(r[1].Code) == "ConditionalCheckFailed" {
				return "", "", fmt.Errorf("%s %q: %w", cols.kind, cols.recordID, sluice.ErrDuplicate)
			}
			continue // the head or a counter moved: read again
		case isConflict(err), errors.Is(err, errHeadMoved):
			continue
		default:
			return "", "", err
		}
	}
	return "", "", fmt.Errorf("%s %q: chain head still moving after %d attempts", cols.kind, cols.recordID, attempts)
}

// errHeadMoved is transact's answer when SerialTransactions saw the head
// move before sending (the transaction would have failed its head condition).
var errHeadMoved = errors.New("chain head moved")

// transact sends one append's transaction. With SerialTransactions it holds
// the store's lock and, before sending, re-reads the head: when it moved
// since h was read, the transaction would fail its head condition, so it is
// not sent (errHeadMoved) and the append reads again. That saves the
// emulator a failing transaction; the head condition still decides.
func (d *DynamoDB) transact(ctx context.Context, items []types.TransactWriteItem, h chainHead) error {
	if d.SerialTransactions {
		d.txMu.Lock()
		defer d.txMu.Unlock()
		now, err := d.head(ctx)
		if err != nil {
			return err
		}
		if now != h {
			return errHeadMoved
		}
	}
	_, err := d.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

// isConflict reports DynamoDB's transaction conflict and throttling answers,
// which a retry can cure.
func isConflict(err error) bool {
	var tc *types.TransactionConflictException
	var tp *types.TransactionInProgressException
	return errors.As(err, &tc) || errors.As(err, &tp)
}

// AppendDecision chains and stores rec, exactly as SQLite.AppendDecision
// does (same checks, same errors): ErrDuplicate when the id exists, ErrStale
// when the queue's live slots differ from rec.Demand.Live or, with a budget,
// the tier's spend in the budget's month differs from rec.Budget.Spent. It
// reserves the decision's total expected cost on the tier's spend item for
// the UTC month of DecidedAt and adds its slots to the queue's live slots,
// in the same transaction. A budget period must be one UTC calendar month.
func (d *DynamoDB) AppendDecision(ctx context.Context, rec *sluice.DecisionRecord) error {
	if err := checkDecision(rec); err != nil {
		return err
	}
	r := *rec
	r.Kind = KindDecision
	obj, err := toObject(&r)
	if err != nil {
		return fmt.Errorf("ledger: append decision %q: %w", rec.DecisionID, err)
	}
	month := monthKey(rec.DecidedAt)
	if b := rec.Budget; b != nil {
		from := b.PeriodStart.UTC()
		if from.Day() != 1 || from.Hour() != 0 || from.Minute() != 0 || from.Second() != 0 || from.Nanosecond() != 0 ||
			!b.PeriodEnd.Equal(from.AddDate(0, 1, 0)) || monthKey(from) != month {
			return fmt.Errorf("ledger: append decision %q: budget period %s–%s is not the UTC calendar month of decided_at",
				rec.DecisionID, b.PeriodStart.Format(time.RFC3339), b.PeriodEnd.Format(time.RFC3339))
		}
	}
	queue := queueOf(rec)
	prepare := func(ctx context.Context, _ int64) (change, error) {
		live, err := d.readCounter(ctx, "live#"+queue, "live", "slots")
		if err != nil {
			return change{}, err
		}
		liveN := int64(0)
		if live.exists {
			if liveN, err = strconv.ParseInt(live.old, 10, 64); err != nil {
				return change{}, fmt.Errorf("live slots of %s: %q", queue, live.old)
			}
		}
		if liveN != int64(rec.Demand.Live) {
			return change{}, fmt.Errorf("%w: queue %s has %d live slots, the decision assumed %d", sluice.ErrStale, queue, liveN, rec.Demand.Live)
		}
		sp, err := d.readSpend(ctx, rec.Profile.Tier, month)
		if err != nil {
			return change{}, err
		}
		total := rec.TotalExpectedCost
		if sp.currency != "" && total.IsSet() && sp.currency != total.Currency {
			return change{}, fmt.Errorf("tier spend: %s decisions in both %s and %s", rec.Profile.Tier, sp.currency, total.Currency)
		}
		if b := rec.Budget; b != nil && !sp.amount.Equal(b.Spent.Amount) {
			return change{}, fmt.Errorf("%w: tier %s spent %s this period, the decision assumed %s", sluice.ErrStale, b.Tier, sp.amount, b.Spent.Amount)
		}
		ch := change{items: []types.TransactWriteItem{d.update(live, avN(liveN+int64(rec.SlotsCovered)), nil)}}
		if total.IsSet() { // a decision with no total (null) commits nothing, as in SQLite
			ch.items = append(ch.items, d.update(sp.counter, avS(sp.amount.Add(total.Amount).String()),
				map[string]types.AttributeValue{"currency": avS(total.Currency)}))
		}
		return ch, nil
	}
	prev, hash, err := d.appendRecord(ctx, obj, -1, prepare)
	if err != nil {
		return fmt.Errorf("ledger: append decision %q: %w", rec.DecisionID, err)
	}
	rec.Kind, rec.PrevHash, rec.Hash = KindDecision, prev, hash
	return nil
}

// checkDecision is the input check both stores make before appending.
func checkDecision(rec *sluice.DecisionRecord) error {
	switch {
	case rec.DecisionID == "":
		return errors.New("ledger: append decision: empty decision id")
	case rec.Kind != "" && rec.Kind != KindDecision:
		return fmt.Errorf("ledger: append decision %q: kind %q, want %q", rec.DecisionID, rec.Kind, KindDecision)
	case len(rec.Placements) > 0:
		return fmt.Errorf("ledger: append decision %q: %d placements: append them with AppendPlacement",
			rec.DecisionID, len(rec.Placements))
	}
	return nil
}

// decisionBody is what a placement or release needs of its decision.
type decisionBody struct {
	Queue           string
	Tier            sluice.Tier
	Month           string
	BillingCurrency string
	Lines           json.RawMessage
	settled         map[int]bool
	index           []indexItem
	Seq             int64 // the decision record's seq
}

// decisionFor reads the decision's body and which of its lines are settled.
func (d *DynamoDB) decisionFor(ctx context.Context, id string) (*decisionBody, error) {
	idx, err := d.index(ctx, id)
	if err != nil {
		return nil, err
	}
	db := &decisionBody{settled: map[int]bool{}, index: idx}
	found := false
	for _, it := range idx {
		if it.kind == KindDecision && it.recordID == id {
			found, db.Seq = true, it.seq
			item, err := d.get(ctx, "chain", seqKey(it.seq))
			if err != nil {
				return nil, err
			}
			var rec struct {
				DecidedAt       time.Time           `json:"decided_at"`
				Trigger         sluice.Trigger      `json:"trigger"`
				Profile         sluice.QueueProfile `json:"profile"`
				BillingCurrency string              `json:"billing_currency"`
				Lines           json.RawMessage     `json:"lines"`
			}
			if err := json.Unmarshal([]byte(str(item, "body")), &rec); err != nil {
				return nil, fmt.Errorf("decision %q: decode: %w", id, err)
			}
			db.Queue, db.Tier, db.Month = rec.Trigger.Queue, rec.Profile.Tier, monthKey(rec.DecidedAt)
			if db.Queue == "" {
				db.Queue = rec.Profile.Queue
			}
			db.BillingCurrency, db.Lines = rec.BillingCurrency, rec.Lines
		}
		if it.settles >= 0 {
			db.settled[it.settles] = true
		}
	}
	if !found {
		return nil, fmt.Errorf("decision %q: %w", id, ErrNoDecision)
	}
	return db, nil
}

type indexItem struct {
	recordID, kind string
	seq            int64
	settles        int
}

// index lists the records of one decision (strongly consistent).
func (d *DynamoDB) index(ctx context.Context, id string) ([]indexItem, error) {
	var out []indexItem
	p := dynamodb.NewQueryPaginator(d.c, &dynamodb.QueryInput{TableName: &d.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS("dec#" + id)}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			seq, _ := num(item, "seq")
			it := indexItem{recordID: str(item, "sk"), kind: str(item, "kind"), seq: seq, settles: -1}
			if v, ok := num(item, "settles"); ok {
				it.settles = int(v)
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// settleChange is the live-slot and spend change of a record that settles
// line of decision db: slots given back and the spend trued up by delta.
func (d *DynamoDB) settleChange(ctx context.Context, db *decisionBody, slots int, delta decimal.Decimal) (change, error) {
	var ch change
	if slots != 0 {
		live, err := d.readCounter(ctx, "live#"+db.Queue, "live", "slots")
		if err != nil {
			return ch, err
		}
		liveN, _ := strconv.ParseInt(live.old, 10, 64)
		ch.items = append(ch.items, d.update(live, avN(liveN-int64(slots)), nil))
	}
	if !delta.IsZero() {
		sp, err := d.readSpend(ctx, db.Tier, db.Month)
		if err != nil {
			return ch, err
		}
		ch.items = append(ch.items, d.update(sp.counter, avS(sp.amount.Add(delta).String()),
			map[string]types.AttributeValue{"currency": avS(db.BillingCurrency)}))
	}
	return ch, nil
}

// AppendPlacement chains and stores one placement of a recorded decision,
// with the same checks and errors as SQLite.AppendPlacement. A failed
// placement gives its slots back to the queue and its line's expected cost
// back to the tier's month (TrueUps), in the same transaction.
func (d *DynamoDB) AppendPlacement(ctx context.Context, p sluice.Placement) error {
	id := PlacementRecordID(p.DecisionID, p.Line)
	switch {
	case p.DecisionID == "":
		return errors.New("ledger: append placement: empty decision id")
	case p.Queue == "":
		return fmt.Errorf("ledger: append placement %q: empty queue", id)
	case p.Slots < 0 || p.Units < 0 || p.Slots > 1<<20:
		return fmt.Errorf("ledger: append placement %q: negative slots or units", id)
	}
	obj, err := toObject(PlacementRecord{Kind: KindPlacement, Placement: p})
	if err != nil {
		return fmt.Errorf("ledger: append placement %q: %w", id, err)
	}
	body, _ := json.Marshal(PlacementRecord{Kind: KindPlacement, Placement: p})
	settles := -1
	if p.Error != "" {
		settles = p.Line
	}
	prepare := func(ctx context.Context, seq int64) (change, error) {
		db, err := d.decisionFor(ctx, p.DecisionID)
		if err != nil {
			return change{}, err
		}
		if db.Queue != p.Queue {
			return change{}, fmt.Errorf("queue %q differs from the decision's queue %q", p.Queue, db.Queue)
		}
		if p.Error == "" { // open: indexed for OpenPlacements
			return change{items: []types.TransactWriteItem{{Put: &types.Put{TableName: &d.table, Item: map[string]types.AttributeValue{
				"pk": avS("open"), "sk": avS(openKey(p.Queue, id)), "seq": avN(seq), "decision_seq": avN(db.Seq)}}}}}, nil
		}
		tu := TrueUps{settled: map[string]bool{}}
		for l := range db.settled {
			tu.settled[lineKey(p.DecisionID, l)] = true
		}
		delta, err := tu.Add(KindPlacement, body, db.Lines, db.BillingCurrency)
		if err != nil {
			return change{}, err
		}
		return d.settleChange(ctx, db, p.Slots, delta)
	}
	if _, _, err := d.appendRecord(ctx, obj, settles, prepare); err != nil {
		return fmt.Errorf("ledger: append placement %q: %w", id, err)
	}
	return nil
}

// AppendRelease chains and stores one release step with the same checks
// and errors as SQLite.AppendRelease: for a placement, the placement must be
// recorded and successful with the same queue and slots (ErrNoDecision
// otherwise) and have no released or lost step yet (ErrAlreadyReleased); an
// orphan needs its provider and external ids and carries no slots. A
// released or lost step gives the line's slots back and settles its spend at
// the accrued cost (TrueUps), in the same transaction; a pending step
// changes nothing but the chain.
func (d *DynamoDB) AppendRelease(ctx context.Context, r sluice.Release) error {
	r.Kind = KindRelease
	id := ReleaseRecordID(r)
	if err := checkRelease(r, id); err != nil {
		return err
	}
	obj, err := toObject(ReleaseRecord{Release: r})
	if err != nil {
		return fmt.Errorf("ledger: append release %q: %w", id, err)
	}
	body, _ := json.Marshal(r)
	terminal := r.State == sluice.ReleaseReleased || r.State == sluice.ReleaseLost
	settles := -1
	if terminal && r.DecisionID != "" {
		settles = r.Line
	}
	prepare := func(ctx context.Context, seq int64) (change, error) {
		if r.DecisionID == "" {
			return change{}, nil
		}
		db, err := d.decisionFor(ctx, r.DecisionID)
		if err != nil {
			return change{}, fmt.Errorf("placement %s line %d: %w", r.DecisionID, r.Line, ErrNoDecision)
		}
		pid := PlacementRecordID(r.DecisionID, r.Line)
		var pl *indexItem
		final := false
		for _, it := range db.index {
			switch it.recordID {
			case pid:
				pl = &it
			case ReleaseRecordID(sluice.Release{DecisionID: r.DecisionID, Line: r.Line, State: sluice.ReleaseReleased}),
				ReleaseRecordID(sluice.Release{DecisionID: r.DecisionID, Line: r.Line, State: sluice.ReleaseLost}):
				final = true
			}
		}
		if pl == nil {
			return change{}, fmt.Errorf("placement %s line %d: %w", r.DecisionID, r.Line, ErrNoDecision)
		}
		item, err := d.get(ctx, "chain", seqKey(pl.seq))
		if err != nil {
			return change{}, err
		}
		var pr PlacementRecord
		if err := json.Unmarshal([]byte(str(item, "body")), &pr); err != nil {
			return change{}, fmt.Errorf("placement %s line %d: %w", r.DecisionID, r.Line, err)
		}
		switch p := pr.Placement; {
		case p.Error != "":
			return change{}, fmt.Errorf("placement %s line %d failed (%s): nothing to release: %w", r.DecisionID, r.Line, p.Error, ErrNoDecision)
		case p.Queue != r.Queue:
			return change{}, fmt.Errorf("queue %q differs from the placement's queue %q", r.Queue, p.Queue)
		case p.Slots != r.Slots:
			return change{}, fmt.Errorf("slots %d differ from the placement's %d", r.Slots, p.Slots)
		}
		if final {
			return change{}, fmt.Errorf("%s line %d: %w", r.DecisionID, r.Line, ErrAlreadyReleased)
		}
		openK := key("open", openKey(r.Queue, pid))
		if !terminal { // note the pending step on the open placement
			if it, err := d.get(ctx, "open", openKey(r.Queue, pid)); err != nil || it == nil {
				return change{}, err // no open item (a ledger older than the index): nothing to note
			}
			return change{items: []types.TransactWriteItem{{Update: &types.Update{TableName: &d.table, Key: openK,
				UpdateExpression:          aws.String("SET pending_seq = :s"),
				ConditionExpression:       aws.String("attribute_exists(pk)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": avN(seq)}}}}}, nil
		}
		tu := TrueUps{}
		delta, err := tu.Add(KindRelease, body, db.Lines, db.BillingCurrency)
		if err != nil {
			return change{}, err
		}
		ch, err := d.settleChange(ctx, db, r.Slots, delta)
		ch.items = append(ch.items, types.TransactWriteItem{Delete: &types.Delete{TableName: &d.table, Key: openK}})
		return ch, err
	}
	if _, _, err := d.appendRecord(ctx, obj, settles, prepare); err != nil {
		return fmt.Errorf("ledger: append release %q: %w", id, err)
	}
	return nil
}

// Decision returns the decision with this id as stored, with its placement
// records in line order (as SQLite.Decision).
func (d *DynamoDB) Decision(ctx context.Context, id string) (rec sluice.DecisionRecord, ok bool, err error) {
	idx, err := d.index(ctx, id)
	if err != nil {
		return rec, false, fmt.Errorf("ledger: decision %q: %w", id, err)
	}
	var ps []sluice.Placement
	for _, it := range idx {
		if it.kind != KindDecision && it.kind != KindPlacement {
			continue
		}
		item, err := d.get(ctx, "chain", seqKey(it.seq))
		if err != nil {
			return rec, false, fmt.Errorf("ledger: decision %q: %w", id, err)
		}
		body := []byte(str(item, "body"))
		if it.kind == KindDecision {
			if err := json.Unmarshal(body, &rec); err != nil {
				return rec, false, fmt.Errorf("ledger: decision %q: decode: %w", id, err)
			}
			ok = true
			continue
		}
		var pr PlacementRecord
		if err := json.Unmarshal(body, &pr); err != nil {
			return rec, false, fmt.Errorf("ledger: decision %q: decode placement: %w", id, err)
		}
		ps = append(ps, pr.Placement)
	}
	if !ok {
		return sluice.DecisionRecord{}, false, nil
	}
	if len(ps) > 0 {
		slices.SortStableFunc(ps, func(a, b sluice.Placement) int { return a.Line - b.Line })
		rec.Placements = ps
	}
	return rec, true, nil
}

// LiveSlots reads the queue's live-slot item (0 when absent).
func (d *DynamoDB) LiveSlots(ctx context.Context, queue string) (int, error) {
	c, err := d.readCounter(ctx, "live#"+queue, "live", "slots")
	if err != nil {
		return 0, fmt.Errorf("ledger: live slots %q: %w", queue, err)
	}
	if !c.exists {
		return 0, nil
	}
	v, err := strconv.Atoi(c.old)
	if err != nil {
		return 0, fmt.Errorf("ledger: live slots %q: %q", queue, c.old)
	}
	return v, nil
}

// TierSpend is the tier's committed spend in [from, to). When both ends are
// UTC month starts it adds the tier's month items; otherwise it reads the
// chain (SpendFromRecords). It fails when the months mix currencies.
func (d *DynamoDB) TierSpend(ctx context.Context, tier sluice.Tier, from, to time.Time) (decimal.Decimal, error) {
	if !monthStart(from) || !monthStart(to) {
		recs, err := d.Records(ctx)
		if err != nil {
			return decimal.Zero, err
		}
		return SpendFromRecords(recs, tier, from, to)
	}
	sum, currency := decimal.Zero, ""
	for m := from.UTC(); m.Before(to); m = m.AddDate(0, 1, 0) {
		sp, err := d.readSpend(ctx, tier, monthKey(m))
		if err != nil {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %w", err)
		}
		if !sp.exists {
			continue
		}
		if currency != "" && sp.currency != currency {
			return decimal.Zero, fmt.Errorf("ledger: tier spend: %s decisions in both %s and %s", tier, currency, sp.currency)
		}
		currency, sum = sp.currency, sum.Add(sp.amount)
	}
	return sum, nil
}

func monthStart(t time.Time) bool {
	t = t.UTC()
	return t.Day() == 1 && t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0
}

// Records returns every chained record in seq order (strongly consistent
// query of the "chain" partition).
func (d *DynamoDB) Records(ctx context.Context) ([]Stored, error) {
	var out []Stored
	p := dynamodb.NewQueryPaginator(d.c, &dynamodb.QueryInput{TableName: &d.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS("chain")}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ledger: records: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, storedOf(it))
		}
	}
	return out, nil
}

// Verify checks the chain (VerifyStored) and that the head item names the
// last record: a deleted tail record, which the chain alone cannot show, is
// caught here.
func (d *DynamoDB) Verify(ctx context.Context) (int, error) {
	h, err := d.head(ctx)
	if err != nil {
		return 0, fmt.Errorf("ledger: verify: %w", err)
	}
	recs, err := d.Records(ctx)
	if err != nil {
		return 0, err
	}
	nOK, err := VerifyStored(recs)
	if err != nil {
		return nOK, err
	}
	last := Stored{Hash: GenesisHash}
	if len(recs) > 0 {
		last = recs[len(recs)-1]
	}
	if last.Hash != h.hash || last.Seq != h.seq {
		return nOK, &VerifyError{Seq: h.seq, RecordID: "head", Problem: ProblemBrokenLink,
			Detail: fmt.Sprintf("head says seq %d hash %s, the last record is seq %d hash %s", h.seq, h.hash, last.Seq, last.Hash)}
	}
	return nOK, nil
}

// openKey is the sort key of an open placement's item (pk "open"): queue
// names (SQS) have no '#'.
func openKey(queue, placementID string) string { return queue + "#" + placementID }

// OpenPlacements returns the successful placements of queue ("" = every
// queue) with no released or lost step, ReleaseState pending when a release
// was asked for and ReleaseReason the reason of the latest release step (the
// item's pending_seq, rewritten on every pending step), in SQLite's order
// (OpenPlacementsFromRecords). It reads the
// open-placement items (pk "open", written and deleted in the placement's
// and the final release's transactions) and the records they name, not the
// whole chain.
func (d *DynamoDB) OpenPlacements(ctx context.Context, queue string) ([]sluice.OpenPlacement, error) {
	in := &dynamodb.QueryInput{TableName: &d.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avS("open")}}
	if queue != "" {
		in.KeyConditionExpression = aws.String("pk = :pk AND begins_with(sk, :q)")
		in.ExpressionAttributeValues[":q"] = avS(queue + "#")
	}
	seqs := map[int64]bool{}
	p := dynamodb.NewQueryPaginator(d.c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ledger: open placements %q: %w", queue, err)
		}
		for _, item := range page.Items {
			for _, a := range []string{"seq", "decision_seq", "pending_seq"} {
				if v, ok := num(item, a); ok {
					seqs[v] = true
				}
			}
		}
	}
	var recs []Stored
	for _, seq := range slices.Sorted(maps.Keys(seqs)) {
		it, err := d.get(ctx, "chain", seqKey(seq))
		if err != nil {
			return nil, fmt.Errorf("ledger: open placements %q: %w", queue, err)
		}
		if it == nil {
			return nil, fmt.Errorf("ledger: open placements %q: record seq %d is missing", queue, seq)
		}
		recs = append(recs, storedOf(it))
	}
	return OpenPlacementsFromRecords(recs, queue)
}

// storedOf reads a chain item.
func storedOf(it map[string]types.AttributeValue) Stored {
	seq, _ := num(it, "seq")
	return Stored{Seq: seq, Kind: str(it, "kind"), RecordID: str(it, "record_id"),
		DecisionID: str(it, "decision_id"), Queue: str(it, "queue"), Body: []byte(str(it, "body")),
		PrevHash: str(it, "prev_hash"), Hash: str(it, "hash")}
}
