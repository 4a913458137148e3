package handshake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// agents is a directory of fixed agents.
type agents map[string]store.Agent

func (a agents) Agent(_ context.Context, id string) (store.Agent, error) {
	ag, ok := a[id]
	if !ok {
		return ag, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	return ag, nil
}

// pushes records lobby pushes.
type pushes struct {
	mu     sync.Mutex
	frames map[string][]map[string]any
}

func (p *pushes) Push(_ context.Context, agentID string, frame json.RawMessage) {
	var m map[string]any
	_ = json.Unmarshal(frame, &m)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frames[agentID] = append(p.frames[agentID], m)
}

// types returns the types of the frames pushed to agentID.
func (p *pushes) types(agentID string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, f := range p.frames[agentID] {
		out = append(out, f["type"].(string))
	}
	return out
}

type fixture struct {
	svc    *handshake.Service
	portal *handshake.Portal
	pushes *pushes
	ctx    context.Context
}

// setup returns a service over a memory store with agents a, b, c, d and
// the many agents m00..m29, account "alice" owning b.
func setup(t *testing.T) *fixture {
	t.Helper()
	return setupStore(t, memory.New())
}

func setupStore(t *testing.T, st handshake.Store) *fixture {
	t.Helper()
	dir := agents{}
	for _, id := range []string{"a", "b", "c", "d"} {
		dir[id] = store.Agent{ID: id, Name: "Agent " + id}
	}
	for i := range 30 {
		id := fmt.Sprintf("m%02d", i)
		dir[id] = store.Agent{ID: id, Name: id}
	}
	var n atomic.Int64
	p := &pushes{frames: map[string][]map[string]any{}}
	svc := &handshake.Service{
		Store: st, Agents: dir, Push: p,
		Accounts: handshake.StaticAccounts{"alice": {"b"}, "carol": {"c"}},
		NewID:    func(prefix string) string { return fmt.Sprintf("%s_%d", prefix, n.Add(1)) },
	}
	return &fixture{svc: svc, portal: &handshake.Portal{Service: svc}, pushes: p, ctx: t.Context()}
}

// code returns err's wire code ("" for nil).
func code(err error) string {
	if err == nil {
		return ""
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return "error: " + err.Error()
}

func wantCode(t *testing.T, err error, want string) {
	t.Helper()
	if got := code(err); got != want {
		t.Fatalf("got %q (%v), want %q", got, err, want)
	}
}

// contact makes a request from -> to for scopes and fails the test on error.
func (f *fixture) contact(t *testing.T, from, to string, now time.Time, scopes ...string) handshake.Request {
	t.Helper()
	if len(scopes) == 0 {
		scopes = nil
	}
	r, err := f.svc.Contact(f.ctx, from, handshake.ContactInput{To: to, Purpose: "talk", Scopes: scopes}, now)
	if err != nil {
		t.Fatalf("contact %s -> %s: %v", from, to, err)
	}
	return r
}

// agree makes an accepted agreement from -> to for scopes.
func (f *fixture) agree(t *testing.T, from, to string, now time.Time, scopes ...string) handshake.Agreement {
	t.Helper()
	r := f.contact(t, from, to, now, scopes...)
	ag, err := f.svc.Accept(f.ctx, handshake.AgentActor(to), r.ID, handshake.AcceptInput{}, now)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	return ag
}
