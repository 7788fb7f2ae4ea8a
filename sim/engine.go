package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Params are a simulation's inputs. The money facts (billing currency, FX,
// interruption rates, budgets) come from the Sluice config (config.Load).
type Params struct {
	Jobs                 []Job
	Prices               *Prices
	Settings             *Settings
	Policy               sluice.PolicyEvaluator
	BillingCurrency      string
	FX                   sluice.FXTable
	InterruptionsPerHour map[string]decimal.Decimal
	// Budgets is the monthly budget per tier (no entry = no limit).
	Budgets map[sluice.Tier]sluice.Money
	// Seed seeds the spot interruptions (math/rand/v2 PCG).
	Seed uint64
	// NoVerdictCache evaluates policy at every decision (the cache's test).
	NoVerdictCache bool
}

// Simulator runs strategies over one trace. Policy verdicts are cached per
// (policy-relevant profile, offer set): a verdict depends on nothing else
// (policy/evaluator.go input; the policy reads no time), so the cache changes
// no decision — TestVerdictCacheChangesNothing runs with and without it.
type Simulator struct {
	p       Params
	offers  map[offerSetKey]*offerSet
	verdict map[verdictKey][]sluice.Verdict
	// PolicyEvaluations counts calls to the policy evaluator.
	PolicyEvaluations int
	// PlanTime is the wall time spent in sluice.MakePlan (for the benchmark;
	// never part of a result).
	PlanTime time.Duration
}

type offerSetKey struct {
	epoch int
	mask  marketMask
}

// offerSet is an epoch's offers in one strategy's markets.
type offerSet struct {
	offers []sluice.Offer
	index  map[string]int
	terms  []int // distinct reserved terms, ascending
}

type verdictKey struct {
	set     offerSetKey
	profile string // policyKey of the profile
}

// policyKey identifies what policy can read of a profile: all of it except
// the slot shape (GPUs, hours, max slots), which the evaluator does not send
// (policy/evaluator.go input). Two profiles with one key get the same
// verdicts for the same offers.
func policyKey(p sluice.QueueProfile) string {
	p.GPUsPerSlot, p.HoursPerSlot, p.MaxSlots = 0, decimal.Zero, 0
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("sim: profile %s: %v", p.Queue, err)) // a QueueProfile always marshals
	}
	return string(b)
}

// New checks p and returns a simulator.
func New(p Params) (*Simulator, error) {
	switch {
	case len(p.Jobs) == 0:
		return nil, errors.New("simulate: no jobs")
	case p.Prices == nil || len(p.Prices.Epochs) == 0:
		return nil, errors.New("simulate: no prices")
	case p.Settings == nil:
		return nil, errors.New("simulate: no settings")
	case p.Policy == nil:
		return nil, errors.New("simulate: no policy evaluator")
	}
	if p.Settings.OwnedGPUMonthCost.Currency != p.BillingCurrency {
		if _, _, err := p.FX.Convert(p.Settings.OwnedGPUMonthCost, p.BillingCurrency); err != nil {
			return nil, fmt.Errorf("simulate: owned.gpu_month_cost: %w", err)
		}
	}
	for i := 1; i < len(p.Jobs); i++ {
		if a, b := p.Jobs[i-1], p.Jobs[i]; cmp.Or(a.Submit.Compare(b.Submit), cmp.Compare(a.ID, b.ID)) >= 0 {
			return nil, fmt.Errorf("simulate: jobs not sorted by (submit, id) at %s", b.ID)
		}
	}
	return &Simulator{p: p, offers: map[offerSetKey]*offerSet{}, verdict: map[verdictKey][]sluice.Verdict{}}, nil
}

