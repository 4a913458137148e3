package memory

import (
	"cmp"
	"context"
	"slices"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// page returns items[offset:offset+limit], bounds clamped.
func page[T any](items []T, q store.PartyQuery) []T {
	if q.Offset >= len(items) {
		return nil
	}
	items = items[q.Offset:]
	if q.Limit > 0 && q.Limit < len(items) {
		items = items[:q.Limit]
	}
	return items
}

// NegotiationsOf implements store.Store.
func (s *Store) NegotiationsOf(_ context.Context, q store.PartyQuery) ([]negotiation.State, int, error) {
	s.mu.Lock()
	rooms := make([]*room, 0, len(s.order))
	for i := len(s.order) - 1; i >= 0; i-- {
		rooms = append(rooms, s.negotiations[s.order[i]])
	}
	s.mu.Unlock()
	var all []negotiation.State
	for _, r := range rooms {
		r.mu.Lock()
		if r.state.IsParty(q.AgentID) && (q.Status == "" || r.state.Status == q.Status) {
			all = append(all, r.state.Clone())
		}
		r.mu.Unlock()
	}
	return page(all, q), len(all), nil
}

// OffersOf implements store.Store.
func (s *Store) OffersOf(_ context.Context, q store.PartyQuery) ([]store.Offer, int, error) {
	s.mu.Lock()
	var all []store.Offer
	for _, o := range s.offers {
		if o.Brand == q.AgentID || o.Bouncer == q.AgentID {
			all = append(all, o)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b store.Offer) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return page(all, q), len(all), nil
}
