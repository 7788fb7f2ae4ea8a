package brokertest

import (
	"testing"

	"github.com/sluicehq/sluice/internal/moneytest"
)

// TestNoFloat: no non-test file of the package touches float64.
func TestNoFloat(t *testing.T) { moneytest.NoFloat(t) }
