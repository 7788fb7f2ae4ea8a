package autodl

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// CodeSuccess is the envelope code of a successful answer.
const CodeSuccess = "Success"

// MaxGPUCount bounds idle_gpu_num and total_gpu_num: a count above it is
// refused (no AutoDL region has a million cards).
const MaxGPUCount = 1_000_000

// APIError is an answer whose envelope code is not "Success". AutoDL keeps
// HTTP 200 for these (providers.md §4), e.g. {"code":"BadRequest","msg":"无当前资源访问权限"}.
type APIError struct {
	Region string
	Code   string
	Msg    string
}

// Error reads "autodl gpu_stock beijingDC1: code BadRequest (auth): 无当前资源访问权限".
func (e *APIError) Error() string {
	return fmt.Sprintf("autodl gpu_stock %s: code %s (%s): %s", e.Region, e.Code, e.ErrorClass(), snippet(e.Msg))
}

// Auth-, throttle- and outage-like words in an envelope's code (compared in
// lower case) or msg. AutoDL documents no error-code list; these are judged
// from the codes and messages seen (providers.md §4): BadRequest with
// 无当前资源访问权限 ("no permission for this resource", an account without
// enterprise verification) and 登录超时，请重新登录 ("login timed out", an
// expired token) are auth.
var (
	authCodes     = []string{"auth", "token", "login", "permission", "forbidden", "denied", "signature", "credential"}
	authMsgs      = []string{"权限", "登录", "登陆", "认证", "鉴权", "授权", "token", "unauthorized", "forbidden", "permission"}
	throttleCodes = []string{"ratelimit", "rate_limit", "toomany", "too_many", "throttl", "frequen"}
	throttleMsgs  = []string{"频繁", "限流", "过于频繁", "too many requests", "rate limit"}
	outageCodes   = []string{"internal", "unavailable", "busy", "servererror", "server_error"}
	outageMsgs    = []string{"系统繁忙", "服务繁忙", "系统错误", "服务器错误", "服务异常", "internal error"}
)

// ErrorClass is auth for a code or msg about tokens, login or permissions,
// throttled for one about request frequency, unavailable for an internal or
// busy error, and bad-response otherwise (e.g. RequestParameterIsWrong).
func (e *APIError) ErrorClass() string {
	code, msg := strings.ToLower(e.Code), strings.ToLower(e.Msg)
	has := func(s string, words []string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
	}
	switch {
	case has(code, authCodes) || has(msg, authMsgs):
		return pricing.ClassAuth
	case has(code, throttleCodes) || has(msg, throttleMsgs):
		return pricing.ClassThrottled
	case has(code, outageCodes) || has(msg, outageMsgs):
		return pricing.ClassUnavailable
	}
	return pricing.ClassBadResponse
}

