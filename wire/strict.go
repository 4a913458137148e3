package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
func CheckStrict(data []byte) *Error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*level
	values := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) != 0 || values == 0 {
				return Errorf(CodeInvalidJSON, "not valid JSON")
			}
			return nil
		}
		if err != nil {
			return Errorf(CodeInvalidJSON, "not valid JSON: %s", trimErr(err))
		}
		if len(stack) == 0 && values > 0 {
			return Errorf(CodeInvalidJSON, "trailing data after the JSON value")
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expect {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				markValue(stack)
				if len(stack) == 0 {
					values++
				}
				continue
			}
			key, _ := tok.(string)
			folded := foldKey(key)
			if _, dup := top.keys[folded]; dup {
				return Errorf(CodeInvalidJSON, "duplicated key %q", key)
			}
			top.keys[folded] = struct{}{}
			top.expect = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= MaxStrictDepth {
				return Errorf(CodeInvalidJSON, "JSON nests deeper than %d levels", MaxStrictDepth)
			}
			l := &level{object: d == '{', expect: d == '{'}
			if l.object {
				l.keys = map[string]struct{}{}
			}
			stack = append(stack, l)
		case '}', ']':
			stack = stack[:len(stack)-1]
			markValue(stack)
			if len(stack) == 0 {
				values++
			}
		default: // a scalar
			markValue(stack)
			if len(stack) == 0 {
				values++
			}
		}
	}
}

// Unmarshal is json.Unmarshal of a document that passes [CheckStrict]. The
// error is a *Error (CodeInvalidJSON) for a document that is not strict
// JSON, or the json package's error when it does not fit v.
func Unmarshal(data []byte, v any) error {
	if err := CheckStrict(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
