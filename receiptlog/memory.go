package receiptlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// Memory is the log in memory (the embedded default): it lives as long as
// the process, like the in-memory store it sits beside. State reads a
// queued negotiation's state (store.Store.Negotiation).
type Memory struct {
	state func(ctx context.Context, id string) (negotiation.State, error)

	seq     sync.Mutex // the sequencing lock
	mu      sync.Mutex // guards the fields below
	entries []Entry
	index   map[string]int64
	head    Head
	keys    []Key // oldest first
	queue   []string
	queued  map[string]bool
}

// NewMemory returns an empty log; state reads a negotiation by id, an
// error wrapping notFound (errors.Is) meaning it is gone.
func NewMemory(state func(ctx context.Context, id string) (negotiation.State, error), notFound error) *Memory {
	return &Memory{
		state: func(ctx context.Context, id string) (negotiation.State, error) {
			st, err := state(ctx, id)
			if err != nil && notFound != nil && errors.Is(err, notFound) {
				return st, ErrNotFound
			}
			return st, err
		},
		index: map[string]int64{}, queued: map[string]bool{},
	}
}

// Sequence implements Store.
func (m *Memory) Sequence(ctx context.Context, fn func(tx Tx) error) error {
	m.seq.Lock()
	defer m.seq.Unlock()
	m.mu.Lock()
	tx := &memTx{m: m, ctx: ctx, head: m.head}
	m.mu.Unlock()
	return fn(tx)
}

// Entries implements Store.
func (m *Memory) Entries(_ context.Context, start, end int64) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	end = min(end, int64(len(m.entries)))
	if start < 0 || start >= end {
		return nil, nil
	}
	return append([]Entry(nil), m.entries[start:end]...), nil
}

// Index implements Store.
func (m *Memory) Index(_ context.Context, id string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.index[id]
	if !ok {
		return 0, fmt.Errorf("%w: negotiation %s", ErrNotFound, id)
	}
	return i, nil
}

// Head implements Store.
func (m *Memory) Head(context.Context) (Head, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.head, nil
}

// Keys implements Store.
func (m *Memory) Keys(_ context.Context, create func() ([]byte, error)) ([]Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) == 0 {
		sealed, err := create()
		if err != nil {
			return nil, fmt.Errorf("receiptlog: create log key: %w", err)
		}
		m.keys = append(m.keys, Key{ID: 1, Sealed: sealed, CreatedAt: time.Now()})
	}
	out := make([]Key, 0, len(m.keys))
	for i := len(m.keys) - 1; i >= 0; i-- {
		out = append(out, m.keys[i])
	}
	return out, nil
}

// RotateKey implements Store.
func (m *Memory) RotateKey(_ context.Context, sealed []byte, now time.Time) (Key, error) {
	m.seq.Lock()
	defer m.seq.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := Key{ID: int64(len(m.keys)) + 1, Sealed: sealed, CreatedAt: now}
	if n := len(m.keys); n > 0 {
		m.keys[n-1].RetiredAt = now
		m.keys[n-1].RetiredSize = m.head.Size
		if m.head.KeyID != m.keys[n-1].ID {
			m.keys[n-1].RetiredSize = 0
		}
	}
	m.keys = append(m.keys, k)
	return k, nil
}

// Enqueue implements Store.
func (m *Memory) Enqueue(_ context.Context, ids ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if _, done := m.index[id]; done || m.queued[id] {
			continue
		}
		m.queued[id] = true
		m.queue = append(m.queue, id)
	}
	return nil
}

type memTx struct {
	m    *Memory
	ctx  context.Context
	head Head
	done bool
}

func (t *memTx) Head() Head { return t.head }

func (t *memTx) Queued(limit int) ([]Queued, error) {
	t.m.mu.Lock()
	ids := append([]string(nil), t.m.queue[:min(limit, len(t.m.queue))]...)
	t.m.mu.Unlock()
	out := make([]Queued, 0, len(ids))
	for _, id := range ids {
		st, err := t.m.state(t.ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			out = append(out, Queued{NegotiationID: id})
		case err != nil:
			return nil, fmt.Errorf("receiptlog: queued negotiation %s: %w", id, err)
		default:
			out = append(out, Queued{NegotiationID: id, State: &st})
		}
	}
	return out, nil
}

func (t *memTx) Logged(ids []string) (map[string]bool, error) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	out := map[string]bool{}
	for _, id := range ids {
		if _, ok := t.m.index[id]; ok {
			out[id] = true
		}
	}
	return out, nil
}

func (t *memTx) Commit(entries []Entry, done []string, head Head) error {
	if t.done {
		return errors.New("receiptlog: commit called twice")
	}
	t.done = true
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	seen := map[string]bool{}
	for i, e := range entries {
		if e.Index != t.head.Size+int64(i) || int64(len(t.m.entries))+int64(i) != e.Index {
			return fmt.Errorf("receiptlog: entry %d does not follow the log's size %d", e.Index, len(t.m.entries))
		}
		if _, dup := t.m.index[e.NegotiationID]; dup || seen[e.NegotiationID] {
			return fmt.Errorf("receiptlog: negotiation %s is logged already", e.NegotiationID)
		}
		seen[e.NegotiationID] = true
	}
	for _, e := range entries {
		t.m.entries = append(t.m.entries, e)
		t.m.index[e.NegotiationID] = e.Index
	}
	gone := map[string]bool{}
	for _, id := range done {
		gone[id] = true
		delete(t.m.queued, id)
	}
	q := t.m.queue[:0]
	for _, id := range t.m.queue {
		if !gone[id] {
			q = append(q, id)
		}
	}
	t.m.queue = q
	t.m.head = head
	return nil
}
