package pricing

import (
	"errors"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// MaxExponent bounds the decimal exponent of a wire amount, so a token such as
// 1e999999999 is refused instead of expanding into a billion-digit number when
// printed or multiplied.
const MaxExponent = 30

// maxTokenLen bounds the length of a wire number token.
const maxTokenLen = 64

// WireAmount reads a price that a provider sends as a JSON number (RunPod,
// Vast.ai and Alibaba all send floats) as an exact decimal from the token's
// own text (gjson Result.Raw), never through binary floating point. present is false for a
// missing or null value. It fails on a token that is not a JSON number, is
// longer than 64 characters, has an exponent beyond ±MaxExponent, or is negative;
// the error text is short ("not a JSON number", "negative") so callers can
// prefix the field and value.
func WireAmount(r gjson.Result) (d decimal.Decimal, present bool, err error) {
	if !r.Exists() || r.Type == gjson.Null {
		return decimal.Decimal{}, false, nil
	}
	if r.Type != gjson.Number {
		return decimal.Decimal{}, true, errors.New("not a JSON number")
	}
	d, err = TextAmount(r.Raw)
	return d, true, err
}

// TextAmount reads a price that a provider sends as text (AWS: the EC2
// spotPrice XML element "0.087000", the Price List pricePerUnit.USD string
// "21.9576420000") as an exact decimal, with the same bounds as WireAmount:
// it fails on text longer than 64 characters, text that is not a decimal,
// an exponent beyond ±MaxExponent, or a negative amount. The error text is
// short ("not a decimal", "negative") so callers can prefix the field and value.
func TextAmount(s string) (decimal.Decimal, error) {
	if len(s) > maxTokenLen {
		return decimal.Decimal{}, errors.New("too long")
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, errors.New("not a decimal")
	}
	if e := d.Exponent(); e > MaxExponent || e < -MaxExponent {
		return decimal.Decimal{}, errors.New("out of range")
	}
	if d.IsNegative() {
		return decimal.Decimal{}, errors.New("negative")
	}
	return d, nil
}
