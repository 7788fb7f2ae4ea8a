// Package metrics writes CloudWatch Embedded Metric Format (EMF) lines: one
// JSON object per line on the function's stdout, which CloudWatch Logs turns
// into metrics with no API call and no extra IAM permission. Format:
// CloudWatch user guide, "Specification: Embedded metric format"
// (_aws.Timestamp in epoch milliseconds, _aws.CloudWatchMetrics[] with
// Namespace, Dimensions (arrays of up to 30 root member names) and Metrics
// (up to 100 {Name, Unit}); each named member is a root member of the object;
// metric values are JSON numbers).
package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

// Units used here (CloudWatch StandardUnit values).
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	None         Unit = "None"
)

// Metric is one value. Value is the number's JSON text, so an exact decimal
// (a money amount) is written as it is and never passes through binary
// floating point.
type Metric struct {
	Name  string
	Unit  Unit
	Value json.Number
}

// Int returns a metric with an integer value.
func Int(name string, unit Unit, v int64) Metric {
	return Metric{Name: name, Unit: unit, Value: json.Number(fmt.Sprint(v))}
}

// Limits of the EMF specification.
const (
	MaxDimensions = 30  // per dimension set
	MaxMetrics    = 100 // per directive
)

// numberText is a JSON number (RFC 8259), the only value EMF accepts for a metric.
var numberText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// Writer writes EMF lines to W (os.Stdout under Lambda). It is safe for
// concurrent use; each Emit writes exactly one line.
type Writer struct {
	W         io.Writer
	Namespace string
	// Now stamps each line (default time.Now).
	Now func() time.Time

	mu sync.Mutex
}

// ErrInvalid is wrapped by every error Emit returns for a line the EMF
// specification would reject (nothing is written then).
var ErrInvalid = errors.New("invalid EMF line")

// Emit writes one line: the metrics ms, aggregated by each dimension set in
// dims (every name in a set must be a key of props with a string value), with
// props as further root members (searchable in CloudWatch Logs Insights,
// e.g. the decision id). A metric name may not also be a key of props.
func (w *Writer) Emit(dims [][]string, ms []Metric, props map[string]any) error {
	if len(ms) == 0 || len(ms) > MaxMetrics {
		return fmt.Errorf("%w: %d metrics (want 1 to %d)", ErrInvalid, len(ms), MaxMetrics)
	}
	root := make(map[string]any, len(props)+len(ms)+1)
	for k, v := range props {
		root[k] = v
	}
	defs := make([]map[string]string, 0, len(ms))
	for _, m := range ms {
		if m.Name == "" || m.Name == "_aws" {
			return fmt.Errorf("%w: metric name %q", ErrInvalid, m.Name)
		}
		if _, dup := root[m.Name]; dup {
			return fmt.Errorf("%w: metric %s is also a property or another metric", ErrInvalid, m.Name)
		}
		if !numberText.MatchString(string(m.Value)) {
			return fmt.Errorf("%w: metric %s value %q is not a JSON number", ErrInvalid, m.Name, m.Value)
		}
		root[m.Name] = m.Value
		defs = append(defs, map[string]string{"Name": m.Name, "Unit": string(m.Unit)})
	}
	for _, set := range dims {
		if len(set) == 0 || len(set) > MaxDimensions {
			return fmt.Errorf("%w: dimension set of %d (want 1 to %d)", ErrInvalid, len(set), MaxDimensions)
		}
		for _, d := range set {
			if _, ok := props[d].(string); !ok {
				return fmt.Errorf("%w: dimension %s has no string value among the properties", ErrInvalid, d)
			}
		}
	}
	if dims == nil {
		dims = [][]string{}
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	root["_aws"] = map[string]any{
		"Timestamp": now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": w.Namespace, "Dimensions": dims, "Metrics": defs,
		}},
	}
	b, err := json.Marshal(root)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.W.Write(append(b, '\n'))
	return err
}
