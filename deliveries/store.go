package deliveries

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// Store keeps the deals' records (PROTOCOL.md "Deliveries"): in memory
// (Memory, the embedded default) or on Postgres (package deliverypg, the
// venue's schema). Safe for concurrent use.
type Store interface {
	// Update runs fn on the record of negotiation negID (a fresh one, with
	// only NegotiationID set, when there is none) under a lock every node
	// honours; when fn returns nil the record as fn left it is written,
	// atomically (on Postgres with the settlement's status in settlements),
	// before Update returns it. fn's error is returned as is, nothing
	// written. Deliveries are only ever added or changed, never removed.
	Update(ctx context.Context, negID string, fn func(r *Record) error) (Record, error)
	// Records returns the records of those of negIDs that have one.
	Records(ctx context.Context, negIDs []string) (map[string]Record, error)
	// Due returns up to limit negotiation ids having a submitted delivery
	// whose DueAt is at or before now, the longest due first.
	Due(ctx context.Context, now time.Time, limit int) ([]string, error)
}

// Memory is a Store in memory.
type Memory struct {
	mu   sync.Mutex
	recs map[string]Record
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{recs: map[string]Record{}} }

func clone(r Record) Record {
	r.Deliveries = slices.Clone(r.Deliveries)
	return r
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, negID string, fn func(r *Record) error) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[negID]
	if !ok {
		r = Record{NegotiationID: negID}
	}
	r = clone(r)
	if err := fn(&r); err != nil {
		return Record{}, err
	}
	m.recs[negID] = clone(r)
	return r, nil
}

// Records implements Store.
func (m *Memory) Records(_ context.Context, negIDs []string) (map[string]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Record{}
	for _, id := range negIDs {
		if r, ok := m.recs[id]; ok {
			out[id] = clone(r)
		}
	}
	return out, nil
}

// Due implements Store.
func (m *Memory) Due(_ context.Context, now time.Time, limit int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type due struct {
		id string
		at time.Time
	}
	var list []due
	for id, r := range m.recs {
		for _, d := range r.Deliveries {
			if d.Status == StatusSubmitted && !now.Before(d.DueAt) {
				list = append(list, due{id, d.DueAt})
				break
			}
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].at.Equal(list[j].at) {
			return list[i].id < list[j].id
		}
		return list[i].at.Before(list[j].at)
	})
	var out []string
	for _, d := range list {
		if len(out) == limit {
			break
		}
		out = append(out, d.id)
	}
	return out, nil
}
