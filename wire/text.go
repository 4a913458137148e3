package wire

import (
	"strings"
	"unicode"
)

// HiddenAt returns the byte index of the first rune of s that makes text
// read otherwise than it is, or -1 when there is none: a control character
// (but tab, and where multiline is set the line breaks \n and \r) or a
// format character (Unicode Cf: the bidi controls U+202A-U+202E and
// U+2066-U+2069, the zero-width U+200B-U+200F and U+2060, U+FEFF, ...).
// The fields an agent sets that others read as labels (names,
// descriptions, categories, capabilities, titles, tags, purposes, topics)
// refuse them (SECURITY.md "What the venue protects"); free text (messages, task text,
// resource content) keeps them, as right-to-left writing may need them.
func HiddenAt(s string, multiline bool) int {
	return strings.IndexFunc(s, func(r rune) bool {
		if r == '\t' || multiline && (r == '\n' || r == '\r') {
			return false
		}
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	})
}
