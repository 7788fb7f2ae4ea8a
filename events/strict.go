package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// maxNesting bounds how deeply objects and arrays may nest in an event or in
// an Sns.Message document. Real alarm events nest about 7 levels; anything
// deeper is refused rather than walked.
const maxNesting = 64

// dupFreeExact lists the objects (by key path) whose keys are compared exactly
// rather than case-insensitively: SNS message attribute names are
// case-sensitive and are decoded into a map, not a struct.
func dupFreeExact(path string) bool {
	return path == "Sns.MessageAttributes" || strings.HasSuffix(path, ".Sns.MessageAttributes")
}

// frame is one open object or array during checkStrictJSON's walk.
type frame struct {
	object    bool
	path      string            // key path of this object or array ("" for the root)
	expectKey bool              // object: the next token is a key (or '}')
	key       string            // object: the key whose value comes next
	index     int               // array: index of the next element
	keys      map[string]bool   // object: keys seen, to catch exact repeats
	folded    map[string]string // object: foldKey(key) → key, to catch repeats up to case
	exact     bool              // object: compare keys exactly only (see dupFreeExact)
}

// childPath is the key path of the value that comes next inside f.
func (f *frame) childPath() string {
	if !f.object {
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	}
	if f.path == "" {
		return f.key
	}
	return f.path + "." + f.key
}

// valueDone moves f past one value.
func (f *frame) valueDone() {
	if f.object {
		f.expectKey = true
	} else {
		f.index++
	}
}

// checkStrictJSON walks a JSON document (already known to be valid) with
// encoding/json's token stream and refuses
//
//   - any object key that appears twice in the same object — encoding/json
//     would silently keep the last one — or twice up to case (encoding/json
//     matches struct fields case-insensitively, so "AlarmArn" and "alarmArn"
//     are the same field to it); the error names the key path, e.g.
//     duplicate key "Trigger.Dimensions[0].name";
//   - objects and arrays nested deeper than maxNesting.
//
// The walk is iterative: its stack is bounded by maxNesting, whatever the input.
func checkStrictJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // no float conversion of numbers we only skip
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					stack[len(stack)-1].valueDone()
				}
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return fmt.Errorf("not JSON: object key %v is not a string", tok)
			}
			top.key, top.expectKey = key, false
			if top.keys[key] {
				return fmt.Errorf("duplicate key %q", top.childPath())
			}
			top.keys[key] = true
			if !top.exact {
				f := foldKey(key)
				if prev, ok := top.folded[f]; ok {
					return fmt.Errorf("duplicate key %q (same field as %q to a case-insensitive decoder)", top.childPath(), prev)
				}
				top.folded[f] = key
			}
			continue
		}
		d, isDelim := tok.(json.Delim)
		switch {
		case isDelim && (d == '{' || d == '['):
			if len(stack) >= maxNesting {
				where := "the top level"
				if top != nil {
					where = strconv.Quote(top.childPath())
				}
				return fmt.Errorf("nested deeper than %d levels at %s", maxNesting, where)
			}
			path := ""
			if top != nil {
				path = top.childPath()
			}
			f := &frame{object: d == '{', path: path, expectKey: d == '{'}
			if f.object {
				f.keys = map[string]bool{}
				f.exact = dupFreeExact(path)
				if !f.exact {
					f.folded = map[string]string{}
				}
			}
			stack = append(stack, f)
		case isDelim: // ']' (a '}' is handled above, where a key is expected)
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].valueDone()
			}
		default: // a scalar value
			if top != nil {
				top.valueDone()
			}
		}
	}
}

// foldKey maps s to a canonical form such that foldKey(a) == foldKey(b)
// exactly when strings.EqualFold(a, b) (simple Unicode case folding, the rule
// encoding/json uses to match keys to struct fields): every rune becomes the
// smallest rune of its SimpleFold orbit.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}
