// Package memory is the embedded default store: everything in process
// memory, nothing survives a restart. One mutex serialises changes, which is
// the in-process equivalent of Postgres's row lock.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
)

// Store implements store.Store in memory. The zero value is not usable; use New.
type Store struct {
	// mu guards the maps; every frame's step looks its room up under a
	// read lock (room), so the steps of many rooms never queue behind one
	// another there.
	mu           sync.RWMutex
	agents       map[string]store.Agent
	byKey        map[string]string // key hash -> agent id
	byIRC        map[string]string // irc account -> agent id
	offers       map[string]store.Offer
	negotiations map[string]*room
	order        []string                        // negotiation ids, oldest first
	grants       map[string]store.GrantRecord    // by grantKey(iss, jti)
	grantOrder   []string                        // grant keys in upload order
	revocations  map[string]time.Time            // principal revocations, by grantKey(iss, jti)
	grantMu      sync.Mutex                      // the budget lock of Tx
	venueKeys    []store.VenueKey                // oldest first; the last is current
	blocks       map[[2]string]time.Time         // {bouncer, brand} -> since
	repEvents    []store.ReputationEvent         // oldest first
	settlements  []settlement.Instruction        // oldest first
	presence     map[string]map[string]time.Time // agent -> node -> open until
}

// grantKey is a grant's identity: jti is unique per issuer.
func grantKey(iss, jti string) string { return iss + "\x00" + jti }

type room struct {
	mu         sync.Mutex // held while a step runs
	state      negotiation.State
	transcript transcript
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		agents: map[string]store.Agent{}, byKey: map[string]string{}, byIRC: map[string]string{},
		offers: map[string]store.Offer{}, negotiations: map[string]*room{},
		grants: map[string]store.GrantRecord{}, revocations: map[string]time.Time{},
		blocks:   map[[2]string]time.Time{},
		presence: map[string]map[string]time.Time{},
	}
}

func notFound(kind, id string) error { return fmt.Errorf("%s %s: %w", kind, id, store.ErrNotFound) }

// CreateAgent implements store.Store.
func (s *Store) CreateAgent(_ context.Context, a store.Agent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.agents[a.ID]; ok {
		return fmt.Errorf("agent %s: %w", a.ID, store.ErrConflict)
	}
	if _, ok := s.byKey[a.KeyHash]; ok {
		return fmt.Errorf("agent key: %w", store.ErrConflict)
	}
	if a.KeyIssuedAt.IsZero() {
		a.KeyIssuedAt = a.CreatedAt
	}
	if a.IRC != nil {
		if _, ok := s.byIRC[a.IRC.Account]; ok {
			return fmt.Errorf("agent irc account: %w", store.ErrConflict)
		}
		s.byIRC[a.IRC.Account] = a.ID
	}
	s.agents[a.ID] = cloneAgent(a)
	s.byKey[a.KeyHash] = a.ID
	return nil
}

// ReplaceKey implements store.Store.
func (s *Store) ReplaceKey(_ context.Context, id, newHash string, before, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[id]
	if !ok {
		return false, notFound("agent", id)
	}
	if !before.IsZero() && !a.KeyIssuedAt.Before(before) {
		return false, nil
	}
	if newHash == "" {
		newHash = store.DisabledKeyHash(id, at)
	}
	if other, taken := s.byKey[newHash]; taken && other != id {
		return false, fmt.Errorf("agent key: %w", store.ErrConflict)
	}
	delete(s.byKey, a.KeyHash)
	a.KeyHash, a.KeyIssuedAt = newHash, at
	s.byKey[newHash] = id
	s.agents[id] = a
	return true, nil
}

// AgentByIRCAccount implements store.Store.
func (s *Store) AgentByIRCAccount(_ context.Context, account string) (store.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byIRC[account]
	if !ok {
		return store.Agent{}, fmt.Errorf("agent by irc account: %w", store.ErrNotFound)
	}
	return cloneAgent(s.agents[id]), nil
}

// SetIRCNick implements store.Store.
func (s *Store) SetIRCNick(_ context.Context, id, nick string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[id]
	if !ok || a.IRC == nil {
		return notFound("irc agent", id)
	}
	a = cloneAgent(a)
	a.IRC.Nick = nick
	s.agents[id] = a
	return nil
}

