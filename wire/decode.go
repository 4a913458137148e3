package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode"
	"unicode/utf8"
)

// MaxDepth is how deeply a frame's JSON may nest (the frame object is depth
// 1; `terms` inside it may nest 4 more, DELEGATION.md "The checks").
const MaxDepth = 6

// DecodeObject parses data, a socket frame (or a frame POSTed to a REST
// twin), as one JSON object into its members. It refuses, with
// CodeInvalidJSON: anything that is not JSON, a value that is not an object,
// trailing data, a key repeated in the same object (also when the two differ
// only in case), and nesting deeper than MaxDepth. NaN and Infinity are not
// JSON and are refused by the parser ("frame is not valid JSON: …"). The
// messages call data "frame"; DecodeBody is the same for a REST body.
func DecodeObject(data []byte) (map[string]json.RawMessage, *Error) {
	return decodeObject(data, "frame")
}

// DecodeBody is DecodeObject for a REST request body: the same checks, its
// messages calling data "body".
func DecodeBody(data []byte) (map[string]json.RawMessage, *Error) {
	return decodeObject(data, "body")
}

// decodeObject is DecodeObject with what naming data in the messages.
func decodeObject(data []byte, what string) (map[string]json.RawMessage, *Error) {
	if handled, err := fastCheck(data); err != nil {
		return nil, err
	} else if !handled {
		if err := walk(data, MaxDepth, what); err != nil {
			return nil, err
		}
	}
	// The structure is an object: what fails here is a value the checks do
	// not parse (NaN, Infinity, a bad literal or number).
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, Errorf(CodeInvalidJSON, "%s is not valid JSON: %s", what, trimErr(err))
	}
	if m == nil {
		return nil, Errorf(CodeInvalidJSON, "%s must be a JSON object", what)
	}
	return m, nil
}

// checkStructure walks the token stream of a frame: object at the top, no
// duplicate keys, at most MaxDepth levels, nothing after the value.
func checkStructure(data []byte) *Error { return walk(data, MaxDepth, "frame") }

// walk checks the token stream of data: one JSON value (an object when
// what is set: a frame or a body, so named in the messages), no object
// anywhere repeating a key (folded as encoding/json folds), at most
// maxDepth levels, nothing after it. It is the one walker behind
// DecodeObject's slow path and CheckStrict.
func walk(data []byte, maxDepth int, what string) *Error {
	object, after := what != "", "value"
	if object {
		what, after = what+" ", "object"
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*level
	values := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) != 0 || values == 0 {
				return Errorf(CodeInvalidJSON, "%sis not valid JSON", what)
			}
			return nil
		}
		if err != nil {
			return Errorf(CodeInvalidJSON, "%sis not valid JSON: %s", what, trimErr(err))
		}
		if object && values == 0 && len(stack) == 0 {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return Errorf(CodeInvalidJSON, "%smust be a JSON object", what)
			}
		}
		if len(stack) == 0 && values > 0 {
			return Errorf(CodeInvalidJSON, "trailing data after the JSON %s", after)
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
			if len(stack) >= maxDepth {
				return Errorf(CodeInvalidJSON, "JSON nests deeper than %d levels", maxDepth)
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

// level is one open object or array while walking the tokens.
type level struct {
	object bool
	keys   map[string]struct{}
	expect bool // the next token in an object is a key
}

// markValue notes that the container on top of stack got a whole value.
func markValue(stack []*level) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].expect = true
	}
}

// foldKey maps a key to the smallest rune of each rune's Unicode simple-fold
// orbit, the folding encoding/json uses to match object keys to struct fields
// case-insensitively: two keys that fold the same would land in the same
// field of any struct decoder, so they count as the same key ("ſends" is
// "sends", the Kelvin sign is "k"). strings.ToLower misses such pairs.
func foldKey(key string) string {
	b := make([]byte, 0, len(key))
	for _, r := range key {
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

func trimErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