// ParseGPUStock turns one region's gpu_stock answer into offers, pricing each
// GPU name from cfg.PriceList.
//
// The body is {"code":"Success","msg":"","data":[{"<gpu name>":{"idle_gpu_num":12,
// "total_gpu_num":80,…}},…]}: data is a list of single-key objects (every key
// of an element is read, should one carry several). Other members of the
// stock object (chip_corp, cpu_arch) are ignored. data null is an empty list.
// GPU names not in cfg.GPUNames are ignored.
//
// For each configured GPU name, in the order of the answer, and each n in
// cfg.GPUCounts with n ≤ idle_gpu_num, one on-demand offer:
//
//   - ID "autodl:<region>:<gpu name>:<n>x:on-demand", SKU the gpu name,
//     Region the region_sign (policy maps it to a zone), GPUsPerUnit n
//   - GPUModel from the name's memory size (see GPUModel)
//   - UnitPrice = list PerGPUHour × n in CNY, exactly; RawPrice the list
//     price's decimal text (yuan per GPU-hour), Basis sluice.PerGPUHour
//   - UnitsAvailable = idle_gpu_num / n (integer division). This is an
//     UPPER BOUND: AutoDL counts single idle cards, which may sit on different
//     machines, so 2 idle cards are not necessarily one 2-GPU container.
//   - Source "autodl gpu_stock <region> + price list <AsOf> (<list source>)":
//     the price is the list's, not the API's.
//
// Dropped (Ref "autodl:<region>:<gpu name>", the rest go on): a name whose
// model cannot be told ("A100" without a memory size), a name with no list
// price ("no list price for <name>") or a bad one, an idle_gpu_num or
// total_gpu_num that is not a non-negative integer ≤ MaxGPUCount (read from
// the token's text, a JSON number or a string of digits; never a float), idle
// more than total, and a name listed twice (a repeat with the same counts is
// dropped as a duplicate and the first kept; repeats that disagree are all
// dropped). An element of data that is not an object is dropped by position.
//
// Errors (nothing returned beside them): a body that is not a JSON object,
// a code that is not a string, a code other than "Success" (*APIError), and
// data missing or not a list.
func ParseGPUStock(body []byte, region string, now time.Time, cfg Config) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	cfg = cfg.withDefaults()
	op := "autodl gpu_stock " + region
	if !gjson.ValidBytes(body) {
		return nil, nil, fmt.Errorf("%s: not JSON: %s", op, snippet(string(body)))
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, nil, fmt.Errorf("%s: not a JSON object: %s", op, snippet(root.Raw))
	}
	code := root.Get("code")
	if code.Type != gjson.String {
		return nil, nil, fmt.Errorf("%s: code %s: not a string", op, rawOrMissing(code))
	}
	if code.String() != CodeSuccess {
		return nil, nil, &APIError{Region: region, Code: code.String(), Msg: root.Get("msg").String()}
	}
	data := root.Get("data")
	switch {
	case data.Type == gjson.Null && data.Exists():
		return nil, nil, nil
	case !data.IsArray():
		return nil, nil, fmt.Errorf("%s: data %s: not a list", op, rawOrMissing(data))
	}

	p := parser{cfg: cfg, now: now, region: region}
	var order []string
	entries := map[string][]entry{}
	i := 0
	data.ForEach(func(_, el gjson.Result) bool {
		pos := fmt.Sprintf("data[%d]", i)
		i++
		if !el.IsObject() {
			p.drop(Provider+":"+region+":"+pos, "stock entry %s: not an object", snippet(el.Raw))
			return true
		}
		el.ForEach(func(k, v gjson.Result) bool {
			name := k.String()
			if !slices.Contains(cfg.GPUNames, name) {
				return true
			}
			if _, seen := entries[name]; !seen {
				order = append(order, name)
			}
			entries[name] = append(entries[name], entry{pos: pos, v: v})
			return true
		})
		return true
	})
	for _, name := range order {
		p.gpu(name, entries[name])
	}
	return p.offers, p.dropped, nil
}

// entry is one listing of a GPU name in data.
type entry struct {
	pos string
	v   gjson.Result
}

// stock is what one listing says.
type stock struct {
	idle, total int
	hasTotal    bool
}

type parser struct {
	cfg     Config
	now     time.Time
	region  string
	offers  []sluice.Offer
	dropped []sluice.DroppedOffer
}

func (p *parser) drop(ref, format string, args ...any) {
	p.dropped = append(p.dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: fmt.Sprintf(format, args...)})
}