func (s *Simulator) offerSet(k offerSetKey) *offerSet {
	if os, ok := s.offers[k]; ok {
		return os
	}
	os := &offerSet{index: map[string]int{}}
	for _, o := range s.p.Prices.Epochs[k.epoch].Offers {
		if k.mask.has(o.Market) {
			os.index[o.ID] = len(os.offers)
			os.offers = append(os.offers, o)
			if o.Market == sluice.Reserved && o.TermHours > 0 && !slices.Contains(os.terms, o.TermHours) {
				os.terms = append(os.terms, o.TermHours)
			}
		}
	}
	slices.Sort(os.terms)
	s.offers[k] = os
	return os
}

// verdicts evaluates the offer set for the profile once, through the real
// policy evaluator, and reuses the answer.
func (s *Simulator) verdicts(ctx context.Context, k offerSetKey, p sluice.QueueProfile, pkey string, now time.Time) ([]sluice.Verdict, error) {
	vk := verdictKey{set: k, profile: pkey}
	if v, ok := s.verdict[vk]; ok && !s.p.NoVerdictCache {
		return v, nil
	}
	v, err := s.p.Policy.Evaluate(ctx, p, s.offerSet(k).offers, now)
	if err != nil {
		return nil, fmt.Errorf("simulate: evaluating policy for %s: %w", p.Queue, err)
	}
	s.PolicyEvaluations++
	s.verdict[vk] = v
	return v, nil
}

// Event kinds, in the order they are handled within one minute: work ends
// and capacity is lost first, then jobs arrive, then alarms evaluate.
const (
	evDone uint8 = iota
	evInterrupt
	evTermEnd
	evSubmit
	evCheck
)

type event struct {
	t    int64 // minutes since the first submit
	kind uint8
	seq  uint64
	a    int32 // job, unit or group index
	gen  int32
}

type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		(*h)[i], (*h)[m] = (*h)[m], (*h)[i]
		i = m
	}
	return top
}

// fifo is a min-heap of job indexes (jobs are sorted by submit, id, so the
// index is the FIFO order), with lazy deletion by queue generation.
type fifo []qentry

type qentry struct{ job, qgen int32 }

func (h *fifo) push(e qentry) {
	*h = append(*h, e)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if (*h)[i].job >= (*h)[p].job {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *fifo) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && (*h)[l].job < (*h)[m].job {
			m = l
		}
		if r < n && (*h)[r].job < (*h)[m].job {
			m = r
		}
		if m == i {
			break
		}
		(*h)[i], (*h)[m] = (*h)[m], (*h)[i]
		i = m
	}
}

type jobState struct {
	group     int32
	waiting   bool
	qgen      int32 // bumped at each enqueue: older queue entries are stale
	gen       int32 // bumped at each interruption: older done events are stale
	unit      int32 // -1 = owned pool
	saved     int64 // checkpointed progress, minutes
	runStart  int64
	started   bool
	firstWait int64
	done      bool
	end       int64
}

type unit struct {
	group    int32
	offerID  string
	provider string
	market   sluice.Market
	tier     sluice.Tier
	pool     string
	gpus     int
	slots    int
	busy     int
	start    int64
	end      int64 // reserved: term end; else -1
	alive    bool
	bucket   int
	jobs     []int32
}

type group struct {
	profile      sluice.QueueProfile
	waiting      fifo
	nWaiting     int
	waitMinutes  int64 // remaining work of waiting jobs
	units        []int32
	checkPending bool
	policyKey    string
	first        int                           // a job of the group (they share GPUs and hours)
	last         map[offerSetKey]decisionState // the last plan's inputs, per offer set
	blocked      map[offerSetKey]bool          // the policy allows no offer in this set
}

// decisionState is what a decision on one offer set reads besides the
// fixed profile; an identical state gives an identical plan, so it is not
// planned twice.
type decisionState struct {
	month            int
	depth, live      int
	capacity, budget int
}

type bucketKey struct {
	tier     sluice.Tier
	provider string
	market   sluice.Market
	price    string
	currency string
}

type bucket struct {
	key        bucketKey
	price      sluice.Money
	minutes    int64 // unit-minutes billed
	gpuMinutes int64
}

