package ec2

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice"
)

// EC2 error codes by class (providers.md §1.1; AWS EC2 API "Error codes").
var (
	capacityCodes = map[string]bool{
		"InsufficientInstanceCapacity": true, "InsufficientCapacity": true, "InsufficientHostCapacity": true,
		"InsufficientReservedInstanceCapacity": true, "InsufficientCapacityOnOutpost": true,
		"SpotMaxPriceTooLow": true, "InvalidCapacityBlockOfferingId.Unavailable": true,
		"Server.InsufficientInstanceCapacity": true,
	}
	quotaCodes = map[string]bool{
		"InstanceLimitExceeded": true, "MaxSpotInstanceCountExceeded": true, "VcpuLimitExceeded": true,
		"UnauthorizedOperation": true, "AuthFailure": true, "OptInRequired": true, "PendingVerification": true,
		"InvalidParameterValue": true, "InvalidParameterCombination": true, "InvalidParameter": true,
		"MissingParameter": true, "InvalidAMIID.NotFound": true, "InvalidAMIID.Malformed": true,
		"ReservationCapacityExceeded": true, "InvalidCapacityReservationId.NotFound": true,
		"InvalidClientTokenId": true, "SignatureDoesNotMatch": true, "Blocked": true,
	}
	transientCodes = map[string]bool{
		"RequestLimitExceeded": true, "Throttling": true, "InternalError": true, "InternalFailure": true,
		"ServiceUnavailable": true, "Unavailable": true, "IdempotentParameterMismatch": false,
	}
	capabilityCodes = map[string]bool{"Unsupported": true, "UnsupportedOperation": true}
)

// classify wraps err (from an SDK call op) in its sluice error class:
// capacity codes → ErrInsufficientCapacity, quota / permission /
// configuration codes → ErrQuota, Unsupported → ErrCapabilityUnavailable,
// throttling, internal errors, HTTP 5xx, network errors and deadlines →
// ErrTransient. Any other API code is ErrQuota (a refusal we cannot fix by
// retrying). A context cancellation is returned as is.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		switch {
		case capacityCodes[code]:
			return fmt.Errorf("aws %s: %s: %s: %w", op, code, ae.ErrorMessage(), sluice.ErrInsufficientCapacity)
		case transientCodes[code]:
			return fmt.Errorf("aws %s: %s: %s: %w", op, code, ae.ErrorMessage(), sluice.ErrTransient)
		case capabilityCodes[code]:
			return fmt.Errorf("aws %s: %s: %s: %w", op, code, ae.ErrorMessage(), sluice.ErrCapabilityUnavailable)
		case quotaCodes[code]:
			return fmt.Errorf("aws %s: %s: %s: %w", op, code, ae.ErrorMessage(), sluice.ErrQuota)
		}
		if st := statusOf(err); st >= 500 {
			return fmt.Errorf("aws %s: %s: %s: %w", op, code, ae.ErrorMessage(), sluice.ErrTransient)
		}
		return fmt.Errorf("aws %s: %s: %s: %w", op, code, ae.ErrorMessage(), sluice.ErrQuota)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("aws %s: %w", op, err)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return fmt.Errorf("aws %s: %v: %w", op, err, sluice.ErrTransient)
	}
	if st := statusOf(err); st >= 500 {
		return fmt.Errorf("aws %s: HTTP %d: %v: %w", op, st, err, sluice.ErrTransient)
	}
	// Anything else (a response that would not parse, a connection cut):
	// the call's outcome is unknown, so it is retried after a Find.
	return fmt.Errorf("aws %s: %v: %w", op, err, sluice.ErrTransient)
}

// httpStatus is implemented by the SDK's response errors.
type httpStatus interface{ HTTPStatusCode() int }

// statusOf is the HTTP status of an SDK response error, 0 when none.
func statusOf(err error) int {
	var st httpStatus
	if errors.As(err, &st) {
		return st.HTTPStatusCode()
	}
	return 0
}
