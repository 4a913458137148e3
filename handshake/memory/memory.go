// Package memory is the embedded handshake.Store: everything in process
// memory, nothing survives a restart. One mutex serialises transactions
// (the in-process equivalent of Postgres's advisory locks); a
// transaction's writes are undone when its function fails.
package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/venuehq/venue/handshake"
)

// Store implements handshake.Store in memory. Use New.
type Store struct {
	mu         sync.Mutex
	policies   map[string]handshake.PolicyRecord
	owners     map[string]handshake.Owner
	requests   table[handshake.Request]
	agreements table[handshake.Agreement]
	messages   table[handshake.Message]
	tasks      table[handshake.Task]
	reports    table[handshake.Report]
	resources  table[handshake.Resource]
	signIns    table[handshake.SignIn]
	events     []handshake.Event
	audit      []handshake.AuditEntry
	hits       map[string][]time.Time
}

var _ handshake.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{policies: map[string]handshake.PolicyRecord{}, owners: map[string]handshake.Owner{}, hits: map[string][]time.Time{}}
}

// table is rows in insertion order with an index by id.
type table[T any] struct {
	rows []T
	byID map[string]int
}

func (t *table[T]) get(id string) (T, bool) {
	i, ok := t.byID[id]
	if !ok {
		var zero T
		return zero, false
	}
	return t.rows[i], true
}

