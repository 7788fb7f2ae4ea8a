package runpod

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice"
)

// GraphQLError is a 200 answer carrying GraphQL "errors".
type GraphQLError struct {
	Op       string
	Messages []string
	class    error
}

func (e *GraphQLError) Error() string {
	return fmt.Sprintf("runpod %s: graphql errors: %s", e.Op, strings.Join(e.Messages, "; "))
}

// Unwrap is the sluice error class (see Classify).
func (e *GraphQLError) Unwrap() error { return e.class }

// Message fragments by class (compared in lower case). RunPod documents no
// error codes; these are judged from the answers seen in public clients.
var (
	capacityMsgs  = []string{"no longer any instances available", "not enough", "insufficient", "no instances available", "out of stock", "no gpus available"}
	quotaMsgs     = []string{"unauthorized", "api key", "spend limit", "balance", "forbidden", "permission", "quota", "not allowed"}
	transientMsgs = []string{"too many requests", "rate limit", "timeout", "timed out", "internal server error", "try again later"}
)

func has(s string, frags []string) bool {
	for _, f := range frags {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// Classify maps GraphQL error messages to a sluice class: a no-instances
// message → ErrInsufficientCapacity; key, spend-limit, balance or permission
// → ErrQuota; rate limit or timeout → ErrTransient. Any other error on the
// spot path (podRentInterruptable, which RunPod has been removing from its
// API) → ErrCapabilityUnavailable; on the on-demand path → ErrQuota.
func Classify(spot bool, messages []string) error {
	all := strings.ToLower(strings.Join(messages, "\n"))
	switch {
	case has(all, capacityMsgs):
		return sluice.ErrInsufficientCapacity
	case has(all, quotaMsgs):
		return sluice.ErrQuota
	case has(all, transientMsgs):
		return sluice.ErrTransient
	case spot:
		return sluice.ErrCapabilityUnavailable
	}
	return sluice.ErrQuota
}
