package negotiation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// marshal encodes a frame the venue built. A flat map of the value types
// frames use (string, integers, bool, nil, json.RawMessage) is written
// directly in RFC 8785 form: keys sorted (they are ASCII, so byte order is
// UTF-16 order), strings escaped as JCS escapes them, raw members (terms,
// already canonical) as they are; so chainHashOwn can hash it without JCS.
// Anything else (a nested struct in negotiation_started) goes through
// encoding/json without HTML escaping.
func marshal(v any) json.RawMessage {
	if m, ok := v.(map[string]any); ok {
		if b, ok := appendFlat(make([]byte, 0, 256), m); ok {
			return b
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("negotiation: marshal a frame the venue built: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// appendFlat writes m; ok is false when a value is of a type it does not
// write (the caller then uses encoding/json).
func appendFlat(b []byte, m map[string]any) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		switch x := m[k].(type) {
		case string:
			b = appendString(b, x)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case int:
			b = strconv.AppendInt(b, int64(x), 10)
		case bool:
			b = strconv.AppendBool(b, x)
		case nil:
			b = append(b, "null"...)
		case json.RawMessage:
			if len(x) == 0 || !json.Valid(x) {
				return nil, false
			}
			b = append(b, x...)
		default:
			return nil, false
		}
	}
	return append(b, '}'), true
}

// plainByte says which bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString writes s as a JSON string the way RFC 8785 does: only ", \
// and control characters escaped (\b \f \n \r \t short, the rest \u00XX);
// invalid UTF-8 becomes U+FFFD, as encoding/json makes it.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Bytes that stand for themselves go out as one run.
		j := i
		for j < len(s) && plainByte[s[j]] {
			j++
		}
		if j > i {
			b = append(b, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