// run is one strategy over the trace with one owned-pool size.
type run struct {
	s        *Simulator
	ctx      context.Context
	strategy Strategy
	owned    int
	free     int
	t0       time.Time
	now      int64
	seq      uint64
	events   eventHeap
	work     int // pending events other than alarm evaluations
	offerBuf []sluice.Offer
	jobs     []jobState
	global   fifo
	groups   []*group
	groupIdx map[string]int32
	units    []unit
	inUse    map[string]int // offer id → units live
	poolUse  map[string]int // pool → GPUs live
	capVer   int
	spent    map[spendKey]decimal.Decimal
	spendVer int
	buckets  []bucket
	bucketIx map[bucketKey]int
	rng      *rand.Rand
	rates    map[string][2]uint64 // provider → interruption chance per minute, num/den

	decisions, skipped, interruptions int
	reworkGPUMinutes, ownedGPUMinutes int64
}

type spendKey struct {
	tier  sluice.Tier
	month time.Time
}

// Run simulates one strategy with ownedGPUs owned GPUs. The spot
// interruptions come from a PCG seeded with (Seed, the strategy's position
// in Strategies), so each strategy's draws do not depend on which others run.
func (s *Simulator) Run(ctx context.Context, st Strategy, ownedGPUs int) (Result, error) {
	if ownedGPUs < 0 {
		return Result{}, fmt.Errorf("simulate: %d owned GPUs", ownedGPUs)
	}
	r := &run{s: s, ctx: ctx, strategy: st, owned: ownedGPUs, free: ownedGPUs, t0: s.p.Jobs[0].Submit,
		jobs: make([]jobState, len(s.p.Jobs)), groupIdx: map[string]int32{}, inUse: map[string]int{},
		poolUse: map[string]int{}, spent: map[spendKey]decimal.Decimal{}, bucketIx: map[bucketKey]int{},
		rng: rand.New(rand.NewPCG(s.p.Seed, uint64(slices.Index(Strategies, st)))), rates: map[string][2]uint64{}}
	for p, rate := range s.p.InterruptionsPerHour {
		r.rates[p] = perMinute(rate)
	}
	for i := range s.p.Jobs {
		r.jobs[i] = jobState{group: r.groupOf(i), unit: -1}
		r.push(event{t: r.minute(s.p.Jobs[i].Submit), kind: evSubmit, a: int32(i)})
	}
	for len(r.events) > 0 {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		e := r.events.pop()
		if e.kind != evCheck {
			r.work--
		}
		r.now = e.t
		if err := r.handle(e); err != nil {
			return Result{}, err
		}
	}
	return r.result()
}

// perMinute turns interruptions per hour into an exact chance per minute,
// num/den = rate/60.
func perMinute(rate decimal.Decimal) [2]uint64 {
	den := decimal.NewFromInt(60)
	num := rate
	for !num.IsInteger() {
		num = num.Shift(1)
		den = den.Shift(1)
	}
	return [2]uint64{uint64(num.IntPart()), uint64(den.IntPart())}
}

func (r *run) minute(t time.Time) int64 { return int64(t.Sub(r.t0) / time.Minute) }
func (r *run) at(m int64) time.Time     { return r.t0.Add(time.Duration(m) * time.Minute) }

func (r *run) push(e event) {
	r.seq++
	e.seq = r.seq
	if e.kind != evCheck {
		r.work++
	}
	r.events.push(e)
}

