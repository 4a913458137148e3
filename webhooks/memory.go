package webhooks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/venuehq/venue/events"
)

// Memory is a Store in memory over an events.Store (the embedded default):
// one node only.
type Memory struct {
	ev events.Store

	mu       sync.Mutex
	hooks    map[string]*memHook
	queue    map[string]*memDelivery // agent_id + " " + event id
	attempts []Attempt
}

type memHook struct {
	w        Webhook
	cursor   string    // the last event fed ("" none yet)
	cursorAt time.Time // its created_at (or when set)
}

type memDelivery struct {
	d      Delivery
	nextAt time.Time
	ended  time.Time // zero while pending
}

// NewMemory returns an empty Memory delivering the events of ev.
func NewMemory(ev events.Store) *Memory {
	return &Memory{ev: ev, hooks: map[string]*memHook{}, queue: map[string]*memDelivery{}}
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, w Webhook) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := &memHook{w: w, cursorAt: w.CreatedAt}
	for { // to the log's end: only later events are delivered
		evs, err := m.ev.After(ctx, w.AgentID, h.cursor, events.MaxLimit)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		last := evs[len(evs)-1]
		h.cursor, h.cursorAt = last.ID, last.CreatedAt
	}
	m.hooks[w.AgentID] = h
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, agentID string) (Webhook, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hooks[agentID]
	if !ok {
		return Webhook{}, ErrNotFound
	}
	return h.w, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, agentID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.hooks[agentID]; !ok {
		return ErrNotFound
	}
	delete(m.hooks, agentID)
	m.dropQueued(agentID)
	return nil
}

func (m *Memory) dropQueued(agentID string) {
	for k, q := range m.queue {
		if q.d.AgentID == agentID && q.ended.IsZero() {
			delete(m.queue, k)
		}
	}
}

// SetSecret implements Store.
func (m *Memory) SetSecret(_ context.Context, agentID string, key []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hooks[agentID]
	if !ok {
		return ErrNotFound
	}
	h.w.Secret = key
	return nil
}

// Feed implements Store.
func (m *Memory) Feed(ctx context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for ag, h := range m.hooks {
		if !h.w.DisabledAt.IsZero() {
			continue
		}
		for {
			evs, err := m.ev.After(ctx, ag, h.cursor, events.MaxLimit)
			if errors.Is(err, events.ErrUnknownAfter) { // the cursor's event was purged
				evs, err = m.ev.After(ctx, ag, "", events.MaxLimit)
				evs = slices.DeleteFunc(evs, func(e events.Event) bool { return e.CreatedAt.Before(h.cursorAt) })
			}
			if err != nil {
				return n, err
			}
			if len(evs) == 0 {
				break
			}
			for _, e := range evs {
				k := ag + " " + e.ID
				if _, dup := m.queue[k]; !dup && h.w.Wants(e.Type) {
					m.queue[k] = &memDelivery{d: Delivery{AgentID: ag, Event: e}, nextAt: now}
					n++
				}
				h.cursor, h.cursorAt = e.ID, e.CreatedAt
			}
		}
	}
	return n, nil
}

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []*memDelivery
	for _, q := range m.queue {
		h := m.hooks[q.d.AgentID]
		if q.ended.IsZero() && !q.nextAt.After(now) && h != nil && h.w.DisabledAt.IsZero() {
			due = append(due, q)
		}
	}
	slices.SortFunc(due, func(a, b *memDelivery) int { return a.nextAt.Compare(b.nextAt) })
	var out []Delivery
	for _, q := range due[:min(limit, len(due))] {
		h := m.hooks[q.d.AgentID]
		q.nextAt = now.Add(lease)
		q.d.Attempts++
		d := q.d
		d.URL, d.Secret = h.w.URL, h.w.Secret
		out = append(out, d)
	}
	return out, nil
}

// Record implements Store.
func (m *Memory) Record(_ context.Context, a Attempt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queue[a.AgentID+" "+a.EventID]
	if !ok || !q.ended.IsZero() || q.d.Attempts != a.N {
		return nil
	}
	m.attempts = append(m.attempts, a)
	switch a.Result {
	case ResultRetrying:
		q.nextAt = a.Next
	case ResultDisabled:
		q.ended = a.At
		if h := m.hooks[a.AgentID]; h != nil {
			h.w.DisabledAt = a.At
		}
		m.dropQueued(a.AgentID)
	default:
		q.ended = a.At
	}
	return nil
}

// Attempts implements Store.
func (m *Memory) Attempts(_ context.Context, agentID string, limit int) ([]Attempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Attempt
	for i := len(m.attempts) - 1; i >= 0 && len(out) < limit; i-- {
		if m.attempts[i].AgentID == agentID {
			out = append(out, m.attempts[i])
		}
	}
	return out, nil
}

// Purge implements Store.
func (m *Memory) Purge(_ context.Context, before time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts = slices.DeleteFunc(m.attempts, func(a Attempt) bool { return a.At.Before(before) })
	for k, q := range m.queue {
		if !q.ended.IsZero() && q.ended.Before(before) {
			delete(m.queue, k)
		}
	}
	return nil
}
