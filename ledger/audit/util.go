package audit

import (
	"encoding/json"

	"github.com/shopspring/decimal"
)

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }

func jsonInto(b []byte, v any) error { return json.Unmarshal(b, v) }

func decimalInt(n int) decimal.Decimal { return decimal.NewFromInt(int64(n)) }