// Agent implements store.Store.
func (s *Store) Agent(_ context.Context, id string) (store.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[id]
	if !ok {
		return store.Agent{}, notFound("agent", id)
	}
	return cloneAgent(a), nil
}

// AgentByKeyHash implements store.Store.
func (s *Store) AgentByKeyHash(_ context.Context, keyHash string) (store.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byKey[keyHash]
	if !ok {
		return store.Agent{}, fmt.Errorf("agent by key: %w", store.ErrNotFound)
	}
	return cloneAgent(s.agents[id]), nil
}

// SetProfile implements store.Store.
func (s *Store) SetProfile(_ context.Context, id string, p store.Profile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[id]
	if !ok {
		return notFound("agent", id)
	}
	a.Profile = store.Profile{Description: p.Description, Categories: slices.Clone(p.Categories), Audience: slices.Clone(p.Audience)}
	s.agents[id] = a
	return nil
}

// SetPrincipalKey implements store.Store.
func (s *Store) SetPrincipalKey(_ context.Context, id string, jwk json.RawMessage, thumbprint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[id]
	if !ok {
		return notFound("agent", id)
	}
	a.PrincipalKey, a.PrincipalThumbprint = slices.Clone(jwk), thumbprint
	s.agents[id] = a
	return nil
}

// Agents implements store.Store.
func (s *Store) Agents(_ context.Context, q store.AgentQuery) ([]store.Agent, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []store.Agent
	needle := strings.ToLower(q.Q)
	for _, a := range s.agents {
		if q.Role != "" && a.Role != q.Role {
			continue
		}
		if q.Category != "" && !slices.Contains(a.Profile.Categories, q.Category) {
			continue
		}
		if q.Capability != "" && !slices.Contains(store.CapabilityKeys(a), strings.ToLower(q.Capability)) {
			continue
		}
		if needle != "" && !strings.Contains(strings.ToLower(a.Name), needle) &&
			!strings.Contains(strings.ToLower(a.Profile.Description), needle) {
			continue
		}
		a.Online = s.onlineLocked(a.ID, q.Now)
		if q.OnlineOnly && !a.Online {
			continue
		}
		if seen := a.LastSeenAt; !q.ActiveSince.IsZero() {
			if seen.IsZero() {
				seen = a.CreatedAt
			}
			if seen.Before(q.ActiveSince) {
				continue
			}
		}
		all = append(all, cloneAgent(a))
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Reputation != all[j].Reputation {
			return all[i].Reputation > all[j].Reputation
		}
		if all[i].Name != all[j].Name {
			return all[i].Name < all[j].Name
		}
		return all[i].ID < all[j].ID
	})
	total := len(all)
	lo := min(max(q.Offset, 0), total)
	hi := min(lo+q.Limit, total)
	return all[lo:hi], total, nil
}

// CreateOffer implements store.Store.
func (s *Store) CreateOffer(_ context.Context, o store.Offer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.offers[o.ID]; ok {
		return fmt.Errorf("offer %s: %w", o.ID, store.ErrConflict)
	}
	s.offers[o.ID] = o
	return nil
}

// Offer implements store.Store.
func (s *Store) Offer(_ context.Context, id string) (store.Offer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.offers[id]
	if !ok {
		return store.Offer{}, notFound("offer", id)
	}
	return o, nil
}

// CreateNegotiation implements store.Store.
func (s *Store) CreateNegotiation(_ context.Context, st negotiation.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.offers[st.OfferID]
	if !ok {
		return notFound("offer", st.OfferID)
	}
	if o.NegotiationID != "" {
		return fmt.Errorf("offer %s already has negotiation %s: %w", o.ID, o.NegotiationID, store.ErrConflict)
	}
	if _, ok := s.negotiations[st.ID]; ok {
		return fmt.Errorf("negotiation %s: %w", st.ID, store.ErrConflict)
	}
	o.NegotiationID = st.ID
	s.offers[o.ID] = o
	s.negotiations[st.ID] = &room{state: st.Clone()}
	s.order = append(s.order, st.ID)
	return nil
}

