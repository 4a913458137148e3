package wire

import (
	"encoding/json"
)

// MaxStrictDepth is how deeply a document read by [Unmarshal] may nest.
const MaxStrictDepth = 64

// CheckStrict reports, with CodeInvalidJSON, why data is not one strict JSON
// value: not JSON, trailing data, nesting deeper than MaxStrictDepth, or an
// object anywhere in it that repeats a key (also when the two differ only in
// case, as encoding/json would match both to one field). encoding/json keeps
// the last of two equal keys while other readers keep the first, so a
// document with both can say one thing to a person and another to the
// venue: everything the venue reads and then trusts (tokens, transcripts,
// key sets) is checked with this first (SECURITY.md).
func CheckStrict(data []byte) *Error { return walk(data, MaxStrictDepth, "") }

// Unmarshal is json.Unmarshal of a document that passes [CheckStrict]. The
// error is a *Error (CodeInvalidJSON) for a document that is not strict
// JSON, or the json package's error when it does not fit v.
func Unmarshal(data []byte, v any) error {
	if err := CheckStrict(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
