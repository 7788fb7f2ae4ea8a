package sim

import (
	"fmt"
	"regexp"

	"github.com/shopspring/decimal"
)

// plainDecimal is the only number syntax the simulator's files accept: at
// most 9 integer digits and 10 decimals, no sign, no exponent. An exponent
// such as 1e999999999 parses, and then makes every comparison build a
// billion-digit integer.
var plainDecimal = regexp.MustCompile(`^[0-9]{1,9}(\.[0-9]{1,10})?$`)

// parseDecimal reads text as a plain, non-negative decimal.
func parseDecimal(text string) (decimal.Decimal, error) {
	if !plainDecimal.MatchString(text) {
		return decimal.Decimal{}, fmt.Errorf("%q is not a plain decimal (digits, an optional point and up to 10 decimals)", text)
	}
	return decimal.NewFromString(text)
}
