package sluice

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/shopspring/decimal"
)

// Money is an exact decimal amount in an ISO 4217 currency. It never passes
// through float64. In JSON it is {"amount":"1.39","currency":"USD"}, the
// amount a decimal string holding every digit (no rounding on output).
type Money struct {
	Amount   decimal.Decimal
	Currency string
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// NewMoney parses amount text (as sent on the wire) in currency.
// It fails on text that is not a plain decimal, on a negative amount and on a
// currency that is not three upper-case letters (ISO 4217 form).
func NewMoney(amount, currency string) (Money, error) {
	if !currencyRE.MatchString(currency) {
		return Money{}, fmt.Errorf("currency %q: not an ISO 4217 code", currency)
	}
	d, err := decimal.NewFromString(amount)
	if err != nil {
		return Money{}, fmt.Errorf("amount %q: not a decimal", amount)
	}
	if d.IsNegative() {
		return Money{}, fmt.Errorf("amount %q: negative", amount)
	}
	return Money{Amount: d, Currency: currency}, nil
}

// MustMoney is NewMoney for constants in tests and defaults; it panics on bad input.
func MustMoney(amount, currency string) Money {
	m, err := NewMoney(amount, currency)
	if err != nil {
		panic(err)
	}
	return m
}

// Zero reports whether the amount is zero (also true for the zero Money).
func (m Money) Zero() bool { return m.Amount.IsZero() }

// IsSet reports whether m carries a currency (the zero Money does not).
func (m Money) IsSet() bool { return m.Currency != "" }

// Mul returns m × q, exactly.
func (m Money) Mul(q decimal.Decimal) Money { return Money{m.Amount.Mul(q), m.Currency} }

// MulInt returns m × n, exactly.
func (m Money) MulInt(n int) Money { return m.Mul(decimal.NewFromInt(int64(n))) }

// Add returns m + o; both must be in the same currency (it panics otherwise:
// a mixed-currency sum is a programming error, convert first).
func (m Money) Add(o Money) Money {
	if m.Currency == "" {
		return o
	}
	if o.Currency != "" && o.Currency != m.Currency {
		panic(fmt.Sprintf("sluice: adding %s to %s", o.Currency, m.Currency))
	}
	return Money{m.Amount.Add(o.Amount), m.Currency}
}

// Cmp compares amounts of the same currency: -1, 0 or +1.
func (m Money) Cmp(o Money) int { return m.Amount.Cmp(o.Amount) }

// String is "1.39 USD".
func (m Money) String() string { return m.Amount.String() + " " + m.Currency }

type moneyJSON struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// MarshalJSON writes the exact amount as a string.
func (m Money) MarshalJSON() ([]byte, error) {
	if m.Currency == "" {
		return []byte("null"), nil
	}
	return json.Marshal(moneyJSON{m.Amount.String(), m.Currency})
}

// UnmarshalJSON reads {"amount":"…","currency":"…"} (or null).
func (m *Money) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = Money{}
		return nil
	}
	var j moneyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	v, err := NewMoney(j.Amount, j.Currency)
	if err != nil {
		return err
	}
	*m = v
	return nil
}
