package events

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrBadEvent is wrapped by every error returned for an event that cannot be
// turned into triggers (not JSON, unknown shape, a missing or invalid field).
// The CLI exits 2 on it: redelivering the same event will not help.
var ErrBadEvent = errors.New("bad event")

// ParseError says which field of which part of an event is wrong, and why.
// Its message reads `<Source>: <Field> "<Value>": <Err>`, for example
//
//	sns record 0: NewStateValue "PENDING": unknown state
//
// Field uses the AWS field names as sent on the wire (Sns.Message,
// NewStateValue, Trigger.Dimensions, ...). It unwraps to both [ErrBadEvent]
// and Err.
type ParseError struct {
	// Source is the part of the event: "event" for the envelope as a whole,
	// "sns record N" for the N-th (0-based) SNS record.
	Source string
	// Field is the AWS field path within Source; "" when Source as a whole is at fault.
	Field string
	// Value is the offending text, quoted (and cut to 120 characters) in the
	// message; "" shows no value.
	Value string
	// Err is what is wrong.
	Err error
}

// maxValueRunes bounds how much of an offending value goes into a message.
const maxValueRunes = 120

// Error implements error.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Value != "" {
		v := e.Value
		if utf8.RuneCountInString(v) > maxValueRunes {
			v = string([]rune(v)[:maxValueRunes]) + "..."
		}
		b.WriteString(" ")
		b.WriteString(strconv.Quote(v))
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid")
	}
	return b.String()
}

// Unwrap returns ErrBadEvent and Err, so errors.Is and errors.As see both.
func (e *ParseError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBadEvent}
	}
	return []error{ErrBadEvent, e.Err}
}

// bad builds a *ParseError whose Err is a plain message.
func bad(source, field, value, msg string) *ParseError {
	return &ParseError{Source: source, Field: field, Value: value, Err: errors.New(msg)}
}
