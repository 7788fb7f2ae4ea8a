package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The sandbox. Policy is data the compliance team edits; nothing in it may
// reach outside the process or depend on anything but its input and data:
// no network (http.send, net.*), no view of the process (opa.runtime, which
// exposes the environment), no randomness or signing that makes a decision
// impossible to replay (rand.intn, uuid.rfc4122, io.jwt.encode_sign*,
// providers.aws.sign_req). time.now_ns stays: evaluation pins it to the
// decision's clock (rego.EvalTime), so a replay sees the same time.
//
// The evaluator compiles with Capabilities (OPA's builtins for this version
// minus these), so such a call cannot compile; CheckBuiltins refuses it first
// with the file, line and builtin named.

// forbiddenReason says why a builtin is refused, or "" when it is allowed.
func forbiddenReason(name string) string {
	switch {
	case name == "http.send":
		return "it calls the network"
	case strings.HasPrefix(name, "net."):
		return "network builtins are not allowed (net.lookup_ip_addr resolves names over the network)"
	case name == "opa.runtime":
		return "it exposes the process environment and configuration"
	case name == "providers.aws.sign_req":
		return "it signs requests with credentials"
	case name == "time.now_ns":
		return "" // pinned to the decision clock
	}
	if b, ok := ast.BuiltinMap[name]; ok && b.Nondeterministic {
		return "it is non-deterministic, so a recorded decision could not be replayed"
	}
	return ""
}

var capsOnce = sync.OnceValue(func() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = slices.DeleteFunc(slices.Clone(caps.Builtins), func(b *ast.Builtin) bool {
		return forbiddenReason(b.Name) != ""
	})
	caps.AllowNet = []string{} // no host is reachable, even if a builtin slipped through
	return caps
})

// Capabilities are the builtins policy may use: this OPA version's, without
// the forbidden ones. Shared; do not modify.
func Capabilities() *ast.Capabilities { return capsOnce() }

// Forbidden lists the builtins of this OPA version that policy may not use, sorted.
func Forbidden() []string {
	var out []string
	for name := range ast.BuiltinMap {
		if forbiddenReason(name) != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ForbiddenBuiltinError is a policy file calling a builtin outside the sandbox.
type ForbiddenBuiltinError struct {
	File    string
	Line    int
	Builtin string
	Why     string
}

func (e *ForbiddenBuiltinError) Error() string {
	return fmt.Sprintf("%s:%d: builtin %s is not allowed in policy: %s", e.File, e.Line, e.Builtin, e.Why)
}

// CheckBuiltins returns one *ForbiddenBuiltinError per call of a forbidden
// builtin in modules (joined), sorted by file and line; nil when there is none.
func CheckBuiltins(modules map[string]*ast.Module) error {
	var found []*ForbiddenBuiltinError
	add := func(name string, loc *ast.Location, file string) {
		why := forbiddenReason(name)
		if why == "" {
			return
		}
		e := &ForbiddenBuiltinError{File: file, Builtin: name, Why: why}
		if loc != nil {
			e.Line = loc.Row
			if loc.File != "" {
				e.File = loc.File
			}
		}
		found = append(found, e)
	}
	for file, m := range modules {
		ast.WalkExprs(m, func(x *ast.Expr) bool {
			if x.IsCall() {
				add(x.Operator().String(), x.Location, file)
			}
			return false
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			switch v := t.Value.(type) {
			case ast.Call:
				if len(v) > 0 {
					add(v[0].String(), t.Location, file)
				}
			case ast.Ref:
				// A builtin named without being called (e.g. passed around) is refused too.
				if _, ok := ast.BuiltinMap[v.String()]; ok && v.IsGround() {
					add(v.String(), t.Location, file)
				}
			}
			return false
		})
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b *ForbiddenBuiltinError) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Builtin, b.Builtin)
	})
	found = slices.CompactFunc(found, func(a, b *ForbiddenBuiltinError) bool { return *a == *b })
	errs := make([]error, len(found))
	for i, e := range found {
		errs[i] = e
	}
	return joinLines(errs)
}

// joinLines is errors.Join whose Unwrap keeps each error (errors.As finds them).
func joinLines(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return multiError(errs)
}

type multiError []error

func (m multiError) Error() string {
	s := make([]string, len(m))
	for i, e := range m {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (m multiError) Unwrap() []error { return m }
