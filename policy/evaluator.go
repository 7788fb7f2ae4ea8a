// Package policy decides, with the compliance team's Rego policy, which offers
// a queue may buy. The policy files (*.rego and data/*.json in this folder)
// are embedded in the binary, compiled once, and evaluated once per decision
// for all offers together.
//
// A decision sees about a thousand offers, but a verdict depends only on the
// queue profile and five offer attributes (provider, region, city, market,
// GPU model). The evaluator therefore sends each distinct combination once,
// in one evaluation, and fans the verdicts back out to the offers in Go.
//
// Input and output of the Rego query data.sluice.decision.result:
//
//	input  {"profile": {"queue", "team", "data_class", "export_approved", "checkpointable",
//	                    "checkpoint_interval_minutes", "budget_tier", "gpu_models"},
//	        "offers":  [{"key", "provider", "region", "city", "market", "gpu_model"}, ...]}
//	result {"verdicts": {key: {"zone": "beijing"|"east-china"|"cn-other"|"overseas"|"",
//	                           "reasons": [{"code", "rule", "message"}, ...]}},
//	        "limits":   {"max_price_per_gpu_hour": {"USD": "4.00", ...}}}
//
// Money never enters the policy: limits come back as decimal strings from
// policy data and are compared with offer prices in Go.
package policy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/sluicehq/sluice"
)

// Query is the Rego document the evaluator reads.
const Query = "data.sluice.decision.result"

// embedded holds the policy files shipped in the binary. The *_test.rego
// files are embedded too (the Go test runs them) but never loaded for
// evaluation and not part of the revision.
//
//go:embed *.rego data
var embedded embed.FS

// Evaluator evaluates the policy. It is safe for concurrent use.
type Evaluator struct {
	query    rego.PreparedEvalQuery
	revision string
	files    []string
}

var _ sluice.PolicyEvaluator = (*Evaluator)(nil)

// New prepares the embedded policy.
func New(ctx context.Context) (*Evaluator, error) {
	return NewFromFS(ctx, embedded)
}

// NewFromFS prepares the policy in fsys (for tests, or the compliance team's
// working copy: NewFromFS(ctx, os.DirFS("policy"))). It loads the same files,
// at the same data paths, as `opa test <dir>`: every *.rego file except
// *_test.rego, and every .json/.yaml/.yml data file, where a file in a
// sub-folder is placed under that folder's name (data/regions.json is read
// as data.data...). Hidden and "_" folders and testdata/ are skipped.
func NewFromFS(ctx context.Context, fsys fs.FS) (*Evaluator, error) {
	files, err := runtimeFiles(fsys)
	if err != nil {
		return nil, fmt.Errorf("listing policy files: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("policy: no policy files found")
	}
	rev, err := revision(fsys, files)
	if err != nil {
		return nil, err
	}

	loaded, err := loader.NewFileLoader().
		WithFS(fsys).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotation(true). // the deny rules take their code and rule from METADATA
		Filtered([]string{"."}, loaderFilter)
	if err != nil {
		return nil, fmt.Errorf("loading policy: %w", err)
	}

	opts := []func(*rego.Rego){
		rego.Query(Query),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Strict(true),
		rego.StrictBuiltinErrors(true),
		rego.Store(inmem.NewFromObjectWithOpts(loaded.Documents, inmem.OptReturnASTValuesOnRead(true))),
	}
	names := make([]string, 0, len(loaded.Modules))
	for name := range loaded.Modules {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		opts = append(opts, rego.ParsedModule(loaded.Modules[name].Parsed))
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("compiling policy: %w", err)
	}
	return &Evaluator{query: pq, revision: rev, files: files}, nil
}

// Revision is the hex SHA-256 identifying the policy files evaluated: the
// SHA-256 of the `sha256sum` listing ("<hex sha256>  <name>\n" per file) of
// the runtime files sorted by name (byte order). Test files (*_test.rego) are
// not included: editing a test does not change what was decided. To
// reproduce it from a checkout (the runtime files are *.rego and data/*.json):
//
//	cd policy && ls *.rego data/*.json | grep -v '_test\.rego$' | LC_ALL=C sort | xargs sha256sum | sha256sum
func (e *Evaluator) Revision() string { return e.revision }

// Files lists the runtime policy files the revision covers, sorted.
func (e *Evaluator) Files() []string { return slices.Clone(e.files) }

// Limits are the ceilings policy data sets for a queue's budget tier. Money
// is only carried here, never computed or compared in Rego.
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
	// Combinations is how many distinct offer combinations (provider, region,
	// city, market, GPU model) were sent to the policy.
	Combinations int `json:"combinations"`
}

