package negotiation

import (
	"testing"
	"unicode/utf8"
)

// appendStringByByte is appendString as it was written before it copied
// runs (one byte at a time): the reference the runs must agree with.
func appendStringByByte(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c >= 0x20:
				b = append(b, c)
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

var appendStringCases = []string{
	"", "plain", `quote " backslash \ end\`, "\x00\x01\x1f\x7f", "line\nbreak\ttab\rcr\b\f",
	"😀 émoji\u2028", "bad \xff\xfe utf-8 \xe2\x82", "\"", "\\", "a\"b\\c\nd",
}

func TestAppendStringRuns(t *testing.T) {
	t.Parallel()
	for _, s := range appendStringCases {
		if got, want := string(appendString([]byte("x"), s)), string(appendStringByByte([]byte("x"), s)); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range appendStringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), string(appendStringByByte(nil, s)); got != want {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// BenchmarkAppendString is the content of a load generator's message.
func BenchmarkAppendString(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendString(buf[:0], "bench:1764576000000000000 lorem ipsum dolor sit amet")
	}
}