// groupOf returns the queue (group) of job i: jobs with the same profile
// (GPUs, hours, checkpointing, data class, planned tier, team).
func (r *run) groupOf(i int) int32 {
	j := &r.s.p.Jobs[i]
	st := r.s.p.Settings
	tier := r.strategy.tier(j.Tier)
	ck := "nockpt"
	if j.Checkpointable {
		ck = "ckpt"
	}
	// The queue name holds only what policy reads, so verdicts are shared
	// across GPU counts and hours (policy reads neither).
	queue := "sim-" + j.Team + "-" + string(tier) + "-" + j.DataClass + "-" + ck
	key := queue + "/" + strconv.Itoa(j.GPUs) + "/" + strconv.FormatInt(j.Minutes, 10)
	if g, ok := r.groupIdx[key]; ok {
		return g
	}
	p := sluice.QueueProfile{Queue: queue, GPUModels: st.GPUModels, GPUsPerSlot: j.GPUs, HoursPerSlot: j.Hours,
		MaxSlots: st.MaxSlots, Checkpointable: j.Checkpointable, DataClass: j.DataClass, ExportApproved: st.ExportApproved,
		Tier: tier, Team: j.Team, MaxPricePerGPUHour: st.MaxPricePerGPUHour}
	if j.Checkpointable {
		p.CheckpointIntervalMinutes = st.CheckpointIntervalMinutes
	}
	g := int32(len(r.groups))
	r.groups = append(r.groups, &group{profile: p, policyKey: policyKey(p), first: i, blocked: map[offerSetKey]bool{}, last: map[offerSetKey]decisionState{}})
	r.groupIdx[key] = g
	return g
}

func (r *run) handle(e event) error {
	switch e.kind {
	case evSubmit:
		r.enqueue(int(e.a))
		r.dispatch(r.jobs[e.a].group)
	case evDone:
		js := &r.jobs[e.a]
		if js.gen != e.gen || js.done {
			return nil
		}
		r.finish(int(e.a))
	case evInterrupt:
		u := &r.units[e.a]
		if !u.alive || int32(u.start) != e.gen {
			return nil
		}
		r.interrupt(int(e.a))
	case evTermEnd:
		u := &r.units[e.a]
		if u.alive {
			r.closeUnit(int(e.a))
			r.dispatch(u.group)
		}
	case evCheck:
		g := r.groups[e.a]
		g.checkPending = false
		return r.decide(e.a)
	}
	return nil
}

// enqueue puts job i in the owned pool's queue and its group's queue, and
// arms its group's alarm.
func (r *run) enqueue(i int) {
	js := &r.jobs[i]
	js.waiting = true
	js.qgen++
	js.unit = -1
	r.global.push(qentry{int32(i), js.qgen})
	g := r.groups[js.group]
	g.waiting.push(qentry{int32(i), js.qgen})
	g.nWaiting++
	g.waitMinutes += r.s.p.Jobs[i].Minutes - js.saved
	if r.strategy != OwnedOnly && !g.checkPending {
		g.checkPending = true
		r.push(event{t: r.now + int64(r.s.p.Settings.BurstAfter/time.Minute), kind: evCheck, a: js.group})
	}
}

func (r *run) live(q qentry) bool {
	js := &r.jobs[q.job]
	return js.waiting && js.qgen == q.qgen
}

// start runs job i on the owned pool (u = -1) or on unit u.
func (r *run) start(i int, u int32) {
	js := &r.jobs[i]
	j := &r.s.p.Jobs[i]
	js.waiting = false
	g := r.groups[js.group]
	g.nWaiting--
	g.waitMinutes -= j.Minutes - js.saved
	if !js.started {
		js.started = true
		js.firstWait = r.now - r.minute(j.Submit)
	}
	js.unit, js.runStart = u, r.now
	if u < 0 {
		r.free -= j.GPUs
	} else {
		un := &r.units[u]
		un.busy++
		un.jobs = append(un.jobs, int32(i))
	}
	r.push(event{t: r.now + j.Minutes - js.saved, kind: evDone, a: int32(i), gen: js.gen})
}

// dispatch starts waiting jobs: on the owned pool in strict FIFO order (the
// oldest waiting job first; when it does not fit, nothing overtakes it; a
// job larger than the whole pool is skipped, it can only run elastic),
// then on group g's live units, oldest first.
func (r *run) dispatch(g int32) {
	for len(r.global) > 0 {
		q := r.global[0]
		if !r.live(q) {
			r.global.pop()
			continue
		}
		if r.s.p.Jobs[q.job].GPUs > r.owned {
			r.global.pop() // never fits the owned pool: it waits for elastic capacity only
			continue
		}
		if r.s.p.Jobs[q.job].GPUs > r.free {
			break
		}
		r.global.pop()
		r.start(int(q.job), -1)
	}
	r.dispatchUnits(g)
}

