// Package policy decides, with the compliance team's Rego policy, which offers
// a queue may buy. The policy files (*.rego and data/*.json in this folder)
// are embedded in the binary, compiled once in a sandbox (no network, no
// environment, no randomness: see sandbox.go), and evaluated once per
// decision for all offers together.
//
// A decision sees about a thousand offers, but the rules read only an offer's
// location (provider, region, city), its market and its price per GPU-hour.
// The evaluator therefore sends each distinct location, market and price
// (grouped by currency) once, in one evaluation of
// data.sluice.decision.batch, and puts each offer's verdict together in Go
// from the three answers.
//
//	input  {"profile": {"queue", "team", "data_class", "export_approved", "checkpointable",
//	                    "checkpoint_interval_minutes", "budget_tier", "gpu_models", "workload",
//	                    "cross_node_nvlink", "local_storage_only", "storage_zone"},
//	        "locations": [[provider, region, city], ...], "markets": ["spot", ...],
//	        "prices": {currency: [price per GPU-hour (number), ...]}}
//	batch  {"locations": {location: {"zone", "reasons"}}, "markets": {market: reasons},
//	        "prices": {currency: {"reasons": [...], "refused": [index in prices[currency], ...]}},
//	        "limits": {"max_price_per_gpu_hour": {"USD": "4.00", ...}}}
//
// data.sluice.decision.result gives the same verdicts one offer at a time
// (input.offers); the Rego tests, `sluice policy explain` and EvaluateEach use it.
//
// Money: Go divides an offer's unit price by its GPUs per unit (rounded up at
// PriceScale places, see PricePerGPUHour); the policy only compares that
// number with the tier's ceiling from data.
package policy

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Query is the Rego document the evaluator reads for a decision; ResultQuery
// the per-offer document (tests, explain, EvaluateEach).
const (
	Query       = "data.sluice.decision.batch"
	ResultQuery = "data.sluice.decision.result"
)

// embedded holds the policy files shipped in the binary. The *_test.rego
// files are embedded too (the Go test and `sluice policy check` run them) but
// never loaded for evaluation and not part of the revision.
//
//go:embed *.rego data
var embedded embed.FS

// Embedded returns the policy files shipped in the binary.
func Embedded() fs.FS { return embedded }

// Evaluator evaluates the policy. It is safe for concurrent use.
type Evaluator struct {
	batch, each rego.PreparedEvalQuery
	content     string // SHA-256 of the runtime files
	vcs         string // optional VCS revision of the source
	files       []string
	rules       map[string]RuleInfo // by custom.rule
}

var _ sluice.PolicyEvaluator = (*Evaluator)(nil)

// Option changes how a policy is prepared.
type Option func(*options)

type options struct{ vcs string }

// WithVCSRevision records the VCS revision the policy files came from (a git
// commit, a bundle manifest's revision); it is appended to Revision.
func WithVCSRevision(rev string) Option { return func(o *options) { o.vcs = strings.TrimSpace(rev) } }

// New prepares the embedded policy.
func New(ctx context.Context, opts ...Option) (*Evaluator, error) {
	return NewFromFS(ctx, embedded, opts...)
}

// NewFromFS prepares the policy in fsys (a compliance working copy:
// NewFromFS(ctx, os.DirFS("policy")); a bundle: ReadBundle). It loads the
// same files, at the same data paths, as `opa test <dir>`: every *.rego file
// except *_test.rego, and every .json/.yaml/.yml data file, where a file in a
// sub-folder is placed under that folder's name (data/regions.json is read
// as data.data...). Hidden and "_" folders and testdata/ are skipped.
//
// Errors: a file that does not parse, a call of a forbidden builtin
// (*ForbiddenBuiltinError, naming file, line and builtin), a compile error
// (strict mode, as `opa check --strict`).
func NewFromFS(ctx context.Context, fsys fs.FS, opts ...Option) (*Evaluator, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	set, err := load(fsys, false)
	if err != nil {
		return nil, err
	}
	if len(set.runtime) == 0 {
		return nil, errors.New("policy: no policy files found")
	}
	compiler, err := compile(set.modules)
	if err != nil {
		return nil, err
	}
	store := inmem.NewFromObjectWithOpts(set.data, inmem.OptReturnASTValuesOnRead(true))
	prepare := func(query string) (rego.PreparedEvalQuery, error) {
		return rego.New(
			rego.Query(query),
			rego.Compiler(compiler),
			rego.Store(store),
			rego.Capabilities(Capabilities()),
			rego.SetRegoVersion(ast.RegoV1),
			rego.Strict(true),
			rego.StrictBuiltinErrors(true),
		).PrepareForEval(ctx)
	}
	e := &Evaluator{content: set.revision, vcs: o.vcs, files: set.runtime, rules: ruleInfos(compiler)}
	if e.batch, err = prepare(Query); err != nil {
		return nil, fmt.Errorf("compiling policy query %s: %w", Query, err)
	}
	if e.each, err = prepare(ResultQuery); err != nil {
		return nil, fmt.Errorf("compiling policy query %s: %w", ResultQuery, err)
	}
	return e, nil
}

