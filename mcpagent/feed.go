package mcpagent

import (
	"sync"
)

// feed is an append-only log of what a socket pushed (lobby items, or one
// negotiation's events), read from cursors. Nothing is taken off it by a
// read: each reader (an MCP session, or a caller that passes its own
// cursor) keeps its own position, and a session's position moves only once
// an answer carrying the items was delivered (see call.onDelivered), so an
// abandoned or cancelled wait consumes nothing and two sessions of one
// agent each see every item.
//
// Positions count from 0 for the first item ever appended. The log keeps
// at most max items (0: no bound); a reader behind the oldest kept item is
// told how many it missed.
type feed[T any] struct {
	max int

	mu      sync.Mutex
	items   []T
	base    int64            // the position of items[0]
	cursors map[string]int64 // reader -> the next position it has not had
	closed  bool             // nothing more will be appended
	changed chan struct{}    // closed (and replaced) when an item is appended or the feed closes
}

func newFeed[T any](max int) *feed[T] {
	return &feed[T]{max: max, cursors: map[string]int64{}, changed: make(chan struct{})}
}

// add appends items and wakes every waiting reader.
func (f *feed[T]) add(items ...T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(f.items, items...)
	if f.max > 0 && len(f.items) > f.max {
		n := len(f.items) - f.max
		f.items = append([]T(nil), f.items[n:]...)
		f.base += int64(n)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// close marks the end: readers waiting on it return.
func (f *feed[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// page is what a read returns: the items from a position, the position
// after them, how many were trimmed before the reader got them, and a
// channel that is closed when there may be more.
type page[T any] struct {
	items   []T
	next    int64
	missed  int64
	closed  bool
	changed <-chan struct{}
}

// readFrom returns the items from position from on.
func (f *feed[T]) readFrom(from int64) page[T] {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := page[T]{next: f.base + int64(len(f.items)), closed: f.closed, changed: f.changed}
	if from < f.base {
		p.missed = f.base - from
		from = f.base
	}
	if from < p.next {
		p.items = append([]T(nil), f.items[from-f.base:]...)
	}
	return p
}

// cursor is reader's position: 0 (everything kept) for a reader not seen.
func (f *feed[T]) cursor(reader string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cursors[reader]
}

// commit moves reader's position to next, never back.
func (f *feed[T]) commit(reader string, next int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if next > f.cursors[reader] {
		f.cursors[reader] = next
	}
}

// uncommit moves reader's position back from next to from, unless
// something else moved it since.
func (f *feed[T]) uncommit(reader string, from, next int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cursors[reader] == next {
		f.cursors[reader] = from
	}
}

// unread is how many items reader has not had.
func (f *feed[T]) unread(reader string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(f.base + int64(len(f.items)) - max(f.cursors[reader], f.base))
}

// forget drops the positions of readers keep says are gone.
func (f *feed[T]) forget(keep func(reader string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for r := range f.cursors {
		if !keep(r) {
			delete(f.cursors, r)
		}
	}
}