// gpu judges every listing of one configured GPU name and emits its offers.
func (p *parser) gpu(name string, listings []entry) {
	ref := Provider + ":" + p.region + ":" + name
	model, err := GPUModel(name)
	if err != nil {
		p.drop(ref, "%v", err)
		return
	}
	price, err := p.cfg.PriceList.lookup(name)
	if errors.Is(err, errNoPrice) {
		p.drop(ref, "no list price for %s", name)
		return
	}
	if err != nil {
		p.drop(ref, "%v", err)
		return
	}

	stocks := make([]stock, len(listings))
	for i, e := range listings {
		s, err := readStock(e.v)
		if err != nil {
			if len(listings) == 1 {
				p.drop(ref, "%v", err)
			} else {
				p.drop(ref, "%s listed %d times and %s: %v: all dropped", name, len(listings), e.pos, err)
			}
			return
		}
		stocks[i] = s
	}
	for i := 1; i < len(stocks); i++ {
		if stocks[i] != stocks[0] {
			p.drop(ref, "%s listed %d times with different counts (%s idle %d, %s idle %d): all dropped",
				name, len(listings), listings[0].pos, stocks[0].idle, listings[i].pos, stocks[i].idle)
			return
		}
	}
	for _, e := range listings[1:] {
		p.drop(ref, "duplicate: %s at %s repeats %s", name, e.pos, listings[0].pos)
	}
	p.emit(name, model, price, stocks[0].idle)
}

func (p *parser) emit(name, model string, price Price, idle int) {
	source := fmt.Sprintf("autodl gpu_stock %s + %s", p.region, p.cfg.PriceList.describe())
	for _, n := range p.cfg.GPUCounts {
		if n > idle {
			continue
		}
		p.offers = append(p.offers, sluice.Offer{
			ID:             fmt.Sprintf("%s:%s:%s:%dx:%s", Provider, p.region, name, n, sluice.OnDemand),
			Provider:       Provider,
			SKU:            name,
			GPUModel:       model,
			GPUsPerUnit:    n,
			Region:         p.region,
			Market:         sluice.OnDemand,
			UnitPrice:      price.PerGPUHour.MulInt(n),
			Basis:          sluice.PerGPUHour,
			RawPrice:       price.PerGPUHour.Amount.String(),
			UnitsAvailable: idle / n,
			Pool:           Provider + ":" + p.region + ":" + name, // every size draws on the same idle cards
			PoolGPUs:       idle,
			FetchedAt:      p.now,
			ExpiresAt:      p.now.Add(p.cfg.TTL),
			Source:         source,
		})
	}
}

// readStock reads one stock object: idle_gpu_num is required, total_gpu_num
// optional (checked when present).
func readStock(v gjson.Result) (stock, error) {
	if !v.IsObject() {
		return stock{}, fmt.Errorf("stock %s: not an object", snippet(v.Raw))
	}
	var s stock
	var err error
	if s.idle, err = count(v.Get("idle_gpu_num"), "idle_gpu_num"); err != nil {
		return stock{}, err
	}
	if t := v.Get("total_gpu_num"); t.Exists() {
		if s.total, err = count(t, "total_gpu_num"); err != nil {
			return stock{}, err
		}
		s.hasTotal = true
		if s.idle > s.total {
			return stock{}, fmt.Errorf("idle_gpu_num %d > total_gpu_num %d", s.idle, s.total)
		}
	}
	return s, nil
}

// countRE is a non-negative integer without sign, fraction, exponent or leading zeros.
var countRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,6})$`)

// count reads a card count from the token's text: a JSON number or a JSON
// string of digits, a non-negative integer ≤ MaxGPUCount.
func count(r gjson.Result, field string) (int, error) {
	var text string
	switch r.Type {
	case gjson.Number:
		text = r.Raw
	case gjson.String:
		text = r.String()
	default:
		return 0, fmt.Errorf("%s %s: not an integer", field, rawOrMissing(r))
	}
	if !countRE.MatchString(text) {
		return 0, fmt.Errorf("%s %s: not a non-negative integer ≤ %d", field, snippet(r.Raw), MaxGPUCount)
	}
	n, err := strconv.Atoi(text)
	if err != nil || n > MaxGPUCount {
		return 0, fmt.Errorf("%s %s: more than %d", field, r.Raw, MaxGPUCount)
	}
	return n, nil
}

func rawOrMissing(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	return snippet(r.Raw)
}

// snippet is s trimmed to 200 bytes (on a rune boundary).
func snippet(s string) string {
	s = strings.TrimSpace(s)
	const n = 200
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