// Evaluate returns one verdict per offer, in order (sluice.PolicyEvaluator).
func (e *Evaluator) Evaluate(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) ([]sluice.Verdict, error) {
	d, err := e.Decide(ctx, p, offers, now)
	if err != nil {
		return nil, err
	}
	return d.Verdicts, nil
}

// Decide evaluates all offers in one query: offers are grouped into distinct
// combinations of the attributes the policy reads, the combinations are
// evaluated together, and each offer gets its combination's verdict. now
// pins time.now_ns() so a recorded decision replays exactly.
func (e *Evaluator) Decide(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) (Decision, error) {
	index := make(map[combination]int, len(offers)/4+1)
	var distinct []combination
	group := make([]int, len(offers)) // offer → its combination
	for i, o := range offers {
		c := combinationOf(o)
		g, ok := index[c]
		if !ok {
			g = len(distinct)
			index[c] = g
			distinct = append(distinct, c)
		}
		group[i] = g
	}

	verdicts, limits, err := e.eval(ctx, p, distinct, now)
	if err != nil {
		return Decision{}, err
	}
	// Each offer gets its own copy of its reasons, cut from one allocation
	// (capacity-limited, so an append by a caller never reaches a neighbour).
	n := 0
	for i := range offers {
		n += len(verdicts[group[i]].Reasons)
	}
	backing := make([]sluice.Reason, 0, n)
	out := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		v := verdicts[group[i]]
		var reasons []sluice.Reason
		if len(v.Reasons) > 0 {
			start := len(backing)
			backing = append(backing, v.Reasons...)
			reasons = backing[start:len(backing):len(backing)]
		}
		out[i] = sluice.Verdict{OfferID: o.ID, Allow: v.Allow, Zone: v.Zone, Reasons: reasons}
	}
	return Decision{Verdicts: out, Limits: limits, Combinations: len(distinct)}, nil
}

// EvaluateEach is Evaluate with one policy evaluation per offer and no
// grouping. It gives the same verdicts and exists as the benchmark baseline.
func (e *Evaluator) EvaluateEach(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) ([]sluice.Verdict, error) {
	out := make([]sluice.Verdict, len(offers))
	for i, o := range offers {
		vs, _, err := e.eval(ctx, p, []combination{combinationOf(o)}, now)
		if err != nil {
			return nil, err
		}
		out[i] = sluice.Verdict{OfferID: o.ID, Allow: vs[0].Allow, Zone: vs[0].Zone, Reasons: vs[0].Reasons}
	}
	return out, nil
}

// combination is what the policy reads of an offer: offers that agree on
// these get the same verdict.
type combination struct {
	provider, region, city string
	market                 sluice.Market
	gpuModel               string
}

func combinationOf(o sluice.Offer) combination {
	return combination{provider: o.Provider, region: o.Region, city: o.City, market: o.Market, gpuModel: o.GPUModel}
}

// eval runs the prepared query once for the combinations, keyed by their
// index, and returns their verdicts (OfferID unset) in the same order.
func (e *Evaluator) eval(ctx context.Context, p sluice.QueueProfile, cs []combination, now time.Time) ([]sluice.Verdict, Limits, error) {
	rs, err := e.query.Eval(ctx,
		rego.EvalParsedInput(input(p, cs)),
		rego.EvalTime(now),
		// Keep the result as AST: it is read below without a JSON round trip.
		rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }),
	)
	if err != nil {
		return nil, Limits{}, fmt.Errorf("evaluating policy %s: %w", Query, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, Limits{}, fmt.Errorf("policy %s: undefined (%d results)", Query, len(rs))
	}
	res, ok := rs[0].Expressions[0].Value.(*ast.Term)
	if !ok {
		return nil, Limits{}, fmt.Errorf("policy %s: unexpected result type %T", Query, rs[0].Expressions[0].Value)
	}
	return readResult(res, len(cs))
}

