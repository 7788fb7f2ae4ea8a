package aliyun

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/placement"
)

// APIError is an ECS error answer {"RequestId","HostId","Code","Message"}.
type APIError struct {
	Action    string
	Status    int
	Code      string
	Message   string
	RequestID string
	class     error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("aliyun %s: HTTP %d: %s: %s (RequestId %s)", e.Action, e.Status, e.Code, e.Message, e.RequestID)
}

// Unwrap is the sluice error class (see Classify).
func (e *APIError) Unwrap() error { return e.class }

// Code prefixes by class (providers.md §5 and the ECS error center; codes are
// matched as the whole code or its prefix before a ".").
var (
	capacityCodes = []string{"OperationDenied.NoStock", "Zone.NotOnSale", "InvalidSpotPriceLimit.LowerThanPublicPrice",
		"InvalidResourceType.NotSupported", "ResourceNotAvailable", "OperationDenied.ZoneNotAllowed", "InvalidInstanceType.ZoneNotSupported"}
	transientCodes = []string{"Throttling", "ServiceUnavailable", "InternalError", "UnknownError", "LastTokenProcessing",
		"IdempotenceProcessing", "OperationConflict"}
	capabilityCodes = []string{"InvalidSpotStrategy.NotSupported", "InvalidSpotDuration.NotSupported"}
)

func hasCode(code string, list []string) bool {
	for _, p := range list {
		if code == p || strings.HasPrefix(code, p+".") {
			return true
		}
	}
	return false
}

// Classify maps an ECS error code to its sluice class: no stock, a zone not on
// sale or a SpotPriceLimit under the current spot price →
// ErrInsufficientCapacity; Throttling*, ServiceUnavailable*, InternalError*,
// idempotence-in-progress → ErrTransient; a spot strategy not supported →
// ErrCapabilityUnavailable; everything else (QuotaExceed*, Forbidden*,
// InvalidParameter*, InvalidAccessKeyId*, …) → ErrQuota. Without a code, the
// HTTP status decides (placement.StatusClass).
func Classify(code string, status int) error {
	switch {
	case code == "":
		return placement.StatusClass(status)
	case hasCode(code, capacityCodes):
		return sluice.ErrInsufficientCapacity
	case hasCode(code, transientCodes):
		return sluice.ErrTransient
	case hasCode(code, capabilityCodes):
		return sluice.ErrCapabilityUnavailable
	}
	return sluice.ErrQuota
}

// ParseError reads an ECS error body; ok is false when body is not one.
func ParseError(action string, status int, body []byte) (*APIError, bool) {
	if !gjson.ValidBytes(body) {
		return nil, false
	}
	root := gjson.ParseBytes(body)
	code := root.Get("Code")
	if !root.IsObject() || code.Type != gjson.String || code.String() == "" {
		return nil, false
	}
	return &APIError{Action: action, Status: status, Code: code.String(), Message: root.Get("Message").String(),
		RequestID: root.Get("RequestId").String(), class: Classify(code.String(), status)}, true
}