func (r *run) dispatchUnits(gi int32) {
	g := r.groups[gi]
	for _, ui := range g.units {
		u := &r.units[ui]
		for u.alive && u.busy < u.slots && len(g.waiting) > 0 {
			q := g.waiting[0]
			if !r.live(q) {
				g.waiting.pop()
				continue
			}
			js := &r.jobs[q.job]
			if u.end >= 0 && r.now+r.s.p.Jobs[q.job].Minutes-js.saved > u.end {
				break // a reservation does not start work it cannot finish in its term
			}
			g.waiting.pop()
			r.start(int(q.job), ui)
		}
	}
	r.releaseIdle(gi)
}

// releaseIdle releases group g's idle on-demand and spot units when nothing
// waits for them (the drain on an OK alarm).
func (r *run) releaseIdle(gi int32) {
	g := r.groups[gi]
	keep := g.units[:0]
	for _, ui := range g.units {
		u := &r.units[ui]
		if g.nWaiting == 0 && u.alive && u.busy == 0 && u.end < 0 {
			r.closeUnit(int(ui))
		}
		if u.alive {
			keep = append(keep, ui)
		}
	}
	g.units = keep
}

// closeUnit ends a unit's lease and bills on-demand and spot units for the
// minutes it was held (a reservation was billed its whole term when bought).
func (r *run) closeUnit(ui int) {
	u := &r.units[ui]
	u.alive = false
	if u.end < 0 {
		b := &r.buckets[u.bucket]
		b.minutes += r.now - u.start
		b.gpuMinutes += (r.now - u.start) * int64(u.gpus)
	}
	r.inUse[u.offerID]--
	if u.pool != "" {
		r.poolUse[u.pool] -= u.gpus
	}
	r.capVer++
}

func (r *run) finish(i int) {
	js := &r.jobs[i]
	j := &r.s.p.Jobs[i]
	js.done, js.end = true, r.now
	if js.unit < 0 {
		r.free += j.GPUs
		r.ownedGPUMinutes += (r.now - js.runStart) * int64(j.GPUs)
	} else {
		u := &r.units[js.unit]
		u.busy--
		u.jobs = slices.DeleteFunc(u.jobs, func(x int32) bool { return x == int32(i) })
	}
	if js.unit < 0 {
		// Owned capacity freed: any group's head job may start.
		r.dispatch(js.group)
	} else {
		r.dispatchUnits(js.group)
	}
}

// interrupt is the provider taking spot unit ui back: every job on it loses
// the work since its last checkpoint and goes back to the queue.
func (r *run) interrupt(ui int) {
	u := &r.units[ui]
	r.interruptions++
	jobs := slices.Clone(u.jobs)
	for _, i := range jobs {
		js := &r.jobs[i]
		j := &r.s.p.Jobs[i]
		progress := js.saved + (r.now - js.runStart)
		saved := int64(0)
		if iv := int64(r.groups[js.group].profile.CheckpointIntervalMinutes); j.Checkpointable && iv > 0 {
			saved = progress / iv * iv
		}
		r.reworkGPUMinutes += (progress - saved) * int64(j.GPUs)
		js.saved = saved
		js.gen++
		u.busy--
	}
	u.jobs = nil
	r.closeUnit(ui)
	for _, i := range jobs {
		r.enqueue(int(i))
	}
	r.dispatch(u.group)
}