// compile compiles modules in the sandbox: forbidden builtins are refused
// first (by name, file and line), then the compiler runs in strict mode with
// the sandbox's capabilities.
func compile(modules map[string]*ast.Module) (*ast.Compiler, error) {
	if err := CheckBuiltins(modules); err != nil {
		return nil, err
	}
	if err := checkDenyAnnotations(modules); err != nil {
		return nil, err
	}
	c := ast.NewCompiler().
		WithCapabilities(Capabilities()).
		WithStrict(true).
		WithDefaultRegoVersion(ast.RegoV1).
		WithEnablePrintStatements(false)
	if c.Compile(modules); c.Failed() {
		return nil, fmt.Errorf("compiling policy: %w", c.Errors)
	}
	return c, nil
}

// Revision identifies the policy evaluated: the hex SHA-256 of the `sha256sum`
// listing ("<hex sha256>  <name>\n" per file) of the runtime files sorted by
// name (byte order), followed by "+<vcs revision>" when the source gave one
// (WithVCSRevision). Test files (*_test.rego) are not included: editing a
// test does not change what was decided. To reproduce the hash from a
// checkout (the runtime files are *.rego and data/*.json):
//
//	cd policy && ls *.rego data/*.json | grep -v '_test\.rego$' | LC_ALL=C sort | xargs sha256sum | sha256sum
func (e *Evaluator) Revision() string {
	if e.vcs == "" {
		return e.content
	}
	return e.content + "+" + e.vcs
}

// ContentRevision is the SHA-256 part of Revision (what decides whether two
// policies are the same).
func (e *Evaluator) ContentRevision() string { return e.content }

// ContentRevisionOf is the SHA-256 part of a recorded revision.
func ContentRevisionOf(revision string) string {
	content, _, _ := strings.Cut(revision, "+")
	return content
}

// Files lists the runtime policy files the revision covers, sorted.
func (e *Evaluator) Files() []string { return slices.Clone(e.files) }

// Limits are the ceilings policy data sets for a queue's budget tier. The
// policy compares prices with them; Go only reports them.
type Limits struct {
	// MaxPricePerGPUHour is the tier's price ceiling per GPU-hour, one per
	// currency, sorted by currency; empty when the tier has none. Parsed
	// exactly from the decimal strings in policy/data/settings.json.
	MaxPricePerGPUHour []sluice.Money `json:"max_price_per_gpu_hour,omitempty"`
}

// MaxPriceIn returns the tier's ceiling per GPU-hour in currency, if set.
func (l Limits) MaxPriceIn(currency string) (sluice.Money, bool) {
	for _, m := range l.MaxPricePerGPUHour {
		if m.Currency == currency {
			return m, true
		}
	}
	return sluice.Money{}, false
}

// Decision is one evaluation for one queue profile.
type Decision struct {
	// Verdicts holds one verdict per offer, in the order of the offers.
	Verdicts []sluice.Verdict `json:"verdicts"`
	Limits   Limits           `json:"limits"`
	// Locations, Markets and Prices count the distinct values sent to the policy.
	Locations int `json:"locations"`
	Markets   int `json:"markets"`
	Prices    int `json:"prices"`
}

// Evaluate returns one verdict per offer, in order (sluice.PolicyEvaluator).
func (e *Evaluator) Evaluate(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) ([]sluice.Verdict, error) {
	d, err := e.Decide(ctx, p, offers, now)
	if err != nil {
		return nil, err
	}
	return d.Verdicts, nil
}

// EvalTimeout bounds one policy evaluation (one decision's batch). The
// embedded policy takes a few milliseconds for 1,000 offers.
var EvalTimeout = 10 * time.Second

// PriceScale is the number of decimal places of the price per GPU-hour sent
// to the policy.
const PriceScale = 12

// PricePerGPUHour is the offer's unit price divided by its GPUs per unit,
// rounded up (toward +∞) at PriceScale places; ok is false when the offer
// has no GPUs. Rounding up keeps the policy's comparison exact: for a
// ceiling with at most PriceScale decimals (data_test.rego allows 6),
// rounded > ceiling exactly when the true price > ceiling.
func PricePerGPUHour(o sluice.Offer) (decimal.Decimal, bool) {
	if o.GPUsPerUnit <= 0 {
		return decimal.Decimal{}, false
	}
	q, r := o.UnitPrice.Amount.QuoRem(decimal.NewFromInt(int64(o.GPUsPerUnit)), PriceScale)
	if !r.IsZero() && o.UnitPrice.Amount.IsPositive() {
		q = q.Add(decimal.New(1, -PriceScale))
	}
	return q, true
}

// priceText is PricePerGPUHour as the decimal text sent to the policy
// (decimal.Decimal.String form: no exponent, no trailing zeros). Prices whose
// digits fit in int64 at PriceScale places are worked out in integers (no
// allocation but the text); others go through PricePerGPUHour. Both give
// the same text (TestPriceTextMatchesDecimal).
func priceText(o sluice.Offer) (string, bool) {
	if o.GPUsPerUnit <= 0 {
		return "", false
	}
	if q, ok := scaledPrice(o); ok {
		return scaledText(q, PriceScale), true
	}
	d, ok := PricePerGPUHour(o)
	return d.String(), ok
}

