package memory

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// transcript is one negotiation's stored transcript in a form the garbage
// collector does not scan: a pointer-free record per entry and byte chunks
// holding the entries' bytes, instead of a negotiation.Entry (5 pointers)
// plus a Frame and a Hash object per entry. Under load the transcripts are
// most of the live heap, and the mark phase (with its assists on the
// frames' path) scans every pointerful object it holds.
//
// Entries are rebuilt on read (since). The chunks are append-only: bytes
// once written are never changed, moved or reused, so a rebuilt Frame may
// be a sub-slice of a chunk. The zero value is an empty transcript.
type transcript struct {
	// recs holds one record per entry, seq ascending. entryRec has no
	// pointers, so the backing array is noscan.
	recs []entryRec
	// chunks is the arena: each entry's Frame, Hash, Type and From bytes
	// back to back, entries in recs' order, an entry whole in one chunk.
	// A chunk ([]byte, noscan) is filled up to its capacity and never
	// grown, so nothing is ever copied; a new chunk is twice the size of
	// the last, from firstChunk up to maxChunk bytes (or one entry's size
	// when larger). One pointer per chunk, not per entry.
	chunks [][]byte
	// locs holds the locations of At other than UTC and Local, in order of
	// first use: entryRec.loc-locOther indexes it. Usually empty.
	locs []*time.Location
}

// The sizes of the arena's chunks, in bytes (each a size class of the Go
// allocator, so no rounding): a negotiation_message is about 400 bytes
// with its hash, and a transcript holds up to
// negotiation.MaxTranscriptFrames (2,000) frames plus its ending, so a
// long transcript is some 50 chunks. The free tail of a room's last chunk
// is at most maxChunk: 64 KiB chunks left ~100 bytes of it per entry in
// 500-frame rooms (BenchmarkTranscriptRetained's live-B/entry), more than
// the []negotiation.Entry form's growth slack; 16 KiB, ~20.
const (
	firstChunk = 1 << 10
	maxChunk   = 16 << 10
)

// entryRec is one transcript entry without pointers (48 bytes on 64-bit).
// Its bytes are chunks[chunk][off:], in the order Frame, Hash, Type, From,
// of the lengths below.
type entryRec struct {
	seq   int64 // Entry.Seq
	sec   int64 // Entry.At: seconds since 1970-01-01 UTC (time.Time.Unix)
	nsec  int32 // Entry.At: nanoseconds within sec, [0, 1e9)
	loc   int32 // Entry.At's location: locUTC, locLocal, or locOther+i for locs[i]
	chunk int32 // index in chunks of the entry's bytes
	off   int32 // byte offset in that chunk of the entry's Frame
	// Byte lengths of Frame (-1: Frame is nil), Hash, Type and From.
	frame, hash, typ, from int32
}

// The location codes of entryRec.loc.
const (
	locUTC   = 0 // time.UTC (a time.Time whose location is nil)
	locLocal = 1 // time.Local
	locOther = 2 // transcript.locs[loc-locOther]
)

// size is the arena bytes of e.
func size(e *negotiation.Entry) int { return len(e.Frame) + len(e.Hash) + len(e.Type) + len(e.From) }

// check reports why e cannot be stored: bytes too many for entryRec's
// 32-bit lengths and offsets (frames are far smaller; this only keeps
// them honest).
func check(e *negotiation.Entry) error {
	if n := size(e); n > math.MaxInt32 {
		return fmt.Errorf("seq %d: %d bytes, more than the store's %d", e.Seq, n, math.MaxInt32)
	}
	return nil
}