func (s *Store) room(id string) (*room, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.negotiations[id]
	if !ok {
		return nil, notFound("negotiation", id)
	}
	return r, nil
}

// Negotiation implements store.Store.
func (s *Store) Negotiation(_ context.Context, id string) (negotiation.State, error) {
	r, err := s.room(id)
	if err != nil {
		return negotiation.State{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Clone(), nil
}

// PendingFor implements store.Store.
func (s *Store) PendingFor(_ context.Context, bouncerID string) ([]negotiation.State, error) {
	s.mu.Lock()
	rooms := make([]*room, 0)
	for _, id := range s.order {
		rooms = append(rooms, s.negotiations[id])
	}
	s.mu.Unlock()
	var out []negotiation.State
	for _, r := range rooms {
		r.mu.Lock()
		if r.state.Status == negotiation.StatusPending && r.state.Bouncer.AgentID == bouncerID {
			out = append(out, r.state.Clone())
		}
		r.mu.Unlock()
	}
	return out, nil
}

// states returns a copy of every negotiation state that keep accepts.
func (s *Store) states(keep func(*negotiation.State) bool) []negotiation.State {
	s.mu.Lock()
	rooms := make([]*room, 0, len(s.order))
	for _, id := range s.order {
		rooms = append(rooms, s.negotiations[id])
	}
	s.mu.Unlock()
	var out []negotiation.State
	for _, r := range rooms {
		r.mu.Lock()
		if keep(&r.state) {
			out = append(out, r.state.Clone())
		}
		r.mu.Unlock()
	}
	return out
}

// LiveNegotiations implements store.Store.
func (s *Store) LiveNegotiations(_ context.Context, agentID string) ([]negotiation.State, error) {
	return s.states(func(st *negotiation.State) bool {
		return st.Status == negotiation.StatusLive && st.IsParty(agentID)
	}), nil
}

// PendingCounts implements store.Store.
func (s *Store) PendingCounts(_ context.Context, bouncerID, brandID string) (int, int, error) {
	var pair, total int
	s.states(func(st *negotiation.State) bool {
		if st.Status == negotiation.StatusPending && st.Bouncer.AgentID == bouncerID {
			total++
			if st.Brand.AgentID == brandID {
				pair++
			}
		}
		return false
	})
	return pair, total, nil
}

// PurgeRequests implements store.Store.
func (s *Store) PurgeRequests(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	kept := s.order[:0]
	for _, id := range s.order {
		r := s.negotiations[id]
		r.mu.Lock()
		st := r.state.Status
		old := (st == negotiation.StatusPending || st == negotiation.StatusDeclined) && r.state.CreatedAt.Before(before)
		offer := r.state.OfferID
		r.mu.Unlock()
		if !old {
			kept = append(kept, id)
			continue
		}
		delete(s.negotiations, id)
		delete(s.offers, offer)
		n++
	}
	s.order = kept
	for id, o := range s.offers {
		if o.NegotiationID == "" && o.CreatedAt.Before(before) {
			delete(s.offers, id)
		}
	}
	return n, nil
}

// PurgeArena implements store.Store.
func (s *Store) PurgeArena(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	kept := s.order[:0]
	for _, id := range s.order {
		r := s.negotiations[id]
		r.mu.Lock()
		st := r.state
		r.mu.Unlock()
		over := st.Status != negotiation.StatusPending && st.Status != negotiation.StatusLive
		if !st.Arena || !over || !st.CreatedAt.Before(before) {
			kept = append(kept, id)
			continue
		}
		delete(s.negotiations, id)
		delete(s.offers, st.OfferID)
		n++
	}
	s.order = kept
	return n, nil
}

// SetBlocked implements store.Store.
func (s *Store) SetBlocked(_ context.Context, bouncerID, brandID string, blocked bool, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{bouncerID, brandID}
	if !blocked {
		delete(s.blocks, k)
	} else if _, ok := s.blocks[k]; !ok {
		s.blocks[k] = at
	}
	return nil
}

// Blocked implements store.Store.
func (s *Store) Blocked(_ context.Context, bouncerID, brandID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.blocks[[2]string{bouncerID, brandID}]
	return ok, nil
}

// Negotiations implements store.Store.
func (s *Store) Negotiations(_ context.Context, q store.NegotiationQuery) ([]negotiation.State, error) {
	s.mu.Lock()
	ids := slices.Clone(s.order)
	s.mu.Unlock()
	var out []negotiation.State
	skip := max(q.Offset, 0)
	for i := len(ids) - 1; i >= 0 && (q.Limit <= 0 || len(out) < q.Limit); i-- {
		r, err := s.room(ids[i])
		if err != nil {
			continue
		}
		r.mu.Lock()
		if (q.Arena == nil || r.state.Arena == *q.Arena) && (len(q.Statuses) == 0 || slices.Contains(q.Statuses, r.state.Status)) &&
			(q.AgentID == "" || r.state.Brand.AgentID == q.AgentID || r.state.Bouncer.AgentID == q.AgentID) {
			if skip > 0 {
				skip--
			} else {
				out = append(out, r.state.Clone())
			}
		}
		r.mu.Unlock()
	}
	return out, nil
}

// Update implements store.Store. The step runs on a copy; the copy replaces
// the stored state only when the outcome changed something, so a refused
// frame leaves no trace.
func (s *Store) Update(_ context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	r, err := s.room(id)
	if err != nil {
		return negotiation.State{}, negotiation.Outcome{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	work := r.state.Clone()
	tx := &memTx{s: s} // pending made by the first AddGrantSpent
	out, stepErr := step(tx, &work)
	defer tx.end()
	if out.Changed() {
		// Checked before anything of the step is kept: a step refused for
		// its entries (a lost race for the seq) keeps no grant spending.
		for i, e := range out.Entries {
			if e.Seq != r.state.LastSeq+int64(i)+1 {
				return r.state.Clone(), negotiation.Outcome{}, fmt.Errorf("negotiation %s seq %d: %w", id, e.Seq, store.ErrConflict)
			}
			if err := check(&out.Entries[i]); err != nil {
				return r.state.Clone(), negotiation.Outcome{}, fmt.Errorf("negotiation %s: %w", id, err)
			}
		}
		if len(tx.pending) > 0 {
			s.mu.Lock()
			for k, c := range tx.pending {
				if g, ok := s.grants[k]; ok {
					g.SpentCents += c
					s.grants[k] = g
				}
			}
			s.mu.Unlock()
		}
		r.state = work
		r.transcript.append(out.Entries)
		if len(out.Reputation) > 0 || out.Settlement != nil {
			s.mu.Lock()
			agents := make([]string, 0, len(out.Reputation))
			for agentID := range out.Reputation {
				agents = append(agents, agentID)
			}
			slices.Sort(agents)
			for _, agentID := range agents {
				d := out.Reputation[agentID]
				if a, ok := s.agents[agentID]; ok {
					a.Reputation += d
					s.agents[agentID] = a
				}
				s.repEvents = append(s.repEvents, store.ReputationEvent{
					AgentID: agentID, NegotiationID: work.ID, Delta: d, Reason: work.Status, At: work.EndedAt})
			}
			if out.Settlement != nil {
				s.settlements = append(s.settlements, *out.Settlement)
			}
			s.mu.Unlock()
		}
	}
	return r.state.Clone(), out, stepErr
}

// Transcript implements store.Store.
func (s *Store) Transcript(_ context.Context, id string, since int64) ([]negotiation.Entry, error) {
	r, err := s.room(id)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transcript.since(since), nil
}

// Wakes implements store.Store.
func (s *Store) Wakes(_ context.Context) ([]store.Wake, error) {
	s.mu.Lock()
	rooms := make(map[string]*room, len(s.negotiations))
	maps := s.negotiations
	for id, r := range maps {
		rooms[id] = r
	}
	s.mu.Unlock()
	var out []store.Wake
	for id, r := range rooms {
		r.mu.Lock()
		if at := r.state.NextWake(); !at.IsZero() {
			out = append(out, store.Wake{NegotiationID: id, At: at})
		}
		r.mu.Unlock()
	}
	return out, nil
}

// Overdue implements store.Store.
func (s *Store) Overdue(ctx context.Context, before time.Time, limit int) ([]store.Wake, error) {
	all, _ := s.Wakes(ctx)
	var out []store.Wake
	for _, w := range all {
		if w.At.Before(before) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b store.Wake) int { return a.At.Compare(b.At) })
	if len(out) > max(limit, 1) {
		out = out[:max(limit, 1)]
	}
	return out, nil
}

// Ping implements store.Store.
func (s *Store) Ping(context.Context) error { return nil }

// Close implements store.Store.
func (s *Store) Close() {}

func cloneAgent(a store.Agent) store.Agent {
	a.PrincipalKey = slices.Clone(a.PrincipalKey)
	a.Profile.Categories = slices.Clone(a.Profile.Categories)
	a.Profile.Audience = slices.Clone(a.Profile.Audience)
	if a.IRC != nil {
		irc := *a.IRC
		irc.Capabilities = slices.Clone(irc.Capabilities)
		a.IRC = &irc
	}
	return a
}

// memTx is the budget side of Update: the first GrantSpent takes the store's
// one grant lock (no lock-order deadlocks) until Update ends.
type memTx struct {
	s       *Store
	locked  bool
	pending map[string]int64
}

func (t *memTx) GrantSpent(iss, jti string) (int64, error) {
	if !t.locked {
		t.s.grantMu.Lock()
		t.locked = true
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	k := grantKey(iss, jti)
	return t.s.grants[k].SpentCents + t.pending[k], nil
}

func (t *memTx) AddGrantSpent(iss, jti string, cents int64) error {
	if !t.locked {
		t.s.grantMu.Lock()
		t.locked = true
	}
	if t.pending == nil {
		t.pending = map[string]int64{}
	}
	t.pending[grantKey(iss, jti)] += cents
	return nil
}

func (t *memTx) end() {
	if t.locked {
		t.s.grantMu.Unlock()
	}
}

// SaveGrant implements store.Store.
func (s *Store) SaveGrant(ctx context.Context, g store.GrantRecord) error {
	return s.SaveGrantCapped(ctx, g, 0)
}

// SaveGrantCapped implements store.Store.
func (s *Store) SaveGrantCapped(_ context.Context, g store.GrantRecord, maxActive int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := grantKey(g.Issuer, g.JTI)
	if _, ok := s.grants[k]; ok {
		return fmt.Errorf("grant %s: %w", g.JTI, store.ErrConflict)
	}
	if maxActive > 0 {
		held := 0
		for _, o := range s.grants {
			if o.AgentID == g.AgentID && o.Issuer == g.Issuer && o.RevokedAt.IsZero() && g.CreatedAt.Before(o.ExpiresAt) {
				held++
			}
		}
		if held >= maxActive {
			return fmt.Errorf("grant %s: %d active grants held: %w", g.JTI, held, store.ErrLimit)
		}
	}
	if at, ok := s.revocations[k]; ok && g.RevokedAt.IsZero() {
		g.RevokedAt = at
	}
	g.Scope = slices.Clone(g.Scope)
	s.grants[k] = g
	s.grantOrder = append(s.grantOrder, k)
	return nil
}

// Grants implements store.Store.
func (s *Store) Grants(_ context.Context, agentID string) ([]store.GrantRecord, error) {
	return s.grantsPage(agentID, 0, -1), nil
}

// GrantsPage implements store.Store: a record's Cursor is its place in
// the upload order, counted from 1.
func (s *Store) GrantsPage(_ context.Context, agentID string, after int64, limit int) ([]store.GrantRecord, error) {
	return s.grantsPage(agentID, after, max(limit, 1)), nil
}

// grantsPage is GrantsPage; limit < 0: all.
func (s *Store) grantsPage(agentID string, after int64, limit int) []store.GrantRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.GrantRecord
	for i := max(after, 0); i < int64(len(s.grantOrder)) && (limit < 0 || len(out) < limit); i++ {
		if g := s.grants[s.grantOrder[i]]; g.AgentID == agentID {
			g.Cursor = i + 1
			out = append(out, g)
		}
	}
	return out
}

// RevokeGrant implements store.Store.
func (s *Store) RevokeGrant(_ context.Context, agentID, jti string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for k, g := range s.grants {
		if g.AgentID != agentID || g.JTI != jti {
			continue
		}
		found = true
		if g.RevokedAt.IsZero() {
			g.RevokedAt = at
			s.grants[k] = g
		}
	}
	if !found {
		return notFound("grant", jti)
	}
	return nil
}

// RevokeIssuerGrant implements store.Store.
func (s *Store) RevokeIssuerGrant(_ context.Context, agentID, iss, jti string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := grantKey(iss, jti)
	if _, ok := s.revocations[k]; !ok {
		s.revocations[k] = at
	}
	g, ok := s.grants[k]
	if !ok || g.AgentID != agentID {
		return false, nil
	}
	if g.RevokedAt.IsZero() {
		g.RevokedAt = s.revocations[k]
		s.grants[k] = g
	}
	return true, nil
}

// VenueKey implements store.Store.
func (s *Store) VenueKey(_ context.Context, create func() ([]byte, error)) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.venueKeys) == 0 {
		k, err := create()
		if err != nil {
			return nil, err
		}
		s.venueKeys = append(s.venueKeys, store.VenueKey{ID: 1, Key: slices.Clone(k), CreatedAt: time.Now().UTC()})
	}
	return slices.Clone(s.venueKeys[len(s.venueKeys)-1].Key), nil
}

// VenueKeys implements store.Store.
func (s *Store) VenueKeys(context.Context) ([]store.VenueKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.VenueKey, 0, len(s.venueKeys))
	for i := len(s.venueKeys) - 1; i >= 0; i-- {
		k := s.venueKeys[i]
		k.Key = slices.Clone(k.Key)
		out = append(out, k)
	}
	return out, nil
}