// scaledPrice is PricePerGPUHour in units of 10^-PriceScale (rounded up),
// worked out in int64 when the unit price is non-negative and its digits fit
// at PriceScale places; ok is false otherwise (no GPUs, or too many digits).
func scaledPrice(o sluice.Offer) (int64, bool) {
	if o.GPUsPerUnit <= 0 {
		return 0, false
	}
	a := o.UnitPrice.Amount
	exp := int(a.Exponent())
	if digits := a.NumDigits(); a.Sign() >= 0 && exp <= 0 && exp >= -PriceScale && digits+PriceScale+exp <= 18 {
		v := a.CoefficientInt64()
		for range PriceScale + exp {
			v *= 10
		}
		// v is the price in units of 10^-PriceScale; divide, rounding up.
		g := int64(o.GPUsPerUnit)
		q := v / g
		if v%g != 0 {
			q++
		}
		return q, true
	}
	return 0, false
}

// scaledText writes q × 10^-places as decimal text without trailing zeros (q ≥ 0).
func scaledText(q int64, places int) string {
	var buf [40]byte
	return string(appendScaled(buf[:0], q, places))
}

// appendScaled appends scaledText(q, places) to dst.
func appendScaled(dst []byte, q int64, places int) []byte {
	var buf [32]byte
	digits := strconv.AppendInt(buf[:0], q, 10)
	for range places + 1 - len(digits) { // pad to "0.000…"
		dst = append(dst, '0')
	}
	dst = append(dst, digits...)
	return insertPoint(dst, places)
}

// insertPoint puts the decimal point places digits from the end of the
// number that ends dst (which has more than places digits) and drops
// trailing zeros of the fraction, with the point when nothing is left of it.
func insertPoint(dst []byte, places int) []byte {
	end := len(dst)
	frac := dst[end-places:]
	keep := len(frac)
	for keep > 0 && frac[keep-1] == '0' {
		keep--
	}
	if keep == 0 {
		return dst[:end-places]
	}
	dst = append(dst[:end-places+keep], 0) // room for the point
	copy(dst[end-places+1:], dst[end-places:end-places+keep])
	dst[end-places] = '.'
	return dst
}

// noGPUs is the Go-side refusal of an offer without GPUs (the collector's
// hygiene drops such offers first; this keeps the policy input well formed).
var noGPUs = sluice.Reason{Code: sluice.ReasonImplausible, Rule: "policy.no_gpus_per_unit",
	Message: "offer has no GPUs per unit, so it has no price per GPU-hour for the policy to compare"}

type location struct{ provider, region, city string }

// priceKey is one distinct price (in a currency) sent to the policy: its
// amount per GPU-hour, as an integer in units of 10^-PriceScale when it fits
// (scaled ≥ 0, text "") or else as decimal text (scaled -1).
type priceKey struct {
	scaled int64
	text   string
}

// appendAmount appends the amount's decimal text, the number the policy compares.
func (k priceKey) appendAmount(dst []byte) []byte {
	if k.scaled >= 0 {
		return appendScaled(dst, k.scaled, PriceScale)
	}
	return append(dst, k.text...)
}

// priceOf is the offer's price per GPU-hour as a priceKey (same value as
// priceText; its currency is o.UnitPrice.Currency); ok is false when the
// offer has no GPUs.
func priceOf(o sluice.Offer) (priceKey, bool) {
	if q, ok := scaledPrice(o); ok {
		return priceKey{scaled: q}, true
	}
	text, ok := priceText(o)
	return priceKey{scaled: -1, text: text}, ok
}

// priceSlot is the place of a price in the policy input: input.prices[currency][index].
type priceSlot struct{ currency, index int32 }

// currencyPrices are the distinct prices in one currency, in the order sent,
// and their indexes by value.
type currencyPrices struct {
	currency string
	keys     []priceKey
	scaled   map[int64]int32  // keys with scaled ≥ 0
	text     map[string]int32 // the others
}

// slot returns the index of k among the prices, adding it if new.
func (c *currencyPrices) slot(k priceKey) int32 {
	if k.scaled >= 0 {
		if i, ok := c.scaled[k.scaled]; ok {
			return i
		}
		if c.scaled == nil {
			c.scaled = map[int64]int32{}
		}
		i := int32(len(c.keys))
		c.scaled[k.scaled] = i
		c.keys = append(c.keys, k)
		return i
	}
	if i, ok := c.text[k.text]; ok {
		return i
	}
	if c.text == nil {
		c.text = map[string]int32{}
	}
	i := int32(len(c.keys))
	c.text[k.text] = i
	c.keys = append(c.keys, k)
	return i
}

