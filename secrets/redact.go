package secrets

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Redacted is what a Secret prints as, and what Redact puts in place of a value.
const Redacted = "[redacted]"

// minPrefix is the shortest leading part of a secret that Redact blanks on
// its own: error bodies are cut to a few hundred bytes before they are
// redacted, and the cut can fall inside an echoed key.
const minPrefix = 6

// Redact returns s with every occurrence of each non-empty secret replaced by
// "[redacted]", matching without regard to ASCII case (an error message may
// upper- or lower-case what it echoes). A secret of at least 6 characters is
// also blanked where only its first 6 or more characters appear (a body cut
// inside the key). Longer secrets are handled first, so a secret that
// contains another is blanked whole. Encoded echoes (base64, URL escapes) are
// not recognised.
func Redact(s string, secrets ...string) string {
	vs := slices.DeleteFunc(slices.Clone(secrets), func(v string) bool { return v == "" })
	slices.SortStableFunc(vs, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, v := range vs {
		s = redactOne(s, v)
	}
	return s
}

// redactOne blanks every case-insensitive match of v, or of a prefix of v at
// least minPrefix long (all of v when v is shorter), in s.
func redactOne(s, v string) string {
	need := min(len(v), minPrefix)
	var b strings.Builder
	for i := 0; i < len(s); {
		n := 0
		for n < len(v) && i+n < len(s) && lowerASCII(s[i+n]) == lowerASCII(v[n]) {
			n++
		}
		if n >= need {
			b.WriteString(Redacted)
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Secret is a credential value. It prints as "[redacted]" through fmt (every
// verb, including %v, %+v, %#v, %s, %q, %x and %d), encoding/json,
// encoding.TextMarshaler users and log/slog (LogValuer), also inside structs
// those walk. Reveal returns the value for the one place that sends it.
//
// Limits: string(s), reflection that reads the underlying string
// (encoding/gob, yaml), a Secret used as a map key in encoding/json (keys of
// string kind are written as they are, MarshalText is not asked) and fmt's
// %p (which reports a bad verb with the raw value) see the value.
type Secret string

// Reveal returns the value itself.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]".
func (Secret) String() string { return Redacted }

// GoString returns "[redacted]" (%#v).
func (Secret) GoString() string { return Redacted }

// Format writes "[redacted]" for every verb, so no verb (such as %d, which
// fmt would otherwise report as a bad verb printing the raw value) reaches
// the string.
func (Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", Redacted)
		return
	}
	_, _ = f.Write([]byte(Redacted))
}

// MarshalJSON returns "[redacted]" as a JSON string.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText returns "[redacted]" (map keys, slog's text handler).
func (Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue returns "[redacted]" for log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }
