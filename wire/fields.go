package wire

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fields reads typed members of a JSON object decoded by DecodeObject,
// keeping the first error: read every field, then check Err once. A member
// that is absent or null reads as the zero value (an error only when the
// field is required). Errors are CodeInvalidArgument naming the field.
// This is the one field reader of the venue: lobby requests, party frames
// and REST bodies all read through it (PROTOCOL.md "Errors").
type Fields struct {
	M   map[string]json.RawMessage
	Err *Error
}

// NewFields wraps the members of a decoded object.
func NewFields(m map[string]json.RawMessage) *Fields { return &Fields{M: m} }

// Fail records an invalid_argument error unless one is recorded already.
func (f *Fields) Fail(format string, args ...any) {
	if f.Err == nil {
		f.Err = Errorf(CodeInvalidArgument, format, args...)
	}
}

// Has reports whether key is present and not null.
func (f *Fields) Has(key string) bool {
	raw, ok := f.M[key]
	return ok && string(raw) != "null"
}

// String reads a string member; a required one must be present.
func (f *Fields) String(key string, required bool) string {
	if !f.Has(key) {
		if required {
			f.Fail("%s is required", key)
		}
		return ""
	}
	raw := f.M[key]
	if s, ok := plainString(raw); ok {
		return s
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		f.Fail("%s must be a string", key)
		return ""
	}
	return s
}

// plainString is the string a JSON string literal holds when it has no
// escape, quote or control byte inside and is valid UTF-8 (its bytes, as
// encoding/json would give them), without encoding/json's reflection; ok
// is false for anything else (the caller decodes it the long way).
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	in := raw[1 : n-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// NonEmpty reads a required string member that must not be "".
func (f *Fields) NonEmpty(key string) string {
	s := f.String(key, true)
	if f.Has(key) && s == "" {
		f.Fail("%s must not be empty", key)
	}
	return s
}

// IntIn reads an integer member in [lo, hi]; absent gives def. A quoted
// number ("5") is not an integer.
func (f *Fields) IntIn(key string, lo, hi, def int) int {
	if !f.Has(key) {
		return def
	}
	raw := f.M[key]
	if c := raw[0]; !(c == '-' || (c >= '0' && c <= '9')) {
		f.Fail("%s must be an integer", key)
		return def
	}
	// A JSON number that is not an int64 (a fraction, an exponent, too
	// large) is out of range, as the lobby has always said.
	i, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || i < int64(lo) || i > int64(hi) {
		f.Fail("%s must be an integer from %d to %d", key, lo, hi)
		return def
	}
	return int(i)
}

// Bool reads a boolean member; absent is false.
func (f *Fields) Bool(key string) bool {
	if !f.Has(key) {
		return false
	}
	var b bool
	if json.Unmarshal(f.M[key], &b) != nil {
		f.Fail("%s must be true or false", key)
	}
	return b
}

// Object reads an object member as raw JSON.
func (f *Fields) Object(key string, required bool) json.RawMessage {
	if !f.Has(key) {
		if required {
			f.Fail("%s is required", key)
		}
		return nil
	}
	raw := f.M[key]
	if len(raw) == 0 || raw[0] != '{' {
		f.Fail("%s must be an object", key)
		return nil
	}
	return raw
}

// Only refuses members other than allowed, naming the first unknown one in
// sorted order: a typo ("descripton") must not pass for an absent field.
// With nothing allowed (a route that takes no body, or {}), the message
// says so. It returns f.Err.
func (f *Fields) Only(allowed ...string) *Error {
	var unknown []string
	for k := range f.M {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	switch {
	case len(unknown) == 0:
	case len(allowed) == 0:
		slices.Sort(unknown)
		f.Fail("unknown field %q: this route takes no body (send none, or {})", unknown[0])
	default:
		slices.Sort(unknown)
		f.Fail("unknown field %q: this body takes only %s", unknown[0], strings.Join(allowed, ", "))
	}
	return f.Err
}