// Decide evaluates all offers in one query: the distinct locations, markets
// and prices (by currency) go to the policy once each, and each offer gets
// the reasons of its location, market and price. now pins time.now_ns() so a
// recorded decision replays exactly.
func (e *Evaluator) Decide(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) (Decision, error) {
	// A runaway rule (a compliance working copy loaded with --policy) must
	// not hang the decision: OPA stops evaluating when ctx ends, and the
	// decision fails (never allows) with the deadline error.
	ctx, cancel := context.WithTimeout(ctx, EvalTimeout)
	defer cancel()
	locIndex := map[location]int32{}
	var locs []location
	var mkts []sluice.Market // a handful: found by linear search
	var groups []currencyPrices
	type parts struct {
		loc, mkt int32
		price    priceSlot // currency -1: no GPUs
	}
	each := make([]parts, len(offers))
	for i, o := range offers {
		l := location{o.Provider, o.Region, o.City}
		li, ok := locIndex[l]
		if !ok {
			li = int32(len(locs))
			locIndex[l] = li
			locs = append(locs, l)
		}
		mi := int32(slices.Index(mkts, o.Market))
		if mi < 0 {
			mi = int32(len(mkts))
			mkts = append(mkts, o.Market)
		}
		ps := priceSlot{-1, -1}
		if k, ok := priceOf(o); ok {
			cur := o.UnitPrice.Currency
			ps.currency = int32(slices.IndexFunc(groups, func(g currencyPrices) bool { return g.currency == cur }))
			if ps.currency < 0 {
				ps.currency = int32(len(groups))
				groups = append(groups, currencyPrices{currency: cur, keys: make([]priceKey, 0, len(offers)-i)})
			}
			ps.index = groups[ps.currency].slot(k)
		}
		each[i] = parts{li, mi, ps}
	}
	currencies := make([]string, len(groups))
	prices := make([][]priceKey, len(groups))
	for c, g := range groups {
		currencies[c], prices[c] = g.currency, g.keys
	}

	rs, err := e.batch.Eval(ctx,
		rego.EvalParsedInput(batchInput(p, locs, mkts, currencies, prices)),
		rego.EvalTime(now),
		// Keep the result as AST: it is read below without a JSON round trip.
		rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }),
	)
	if err != nil {
		return Decision{}, fmt.Errorf("evaluating policy %s: %w", Query, err)
	}
	root, err := resultObject(rs, Query)
	if err != nil {
		return Decision{}, err
	}
	b, err := readBatch(root, locs, mkts, currencies, prices)
	if err != nil {
		return Decision{}, err
	}
	limits, err := readLimits(root)
	if err != nil {
		return Decision{}, err
	}

	// An offer's verdict depends on its location, its market and whether its
	// price is refused (and in which currency), so offers that share these
	// share one verdict: reasons merged and sorted once. Each offer gets its
	// own copy of the reasons, cut from one backing array.
	type shared struct {
		loc, mkt int32
		price    int32 // -1: allowed; -2: no GPUs; c ≥ 0: refused with the reasons of currencies[c]
	}
	type merged struct {
		zone    sluice.Zone
		reasons []sluice.Reason
	}
	sharedOf := func(pt parts) shared {
		switch {
		case pt.price.currency < 0:
			return shared{pt.loc, pt.mkt, -2}
		case b.prices[pt.price.currency].refused[pt.price.index]:
			return shared{pt.loc, pt.mkt, pt.price.currency}
		}
		return shared{pt.loc, pt.mkt, -1}
	}
	cache := map[shared]int32{} // index in verdicts
	var verdicts []merged
	merge := func(sh shared) merged {
		lv := b.locations[sh.loc]
		m := merged{zone: lv.zone, reasons: slices.Concat(lv.reasons, b.markets[sh.mkt])}
		switch {
		case sh.price == -2:
			m.reasons = append(m.reasons, noGPUs)
		case sh.price >= 0:
			m.reasons = append(m.reasons, b.prices[sh.price].reasons...)
		}
		sortReasons(m.reasons)
		return m
	}
	verdictOf := make([]int32, len(offers))
	total := 0
	for i := range offers {
		sh := sharedOf(each[i])
		vi, ok := cache[sh]
		if !ok {
			m := merge(sh)
			if len(m.reasons) == 0 && m.zone == "" {
				// The policy refuses unmapped regions; an allow without a zone means a broken policy.
				return Decision{}, fmt.Errorf("policy result: offer %s allowed with no residency zone (unmapped region must be refused)", offers[i].ID)
			}
			vi = int32(len(verdicts))
			verdicts = append(verdicts, m)
			cache[sh] = vi
		}
		verdictOf[i] = vi
		total += len(verdicts[vi].reasons)
	}
	backing := make([]sluice.Reason, 0, total)
	out := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		m := verdicts[verdictOf[i]]
		var reasons []sluice.Reason
		if n := len(m.reasons); n > 0 {
			start := len(backing)
			backing = append(backing, m.reasons...)
			reasons = backing[start : start+n : start+n] // each offer owns its reasons
		}
		out[i] = sluice.Verdict{OfferID: o.ID, Allow: len(m.reasons) == 0, Zone: m.zone, Reasons: reasons}
	}
	n := 0
	for _, ps := range prices {
		n += len(ps)
	}
	return Decision{Verdicts: out, Limits: limits, Locations: len(locs), Markets: len(mkts), Prices: n}, nil
}

// EvaluateEach is Evaluate with one evaluation of ResultQuery per offer and
// no grouping. It gives the same verdicts and is the benchmark baseline.
func (e *Evaluator) EvaluateEach(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) ([]sluice.Verdict, error) {
	out := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		vs, err := e.evalOffers(ctx, p, offers[i:i+1], now)
		if err != nil {
			return nil, err
		}
		v := vs[0]
		out[i] = sluice.Verdict{OfferID: o.ID, Allow: v.Allow, Zone: v.Zone, Reasons: v.reasons()}
	}
	return out, nil
}

