package secrets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
)

// GetSecretValueAPI is the one Secrets Manager call used
// (*secretsmanager.Client implements it).
type GetSecretValueAPI interface {
	GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, optFns ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)
}

// SecretsManager resolves name as the secret Prefix+name (version stage
// AWSCURRENT) and returns its whole SecretString: store a credential as a
// plain-text secret, not a JSON object. A binary-only or empty secret is an
// error.
type SecretsManager struct {
	Client GetSecretValueAPI
	// Prefix is prepended to every name, e.g. "sluice/".
	Prefix string
}

// NewSecretsManager returns a SecretsManager using the SDK's default
// configuration (region and credentials from the Lambda environment or the
// default chain). Pass config.LoadOptions functions to change it.
func NewSecretsManager(ctx context.Context, prefix string, optFns ...func(*config.LoadOptions) error) (*SecretsManager, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("secrets: loading AWS config: %w", err)
	}
	return &SecretsManager{Client: sm.NewFromConfig(cfg), Prefix: prefix}, nil
}

// Get returns the SecretString of the secret Prefix+name.
func (s *SecretsManager) Get(ctx context.Context, name string) (string, error) {
	id := s.Prefix + name
	out, err := s.Client.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", describe(id, err)
	}
	if out == nil || out.SecretString == nil {
		return "", &Error{Source: "secretsmanager", Name: id, Reason: "no SecretString (binary secrets are not supported)"}
	}
	if *out.SecretString == "" {
		return "", &Error{Source: "secretsmanager", Name: id, Reason: "empty SecretString"}
	}
	return *out.SecretString, nil
}

// describe turns an SDK error into an *Error that keeps what an operator
// needs (the AWS error code, a timeout, a network failure) and drops
// anything that may quote a response body.
func describe(id string, err error) error {
	e := &Error{Source: "secretsmanager", Name: id}
	var api smithy.APIError
	var de *smithy.DeserializationError
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.Reason, e.Err = "GetSecretValue: deadline exceeded", context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		e.Reason, e.Err = "GetSecretValue: canceled", context.Canceled
	case errors.As(err, &api):
		// The code only: AWS messages do not hold secret values, but a proxy
		// or a fake endpoint could echo anything.
		e.Reason = "GetSecretValue: " + clean(api.ErrorCode())
		if api.ErrorCode() == "ResourceNotFoundException" {
			e.Err = ErrNotFound
		}
	case errors.As(err, &de):
		e.Reason = "GetSecretValue: malformed response (body not shown: it may hold the secret)"
	case errors.As(err, &ne):
		e.Reason = "GetSecretValue: network: " + ne.Error()
	default:
		e.Reason = fmt.Sprintf("GetSecretValue failed (%T)", err)
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		e.Reason += fmt.Sprintf(" (HTTP %d)", status.HTTPStatusCode())
	}
	return e
}

// clean keeps an error code to [A-Za-z0-9._-], at most 64 characters.
func clean(code string) string {
	code = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return -1
	}, code)
	if len(code) > 64 {
		code = code[:64]
	}
	if code == "" {
		return "unknown error code"
	}
	return code
}
