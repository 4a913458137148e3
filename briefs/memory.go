package briefs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Memory is the in-memory Store of the embedded default.
type Memory struct {
	mu     sync.Mutex
	briefs map[string]*Brief
	byOff  map[string]string // offer id -> brief id
	quotes map[string]Quote  // by offer id
	byID   map[string]string // quote id -> offer id
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{briefs: map[string]*Brief{}, byOff: map[string]string{}, quotes: map[string]Quote{}, byID: map[string]string{}}
}

func clone(b *Brief) Brief {
	c := *b
	c.Offers = slices.Clone(b.Offers)
	return c
}

func notFound(what, id string) error { return fmt.Errorf("briefs: %s %s: %w", what, id, ErrNotFound) }

// CreateBrief implements Store.
func (m *Memory) CreateBrief(_ context.Context, b Brief) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.briefs[b.ID]; ok {
		return fmt.Errorf("briefs: brief %s exists: %w", b.ID, ErrConflict)
	}
	c := clone(&b)
	m.briefs[b.ID] = &c
	for _, o := range b.Offers {
		m.byOff[o.OfferID] = b.ID
	}
	return nil
}

// Brief implements Store.
func (m *Memory) Brief(_ context.Context, id string) (Brief, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.briefs[id]
	if !ok {
		return Brief{}, notFound("brief", id)
	}
	return clone(b), nil
}

// BriefOfOffer implements Store.
func (m *Memory) BriefOfOffer(ctx context.Context, offerID string) (Brief, error) {
	m.mu.Lock()
	id, ok := m.byOff[offerID]
	m.mu.Unlock()
	if !ok {
		return Brief{}, notFound("offer", offerID)
	}
	return m.Brief(ctx, id)
}

// OpenFor implements Store.
func (m *Memory) OpenFor(_ context.Context, bouncerID string, now time.Time) ([]Brief, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Brief
	for _, b := range m.briefs {
		if !b.Collecting(now) {
			continue
		}
		for _, o := range b.Offers {
			if o.To == bouncerID && o.DeclinedAt.IsZero() {
				out = append(out, clone(b))
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Counts implements Store.
func (m *Memory) Counts(_ context.Context, brandID string, since, now time.Time) (recent, open int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.briefs {
		if b.Brand.AgentID != brandID {
			continue
		}
		if !b.CreatedAt.Before(since) {
			recent++
		}
		if b.Collecting(now) {
			open++
		}
	}
	return recent, open, nil
}

// collecting returns the brief and offer of offerID if it still collects.
func (m *Memory) collecting(offerID string, now time.Time) (*Brief, *Addressed, error) {
	id, ok := m.byOff[offerID]
	if !ok {
		return nil, nil, notFound("offer", offerID)
	}
	b := m.briefs[id]
	o := b.offer(offerID)
	if !b.Collecting(now) || !o.DeclinedAt.IsZero() {
		return nil, nil, ErrClosed
	}
	return b, o, nil
}

// PutQuote implements Store.
func (m *Memory) PutQuote(_ context.Context, q Quote, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, _, err := m.collecting(q.OfferID, now); err != nil {
		return err
	}
	if old, ok := m.quotes[q.OfferID]; ok {
		delete(m.byID, old.ID)
	}
	m.quotes[q.OfferID] = q
	m.byID[q.ID] = q.OfferID
	return nil
}

// Decline implements Store.
func (m *Memory) Decline(_ context.Context, offerID, reason string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, o, err := m.collecting(offerID, now)
	if err != nil {
		return err
	}
	o.DeclinedAt, o.Reason = now, reason
	if old, ok := m.quotes[offerID]; ok {
		delete(m.byID, old.ID)
		delete(m.quotes, offerID)
	}
	return nil
}

// Quote implements Store.
func (m *Memory) Quote(_ context.Context, id string) (Quote, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	off, ok := m.byID[id]
	if !ok {
		return Quote{}, notFound("quote", id)
	}
	return m.quotes[off], nil
}

func (m *Memory) quotesOf(b *Brief) []Quote {
	var out []Quote
	for _, o := range b.Offers {
		if q, ok := m.quotes[o.OfferID]; ok {
			out = append(out, q)
		}
	}
	return out
}

// Quotes implements Store.
func (m *Memory) Quotes(_ context.Context, briefID string) ([]Quote, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.briefs[briefID]
	if !ok {
		return nil, notFound("brief", briefID)
	}
	return m.quotesOf(b), nil
}

// MarkReady implements Store.
func (m *Memory) MarkReady(_ context.Context, briefID string, at time.Time) ([]Quote, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.briefs[briefID]
	if !ok {
		return nil, false, notFound("brief", briefID)
	}
	if !b.ReadyAt.IsZero() {
		return nil, false, nil
	}
	b.ReadyAt = at
	return m.quotesOf(b), true, nil
}

// Award implements Store.
func (m *Memory) Award(_ context.Context, briefID, quoteID, negID string, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.briefs[briefID]
	if !ok {
		return false, notFound("brief", briefID)
	}
	if b.AwardedQuote != "" {
		return false, nil
	}
	b.AwardedQuote, b.NegotiationID, b.AwardedAt = quoteID, negID, at
	return true, nil
}

// Unaward implements Store.
func (m *Memory) Unaward(_ context.Context, briefID, quoteID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.briefs[briefID]
	if !ok {
		return notFound("brief", briefID)
	}
	if b.AwardedQuote == quoteID {
		b.AwardedQuote, b.NegotiationID, b.AwardedAt = "", "", time.Time{}
	}
	return nil
}

// Unready implements Store.
func (m *Memory) Unready(_ context.Context, before time.Time, limit int) ([]Due, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Due
	for _, b := range m.briefs {
		if b.ReadyAt.IsZero() && (before.IsZero() || b.CollectUntil.Before(before)) {
			out = append(out, Due{ID: b.ID, At: b.CollectUntil})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