// titled is a verdict read from ResultQuery: reasons keep their rule titles.
type titled struct {
	Allow   bool
	Zone    sluice.Zone
	Reasons []Reason
}

func (t titled) reasons() []sluice.Reason {
	if len(t.Reasons) == 0 {
		return nil
	}
	out := make([]sluice.Reason, len(t.Reasons))
	for i, r := range t.Reasons {
		out[i] = r.Reason
	}
	return out
}

// evalOffers evaluates ResultQuery for offers (keys are their indexes).
func (e *Evaluator) evalOffers(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) ([]titled, error) {
	rs, err := e.each.Eval(ctx,
		rego.EvalParsedInput(offersInput(p, offers)),
		rego.EvalTime(now),
		rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }),
	)
	if err != nil {
		return nil, fmt.Errorf("evaluating policy %s: %w", ResultQuery, err)
	}
	root, err := resultObject(rs, ResultQuery)
	if err != nil {
		return nil, err
	}
	vobj, err := objectAt(root, "verdicts")
	if err != nil {
		return nil, err
	}
	out := make([]titled, len(offers))
	for i, o := range offers {
		vt := vobj.Get(ast.StringTerm(strconv.Itoa(i)))
		if vt == nil {
			return nil, fmt.Errorf("policy result: no verdict for offer %s", o.ID)
		}
		vo, ok := vt.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("policy result: offer %s: verdict %v is not an object", o.ID, vt)
		}
		zone, err := stringAt(vo, "zone")
		if err != nil {
			return nil, fmt.Errorf("policy result: offer %s: %w", o.ID, err)
		}
		rt := vo.Get(resReasons)
		if rt == nil {
			return nil, fmt.Errorf(`policy result: offer %s: verdict has no "reasons"`, o.ID)
		}
		rsns, err := readReasons(rt, nil)
		if err != nil {
			return nil, fmt.Errorf("policy result: offer %s: %w", o.ID, err)
		}
		if o.GPUsPerUnit <= 0 {
			rsns = append(rsns, Reason{Reason: noGPUs})
		}
		slices.SortFunc(rsns, func(a, b Reason) int { return compareReasons(a.Reason, b.Reason) })
		out[i] = titled{Allow: len(rsns) == 0, Zone: sluice.Zone(zone), Reasons: rsns}
		if out[i].Allow && zone == "" {
			return nil, fmt.Errorf("policy result: offer %s allowed with no residency zone (unmapped region must be refused)", o.ID)
		}
	}
	return out, nil
}

// Keys of the input objects, built once (AST terms are never modified by evaluation).
var (
	keyProfile, keyOffers = ast.StringTerm("profile"), ast.StringTerm("offers")
	keyLocations          = ast.StringTerm("locations")
	keyMarkets, keyPrices = ast.StringTerm("markets"), ast.StringTerm("prices")
	keyQueue, keyTeam     = ast.StringTerm("queue"), ast.StringTerm("team")
	keyDataClass          = ast.StringTerm("data_class")
	keyExportApproved     = ast.StringTerm("export_approved")
	keyCheckpointable     = ast.StringTerm("checkpointable")
	keyInterval           = ast.StringTerm("checkpoint_interval_minutes")
	keyTier               = ast.StringTerm("budget_tier")
	keyGPUModels          = ast.StringTerm("gpu_models")
	keyWorkload           = ast.StringTerm("workload")
	keyNVLink             = ast.StringTerm("cross_node_nvlink")
	keyLocalStorage       = ast.StringTerm("local_storage_only")
	keyStorageZone        = ast.StringTerm("storage_zone")
	keyKey, keyProvider   = ast.StringTerm("key"), ast.StringTerm("provider")
	keyRegion, keyCity    = ast.StringTerm("region"), ast.StringTerm("city")
	keyMarket, keyGPU     = ast.StringTerm("market"), ast.StringTerm("gpu_model")
	keyCurrency           = ast.StringTerm("currency")
	keyPricePerGPU        = ast.StringTerm("price_per_gpu_hour")

	// Keys of the result, read for every location, market, price and reason.
	resCode, resRule       = ast.StringTerm("code"), ast.StringTerm("rule")
	resMessage, resTitle   = ast.StringTerm("message"), ast.StringTerm("title")
	resZone, resReasons    = ast.StringTerm("zone"), ast.StringTerm("reasons")
	resVerdicts, resLimits = ast.StringTerm("verdicts"), ast.StringTerm("limits")
	resRefused             = ast.StringTerm("refused")
)