// append stores es, which check accepted and which follow the stored
// entries in seq order. It copies their bytes: es keeps no part of the
// transcript and the transcript none of es.
func (t *transcript) append(es []negotiation.Entry) {
	for i := range es {
		e := &es[i]
		k := t.reserve(size(e))
		c := t.chunks[k]
		r := entryRec{seq: e.Seq, sec: e.At.Unix(), nsec: int32(e.At.Nanosecond()), loc: t.locCode(e.At.Location()),
			chunk: int32(k), off: int32(len(c)), frame: int32(len(e.Frame)), hash: int32(len(e.Hash)), typ: int32(len(e.Type)), from: int32(len(e.From))}
		if e.Frame == nil {
			r.frame = -1
		}
		c = append(c, e.Frame...) // within c's capacity: never moves
		c = append(c, e.Hash...)
		c = append(c, e.Type...)
		c = append(c, e.From...)
		t.chunks[k] = c
		t.recs = append(t.recs, r)
	}
}

// reserve returns the index of a chunk with room for n more bytes: the
// last one, or a new one.
func (t *transcript) reserve(n int) int {
	next := firstChunk
	if k := len(t.chunks); k > 0 {
		last := t.chunks[k-1]
		if cap(last)-len(last) >= n {
			return k - 1
		}
		next = min(2*cap(last), maxChunk)
	}
	t.chunks = append(t.chunks, make([]byte, 0, max(next, n)))
	return len(t.chunks) - 1
}

// locCode returns the entryRec.loc code of l, adding l to locs when new.
func (t *transcript) locCode(l *time.Location) int32 {
	switch l {
	case time.UTC:
		return locUTC
	case time.Local:
		return locLocal
	}
	for i := len(t.locs) - 1; i >= 0; i-- {
		if t.locs[i] == l {
			return locOther + int32(i)
		}
	}
	t.locs = append(t.locs, l)
	return locOther + int32(len(t.locs)-1)
}

// since returns the entries after seq, rebuilt: At is the stored time in
// its location, without a monotonic clock reading; Frame is a sub-slice of
// its chunk of capacity its length (an append copies); Hash, Type and From
// are substrings of one copy of their bytes made for this call (one
// allocation, however many entries, and holding on to a Hash keeps that
// copy, not the chunks). It returns nil when nothing is stored, and an
// empty non-nil slice when nothing is after seq, as the
// []negotiation.Entry form did.
func (t *transcript) since(seq int64) []negotiation.Entry {
	if t.recs == nil {
		return nil
	}
	recs := t.recs[t.search(seq):]
	n := 0
	for _, r := range recs {
		n += int(r.hash) + int(r.typ) + int(r.from)
	}
	var b strings.Builder
	b.Grow(n)
	for _, r := range recs {
		start := int(r.off) + int(max(r.frame, 0))
		b.Write(t.chunks[r.chunk][start : start+int(r.hash)+int(r.typ)+int(r.from)])
	}
	strs := b.String()
	out := make([]negotiation.Entry, len(recs))
	for i, r := range recs {
		out[i] = t.entry(r, &strs)
	}
	return out
}

// search returns the index of the first record after seq (len(recs): none).
func (t *transcript) search(seq int64) int {
	return sort.Search(len(t.recs), func(i int) bool { return t.recs[i].seq > seq })
}

// entry rebuilds the entry of r; *strs starts with its Hash, Type and From
// bytes, and is left after them.
func (t *transcript) entry(r entryRec, strs *string) negotiation.Entry {
	e := negotiation.Entry{Seq: r.seq, At: time.Unix(r.sec, int64(r.nsec))}
	switch r.loc {
	case locUTC:
		e.At = e.At.UTC()
	case locLocal: // time.Unix's
	default:
		e.At = e.At.In(t.locs[r.loc-locOther])
	}
	switch {
	case r.frame > 0:
		off, end := int(r.off), int(r.off)+int(r.frame)
		e.Frame = t.chunks[r.chunk][off:end:end]
	case r.frame == 0:
		e.Frame = json.RawMessage{}
	}
	e.Hash = cut(strs, r.hash)
	e.Type = cut(strs, r.typ)
	e.From = cut(strs, r.from)
	return e
}

// cut returns the first n bytes of *s and leaves *s after them.
func cut(s *string, n int32) string {
	if n == 0 {
		return ""
	}
	out := (*s)[:n]
	*s = (*s)[n:]
	return out
}