// Keys of the input objects, built once (AST terms are never modified by evaluation).
var (
	keyProfile, keyOffers = ast.StringTerm("profile"), ast.StringTerm("offers")
	keyQueue, keyTeam     = ast.StringTerm("queue"), ast.StringTerm("team")
	keyDataClass          = ast.StringTerm("data_class")
	keyExportApproved     = ast.StringTerm("export_approved")
	keyCheckpointable     = ast.StringTerm("checkpointable")
	keyInterval           = ast.StringTerm("checkpoint_interval_minutes")
	keyTier               = ast.StringTerm("budget_tier")
	keyGPUModels          = ast.StringTerm("gpu_models")
	keyKey, keyProvider   = ast.StringTerm("key"), ast.StringTerm("provider")
	keyRegion, keyCity    = ast.StringTerm("region"), ast.StringTerm("city")
	keyMarket, keyGPU     = ast.StringTerm("market"), ast.StringTerm("gpu_model")
)

// input builds the Rego input directly as AST (no JSON or reflection).
// Offer keys are the combination indexes "0", "1", ...
func input(p sluice.QueueProfile, cs []combination) ast.Value {
	models := make([]*ast.Term, len(p.GPUModels))
	for i, m := range p.GPUModels {
		models[i] = ast.StringTerm(m)
	}
	profile := ast.NewObject(
		ast.Item(keyQueue, ast.StringTerm(p.Queue)),
		ast.Item(keyTeam, ast.StringTerm(p.Team)),
		ast.Item(keyDataClass, ast.StringTerm(p.DataClass)),
		ast.Item(keyExportApproved, ast.BooleanTerm(p.ExportApproved)),
		ast.Item(keyCheckpointable, ast.BooleanTerm(p.Checkpointable)),
		ast.Item(keyInterval, ast.IntNumberTerm(p.CheckpointIntervalMinutes)),
		ast.Item(keyTier, ast.StringTerm(string(p.Tier))),
		ast.Item(keyGPUModels, ast.ArrayTerm(models...)),
	)
	// Offers share few distinct strings: one term each.
	terms := make(map[string]*ast.Term, 64)
	str := func(s string) *ast.Term {
		t, ok := terms[s]
		if !ok {
			t = ast.StringTerm(s)
			terms[s] = t
		}
		return t
	}
	offers := make([]*ast.Term, len(cs))
	for i, c := range cs {
		offers[i] = ast.NewTerm(ast.NewObject(
			ast.Item(keyKey, ast.StringTerm(strconv.Itoa(i))),
			ast.Item(keyProvider, str(c.provider)),
			ast.Item(keyRegion, str(c.region)),
			ast.Item(keyCity, str(c.city)),
			ast.Item(keyMarket, str(string(c.market))),
			ast.Item(keyGPU, str(c.gpuModel)),
		))
	}
	return ast.NewObject(
		ast.Item(keyProfile, ast.NewTerm(profile)),
		ast.Item(keyOffers, ast.ArrayTerm(offers...)),
	)
}

// readResult turns {"verdicts": {...}, "limits": {...}} into n verdicts
// (one per key "0".."n-1") and the limits. Anything missing or of the wrong
// type is an error: a malformed policy answer never becomes an allow.
func readResult(t *ast.Term, n int) ([]sluice.Verdict, Limits, error) {
	root, ok := t.Value.(ast.Object)
	if !ok {
		return nil, Limits{}, fmt.Errorf("policy result: %v is not an object", t)
	}
	vobj, err := objectAt(root, "verdicts")
	if err != nil {
		return nil, Limits{}, err
	}
	out := make([]sluice.Verdict, n)
	// Offers at the same place share one verdict term: convert it once.
	seen := make(map[*ast.Term]int, n)
	for i := range n {
		key := strconv.Itoa(i)
		vt := vobj.Get(ast.StringTerm(key))
		if vt == nil {
			return nil, Limits{}, fmt.Errorf("policy result: no verdict for offer key %s", key)
		}
		if j, ok := seen[vt]; ok {
			out[i] = out[j]
			continue
		}
		v, err := readVerdict(vt)
		if err != nil {
			return nil, Limits{}, fmt.Errorf("policy result: offer key %s: %w", key, err)
		}
		out[i] = v
		seen[vt] = i
	}
	limits, err := readLimits(root)
	if err != nil {
		return nil, Limits{}, err
	}
	return out, limits, nil
}