// profileTerm is the queue profile as the policy reads it.
func profileTerm(p sluice.QueueProfile) *ast.Term {
	models := make([]*ast.Term, len(p.GPUModels))
	for i, m := range p.GPUModels {
		models[i] = ast.StringTerm(m)
	}
	return ast.NewTerm(ast.NewObject(
		ast.Item(keyQueue, ast.StringTerm(p.Queue)),
		ast.Item(keyTeam, ast.StringTerm(p.Team)),
		ast.Item(keyDataClass, ast.StringTerm(p.DataClass)),
		ast.Item(keyExportApproved, ast.BooleanTerm(p.ExportApproved)),
		ast.Item(keyCheckpointable, ast.BooleanTerm(p.Checkpointable)),
		ast.Item(keyInterval, ast.IntNumberTerm(p.CheckpointIntervalMinutes)),
		ast.Item(keyTier, ast.StringTerm(string(p.Tier))),
		ast.Item(keyGPUModels, ast.ArrayTerm(models...)),
		ast.Item(keyWorkload, ast.StringTerm(p.Workload)),
		ast.Item(keyNVLink, ast.BooleanTerm(p.CrossNodeNVLink)),
		ast.Item(keyLocalStorage, ast.BooleanTerm(p.LocalStorageOnly)),
		ast.Item(keyStorageZone, ast.StringTerm(string(p.StorageZone))),
	))
}

func locationTerm(l location) *ast.Term {
	return ast.ArrayTerm(ast.StringTerm(l.provider), ast.StringTerm(l.region), ast.StringTerm(l.city))
}

// batchInput builds the input of Query directly as AST (no JSON or
// reflection): prices[c] are the distinct prices in currencies[c].
func batchInput(p sluice.QueueProfile, locs []location, mkts []sluice.Market, currencies []string, prices [][]priceKey) ast.Value {
	lt := make([]*ast.Term, len(locs))
	for i, l := range locs {
		lt[i] = locationTerm(l)
	}
	mt := make([]*ast.Term, len(mkts))
	for i, m := range mkts {
		mt[i] = ast.StringTerm(string(m))
	}
	n := 0
	for _, ps := range prices {
		n += len(ps)
	}
	// All amounts' text in one string and all their terms in one slice
	// (terms are never modified by evaluation).
	text := make([]byte, 0, 16*n)
	ends := make([]int, 0, n)
	for _, ps := range prices {
		for _, k := range ps {
			text = k.appendAmount(text)
			ends = append(ends, len(text))
		}
	}
	amounts := string(text)
	terms := make([]ast.Term, n)
	all := make([]*ast.Term, n)
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		terms[i].Value = ast.Number(amounts[start:end])
		all[i] = &terms[i]
	}
	byCurrency := make([][2]*ast.Term, len(currencies))
	start := 0
	for c, ps := range prices {
		end := start + len(ps)
		byCurrency[c] = ast.Item(ast.StringTerm(currencies[c]), ast.ArrayTerm(all[start:end:end]...))
		start = end
	}
	return ast.NewObject(
		ast.Item(keyProfile, profileTerm(p)),
		ast.Item(keyLocations, ast.ArrayTerm(lt...)),
		ast.Item(keyMarkets, ast.ArrayTerm(mt...)),
		ast.Item(keyPrices, ast.ObjectTerm(byCurrency...)),
	)
}

// offerTerm is one offer as ResultQuery reads it, keyed by key.
func offerTerm(key string, o sluice.Offer) *ast.Term {
	items := [][2]*ast.Term{
		ast.Item(keyKey, ast.StringTerm(key)),
		ast.Item(keyProvider, ast.StringTerm(o.Provider)),
		ast.Item(keyRegion, ast.StringTerm(o.Region)),
		ast.Item(keyCity, ast.StringTerm(o.City)),
		ast.Item(keyMarket, ast.StringTerm(string(o.Market))),
		ast.Item(keyGPU, ast.StringTerm(o.GPUModel)),
		ast.Item(keyCurrency, ast.StringTerm(o.UnitPrice.Currency)),
	}
	if amount, ok := priceText(o); ok {
		items = append(items, ast.Item(keyPricePerGPU, ast.NumberTerm(json.Number(amount))))
	}
	return ast.NewTerm(ast.NewObject(items...))
}

// offersInput builds the input of ResultQuery: offer keys are their indexes.
func offersInput(p sluice.QueueProfile, offers []sluice.Offer) ast.Value {
	ot := make([]*ast.Term, len(offers))
	for i, o := range offers {
		ot[i] = offerTerm(strconv.Itoa(i), o)
	}
	return ast.NewObject(ast.Item(keyProfile, profileTerm(p)), ast.Item(keyOffers, ast.ArrayTerm(ot...)))
}

func resultObject(rs rego.ResultSet, query string) (ast.Object, error) {
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, fmt.Errorf("policy %s: undefined (%d results)", query, len(rs))
	}
	t, ok := rs[0].Expressions[0].Value.(*ast.Term)
	if !ok {
		return nil, fmt.Errorf("policy %s: unexpected result type %T", query, rs[0].Expressions[0].Value)
	}
	root, ok := t.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("policy %s: %v is not an object", query, t)
	}
	return root, nil
}

type locationVerdict struct {
	zone    sluice.Zone
	reasons []sluice.Reason
}

// priceVerdict is the policy's answer for the prices of one currency: the
// reasons, and which of the prices sent (by index) they refuse.
type priceVerdict struct {
	reasons []sluice.Reason
	refused []bool
}

type batchResult struct {
	locations []locationVerdict
	markets   [][]sluice.Reason
	prices    []priceVerdict // by currency
}

