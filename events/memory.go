package events

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Memory is a Store in memory (the embedded default). It keeps each
// agent's events in a form the garbage collector need not scan: append-only
// byte chunks per agent (each event's id, type, negotiation id and frame
// back to back) and a slice of records without pointers, so a
// node that keeps millions of events does not make every GC cycle's mark
// phase longer by them (BENCHMARKS.md "Issue 21, fifth pass"). Reads build
// Events afresh; nothing they return aliases what Memory keeps.
type Memory struct {
	mu    sync.Mutex
	n     int64 // the last event's number, across agents
	byAg  map[string]*agentLog
	index map[idKey]int64  // id -> n, for ids of up to idKeyLen bytes
	long  map[string]int64 // id -> n, for longer ids (none of New's)
}

// agentLog is one agent's events, oldest first.
type agentLog struct {
	recs []memRec // n ascending
	// chunks hold the records' bytes. A chunk is never grown (a full one
	// is followed by a new one, twice its size up to maxChunk), so
	// appending copies nothing and leaves no garbage; bytes once written
	// never change.
	chunks [][]byte
}

// The first chunk of an agent's log and the largest (bytes).
const (
	firstChunk = 1 << 10
	maxChunk   = 64 << 10
)

// memRec is one event: its number, its time (Unix ns, UTC) and where its
// id, type, negotiation id and data lie, in that order from off in chunk.
type memRec struct {
	n, at                 int64
	chunk, off            int
	idLen, typLen, negLen uint16
	dataLen               uint32
}

func (r memRec) size() int { return int(r.idLen) + int(r.typLen) + int(r.negLen) + int(r.dataLen) }

// bytes returns the record's bytes in lg.
func (lg *agentLog) bytes(r memRec) []byte { return lg.chunks[r.chunk][r.off : r.off+r.size()] }

// room returns a chunk with need bytes free, making one when the last is
// full.
func (lg *agentLog) room(need int) int {
	last := len(lg.chunks) - 1
	if last >= 0 && cap(lg.chunks[last])-len(lg.chunks[last]) >= need {
		return last
	}
	size := firstChunk
	if last >= 0 {
		size = min(2*cap(lg.chunks[last]), maxChunk)
	}
	lg.chunks = append(lg.chunks, make([]byte, 0, max(size, need)))
	return last + 1
}

// idKeyLen is the longest id kept in the pointer-free index (New makes
// ids of 28 bytes).
const idKeyLen = 31

// idKey is an id of up to idKeyLen bytes and its length, as a map key
// without pointers.
type idKey [idKeyLen + 1]byte

func keyOf(id string) (idKey, bool) {
	var k idKey
	if len(id) > idKeyLen {
		return k, false
	}
	k[0] = byte(len(id))
	copy(k[1:], id)
	return k, true
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{byAg: map[string]*agentLog{}, index: map[idKey]int64{}, long: map[string]int64{}}
}

// Append implements Store. An event's fields longer than the record holds
// (an id, type or negotiation id over 64 KiB, data over 4 GiB) are not
// made by this venue; they are cut to fit.
func (m *Memory) Append(_ context.Context, evs ...Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range evs {
		m.n++
		lg := m.byAg[e.AgentID]
		if lg == nil {
			lg = &agentLog{}
			m.byAg[e.AgentID] = lg
		}
		lg.add(m.n, e)
		m.setIndex(e.ID, m.n)
	}
	return nil
}

func (lg *agentLog) add(n int64, e Event) {
	id, typ, neg, data := fit16(e.ID), fit16(e.Type), fit16(e.NegotiationID), e.Data
	if uint64(len(data)) > 1<<32-1 {
		data = data[:1<<32-1]
	}
	r := memRec{n: n, at: e.CreatedAt.UnixNano(),
		idLen: uint16(len(id)), typLen: uint16(len(typ)), negLen: uint16(len(neg)), dataLen: uint32(len(data))}
	r.chunk = lg.room(r.size())
	c := lg.chunks[r.chunk]
	r.off = len(c)
	lg.chunks[r.chunk] = append(append(append(append(c, id...), typ...), neg...), data...)
	lg.recs = append(lg.recs, r)
}

func fit16(s string) string { return s[:min(len(s), 1<<16-1)] }

func (m *Memory) setIndex(id string, n int64) {
	if k, ok := keyOf(id); ok {
		m.index[k] = n
	} else {
		m.long[id] = n
	}
}

func (m *Memory) dropIndex(id []byte) {
	if k, ok := keyOf(string(id)); ok {
		delete(m.index, k)
	} else {
		delete(m.long, string(id))
	}
}

func (m *Memory) lookup(id string) (int64, bool) {
	if k, ok := keyOf(id); ok {
		n, found := m.index[k]
		return n, found
	}
	n, found := m.long[id]
	return n, found
}

// event rebuilds the event of r; the data is a copy.
func (lg *agentLog) event(agentID string, r memRec) Event {
	b := lg.bytes(r)
	id, b := b[:r.idLen], b[r.idLen:]
	typ, b := b[:r.typLen], b[r.typLen:]
	neg, b := b[:r.negLen], b[r.negLen:]
	return Event{ID: string(id), AgentID: agentID, Type: string(typ), NegotiationID: string(neg),
		CreatedAt: time.Unix(0, r.at).UTC(), Data: append([]byte(nil), b[:r.dataLen]...)}
}

// After implements Store.
func (m *Memory) After(_ context.Context, agentID, afterID string, limit int) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lg := m.byAg[agentID]
	i := 0
	if afterID != "" {
		n, ok := m.lookup(afterID)
		if !ok || lg == nil {
			return nil, ErrUnknownAfter
		}
		j := sort.Search(len(lg.recs), func(j int) bool { return lg.recs[j].n >= n })
		if j == len(lg.recs) || lg.recs[j].n != n {
			return nil, ErrUnknownAfter // another agent's event
		}
		i = j + 1
	}
	if lg == nil {
		return nil, nil
	}
	var out []Event
	for ; i < len(lg.recs) && len(out) < limit; i++ {
		out = append(out, lg.event(agentID, lg.recs[i]))
	}
	return out, nil
}

// Purge implements Store. It copies each agent's kept events into new
// chunks, so the dropped ones' bytes are freed.
func (m *Memory) Purge(_ context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cut := before.UnixNano()
	dropped := 0
	for ag, lg := range m.byAg {
		keep := 0
		for _, r := range lg.recs {
			if r.at < cut {
				m.dropIndex(lg.bytes(r)[:r.idLen])
				continue
			}
			keep++
		}
		if keep == len(lg.recs) {
			continue
		}
		dropped += len(lg.recs) - keep
		if keep == 0 {
			delete(m.byAg, ag)
			continue
		}
		nl := &agentLog{recs: make([]memRec, 0, keep)}
		for _, r := range lg.recs {
			if r.at < cut {
				continue
			}
			nr := r
			nr.chunk = nl.room(r.size())
			nr.off = len(nl.chunks[nr.chunk])
			nl.chunks[nr.chunk] = append(nl.chunks[nr.chunk], lg.bytes(r)...)
			nl.recs = append(nl.recs, nr)
		}
		m.byAg[ag] = nl
	}
	return dropped, nil
}