// decide is one alarm evaluation for group gi: the production path (demand,
// policy verdicts, MakePlan), then the plan's lines become live units.
func (r *run) decide(gi int32) error {
	g := r.groups[gi]
	if r.strategy == OwnedOnly || g.nWaiting == 0 {
		return nil
	}
	now := r.at(r.now)
	epoch := r.s.p.Prices.At(now)
	if r.strategy == ReservationFirst {
		if err := r.reserve(gi, epoch, now); err != nil {
			return err
		}
		r.dispatchUnits(gi)
	}
	allowed := false
	if g.nWaiting > 0 {
		var err error
		if allowed, err = r.plan(gi, offerSetKey{epoch, r.strategy.markets()}, g.profile, g.nWaiting, r.liveSlots(g), now); err != nil {
			return err
		}
		r.dispatchUnits(gi)
	}
	// Still in ALARM: evaluate again after one period, unless no offer can
	// ever be allowed for this queue (policy refuses the whole set). When
	// nothing else is pending (no job running or arriving, no unit to end),
	// only a price change can change the answer: the next evaluation is then
	// at the next price epoch, or never.
	if g.nWaiting > 0 && allowed && !g.checkPending {
		next := r.now + int64(r.s.p.Settings.AlarmPeriod/time.Minute)
		if r.work == 0 {
			next = -1
			if e := epoch + 1; e < len(r.s.p.Prices.Epochs) {
				next = max(r.minute(r.s.p.Prices.Epochs[e].From), r.now+1)
			}
		}
		if next > 0 {
			g.checkPending = true
			r.push(event{t: next, kind: evCheck, a: gi})
		}
	}
	return nil
}

func (r *run) liveSlots(g *group) int {
	n := 0
	for _, ui := range g.units {
		if r.units[ui].alive {
			n += r.units[ui].slots
		}
	}
	return n
}

// reserve is reservation-first's capacity-block decision: when the group's
// waiting jobs fill k ≥ 1 slots for a whole term, it plans k slots of term
// hours over reserved and on-demand offers (the planner bills a block its
// whole term, on-demand the same hours) and the backlog runs on what is bought.
func (r *run) reserve(gi int32, epoch int, now time.Time) error {
	g := r.groups[gi]
	k := offerSetKey{epoch, maskReserved | maskOnDemand}
	set := r.s.offerSet(k)
	if len(set.terms) == 0 {
		return nil
	}
	// The shortest term that holds a job; a slot of it runs ⌊term ÷ job
	// hours⌋ jobs back to back, and k such slots are wanted while the
	// waiting jobs fill them.
	minutes := r.s.p.Jobs[g.first].Minutes
	term := 0
	for _, t := range set.terms {
		if int64(t)*60 >= minutes {
			term = t
			break
		}
	}
	if term == 0 {
		return nil
	}
	slots := g.nWaiting / int(int64(term)*60/minutes)
	if slots < 1 {
		return nil
	}
	p := g.profile
	p.HoursPerSlot = decimal.NewFromInt(int64(term))
	_, err := r.plan(gi, k, p, slots, 0, now)
	return err
}