// readBatch reads the verdict of every location and the reasons of every
// market and price sent. A location or market missing from the answer, or
// anything of the wrong type, is an error: a malformed answer never becomes
// an allow. Prices within the ceilings are absent (no reasons).
func readBatch(root ast.Object, locs []location, mkts []sluice.Market, currencies []string, prices [][]priceKey) (batchResult, error) {
	var b batchResult
	seen := map[*ast.Term]Reason{}
	lobj, err := objectAt(root, "locations")
	if err != nil {
		return b, err
	}
	b.locations = make([]locationVerdict, len(locs))
	for i, l := range locs {
		vt := lobj.Get(locationTerm(l))
		if vt == nil {
			return b, fmt.Errorf("policy result: no verdict for location %s/%s/%q", l.provider, l.region, l.city)
		}
		vo, ok := vt.Value.(ast.Object)
		if !ok {
			return b, fmt.Errorf("policy result: location %s/%s: verdict %v is not an object", l.provider, l.region, vt)
		}
		zone, err := stringAt(vo, "zone")
		if err != nil {
			return b, fmt.Errorf("policy result: location %s/%s: %w", l.provider, l.region, err)
		}
		rt := vo.Get(resReasons)
		if rt == nil {
			return b, fmt.Errorf(`policy result: location %s/%s: verdict has no "reasons"`, l.provider, l.region)
		}
		rs, err := readPlainReasons(rt, seen)
		if err != nil {
			return b, fmt.Errorf("policy result: location %s/%s: %w", l.provider, l.region, err)
		}
		b.locations[i] = locationVerdict{sluice.Zone(zone), rs}
	}
	mobj, err := objectAt(root, "markets")
	if err != nil {
		return b, err
	}
	b.markets = make([][]sluice.Reason, len(mkts))
	for i, m := range mkts {
		rt := mobj.Get(ast.StringTerm(string(m)))
		if rt == nil {
			return b, fmt.Errorf("policy result: no reasons for market %q", m)
		}
		if b.markets[i], err = readPlainReasons(rt, seen); err != nil {
			return b, fmt.Errorf("policy result: market %s: %w", m, err)
		}
	}
	pobj, err := objectAt(root, "prices")
	if err != nil {
		return b, err
	}
	b.prices = make([]priceVerdict, len(currencies))
	for c, cur := range currencies {
		b.prices[c].refused = make([]bool, len(prices[c]))
		vt := pobj.Get(ast.StringTerm(cur))
		if vt == nil {
			continue // no price in this currency refused
		}
		vo, ok := vt.Value.(ast.Object)
		if !ok {
			return b, fmt.Errorf("policy result: prices in %s: %v is not an object", cur, vt)
		}
		rt := vo.Get(resReasons)
		if rt == nil {
			return b, fmt.Errorf(`policy result: prices in %s: no "reasons"`, cur)
		}
		if b.prices[c].reasons, err = readPlainReasons(rt, seen); err != nil {
			return b, fmt.Errorf("policy result: prices in %s: %w", cur, err)
		}
		it := vo.Get(resRefused)
		if it == nil {
			return b, fmt.Errorf(`policy result: prices in %s: no "refused"`, cur)
		}
		idx, ok := it.Value.(*ast.Array)
		if !ok {
			return b, fmt.Errorf(`policy result: prices in %s: "refused" is %v, not an array`, cur, it)
		}
		for j := range idx.Len() {
			num, ok := idx.Elem(j).Value.(ast.Number)
			i, isInt := num.Int()
			if !ok || !isInt || i < 0 || i >= len(prices[c]) {
				return b, fmt.Errorf("policy result: prices in %s: refused %v is not the index of a price sent", cur, idx.Elem(j))
			}
			b.prices[c].refused[i] = true
		}
	}
	return b, nil
}

// Reason is a refusal as the policy gives it: the reason recorded with the
// decision plus the title of the rule that fired (from its METADATA).
type Reason struct {
	sluice.Reason
	Title string `json:"title"`
}

func readPlainReasons(t *ast.Term, seen map[*ast.Term]Reason) ([]sluice.Reason, error) {
	rs, err := readReasons(t, seen)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	out := make([]sluice.Reason, len(rs))
	for i, r := range rs {
		out[i] = r.Reason
	}
	return out, nil
}

// readReasons reads a set (or array) of {"code", "rule", "title", "message"}
// objects; title may be missing. seen (may be nil) caches reasons already
// read, by term: the policy hands the same reason term to many prices.
func readReasons(t *ast.Term, seen map[*ast.Term]Reason) ([]Reason, error) {
	var reasons []Reason
	var rerr error
	each := func(r *ast.Term) {
		if rerr != nil {
			return
		}
		if x, ok := seen[r]; ok {
			reasons = append(reasons, x)
			return
		}
		ro, ok := r.Value.(ast.Object)
		if !ok {
			rerr = fmt.Errorf("reason %v is not an object", r)
			return
		}
		var x Reason
		if x.Code, rerr = stringAt(ro, "code"); rerr != nil {
			return
		}
		if x.Rule, rerr = stringAt(ro, "rule"); rerr != nil {
			return
		}
		if x.Message, rerr = stringAt(ro, "message"); rerr != nil {
			return
		}
		if tt := ro.Get(resTitle); tt != nil {
			s, ok := tt.Value.(ast.String)
			if !ok {
				rerr = fmt.Errorf(`"title" is %v, not a string`, tt)
				return
			}
			x.Title = string(s)
		}
		if seen != nil {
			seen[r] = x
		}
		reasons = append(reasons, x)
	}
	switch v := t.Value.(type) {
	case ast.Set:
		v.Foreach(each)
	case *ast.Array:
		v.Foreach(each)
	default:
		return nil, fmt.Errorf("reasons %v is not a set or array", t)
	}
	return reasons, rerr
}

