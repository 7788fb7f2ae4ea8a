// Package secrets resolves provider credentials by name: from the
// environment when Sluice runs locally (Env), from AWS Secrets Manager when
// it runs as a Lambda function (SecretsManager), or from several in turn
// (Chain). It also keeps resolved values out of logs, errors and JSON:
// Secret prints as "[redacted]" everywhere fmt, encoding/json and log/slog
// look, and Redact blanks known values out of any text.
//
// Names are the ones the config gives (providers.<p>.credential_env and
// secret_env, e.g. "RUNPOD_API_KEY"): the environment variable locally, the
// secret name after a prefix in Secrets Manager ("sluice/RUNPOD_API_KEY").
//
// Errors returned by a Resolver name the secret and what went wrong but
// never carry a resolved value, nor the text of a provider response that
// might hold one (an unparsable Secrets Manager answer is reported as
// "malformed response", without its body).
package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Resolver returns the value of the secret called name.
type Resolver interface {
	Get(ctx context.Context, name string) (string, error)
}

// ErrNotFound is wrapped by every error that means "this resolver has no
// secret of that name" (an unset environment variable,
// ResourceNotFoundException); Chain then tries the next resolver.
var ErrNotFound = errors.New("secret not found")

// Error is a failed resolution. It carries no secret value and does not wrap
// the provider's own error (whose text may quote a response body); Unwrap
// gives ErrNotFound, a context error, or nil.
type Error struct {
	Source string // "env", "secretsmanager", "chain"
	Name   string // the name asked for (the secret id for Secrets Manager)
	Reason string // e.g. "ResourceNotFoundException", "not set", "malformed response"
	Err    error  // ErrNotFound, context.Canceled, context.DeadlineExceeded or nil
}

func (e *Error) Error() string {
	return fmt.Sprintf("secrets: %s %q: %s", e.Source, e.Name, e.Reason)
}

// Unwrap returns ErrNotFound or a context error (never the provider error).
func (e *Error) Unwrap() error { return e.Err }

// Env resolves names as environment variables. An unset or empty variable
// is ErrNotFound (an empty credential is never useful).
type Env struct {
	// Getenv reads a variable (nil: os.Getenv).
	Getenv func(string) string
}

// Get returns the variable name.
func (e Env) Get(_ context.Context, name string) (string, error) {
	get := e.Getenv
	if get == nil {
		get = os.Getenv
	}
	if v := get(name); v != "" {
		return v, nil
	}
	return "", &Error{Source: "env", Name: name, Reason: "not set", Err: ErrNotFound}
}

// Chain asks each resolver in order and returns the first value found. A
// resolver that does not have the secret (ErrNotFound) or fails is skipped;
// when none has it, the error lists every resolver's reason and wraps
// ErrNotFound only if all of them said not found.
type Chain []Resolver

// Get returns the first value any resolver has for name.
func (c Chain) Get(ctx context.Context, name string) (string, error) {
	var reasons []string
	allNotFound := true
	for _, r := range c {
		v, err := r.Get(ctx, name)
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return "", &Error{Source: "chain", Name: name, Reason: ctx.Err().Error(), Err: ctx.Err()}
		}
		allNotFound = allNotFound && errors.Is(err, ErrNotFound)
		reasons = append(reasons, err.Error())
	}
	e := &Error{Source: "chain", Name: name, Reason: "no resolver has it"}
	if len(reasons) > 0 {
		e.Reason += " (" + strings.Join(reasons, "; ") + ")"
	}
	if allNotFound {
		e.Err = ErrNotFound
	}
	return "", e
}

// Values are resolved secrets by name, for code that reads credentials with
// a getenv-style function (app.Options.Getenv).
type Values map[string]Secret

// Resolve asks r once for every non-empty name (duplicates once) and returns
// the values found, and an error joining each failure (nil when all were
// found; errors.Is(err, ErrNotFound) when one was missing). The values found
// are returned either way, so a caller may go on without the missing ones.
func Resolve(ctx context.Context, r Resolver, names ...string) (Values, error) {
	out := Values{}
	tried := map[string]bool{}
	var errs []error
	for _, n := range names {
		if tried[n] || n == "" {
			continue
		}
		tried[n] = true
		v, err := r.Get(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[n] = Secret(v)
	}
	return out, errors.Join(errs...)
}

// Getenv returns the value resolved for name, or "" (the os.Getenv shape).
func (v Values) Getenv(name string) string { return v[name].Reveal() }

// Secrets returns every value, for Redact.
func (v Values) Secrets() []string {
	out := make([]string, 0, len(v))
	for _, s := range v {
		out = append(out, s.Reveal())
	}
	return out
}