func readVerdict(t *ast.Term) (sluice.Verdict, error) {
	obj, ok := t.Value.(ast.Object)
	if !ok {
		return sluice.Verdict{}, fmt.Errorf("verdict %v is not an object", t)
	}
	zone, err := stringAt(obj, "zone")
	if err != nil {
		return sluice.Verdict{}, err
	}
	rt := obj.Get(ast.StringTerm("reasons"))
	if rt == nil {
		return sluice.Verdict{}, errors.New(`verdict has no "reasons"`)
	}
	var reasons []sluice.Reason
	var rerr error
	each := func(r *ast.Term) {
		if rerr != nil {
			return
		}
		ro, ok := r.Value.(ast.Object)
		if !ok {
			rerr = fmt.Errorf("reason %v is not an object", r)
			return
		}
		var x sluice.Reason
		if x.Code, rerr = stringAt(ro, "code"); rerr != nil {
			return
		}
		if x.Rule, rerr = stringAt(ro, "rule"); rerr != nil {
			return
		}
		if x.Message, rerr = stringAt(ro, "message"); rerr != nil {
			return
		}
		reasons = append(reasons, x)
	}
	switch rv := rt.Value.(type) {
	case ast.Set:
		rv.Foreach(each)
	case *ast.Array:
		rv.Foreach(each)
	default:
		return sluice.Verdict{}, fmt.Errorf("reasons %v is not a set or array", rt)
	}
	if rerr != nil {
		return sluice.Verdict{}, rerr
	}
	// Sorted by (code, rule), then message, so equal inputs give equal records.
	slices.SortFunc(reasons, func(a, b sluice.Reason) int {
		return cmp.Or(strings.Compare(a.Code, b.Code), strings.Compare(a.Rule, b.Rule), strings.Compare(a.Message, b.Message))
	})
	v := sluice.Verdict{Allow: len(reasons) == 0, Zone: sluice.Zone(zone), Reasons: reasons}
	if v.Allow && v.Zone == "" {
		// The policy refuses unmapped regions; an allow without a zone means a broken policy.
		return sluice.Verdict{}, errors.New("allowed with no residency zone (unmapped region must be refused)")
	}
	return v, nil
}

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
	t := obj.Get(ast.StringTerm(key))
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
	t := obj.Get(ast.StringTerm(key))
	if t == nil {
		return "", fmt.Errorf("no %q", key)
	}
	s, ok := t.Value.(ast.String)
	if !ok {
		return "", fmt.Errorf("%q is %v, not a string", key, t)
	}
	return string(s), nil
}

// runtimeFiles lists, sorted, the files the evaluator loads from fsys.
func runtimeFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name != "." && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if runtimeFile(name) {
			files = append(files, name)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// runtimeFile reports whether a file is policy (Rego or data) and not a test.
func runtimeFile(name string) bool {
	base := path.Base(name)
	if strings.HasPrefix(base, ".") {
		return false
	}
	switch path.Ext(base) {
	case ".rego":
		return !strings.HasSuffix(base, "_test.rego")
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

func skipDir(base string) bool {
	return strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata"
}

// loaderFilter excludes from the OPA loader what runtimeFiles leaves out, so
// the revision covers exactly the files evaluated.
func loaderFilter(name string, info fs.FileInfo, depth int) bool {
	if depth == 0 {
		return false
	}
	if info.IsDir() {
		return skipDir(info.Name())
	}
	return !runtimeFile(name)
}

// revision hashes the files like `sha256sum <files> | sha256sum`.
func revision(fsys fs.FS, files []string) (string, error) {
	var listing strings.Builder
	for _, name := range files {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return "", fmt.Errorf("reading policy file %s: %w", name, err)
		}
		sum := sha256.Sum256(b)
		listing.WriteString(hex.EncodeToString(sum[:]))
		listing.WriteString("  ")
		listing.WriteString(name)
		listing.WriteString("\n")
	}
	sum := sha256.Sum256([]byte(listing.String()))
	return hex.EncodeToString(sum[:]), nil
}