// compareReasons orders reasons by (code, rule), then message, so equal
// inputs give equal records.
func compareReasons(a, b sluice.Reason) int {
	return cmp.Or(strings.Compare(a.Code, b.Code), strings.Compare(a.Rule, b.Rule), strings.Compare(a.Message, b.Message))
}

func sortReasons(rs []sluice.Reason) { slices.SortFunc(rs, compareReasons) }

func readLimits(root ast.Object) (Limits, error) {
	lt := root.Get(ast.StringTerm("limits"))
	if lt == nil {
		return Limits{}, nil
	}
	lobj, ok := lt.Value.(ast.Object)
	if !ok {
		return Limits{}, fmt.Errorf("policy limits %v: not an object", lt)
	}
	var l Limits
	pt := lobj.Get(ast.StringTerm("max_price_per_gpu_hour"))
	if pt == nil {
		return l, nil
	}
	pobj, ok := pt.Value.(ast.Object)
	if !ok {
		return Limits{}, fmt.Errorf("policy limit max_price_per_gpu_hour %v: not an object of currency → decimal string", pt)
	}
	var perr error
	pobj.Foreach(func(k, v *ast.Term) {
		if perr != nil {
			return
		}
		cur, ok1 := k.Value.(ast.String)
		amt, ok2 := v.Value.(ast.String)
		if !ok1 || !ok2 {
			perr = fmt.Errorf("policy limit max_price_per_gpu_hour[%v] = %v: want a decimal string per currency", k, v)
			return
		}
		m, err := sluice.NewMoney(string(amt), string(cur))
		if err != nil {
			perr = fmt.Errorf("policy limit max_price_per_gpu_hour[%s]: %w", cur, err)
			return
		}
		l.MaxPricePerGPUHour = append(l.MaxPricePerGPUHour, m)
	})
	if perr != nil {
		return Limits{}, perr
	}
	slices.SortFunc(l.MaxPricePerGPUHour, func(a, b sluice.Money) int { return strings.Compare(a.Currency, b.Currency) })
	return l, nil
}

func objectAt(obj ast.Object, key string) (ast.Object, error) {
	t := obj.Get(keyTerm(key))
	if t == nil {
		return nil, fmt.Errorf("policy result: no %q", key)
	}
	o, ok := t.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("policy result: %q is %v, not an object", key, t)
	}
	return o, nil
}

func stringAt(obj ast.Object, key string) (string, error) {
	t := obj.Get(keyTerm(key))
	if t == nil {
		return "", fmt.Errorf("no %q", key)
	}
	s, ok := t.Value.(ast.String)
	if !ok {
		return "", fmt.Errorf("%q is %v, not a string", key, t)
	}
	return string(s), nil
}

// checkDenyAnnotations refuses a deny rule (any rule named deny...) outside
// the test files whose METADATA lacks a title, description, custom.code or
// custom.rule: its reasons would be unlabelled.
func checkDenyAnnotations(modules map[string]*ast.Module) error {
	var errs []error
	for file, m := range modules {
		if strings.HasSuffix(file, "_test.rego") {
			continue
		}
		for _, r := range m.Rules {
			name := string(r.Head.Name)
			if len(r.Head.Reference) > 0 {
				name = r.Head.Reference[0].String()
			}
			if !strings.HasPrefix(name, "deny") {
				continue
			}
			var a *ast.Annotations
			for _, x := range r.Annotations {
				if x.Scope == "rule" || x.Scope == "" {
					a = x
				}
			}
			code, rule := "", ""
			if a != nil {
				code, _ = a.Custom["code"].(string)
				rule, _ = a.Custom["rule"].(string)
			}
			if a == nil || a.Title == "" || a.Description == "" || code == "" || rule == "" {
				errs = append(errs, fmt.Errorf("%s:%d: deny rule %s needs a METADATA block with title, description, custom.code and custom.rule", file, r.Location.Row, name))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return joinLines(errs)
}

// keyTerm returns the prepared term of a result key (no allocation).
func keyTerm(key string) *ast.Term {
	switch key {
	case "code":
		return resCode
	case "rule":
		return resRule
	case "message":
		return resMessage
	case "title":
		return resTitle
	case "zone":
		return resZone
	case "reasons":
		return resReasons
	case "verdicts":
		return resVerdicts
	case "limits":
		return resLimits
	case "locations":
		return keyLocations
	case "markets":
		return keyMarkets
	case "prices":
		return keyPrices
	}
	return ast.StringTerm(key)
}

// storeOf is the in-memory store of policy data (tests and checks).
func storeOf(data map[string]any) storage.Store {
	return inmem.NewFromObjectWithOpts(data, inmem.OptReturnASTValuesOnRead(true))
}
