package hub

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
)

// The truth about every frame (PROTOCOL.md "Errors", `outcome_unknown`).
// The store resolves a lost COMMIT answer itself where it can; what it
// cannot resolve comes back as store.ErrOutcomeUnknown and the sender is
// told so. The step may have landed: the hub remembers the negotiation and
// the seq it stood at (a suspect), and whatever of it is found later, by
// the sender's resend (a replayed ack), by the next step on the
// negotiation, or by the periodic reconciliation, is published, armed and
// handed to the Committed hook exactly as a normal commit, once.
//
// Beside the suspects, every node reconciles the rooms it serves: each
// ReconcileEvery it reads the stored last seq of every negotiation with a
// subscription on the node and lets any subscription behind it catch up
// from the store, so a commit whose publication was lost (a node killed
// between its commit and its publish, a bus message dropped) still reaches
// every socket.

// DefaultReconcileEvery is how often Run reconciles by default.
const DefaultReconcileEvery = 5 * time.Second

// SeqReader is an optional ability of a store: the stored last seq of each
// of ids (unknown ids are left out), in one read. Without it, the periodic
// reconciliation of subscriptions reads the negotiations one by one.
type SeqReader interface {
	LastSeqs(ctx context.Context, ids []string) (map[string]int64, error)
}

// suspect is one step of unknown outcome: the entries it would have
// appended (seq and chain hash: a hash at a seq is only ever that step's).
type suspect struct {
	entries []negotiation.Entry
	since   time.Time // when it became a suspect (the hub's clock)
}

// suspects are the steps of unknown outcome on this node, by negotiation.
type suspects struct {
	mu sync.Mutex
	m  map[string][]suspect
}

func (s *suspects) add(id string, sp suspect) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]suspect{}
	}
	s.m[id] = append(s.m[id], sp)
}

// take removes and returns id's suspects.
func (s *suspects) take(id string) []suspect {
	s.mu.Lock()
	defer s.mu.Unlock()
	sps := s.m[id]
	delete(s.m, id)
	return sps
}

func (s *suspects) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	return ids
}

// suspectHold is how long the reconciliation keeps a suspect whose step it
// has not found in the store: a transaction whose COMMIT is still being
// written (a hung server) may land later. A step committed on the
// negotiation settles it at once (it waited for the row lock, so the
// suspect's transaction had ended).
const suspectHold = time.Minute

// Suspects returns how many steps of unknown outcome are not yet
// reconciled on this node.
func (h *Hub) Suspects() int {
	h.suspect.mu.Lock()
	defer h.suspect.mu.Unlock()
	n := 0
	for _, sps := range h.suspect.m {
		n += len(sps)
	}
	return n
}

// recoverSuspect finds which of negotiation st.ID's steps of unknown
// outcome landed (their first entry's hash is stored at its seq) and
// handles each as a normal commit: armed, handed to the Committed hook,
// published. st is the state as stored now; locked says it was read under
// the row lock (by a step), so a step not found never landed.
func (h *Hub) recoverSuspect(ctx context.Context, st negotiation.State, locked bool) {
	sps := h.suspect.take(st.ID)
	for i, sp := range sps {
		first := sp.entries[0]
		landed := false
		if first.Seq <= st.LastSeq {
			stored, err := h.store.Transcript(ctx, st.ID, first.Seq-1)
			if err != nil {
				for _, rest := range sps[i:] {
					h.suspect.add(st.ID, rest) // the next reconciliation tries again
				}
				h.log.Warn("recover a step of unknown outcome; retrying later", "negotiation_id", st.ID, "err", err)
				return
			}
			landed = len(stored) > 0 && stored[0].Seq == first.Seq && stored[0].Hash == first.Hash
			if !landed {
				locked = true // its seq is taken by another step: it never landed
			}
		}
		if !landed {
			if !locked && h.clock.Now().Sub(sp.since) < suspectHold {
				h.suspect.add(st.ID, sp) // not found yet: may still land
			}
			continue
		}
		out := negotiation.Outcome{Entries: sp.entries}
		for _, en := range sp.entries {
			if en.Type == negotiation.TypeNegotiationEnded {
				out.Ended = true
				if st.Status == negotiation.StatusDeal && !st.Arena {
					if in, err := settlement.New(st.ID, st.Brand.AgentID, st.Bouncer.AgentID, st.DealAmountCents, en.At); err == nil {
						out.Settlement = &in
					}
				}
			}
		}
		h.m.recovered.Add(float64(len(out.Entries)))
		h.log.Warn("a step of unknown outcome had landed; published now", "negotiation_id", st.ID,
			"from_seq", first.Seq, "to_seq", sp.entries[len(sp.entries)-1].Seq)
		if err := h.timers.Schedule(ctx, st.ID, st.NextWake()); err != nil {
			h.log.Error("arm timer", "negotiation_id", st.ID, "err", err)
		}
		if h.after != nil { // queued before the publish, as in apply
			c := st // each hook call its own
			h.after.add(ctx, &c, out)
		}
		h.publish(ctx, st, out)
	}
}

// reconcile settles every suspect and lets every local subscription catch
// up with the store. It returns how many suspects remain.
func (h *Hub) reconcile(ctx context.Context) int {
	for _, id := range h.suspect.ids() {
		st, err := h.store.Negotiation(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			h.suspect.take(id)
			continue
		}
		if err != nil {
			continue // still unreachable: next time
		}
		h.recoverSuspect(ctx, st, false)
	}
	h.syncSubscriptions(ctx)
	return h.Suspects()
}

// syncSubscriptions tells every local subscription the stored last seq of
// its negotiation; one behind catches up from the store.
func (h *Hub) syncSubscriptions(ctx context.Context) {
	h.subsMu.Lock()
	ids := make([]string, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.subsMu.Unlock()
	if len(ids) == 0 {
		return
	}
	var seqs map[string]int64
	if sr, ok := h.store.(SeqReader); ok {
		var err error
		if seqs, err = sr.LastSeqs(ctx, ids); err != nil {
			return
		}
	} else {
		seqs = make(map[string]int64, len(ids))
		for _, id := range ids {
			if st, err := h.store.Negotiation(ctx, id); err == nil {
				seqs[id] = st.LastSeq
			}
		}
	}
	h.subsMu.Lock()
	var behind []*Subscription
	var at []int64
	for id, seq := range seqs {
		for s := range h.subs[id] {
			behind = append(behind, s)
			at = append(at, seq)
		}
	}
	h.subsMu.Unlock()
	for i, s := range behind {
		s.enqueue(envelope{Kind: KindSync, Seq: at[i]}.encode())
	}
}

// track and untrack keep the registry of local subscriptions.
func (h *Hub) track(s *Subscription) {
	h.subsMu.Lock()
	defer h.subsMu.Unlock()
	if h.subs == nil {
		h.subs = map[string]map[*Subscription]struct{}{}
	}
	m := h.subs[s.negID]
	if m == nil {
		m = map[*Subscription]struct{}{}
		h.subs[s.negID] = m
	}
	m[s] = struct{}{}
}

func (h *Hub) untrack(s *Subscription) {
	h.subsMu.Lock()
	defer h.subsMu.Unlock()
	if m := h.subs[s.negID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, s.negID)
		}
	}
}

// reconcileLoop runs reconcile every h.every until ctx is done.
func (h *Hub) reconcileLoop(ctx context.Context) {
	for {
		t := h.clock.NewTimer(h.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		h.reconcile(ctx)
	}
}
