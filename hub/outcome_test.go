package hub

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/chaos/faultproxy"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/wire"
)

// twoNodes is two hubs on one Postgres schema and one Redis bus: node A
// reaches Postgres through a fault proxy that can lose a COMMIT answer,
// node B directly.
//
// resolve is node A's store's resolve window (postgres.WithResolveWindow):
// short where the test wants the unknown outcome quickly (Postgres cut),
// the default where the test wants the truth found, since on a loaded
// machine dialing a fresh connection through the proxy to ask
// pg_xact_status can take longer than a few hundred milliseconds.
type twoNodes struct {
	a, b      *Hub
	sa        *postgres.Store
	proxy     *faultproxy.Proxy
	clk       *clock.Fake
	mu        sync.Mutex
	committed map[string]int // negotiation -> Committed calls with a settlement
}

func newTwoNodes(t *testing.T, resolve time.Duration) *twoNodes {
	t.Helper()
	base := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Listen("127.0.0.1:0", u.Host, faultproxy.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	viaProxy := *u
	viaProxy.Host = p.Addr()
	q := viaProxy.Query()
	q.Set("sslmode", "disable")
	viaProxy.RawQuery = q.Encode()
	ctx := t.Context()
	sa, err := postgres.New(ctx, viaProxy.String(), postgres.WithSchema(schema), postgres.WithResolveWindow(resolve))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Close)
	if _, err := sa.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sb, err := postgres.New(ctx, base, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	clk := clock.NewFake(t0)
	b := redisBus(t)
	n := &twoNodes{sa: sa, proxy: p, clk: clk, committed: map[string]int{}}
	hook := func(_ context.Context, st *negotiation.State, out negotiation.Outcome) {
		if out.Settlement != nil {
			n.mu.Lock()
			n.committed[st.ID]++
			n.mu.Unlock()
		}
	}
	n.a = New(Config{Store: sa, Bus: b, Timers: timers.NewLocal(clk), Clock: clk, Committed: hook})
	n.b = New(Config{Store: sb, Bus: b, Timers: timers.NewLocal(clk), Clock: clk, Committed: hook})
	return n
}

// settled is how many times the settlement of id was handed on, once the
// Committed hooks of both nodes ran (they run off the sender's path).
func (n *twoNodes) settled(id string) int {
	for _, h := range []*Hub{n.a, n.b} {
		if err := h.WaitCommitted(context.Background()); err != nil {
			panic(err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.committed[id]
}

// liveDeal creates a live (not arena) negotiation with a standing proposal
// of the brand on node A.
func (n *twoNodes) liveDeal(t *testing.T, id string) negotiation.State {
	t.Helper()
	ctx := t.Context()
	brand := negotiation.Party{AgentID: id + "-brand", Name: "B"}
	bouncer := negotiation.Party{AgentID: id + "-bouncer", Name: "K"}
	for _, a := range []store.Agent{
		{ID: brand.AgentID, Name: "B", Role: negotiation.RoleBrand, KeyHash: brand.AgentID, CreatedAt: t0},
		{ID: bouncer.AgentID, Name: "K", Role: negotiation.RoleBouncer, KeyHash: bouncer.AgentID, CreatedAt: t0},
	} {
		if err := n.sa.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.sa.CreateOffer(ctx, store.Offer{ID: "off-" + id, Brand: brand.AgentID, Bouncer: bouncer.AgentID, Body: json.RawMessage(`{"title":"t"}`), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	st := negotiation.NewRequest(id, "off-"+id, json.RawMessage(`{"title":"t"}`), brand, bouncer, false, n.clk.Now())
	if err := n.a.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	_, _, err := n.a.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) { return st.Start(n.clk.Now()) })
	if err != nil {
		t.Fatal(err)
	}
	propose := frame(t, `{"type":"propose_terms","id":"p1","terms":{"amount_usd":3000,"category":"primary_slot","sends":2}}`)
	st, _, err = n.a.Update(ctx, id, func(_ store.Tx, s *negotiation.State) (negotiation.Outcome, error) {
		return s.Apply(s.Turn, propose, n.clk.Now(), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func frame(t *testing.T, s string) negotiation.Frame {
	t.Helper()
	f, werr := negotiation.DecodeFrame([]byte(s))
	if werr != nil {
		t.Fatal(werr)
	}
	return f
}

type reply struct {
	out negotiation.Outcome
	err error
}

// submit runs f as party agent through h's room step (as Submit does,
// without the grant check: the test parties hold no grants) and returns
// the sender's reply.
func submit(t *testing.T, h *Hub, st *negotiation.State, agent string, f negotiation.Frame) reply {
	t.Helper()
	got := make(chan reply, 1)
	step := func(_ store.Tx, s *negotiation.State) (negotiation.Outcome, error) {
		return s.Apply(agent, f, h.stepNow(s), nil)
	}
	_, _, _ = h.apply(t.Context(), st.ID, step, func(out negotiation.Outcome, err error) { got <- reply{out, err} })
	select {
	case r := <-got:
		return r
	case <-time.After(wait):
		t.Fatal("no reply")
	}
	return reply{}
}

// The accept's COMMIT reaches Postgres and its answer is lost on the way
// back to node A: the sender gets its message_ack (the store asked the
// database), the observer on node B sees the deal, the settlement is
// handed on once.
func TestLostCommitAnswerDealIsAckedAndPublished(t *testing.T) {
	n := newTwoNodes(t, postgres.DefaultResolveWindow)
	st := n.liveDeal(t, "neg_lost_ack")
	obs := newSink()
	sub := n.b.Subscribe(st.ID, &st, "", -1, obs)
	defer sub.Close()
	obs.next(t, negotiation.TypeNegotiationStarted)

	n.proxy.DropCommitReply(1, "INSERT INTO transcript", false)
	r := submit(t, n.a, &st, st.Bouncer.AgentID, frame(t, `{"type":"accept","id":"acc1"}`))
	if r.err != nil || r.out.Ack == nil {
		t.Fatalf("sender's reply: ack %s, err %v; want the message_ack", r.out.Ack, r.err)
	}
	if n.proxy.Dropped() != 1 {
		t.Fatalf("dropped %d COMMIT answers, want 1", n.proxy.Dropped())
	}
	if m := obs.next(t, negotiation.TypeNegotiationEnded); m["status"] != negotiation.StatusDeal {
		t.Fatalf("observer on node B got %v, want the deal", m)
	}
	if got := n.settled(st.ID); got != 1 {
		t.Fatalf("settlement handed on %d times, want 1", got)
	}
}

// The accept's answer is lost and Postgres cannot be reached at all: the
// sender is told outcome_unknown (never "nothing changed"). Once Postgres
// is back, the deal that landed is published and settled once: by the
// sender's resend (which answers the original ack) or by the node's
// reconciliation.
func TestLostCommitAnswerUnreachableThenTheTruth(t *testing.T) {
	for _, how := range []string{"resend", "reconcile"} {
		t.Run(how, func(t *testing.T) {
			n := newTwoNodes(t, 300*time.Millisecond)
			st := n.liveDeal(t, "neg_unknown_"+how)
			obs := newSink()
			sub := n.b.Subscribe(st.ID, &st, "", -1, obs)
			defer sub.Close()
			obs.next(t, negotiation.TypeNegotiationStarted)

			accept := frame(t, `{"type":"accept","id":"acc1"}`)
			n.proxy.DropCommitReply(1, "INSERT INTO transcript", true)
			r := submit(t, n.a, &st, st.Bouncer.AgentID, accept)
			var we *wire.Error
			if !errors.As(r.err, &we) || we.Code != wire.CodeOutcomeUnknown {
				t.Fatalf("sender's reply: %v, want outcome_unknown", r.err)
			}
			if n.a.Suspects() != 1 {
				t.Fatalf("%d suspects on node A, want 1", n.a.Suspects())
			}
			if left := n.a.Reconcile(t.Context()); left != 1 {
				t.Fatalf("reconciliation with Postgres cut left %d suspects, want 1 (kept)", left)
			}
			n.proxy.Cut(false)
			switch how {
			case "resend":
				r = submit(t, n.a, &st, st.Bouncer.AgentID, accept)
				if r.err != nil || !r.out.Replay || r.out.Ack == nil {
					t.Fatalf("resend: %+v", r)
				}
			case "reconcile":
				if left := n.a.Reconcile(t.Context()); left != 0 {
					t.Fatalf("%d suspects left after reconciling with Postgres back", left)
				}
			}
			if m := obs.next(t, negotiation.TypeNegotiationEnded); m["status"] != negotiation.StatusDeal {
				t.Fatalf("observer on node B got %v, want the deal", m)
			}
			if got := n.settled(st.ID); got != 1 {
				t.Fatalf("settlement handed on %d times, want 1", got)
			}
			n.a.Reconcile(t.Context()) // nothing more to find
			if got := n.settled(st.ID); got != 1 {
				t.Fatalf("settlement handed on %d times after another reconciliation, want 1", got)
			}
		})
	}
}

// A commit whose publication never happened (the committing node died
// between its commit and its publish): the reconciliation of the node
// serving an observer catches the observer up from the store.
func TestReconcileCatchesUpUnpublishedCommit(t *testing.T) {
	n := newTwoNodes(t, postgres.DefaultResolveWindow)
	st := n.liveDeal(t, "neg_unpublished")
	obs := newSink()
	sub := n.b.Subscribe(st.ID, &st, "", -1, obs)
	defer sub.Close()
	obs.next(t, negotiation.TypeNegotiationStarted)
	// Straight into the store: committed, never published.
	if _, _, err := n.sa.Update(t.Context(), st.ID, func(_ store.Tx, s *negotiation.State) (negotiation.Outcome, error) {
		return s.Apply(s.Turn, frame(t, `{"type":"message","content":"unpublished"}`), n.clk.Now(), nil)
	}); err != nil {
		t.Fatal(err)
	}
	n.b.Reconcile(t.Context())
	if m := obs.next(t, negotiation.TypeNegotiationMessage); m["content"] != "unpublished" {
		t.Fatalf("observer got %v", m)
	}
}