// RotateVenueKey implements store.Store.
func (s *Store) RotateVenueKey(_ context.Context, key []byte, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.venueKeys); n > 0 {
		s.venueKeys[n-1].RetiredAt = at
	}
	s.venueKeys = append(s.venueKeys, store.VenueKey{ID: int64(len(s.venueKeys)) + 1, Key: slices.Clone(key), CreatedAt: at})
	return nil
}

// onlineLocked reports whether agentID has a lobby socket open on a node as
// of now; s.mu is held.
func (s *Store) onlineLocked(agentID string, now time.Time) bool {
	for _, until := range s.presence[agentID] {
		if until.After(now) {
			return true
		}
	}
	return false
}

// ReputationEvents implements store.Store.
func (s *Store) ReputationEvents(_ context.Context, agentID string, limit int) ([]store.ReputationEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.ReputationEvent
	for i := len(s.repEvents) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if s.repEvents[i].AgentID == agentID {
			out = append(out, s.repEvents[i])
		}
	}
	return out, nil
}

// Settlements implements store.Store.
func (s *Store) Settlements(_ context.Context, agentID string) ([]settlement.Instruction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []settlement.Instruction
	for i := len(s.settlements) - 1; i >= 0; i-- {
		if in := s.settlements[i]; in.Payer == agentID || in.Payee == agentID {
			out = append(out, in)
		}
	}
	return out, nil
}

// SetPresence implements store.Store.
func (s *Store) SetPresence(_ context.Context, agentID, node string, until, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[agentID]
	if !ok {
		return notFound("agent", agentID)
	}
	if until.IsZero() {
		delete(s.presence[agentID], node)
	} else {
		if s.presence[agentID] == nil {
			s.presence[agentID] = map[string]time.Time{}
		}
		s.presence[agentID][node] = until
	}
	if at.After(a.LastSeenAt) {
		a.LastSeenAt = at
		s.agents[agentID] = a
	}
	return nil
}

// LastSeqs returns the last seq of each of ids the store has (hub.SeqReader).
func (s *Store) LastSeqs(_ context.Context, ids []string) (map[string]int64, error) {
	seqs := make(map[string]int64, len(ids))
	for _, id := range ids {
		r, err := s.room(id)
		if err != nil {
			continue
		}
		r.mu.Lock()
		seqs[id] = r.state.LastSeq
		r.mu.Unlock()
	}
	return seqs, nil
}