// plan runs one decision and buys its lines. It reports whether policy
// allows any offer of the set for the profile.
func (r *run) plan(gi int32, k offerSetKey, p sluice.QueueProfile, depth, live int, now time.Time) (bool, error) {
	g := r.groups[gi]
	if g.blocked[k] {
		return false, nil
	}
	set := r.s.offerSet(k)
	verdicts, err := r.s.verdicts(r.ctx, k, p, g.policyKey, now)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(verdicts, func(v sluice.Verdict) bool { return v.Allow }) {
		g.blocked[k] = true
		return false, nil
	}
	st := decisionState{month: now.Year()*12 + int(now.Month()), depth: depth, live: live, capacity: r.capVer, budget: r.spendVer}
	if last, ok := g.last[k]; ok && last == st {
		r.skipped++
		return true, nil
	}
	g.last[k] = st

	// One buffer per run: MakePlan keeps no reference to its offers (the
	// plan copies what it needs), so the next decision may overwrite them.
	r.offerBuf = append(r.offerBuf[:0], set.offers...)
	offers := r.offerBuf
	for i := range offers {
		o := &offers[i]
		o.UnitsAvailable = max(o.UnitsAvailable-r.inUse[o.ID], 0)
		if o.Pool != "" && o.PoolGPUs > 0 {
			o.PoolGPUs -= r.poolUse[o.Pool]
			if o.PoolGPUs <= 0 {
				o.PoolGPUs, o.UnitsAvailable = 0, 0
			}
		}
	}
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	var headroom *sluice.Money
	if b, ok := r.s.p.Budgets[p.Tier]; ok {
		h := sluice.Money{Amount: b.Amount.Sub(r.spent[spendKey{p.Tier, month}]), Currency: b.Currency}
		headroom = &h
	}
	t0 := time.Now()
	plan, err := sluice.MakePlan(sluice.PlanInput{
		Demand: sluice.NewDemand(p, depth, live), Profile: p, Offers: offers, Verdicts: verdicts,
		BillingCurrency: r.s.p.BillingCurrency, FX: r.s.p.FX, InterruptionsPerHour: r.s.p.InterruptionsPerHour,
		Budget: headroom, Now: now,
	})
	r.s.PlanTime += time.Since(t0)
	if err != nil {
		return true, fmt.Errorf("simulate: planning %s at %s: %w", p.Queue, now.Format(time.RFC3339), err)
	}
	r.decisions++
	if len(plan.Lines) == 0 {
		return true, nil
	}
	sk := spendKey{p.Tier, month}
	r.spent[sk] = r.spent[sk].Add(plan.TotalExpectedCost.Amount)
	r.spendVer++
	for _, line := range plan.Lines {
		o := set.offers[set.index[line.OfferID]]
		for range line.Units {
			r.buy(gi, o, p.Tier, line.Slots/line.Units)
		}
	}
	return true, nil
}

// buy makes one live unit of offer o for group gi.
func (r *run) buy(gi int32, o sluice.Offer, tier sluice.Tier, slots int) {
	bk := bucketKey{tier: tier, provider: o.Provider, market: o.Market, price: o.UnitPrice.Amount.String(), currency: o.UnitPrice.Currency}
	bi, ok := r.bucketIx[bk]
	if !ok {
		bi = len(r.buckets)
		r.buckets = append(r.buckets, bucket{key: bk, price: o.UnitPrice})
		r.bucketIx[bk] = bi
	}
	ui := int32(len(r.units))
	u := unit{group: gi, offerID: o.ID, provider: o.Provider, market: o.Market, tier: tier, pool: o.Pool,
		gpus: o.GPUsPerUnit, slots: slots, start: r.now, end: -1, alive: true, bucket: bi}
	if o.Market == sluice.Reserved && o.TermHours > 0 {
		term := int64(o.TermHours) * 60
		u.end = r.now + term
		r.buckets[bi].minutes += term
		r.buckets[bi].gpuMinutes += term * int64(o.GPUsPerUnit)
		r.push(event{t: u.end, kind: evTermEnd, a: ui})
	}
	r.units = append(r.units, u)
	r.inUse[o.ID]++
	if o.Pool != "" {
		r.poolUse[o.Pool] += o.GPUsPerUnit
	}
	r.capVer++
	r.groups[gi].units = append(r.groups[gi].units, ui)
	if o.Market == sluice.Spot {
		if m := r.drawInterruption(o.Provider); m > 0 {
			r.push(event{t: r.now + m, kind: evInterrupt, a: ui, gen: int32(r.now)})
		}
	}
}

// maxDrawMinutes bounds the search for a spot unit's interruption (60 days).
const maxDrawMinutes = 60 * 24 * 60

// drawInterruption returns the minute (from now) at which a spot unit of
// provider is interrupted, or 0 for none within maxDrawMinutes: each minute
// is interrupted with the exact chance rate/60 (a Bernoulli trial on an
// integer draw, no binary floating point).
func (r *run) drawInterruption(provider string) int64 {
	rate, ok := r.rates[provider]
	if !ok || rate[0] == 0 {
		return 0
	}
	for m := int64(1); m <= maxDrawMinutes; m++ {
		if r.rng.Uint64N(rate[1]) < rate[0] {
			return m
		}
	}
	return 0
}
