// Package pgjoin passes a list of texts to Postgres as one text parameter:
// the texts joined by the unit separator (0x1F), which the statement splits
// again with string_to_array (Split). The group-commit writer sends a
// batch's states, frames and event data this way: pgx encodes a text[]
// parameter element by element into a buffer it regrows from 256 bytes for
// every statement, which cost the venue about a fifth of its CPU in a wave
// of steps (BENCHMARKS.md, "Issue 21, ninth pass"); a joined text is one
// allocation of its exact size.
//
// The texts must not hold the separator: JSON text never does (a control
// character in a JSON string is escaped, RFC 8259 section 7), nor do the
// venue's ids and hashes. Join refuses any text that does.
package pgjoin

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Sep is the separator between the joined texts: the ASCII unit separator.
const Sep = '\x1f'

// ErrSeparator is returned by Join for a text holding Sep, or for a single
// empty text (string_to_array splits an empty text into no elements).
var ErrSeparator = errors.New("pgjoin: text holds the separator 0x1F or is a lone empty text")

// Split returns the SQL expression that splits parameter $n, a text Join
// made, back into a text[] of the joined texts, in order: Split(2) is
// string_to_array($2, E'\x1f').
func Split(n int) string { return fmt.Sprintf(`string_to_array($%d, E'\x1f')`, n) }

// Join returns the texts (encoded JSON, say) joined by Sep, copied once
// into a string of the exact size. It returns ErrSeparator (wrapped, with
// the index) for a text that holds Sep, and for a list of one empty text;
// no texts join to "" (an empty text[]).
func Join(texts [][]byte) (string, error) {
	if len(texts) == 1 && len(texts[0]) == 0 {
		return "", fmt.Errorf("text 0: %w", ErrSeparator)
	}
	size := max(len(texts)-1, 0)
	for _, t := range texts {
		size += len(t)
	}
	var b strings.Builder
	b.Grow(size)
	for i, t := range texts {
		if bytes.IndexByte(t, Sep) >= 0 {
			return "", fmt.Errorf("text %d: %w", i, ErrSeparator)
		}
		if i > 0 {
			b.WriteByte(Sep)
		}
		b.Write(t)
	}
	return b.String(), nil
}
