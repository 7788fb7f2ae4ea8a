package metrics

import (
	"testing"

	"github.com/sluicehq/sluice/internal/moneytest"
)

// TestNoFloat: no non-test file of the package touches float64 (ExpectedCost
// is written from the decimal's text).
func TestNoFloat(t *testing.T) { moneytest.NoFloat(t) }
