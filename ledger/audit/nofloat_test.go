package audit

import (
	"testing"

	"github.com/sluicehq/sluice/internal/moneytest"
)

// TestNoFloat: no non-test file of the package touches float64 (the chart
// subpackage is the one drawing edge).
func TestNoFloat(t *testing.T) { moneytest.NoFloat(t) }
