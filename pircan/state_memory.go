package pircan

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemoryState is State in memory (the embedded default: nothing survives a
// restart). Safe for concurrent use.
type MemoryState struct {
	mu       sync.Mutex
	channels map[string]*memChannel
	windows  map[string]memWindow
	names    map[string]string      // name key (NameKey) to the agent holding it
	accounts map[string]*memAccount // folded account to its ids
}

type memChannel struct {
	c       Channel
	members map[string]bool
	invited map[string]bool
}

type memWindow struct {
	start time.Time
	hits  int
}

var _ State = (*MemoryState)(nil)

// NewMemoryState returns an empty MemoryState.
func NewMemoryState() *MemoryState {
	return &MemoryState{channels: map[string]*memChannel{}, windows: map[string]memWindow{}}
}

// PutChannel implements State.
func (m *MemoryState) PutChannel(_ context.Context, c Channel, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := ChannelKey(c.Name)
	ch, ok := m.channels[key]
	if !ok {
		ch = &memChannel{members: map[string]bool{}, invited: map[string]bool{}}
		m.channels[key] = ch
	}
	ch.c = Channel{Name: c.Name, Private: c.Private, Topic: c.Topic}
	return nil
}

// DeleteChannel implements State.
func (m *MemoryState) DeleteChannel(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.channels[key]; !ok {
		return fmt.Errorf("delete %s: %w", key, ErrNoChannel)
	}
	delete(m.channels, key)
	return nil
}

func (ch *memChannel) view() Channel {
	c := ch.c
	c.Members = len(ch.members)
	return c
}

// Channel implements State.
func (m *MemoryState) Channel(_ context.Context, key string) (Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.channels[key]
	if !ok {
		return Channel{}, fmt.Errorf("channel %s: %w", key, ErrNoChannel)
	}
	return ch.view(), nil
}

// Channels implements State.
func (m *MemoryState) Channels(_ context.Context, q ChannelQuery) ([]Channel, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	needle := strings.ToLower(q.Q)
	var all []Channel
	for _, ch := range m.channels {
		if ch.c.Private && !q.All && (q.AgentID == "" || !ch.members[q.AgentID] && !ch.invited[q.AgentID]) {
			continue
		}
		if needle != "" && !strings.Contains(strings.ToLower(ch.c.Name), needle) && !strings.Contains(strings.ToLower(ch.c.Topic), needle) {
			continue
		}
		all = append(all, ch.view())
	}
	sort.Slice(all, func(i, j int) bool { return ChannelKey(all[i].Name) < ChannelKey(all[j].Name) })
	total := len(all)
	lo := min(max(q.Offset, 0), total)
	hi := min(lo+max(q.Limit, 0), total)
	return all[lo:hi], total, nil
}

// AddMember implements State.
func (m *MemoryState) AddMember(_ context.Context, key, agentID string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.channels[key]
	if !ok {
		return fmt.Errorf("add member to %s: %w", key, ErrNoChannel)
	}
	ch.members[agentID] = true
	return nil
}

// Invite implements State.
func (m *MemoryState) Invite(_ context.Context, key, agentID string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.channels[key]
	if !ok {
		return fmt.Errorf("invite to %s: %w", key, ErrNoChannel)
	}
	ch.invited[agentID] = true
	return nil
}

// Invited implements State.
func (m *MemoryState) Invited(_ context.Context, key, agentID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.channels[key]
	return ok && ch.invited[agentID], nil
}

// Hit implements State.
func (m *MemoryState) Hit(ctx context.Context, key string, start time.Time) (int, error) {
	return m.Charge(ctx, key, start, 1)
}

// Charge implements State.
func (m *MemoryState) Charge(_ context.Context, key string, start time.Time, n int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.windows[key]
	if start.After(w.start) {
		w = memWindow{start: start}
	}
	w.hits += max(n, 1)
	m.windows[key] = w
	return w.hits, nil
}

// PruneWindows implements State.
func (m *MemoryState) PruneWindows(_ context.Context, before time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.windows {
		if w.start.Before(before) {
			delete(m.windows, k)
		}
	}
	return nil
}

// ClaimName implements State.
func (m *MemoryState) ClaimName(_ context.Context, key, agentID string, _ time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names == nil {
		m.names = map[string]string{}
	}
	if h, ok := m.names[key]; ok {
		return h, nil
	}
	m.names[key] = agentID
	return agentID, nil
}

// NameHolder implements State.
func (m *MemoryState) NameHolder(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.names[key], nil
}

// memAccount is an account's id and the pending one.
type memAccount struct{ id, pending string }

// CheckAccount implements State.
func (m *MemoryState) CheckAccount(_ context.Context, account, id string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.accounts == nil {
		m.accounts = map[string]*memAccount{}
	}
	a := m.accounts[account]
	switch {
	case a == nil:
		m.accounts[account] = &memAccount{id: id}
		return true, nil
	case a.id == id:
		return true, nil
	}
	a.pending = id
	return false, nil
}

// ConfirmAccount implements State.
func (m *MemoryState) ConfirmAccount(_ context.Context, account string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.accounts[account]
	if a == nil || a.pending == "" {
		return false, nil
	}
	a.id, a.pending = a.pending, ""
	return true, nil
}