// Atomically implements handshake.Store: keys are not needed, the one
// mutex serialises everything.
func (s *Store) Atomically(ctx context.Context, _ []string, fn func(tx handshake.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := &tx{s: s}
	if err := fn(tx); err != nil {
		for i := len(tx.undo) - 1; i >= 0; i-- {
			tx.undo[i]()
		}
		return err
	}
	return nil
}

// tx is one transaction: writes go straight to the store and leave an
// undo behind.
type tx struct {
	s    *Store
	undo []func()
}

func notFound(kind, id string) error { return fmt.Errorf("%s %s: %w", kind, id, handshake.ErrNotFound) }

func insert[T any](t *tx, tb *table[T], id string, v T) error {
	if tb.byID == nil {
		tb.byID = map[string]int{}
	}
	if _, ok := tb.byID[id]; ok {
		return fmt.Errorf("memory: %s exists", id)
	}
	tb.byID[id] = len(tb.rows)
	tb.rows = append(tb.rows, v)
	t.undo = append(t.undo, func() {
		delete(tb.byID, id)
		tb.rows = tb.rows[:len(tb.rows)-1]
	})
	return nil
}

func update[T any](t *tx, tb *table[T], kind, id string, v T) error {
	i, ok := tb.byID[id]
	if !ok {
		return notFound(kind, id)
	}
	old := tb.rows[i]
	tb.rows[i] = v
	t.undo = append(t.undo, func() { tb.rows[i] = old })
	return nil
}

func get[T any](tb *table[T], kind, id string, clone func(T) T) (T, error) {
	v, ok := tb.get(id)
	if !ok {
		return v, notFound(kind, id)
	}
	return clone(v), nil
}

// page returns rows[offset:offset+limit] (none for limit 0) and the total.
func page[T any](rows []T, limit, offset int) ([]T, int) {
	total := len(rows)
	if limit <= 0 || offset >= total {
		return []T{}, total
	}
	return rows[offset:min(total, offset+limit)], total
}

func since(t, from time.Time) bool { return from.IsZero() || t.After(from) }

func cloneRequest(r handshake.Request) handshake.Request { r.Scopes = slices.Clone(r.Scopes); return r }
func cloneAgreement(a handshake.Agreement) handshake.Agreement {
	a.Scopes = slices.Clone(a.Scopes)
	return a
}
func cloneResource(r handshake.Resource) handshake.Resource { r.Tags = slices.Clone(r.Tags); return r }
func same[T any](v T) T                                     { return v }

// Expire implements handshake.Tx.
func (t *tx) Expire(now time.Time) error {
	for i, r := range t.s.requests.rows {
		if r.Status == handshake.RequestPending && !now.Before(r.ExpiresAt) {
			r.Status, r.DecidedAt, r.DecidedBy = handshake.RequestExpired, r.ExpiresAt, "expiry"
			if err := update(t, &t.s.requests, "request", t.s.requests.rows[i].ID, r); err != nil {
				return err
			}
		}
	}
	for i, a := range t.s.agreements.rows {
		if a.Status == handshake.AgreementActive && !now.Before(a.ExpiresAt) {
			a.Status, a.EndedAt, a.EndedBy = handshake.AgreementExpired, a.ExpiresAt, "expiry"
			if err := update(t, &t.s.agreements, "agreement", t.s.agreements.rows[i].ID, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Policy implements handshake.Tx.
func (t *tx) Policy(agentID string) (handshake.PolicyRecord, error) {
	p, ok := t.s.policies[agentID]
	if !ok {
		return p, notFound("policy", agentID)
	}
	return p, nil
}

// Owner implements handshake.Tx.
func (t *tx) Owner(agentID string) (handshake.Owner, error) {
	o, ok := t.s.owners[agentID]
	if !ok {
		return o, notFound("owner", agentID)
	}
	return o, nil
}

// SetOwner implements handshake.Tx.
func (t *tx) SetOwner(o handshake.Owner) error {
	t.keepOwner(o.AgentID)
	t.s.owners[o.AgentID] = o
	return nil
}

// DeleteOwner implements handshake.Tx.
func (t *tx) DeleteOwner(agentID string) error {
	t.keepOwner(agentID)
	delete(t.s.owners, agentID)
	return nil
}

// keepOwner records how to undo a change of agentID's owner.
func (t *tx) keepOwner(agentID string) {
	old, had := t.s.owners[agentID]
	t.undo = append(t.undo, func() {
		if had {
			t.s.owners[agentID] = old
		} else {
			delete(t.s.owners, agentID)
		}
	})
}

// OwnedBy implements handshake.Tx.
func (t *tx) OwnedBy(account string) ([]string, error) {
	out := []string{}
	for id, o := range t.s.owners {
		if o.Account == account && o.Confirmed() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// SetPolicy implements handshake.Tx.
func (t *tx) SetPolicy(p handshake.PolicyRecord) error {
	old, had := t.s.policies[p.AgentID]
	t.s.policies[p.AgentID] = p
	t.undo = append(t.undo, func() {
		if had {
			t.s.policies[p.AgentID] = old
		} else {
			delete(t.s.policies, p.AgentID)
		}
	})
	return nil
}

// CreateRequest implements handshake.Tx.
func (t *tx) CreateRequest(r handshake.Request) error {
	return insert(t, &t.s.requests, r.ID, cloneRequest(r))
}

// Request implements handshake.Tx.
func (t *tx) Request(id string) (handshake.Request, error) {
	return get(&t.s.requests, "request", id, cloneRequest)
}

// UpdateRequest implements handshake.Tx.
func (t *tx) UpdateRequest(r handshake.Request) error {
	return update(t, &t.s.requests, "request", r.ID, cloneRequest(r))
}

// Requests implements handshake.Tx.
func (t *tx) Requests(q handshake.RequestQuery) ([]handshake.Request, int, error) {
	var out []handshake.Request
	for _, r := range t.s.requests.rows {
		if (q.From == "" || r.From == q.From) && (q.To == "" || r.To == q.To) &&
			(len(q.Statuses) == 0 || slices.Contains(q.Statuses, r.Status)) &&
			since(r.CreatedAt, q.CreatedSince) && (q.DecidedSince.IsZero() || !r.DecidedAt.IsZero() && since(r.DecidedAt, q.DecidedSince)) {
			out = append(out, cloneRequest(r))
		}
	}
	rows, n := page(out, q.Limit, q.Offset)
	return rows, n, nil
}

// CreateAgreement implements handshake.Tx.
func (t *tx) CreateAgreement(a handshake.Agreement) error {
	return insert(t, &t.s.agreements, a.ID, cloneAgreement(a))
}

// Agreement implements handshake.Tx.
func (t *tx) Agreement(id string) (handshake.Agreement, error) {
	return get(&t.s.agreements, "agreement", id, cloneAgreement)
}

// UpdateAgreement implements handshake.Tx.
func (t *tx) UpdateAgreement(a handshake.Agreement) error {
	return update(t, &t.s.agreements, "agreement", a.ID, cloneAgreement(a))
}

// Agreements implements handshake.Tx.
func (t *tx) Agreements(q handshake.AgreementQuery) ([]handshake.Agreement, int, error) {
	var out []handshake.Agreement
	for _, a := range t.s.agreements.rows {
		if (a.Requester == q.Agent && (q.Other == "" || a.Target == q.Other) || a.Target == q.Agent && (q.Other == "" || a.Requester == q.Other)) &&
			(len(q.Statuses) == 0 || slices.Contains(q.Statuses, a.Status)) {
			out = append(out, cloneAgreement(a))
		}
	}
	rows, n := page(out, q.Limit, q.Offset)
	return rows, n, nil
}

// CreateMessage implements handshake.Tx.
func (t *tx) CreateMessage(m handshake.Message) error { return insert(t, &t.s.messages, m.ID, m) }

// Message implements handshake.Tx.
func (t *tx) Message(id string) (handshake.Message, error) {
	return get(&t.s.messages, "message", id, same)
}

// Messages implements handshake.Tx.
func (t *tx) Messages(q handshake.MessageQuery) ([]handshake.Message, int, error) {
	var out []handshake.Message
	for _, m := range t.s.messages.rows {
		if (q.From == "" || m.From == q.From) && (q.To == "" || m.To == q.To) &&
			(q.AgreementID == "" || m.AgreementID == q.AgreementID) && (q.ConversationID == "" || m.ConversationID == q.ConversationID) &&
			(!q.UnreadOnly || m.ReadAt.IsZero()) && since(m.At, q.Since) {
			out = append(out, m)
		}
	}
	rows, n := page(out, q.Limit, 0)
	return rows, n, nil
}

// MarkRead implements handshake.Tx.
func (t *tx) MarkRead(ids []string, at time.Time) error {
	for _, id := range ids {
		m, ok := t.s.messages.get(id)
		if !ok {
			return notFound("message", id)
		}
		m.ReadAt = at
		if err := update(t, &t.s.messages, "message", id, m); err != nil {
			return err
		}
	}
	return nil
}

// CreateTask implements handshake.Tx.
func (t *tx) CreateTask(k handshake.Task) error { return insert(t, &t.s.tasks, k.ID, k) }

// Task implements handshake.Tx.
func (t *tx) Task(id string) (handshake.Task, error) { return get(&t.s.tasks, "task", id, same) }

// UpdateTask implements handshake.Tx.
func (t *tx) UpdateTask(k handshake.Task) error { return update(t, &t.s.tasks, "task", k.ID, k) }

// Tasks implements handshake.Tx.
func (t *tx) Tasks(q handshake.TaskQuery) ([]handshake.Task, int, error) {
	var out []handshake.Task
	for _, k := range t.s.tasks.rows {
		if (q.From == "" || k.From == q.From) && (q.To == "" || k.To == q.To) && (q.Status == "" || k.Status == q.Status) {
			out = append(out, k)
		}
	}
	rows, n := page(out, q.Limit, q.Offset)
	return rows, n, nil
}

// CreateReport implements handshake.Tx.
func (t *tx) CreateReport(r handshake.Report) error { return insert(t, &t.s.reports, r.ID, r) }

// Reports implements handshake.Tx.
func (t *tx) Reports(q handshake.ReportQuery) ([]handshake.Report, int, error) {
	var out []handshake.Report
	for _, r := range t.s.reports.rows {
		if (q.Reporter == "" || r.Reporter == q.Reporter) && (q.Reported == "" || r.Reported == q.Reported) &&
			(!q.OpenOnly || r.Open) && since(r.At, q.Since) {
			out = append(out, r)
		}
	}
	rows, n := page(out, q.Limit, 0)
	return rows, n, nil
}

// CreateResource implements handshake.Tx.
func (t *tx) CreateResource(r handshake.Resource) error {
	return insert(t, &t.s.resources, r.ID, cloneResource(r))
}

// Resource implements handshake.Tx.
func (t *tx) Resource(id string) (handshake.Resource, error) {
	return get(&t.s.resources, "resource", id, cloneResource)
}

// Resources implements handshake.Tx.
func (t *tx) Resources(q handshake.ResourceQuery) ([]handshake.Resource, int, error) {
	var out []handshake.Resource
	lq, lt := strings.ToLower(q.Q), strings.ToLower(q.Tag)
	for _, r := range t.s.resources.rows {
		if strings.Contains(strings.ToLower(r.Title), lq) && (lt == "" || slices.Contains(r.Tags, lt)) {
			out = append(out, cloneResource(r))
		}
	}
	rows, n := page(out, q.Limit, q.Offset)
	return rows, n, nil
}

// Usage implements handshake.Tx.
func (t *tx) Usage(kind, agentID string) (int, int, error) {
	n, b := 0, 0
	switch kind {
	case handshake.UsageResources:
		for _, r := range t.s.resources.rows {
			if r.Owner == agentID {
				n, b = n+1, b+len(r.Content)
			}
		}
	case handshake.UsageOpenTasks:
		for _, k := range t.s.tasks.rows {
			if k.From == agentID && k.Status == handshake.TaskOpen {
				n, b = n+1, b+len(k.Text)
			}
		}
	default:
		return 0, 0, fmt.Errorf("memory: usage of %q", kind)
	}
	return n, b, nil
}

// AddEvent implements handshake.Tx; it drops events older than 24 hours
// before e.At.
func (t *tx) AddEvent(e handshake.Event) error {
	old := t.s.events
	cut := e.At.Add(-handshake.NotifyWindow)
	kept := make([]handshake.Event, 0, len(old)+1)
	for _, ev := range old {
		if !ev.At.Before(cut) {
			kept = append(kept, ev)
		}
	}
	t.s.events = append(kept, e)
	t.undo = append(t.undo, func() { t.s.events = old })
	return nil
}

// TakeEvents implements handshake.Tx.
func (t *tx) TakeEvents(agentID string, from time.Time) ([]handshake.Event, error) {
	old := t.s.events
	var out []handshake.Event
	kept := make([]handshake.Event, 0, len(old))
	for _, ev := range old {
		switch {
		case ev.AgentID != agentID:
			kept = append(kept, ev)
		case since(ev.At, from):
			out = append(out, ev)
		}
	}
	t.s.events = kept
	t.undo = append(t.undo, func() { t.s.events = old })
	return out, nil
}

// Audit implements handshake.Tx.
func (t *tx) Audit(e handshake.AuditEntry) error {
	e.ID = int64(len(t.s.audit) + 1)
	t.s.audit = append(t.s.audit, e)
	t.undo = append(t.undo, func() { t.s.audit = t.s.audit[:len(t.s.audit)-1] })
	return nil
}

// AuditLog implements handshake.Tx.
func (t *tx) AuditLog(from time.Time, limit int) ([]handshake.AuditEntry, error) {
	var out []handshake.AuditEntry
	for _, e := range t.s.audit {
		if since(e.At, from) && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// Hit implements handshake.Tx.
func (t *tx) Hit(kind, key string, at time.Time) error {
	k := kind + "\x00" + key
	old := t.s.hits[k]
	kept := make([]time.Time, 0, len(old)+1)
	for _, h := range old {
		if !h.Before(at.Add(-time.Hour)) {
			kept = append(kept, h)
		}
	}
	t.s.hits[k] = append(kept, at)
	t.undo = append(t.undo, func() { t.s.hits[k] = old })
	return nil
}

// Hits implements handshake.Tx.
func (t *tx) Hits(kind, key string, from time.Time) (int, error) {
	n := 0
	for _, h := range t.s.hits[kind+"\x00"+key] {
		if since(h, from) {
			n++
		}
	}
	return n, nil
}

// CreateSignIn implements handshake.Tx.
func (t *tx) CreateSignIn(si handshake.SignIn) error {
	return insert(t, &t.s.signIns, si.SecretHash, si)
}

// SignInByCode implements handshake.Tx.
func (t *tx) SignInByCode(code string) (handshake.SignIn, error) {
	for i := len(t.s.signIns.rows) - 1; i >= 0; i-- {
		if si := t.s.signIns.rows[i]; si.Code == code && si.Account == "" {
			return si, nil
		}
	}
	return handshake.SignIn{}, notFound("sign-in code", code)
}

// SignInBySecret implements handshake.Tx.
func (t *tx) SignInBySecret(secretHash string) (handshake.SignIn, error) {
	return get(&t.s.signIns, "sign-in", secretHash, same)
}

// UpdateSignIn implements handshake.Tx.
func (t *tx) UpdateSignIn(si handshake.SignIn) error {
	return update(t, &t.s.signIns, "sign-in", si.SecretHash, si)
}

// EndSessions implements handshake.Tx.
func (t *tx) EndSessions(account string, at time.Time) (int, error) {
	n := 0
	for _, si := range t.s.signIns.rows {
		if si.Account == account && si.EndedAt.IsZero() && at.Before(si.ExpiresAt) {
			si.EndedAt = at
			if err := update(t, &t.s.signIns, "sign-in", si.SecretHash, si); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// Purge implements handshake.Tx.
func (t *tx) Purge(b handshake.PurgeBefore, limit int) (handshake.Purged, error) {
	old := func(at, cut time.Time) bool { return !cut.IsZero() && at.Before(cut) }
	var p handshake.Purged
	p.SignIns = purge(t, &t.s.signIns, limit, func(si handshake.SignIn) (string, bool) {
		return si.SecretHash, old(si.CreatedAt, b.SignIns)
	})
	p.Messages = purge(t, &t.s.messages, limit, func(m handshake.Message) (string, bool) { return m.ID, old(m.At, b.Messages) })
	p.Requests = purge(t, &t.s.requests, limit, func(r handshake.Request) (string, bool) {
		at := r.DecidedAt
		if at.IsZero() {
			at = r.ExpiresAt
		}
		return r.ID, r.Status != handshake.RequestPending && old(at, b.Requests)
	})
	p.Tasks = purge(t, &t.s.tasks, limit, func(k handshake.Task) (string, bool) {
		return k.ID, k.Status != handshake.TaskOpen && old(k.CompletedAt, b.Tasks)
	})
	prev := t.s.audit
	kept := make([]handshake.AuditEntry, 0, len(prev))
	for _, e := range prev {
		if p.Audit < limit && old(e.At, b.Audit) {
			p.Audit++
			continue
		}
		kept = append(kept, e)
	}
	t.s.audit = kept
	t.undo = append(t.undo, func() { t.s.audit = prev })
	return p, nil
}

// purge deletes at most limit rows of tb that gone says go (it also
// returns the row's id), keeping the others in order; undone with the
// transaction.
func purge[T any](t *tx, tb *table[T], limit int, gone func(T) (string, bool)) int {
	prevRows, prevIDs := tb.rows, tb.byID
	rows, ids, n := make([]T, 0, len(prevRows)), map[string]int{}, 0
	for _, r := range prevRows {
		id, g := gone(r)
		if g && n < limit {
			n++
			continue
		}
		ids[id] = len(rows)
		rows = append(rows, r)
	}
	if n == 0 {
		return 0
	}
	tb.rows, tb.byID = rows, ids
	t.undo = append(t.undo, func() { tb.rows, tb.byID = prevRows, prevIDs })
	return n
}
