// Package sim is a what-if simulator on Sluice's real decision code: it
// replays a job trace against an owned pool of GPUs plus elastic capacity
// bought, decision by decision, through sluice.NewDemand, the policy
// evaluator and sluice.MakePlan, and reports what each burst strategy costs
// and how long jobs wait. See README.md for the trace, price and settings
// formats and for the model's rules.
package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Job is one row of a trace: a training job that needs GPUs GPUs on one node
// for Minutes minutes of work.
type Job struct {
	// Submit is when the job entered the queue (UTC, whole minutes).
	Submit time.Time
	ID     string
	// GPUs per job (one node, 1..8).
	GPUs int
	// Minutes of work (the trace's hours × 60, a whole number).
	Minutes int64
	// Hours is the trace's own text, parsed exactly.
	Hours          decimal.Decimal
	Checkpointable bool
	// DataClass is cn-beijing-only, cn-domestic or public.
	DataClass string
	Tier      sluice.Tier
	Team      string
}

// TraceHeader is the header a trace CSV must start with.
var TraceHeader = []string{"submit", "job", "gpus", "hours", "checkpointable", "data_class", "tier", "team"}

// Trace limits: beyond them a value is a typo, not a job.
const (
	maxJobGPUs  = 8
	maxJobHours = 720
	// maxTraceSpan bounds first to last submit (a year and a day).
	maxTraceSpan = 366 * 24 * time.Hour
)

var dataClasses = map[string]bool{"cn-beijing-only": true, "cn-domestic": true, "public": true}

// ParseTrace reads a trace CSV (see README.md "Trace"). name is used in
// errors, which name the line and the column. One bad row refuses the whole
// trace. Jobs are returned sorted by (submit, job id).
func ParseTrace(r io.Reader, name string) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(TraceHeader)
	cr.Comment = '#'
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("trace %s: header: %w", name, err)
	}
	if !slices.Equal(head, TraceHeader) {
		return nil, fmt.Errorf("trace %s: header %q: want %q", name, strings.Join(head, ","), strings.Join(TraceHeader, ","))
	}
	var jobs []Job
	seen := map[string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		bad := func(col, format string, a ...any) error {
			return fmt.Errorf("trace %s: line %d: %s %q: %s", name, line, col, rec[slices.Index(TraceHeader, col)], fmt.Sprintf(format, a...))
		}
		var j Job
		if j.Submit, err = time.Parse(time.RFC3339, rec[0]); err != nil {
			return nil, bad("submit", "want RFC 3339, e.g. 2026-11-27T18:00:00Z")
		}
		j.Submit = j.Submit.UTC()
		if j.Submit.Second() != 0 || j.Submit.Nanosecond() != 0 {
			return nil, bad("submit", "want whole minutes (the simulation's clock ticks in minutes)")
		}
		if j.ID = rec[1]; j.ID == "" || seen[j.ID] {
			return nil, bad("job", "empty or repeated job id")
		}
		if why := badText(j.ID); why != "" {
			return nil, bad("job", "%s", why)
		}
		seen[j.ID] = true
		g, err := strconv.Atoi(rec[2])
		if err != nil || g < 1 || g > maxJobGPUs {
			return nil, bad("gpus", "want a whole number in 1..%d (a job runs on one node)", maxJobGPUs)
		}
		j.GPUs = g
		h, err := parseDecimal(rec[3])
		if err != nil {
			return nil, bad("hours", "not a plain decimal")
		}
		if !h.IsPositive() || h.GreaterThan(decimal.NewFromInt(maxJobHours)) {
			return nil, bad("hours", "want a decimal in (0, %d]", maxJobHours)
		}
		m := h.Mul(decimal.NewFromInt(60))
		if !m.IsInteger() {
			return nil, bad("hours", "hours × 60 must be whole minutes")
		}
		j.Hours, j.Minutes = h, m.IntPart()
		switch rec[4] {
		case "true":
			j.Checkpointable = true
		case "false":
		default:
			return nil, bad("checkpointable", "want true or false")
		}
		if j.DataClass = rec[5]; !dataClasses[j.DataClass] {
			return nil, bad("data_class", "want cn-beijing-only, cn-domestic or public")
		}
		switch t := sluice.Tier(rec[6]); t {
		case sluice.TierBase, sluice.TierElastic, sluice.TierEmergency:
			j.Tier = t
		default:
			return nil, bad("tier", "want base, elastic or emergency")
		}
		if j.Team = rec[7]; j.Team == "" {
			return nil, bad("team", "empty")
		}
		if why := badText(j.Team); why != "" {
			return nil, bad("team", "%s", why)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("trace %s: no jobs", name)
	}
	slices.SortStableFunc(jobs, func(a, b Job) int {
		return cmp.Or(a.Submit.Compare(b.Submit), cmp.Compare(a.ID, b.ID))
	})
	first, last := jobs[0].Submit, jobs[len(jobs)-1].Submit
	if last.After(first.Add(maxTraceSpan)) {
		return nil, fmt.Errorf("trace %s: submits span %s (%s → %s): at most %s", name, spanText(first, last),
			first.Format(time.RFC3339), last.Format(time.RFC3339), spanText(first, first.Add(maxTraceSpan)))
	}
	return jobs, nil
}

// spanText prints the time from a to b (a ≤ b) as days, hours and minutes,
// "3652058d 23h 59m". It counts Unix seconds, so it stays right where a
// time.Duration saturates (beyond about 292 years).
func spanText(a, b time.Time) string {
	s := b.Unix() - a.Unix()
	return fmt.Sprintf("%dd %dh %dm", s/86400, s%86400/3600, s%3600/60)
}

// badText says why a job id or team, printed in tables and CSV, is refused:
// invalid UTF-8, or a control, format (Cf) or line/paragraph-separator
// character (a newline would forge a row); "" when it is fine.
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for i, r := range s {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return fmt.Sprintf("%U at byte %d: control or format character", r, i)
		}
	}
	return ""
}
