package venue_test

// Several venue nodes sharing Postgres and Redis are one venue
// (ARCHITECTURE.md): these tests run two (or successive) nodes in this
// process against the real services, with one fake clock standing for the
// nodes' synchronised wall clocks.

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/venue"
)

var mnStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// A negotiation whose brand is on node A and whose bouncer and observer are
// on node B runs as on one node: lobby pushes, relayed frames, a proposal
// expiry fired by whichever node's timer claims it, a deal, one receipt
// key. Then node A stops mid-negotiation: its proposal's expiry still
// fires (on B), and the brand reconnects to B with ?since= and misses
// nothing.
func TestMultiNodeNegotiation(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	a, b := c.node("A"), c.node("B")
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := a.lobby(brand), b.lobby(bouncer)

	// 1. A full negotiation across the nodes.
	negID := mnMatch(t, bl, kl, bouncer, "1")
	br, _ := a.room("brand@A", brand, negID, "")
	kr, _ := b.room("bouncer@B", bouncer, negID, "")
	ob := b.observe("observer@B", negID)

	br.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 3000, "sends": 2}, "ttl_seconds": 10})
	ack := br.expectSeq(negotiation.TypeMessageAck, 1)
	expires := mnTime(t, ack["expires_at"])
	if !expires.Equal(mnStart.Add(10 * time.Second)) {
		t.Fatalf("expires_at %v", expires)
	}
	for _, s := range []*mnSock{kr, ob} {
		if m := s.expectSeq(negotiation.TypeNegotiationMessage, 1); m["frame_type"] != negotiation.TypeProposeTerms || m["from"] != brand.id {
			t.Fatalf("%s: %v", s.name, m)
		}
	}
	c.clock.Set(expires) // a node's timer claims the expiry
	for _, s := range []*mnSock{br, kr, ob} {
		if m := s.expectSeq(negotiation.TypeProposalExpired, 2); !mnTime(t, m["at"]).Equal(expires) {
			t.Fatalf("%s: proposal_expired at %v, want %v", s.name, m["at"], expires)
		}
	}
	kr.send(map[string]any{"type": "propose_terms", "id": "p2", "terms": map[string]any{"amount_usd": 3200, "sends": 2}})
	kr.expectSeq(negotiation.TypeMessageAck, 3)
	for _, s := range []*mnSock{br, ob} {
		s.expectSeq(negotiation.TypeNegotiationMessage, 3)
	}
	br.send(map[string]any{"type": "accept", "id": "a1"})
	br.expectSeq(negotiation.TypeMessageAck, 4)
	kr.expectSeq(negotiation.TypeNegotiationMessage, 4)
	ob.expectSeq(negotiation.TypeNegotiationMessage, 4)
	var receipts []any
	for _, s := range []*mnSock{br, kr, ob} {
		m := s.expectSeq(negotiation.TypeNegotiationEnded, 5)
		if m["status"] != negotiation.StatusDeal || m["receipt"] == nil {
			t.Fatalf("%s: %v", s.name, m)
		}
		receipts = append(receipts, m["receipt"])
	}
	// Both nodes sign with the one key kept in the store: the same receipt.
	if receipts[0] != receipts[1] || receipts[1] != receipts[2] {
		t.Fatalf("receipts differ between nodes:\n%v\n%v", receipts[0], receipts[1])
	}
	var jwksA, jwksB map[string]any
	a.do("GET", "/.well-known/jwks.json", "", nil, &jwksA)
	b.do("GET", "/.well-known/jwks.json", "", nil, &jwksB)
	if fmt.Sprint(jwksA) != fmt.Sprint(jwksB) || jwksA == nil {
		t.Fatalf("JWKS differ: %v vs %v", jwksA, jwksB)
	}
	for _, n := range []*mnNode{a, b} {
		_, frames := mnTranscript(t, n, negID)
		want := []string{"negotiation_message/propose_terms", "proposal_expired", "negotiation_message/propose_terms",
			"negotiation_message/accept", "negotiation_ended"}
		if got := mnTypes(frames); !slices.Equal(got, want) {
			t.Fatalf("transcript on %s: %v", n.name, got)
		}
	}
	var prof map[string]any
	b.do("GET", "/v1/agents/"+brand.id+"/profile", "", nil, &prof)
	if mnInt(prof["reputation"]) != negotiation.ReputationDeal {
		t.Fatalf("brand reputation after the deal: %v", prof["reputation"])
	}

	// 2. Node A stops mid-negotiation.
	negID = mnMatch(t, bl, kl, bouncer, "2")
	br, _ = a.room("brand@A", brand, negID, "")
	kr, _ = b.room("bouncer@B", bouncer, negID, "")
	ob = b.observe("observer@B", negID)
	br.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 1000}, "ttl_seconds": 10})
	ack = br.expectSeq(negotiation.TypeMessageAck, 1) // A armed the expiry
	expires = mnTime(t, ack["expires_at"])
	kr.expectSeq(negotiation.TypeNegotiationMessage, 1)
	ob.expectSeq(negotiation.TypeNegotiationMessage, 1)

	a.stop()
	if code := br.closeCode(); code != venue.CloseGoingAway {
		t.Fatalf("brand's socket on the stopped node closed with %d, want %d", code, venue.CloseGoingAway)
	}
	kr.send(map[string]any{"type": "message", "id": "m1", "content": "still there?"})
	kr.expectSeq(negotiation.TypeMessageAck, 2)
	c.clock.Set(expires) // only B is left to fire what A armed
	kr.expectSeq(negotiation.TypeProposalExpired, 3)
	kr.send(map[string]any{"type": "propose_terms", "id": "p2", "terms": map[string]any{"amount_usd": 2500}})
	kr.expectSeq(negotiation.TypeMessageAck, 4)

	br, started := b.room("brand@B", brand, negID, "&since=1")
	if ctx, _ := started["context"].(map[string]any); mnInt(ctx["last_seq"]) != 4 {
		t.Fatalf("negotiation_started after the move: %v", started)
	}
	br.expectSeq(negotiation.TypeNegotiationMessage, 2)
	br.expectSeq(negotiation.TypeProposalExpired, 3)
	if m := br.expectSeq(negotiation.TypeNegotiationMessage, 4); m["frame_type"] != negotiation.TypeProposeTerms {
		t.Fatalf("replayed %v", m)
	}
	br.send(map[string]any{"type": "accept", "id": "a2"})
	br.expectSeq(negotiation.TypeMessageAck, 5)
	br.expectSeq(negotiation.TypeNegotiationEnded, 6)
	kr.expectSeq(negotiation.TypeNegotiationMessage, 5)
	kr.expectSeq(negotiation.TypeNegotiationEnded, 6)
	for seq := 2; seq <= 6; seq++ { // the observer on B missed nothing either
		m := ob.next()
		if mnInt(m["seq"]) != seq {
			t.Fatalf("observer: seq %d, want %d: %v", mnInt(m["seq"]), seq, m)
		}
	}
	_, frames := mnTranscript(t, b, negID)
	if got := mnTypes(frames); len(got) != 6 || got[5] != "negotiation_ended" {
		t.Fatalf("transcript: %v", got)
	}
}

// A negotiation with a proposal ttl and a turn deadline survives a full
// restart (server, pools, bus and timers; Redis's copy of the due times is
// dropped too, so only the store knows them): the new node re-arms both from
// the store and they fire at their original times.
func TestRestartKeepsClocks(t *testing.T) {
	t.Parallel()
	// A start off the whole second, so the stored deadlines need rounding.
	start := mnStart.Add(123456789 * time.Nanosecond)
	c := newMNCluster(t, start)
	n1 := c.node("before")
	brand := n1.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := n1.register(c, "Newsletter", negotiation.RoleBouncer)
	negID := mnMatch(t, n1.lobby(brand), n1.lobby(bouncer), bouncer, "r")
	br, _ := n1.room("brand", brand, negID, "")
	c.clock.Set(start.Add(5 * time.Second))
	br.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 900}, "ttl_seconds": 30})
	ack := br.expectSeq(negotiation.TypeMessageAck, 1)
	// The exact deadlines (the wire shows milliseconds).
	expires := start.Add(35 * time.Second)
	turnDue := start.Add(65 * time.Second)
	if !mnTime(t, ack["expires_at"]).Equal(expires.Truncate(time.Millisecond)) ||
		!mnTime(t, ack["turn_deadline_at"]).Equal(turnDue.Truncate(time.Millisecond)) || ack["turn"] != bouncer.id {
		t.Fatalf("ack %v", ack)
	}

	n1.stop()
	c.clock.Set(start.Add(20 * time.Second)) // time passes while the venue is down
	c.forgetTimers()
	n2 := c.node("after")
	br, _ = n2.room("brand", brand, negID, "&since=1")
	kr, _ := n2.room("bouncer", bouncer, negID, "&since=0")
	kr.expectSeq(negotiation.TypeNegotiationMessage, 1)

	// Each clock fires at its own time: with the clock 100 ms past it, and
	// not moved on until the frame is seen.
	const slack = 100 * time.Millisecond
	c.clock.Set(expires.Add(slack))
	for _, s := range []*mnSock{br, kr} {
		if m := s.expectSeq(negotiation.TypeProposalExpired, 2); !mnTime(t, m["at"]).Equal(expires.Truncate(time.Millisecond)) {
			t.Fatalf("%s: proposal_expired at %v, want %v", s.name, m["at"], expires)
		}
	}
	c.clock.Set(turnDue.Add(slack))
	for _, s := range []*mnSock{br, kr} {
		m := s.expectSeq(negotiation.TypeNegotiationEnded, 3)
		if m["status"] != negotiation.StatusTurnMissed || m["by"] != bouncer.id || !mnTime(t, m["at"]).Equal(turnDue.Truncate(time.Millisecond)) {
			t.Fatalf("%s: %v, want turn_missed by the bouncer at %v", s.name, m, turnDue)
		}
	}
	if entries, _ := mnTranscript(t, n2, negID); len(entries) != 3 {
		t.Fatalf("%d entries, want 3", len(entries))
	}
	var prof map[string]any
	n2.do("GET", "/v1/agents/"+bouncer.id+"/profile", "", nil, &prof)
	if mnInt(prof["reputation"]) != negotiation.ReputationTurnMissed {
		t.Fatalf("bouncer reputation %v, want %d", prof["reputation"], negotiation.ReputationTurnMissed)
	}
}

// Conflicting frames hit two nodes at once: with the brand's proposal on the
// table, the bouncer accepts it through node B while (from a second socket)
// it counters it through node A. Exactly one lands; every negotiation ends
// in one consistent state and its transcript chain verifies.
func TestMultiNodeRace(t *testing.T) {
	t.Parallel()
	const (
		pairs   = 200
		workers = 16
	)
	c := newMNCluster(t, mnStart)
	a, b := c.node("A"), c.node("B")
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Newsletter", negotiation.RoleBouncer)

	// The lobby, pipelined: every offer, every request, every accept.
	bl, kl := a.lobby(brand), b.lobby(bouncer)
	for i := range pairs {
		bl.send(map[string]any{"type": "submit_offer", "id": fmt.Sprint(i), "to": bouncer.id, "offer": map[string]any{"title": fmt.Sprint("offer ", i)}})
	}
	offers := make([]string, pairs)
	for range pairs {
		m := bl.expect("offer_submitted")
		offers[mnIndex(t, m["re"])] = m["offer_id"].(string)
	}
	for i, off := range offers {
		bl.send(map[string]any{"type": "create_negotiation", "id": fmt.Sprint(i), "offer_id": off})
	}
	negs := make([]string, pairs)
	for range pairs {
		m := bl.expect("negotiation_created")
		negs[mnIndex(t, m["re"])] = m["negotiation_id"].(string)
	}
	for range pairs {
		kl.expect("negotiation_requested")
	}
	for i, id := range negs {
		kl.send(map[string]any{"type": "accept_negotiation", "id": fmt.Sprint(i), "negotiation_id": id})
	}
	for range pairs {
		kl.expect("negotiation_accepted")
	}

	// Workers take the negotiations from a full queue: a worker that fails
	// (and exits) never blocks the others.
	var deals, counters atomic.Int64
	jobs := make(chan int, pairs)
	for i := range pairs {
		jobs <- i
	}
	close(jobs)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if t.Failed() {
					return
				}
				if mnRace(t, a, b, brand, bouncer, negs[i]) {
					deals.Add(1)
				} else {
					counters.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d deals (accept first), %d counters (counter first)", deals.Load(), counters.Load())
	if deals.Load()+counters.Load() != pairs {
		t.Fatalf("%d outcomes for %d negotiations", deals.Load()+counters.Load(), pairs)
	}
	// Reputation moved once per deal, whichever node committed it.
	for _, ag := range []mnAgent{brand, bouncer} {
		var prof map[string]any
		a.do("GET", "/v1/agents/"+ag.id+"/profile", "", nil, &prof)
		if got := mnInt(prof["reputation"]); got != int(deals.Load())*negotiation.ReputationDeal {
			t.Fatalf("reputation of %s: %d, want %d", ag.id, got, deals.Load())
		}
	}
}

// mnRace runs one negotiation's conflict and checks its end; it reports
// whether the accept won. Failures are reported with t.Errorf (it runs on a
// worker goroutine) and count as a counter.
func mnRace(t *testing.T, a, b *mnNode, brand, bouncer mnAgent, negID string) (deal bool) {
	acc, _ := b.room("bouncer@B", bouncer, negID, "")
	ctr, _ := a.room("bouncer@A", bouncer, negID, "")
	br, _ := a.room("brand@A", brand, negID, "")
	defer func() { acc.ws.Close(); ctr.ws.Close(); br.ws.Close() }()
	br.send(map[string]any{"type": "propose_terms", "id": "p", "terms": map[string]any{"amount_usd": 1000, "sends": 1}})
	br.expectSeq(negotiation.TypeMessageAck, 1)
	acc.expectSeq(negotiation.TypeNegotiationMessage, 1)
	ctr.expectSeq(negotiation.TypeNegotiationMessage, 1)

	var ready sync.WaitGroup
	ready.Add(2)
	go func() { ready.Done(); ready.Wait(); acc.send(map[string]any{"type": "accept", "id": "acc"}) }()
	go func() {
		ready.Done()
		ready.Wait()
		ctr.send(map[string]any{"type": "counter_terms", "id": "ctr", "terms": map[string]any{"amount_usd": 1200, "sends": 1}})
	}()
	reply := func(s *mnSock, re string) map[string]any {
		for {
			m := s.next()
			if m["re"] == re {
				return m
			}
		}
	}
	accReply, ctrReply := reply(acc, "acc"), reply(ctr, "ctr")
	accLanded, ctrLanded := accReply["type"] == negotiation.TypeMessageAck, ctrReply["type"] == negotiation.TypeMessageAck
	if accLanded == ctrLanded {
		t.Errorf("%s: accept landed %v, counter landed %v: want exactly one (%v / %v)", negID, accLanded, ctrLanded, accReply, ctrReply)
		return false
	}
	loser := ctrReply
	if ctrLanded {
		loser = accReply
	}
	if loser["type"] != negotiation.TypeError || loser["code"] != "invalid_state" {
		t.Errorf("%s: the losing frame got %v, want error invalid_state", negID, loser)
	}
	var view map[string]any
	if code := a.do("GET", "/v1/negotiations/"+negID, "", nil, &view); code != http.StatusOK {
		t.Errorf("%s: view %d", negID, code)
		return false
	}
	_, frames := mnTranscript(t, b, negID)
	got := mnTypes(frames)
	if accLanded {
		want := []string{"negotiation_message/propose_terms", "negotiation_message/accept", "negotiation_ended"}
		if view["status"] != negotiation.StatusDeal || !slices.Equal(got, want) || mnInt(accReply["seq"]) != 2 {
			t.Errorf("%s: accept won but status %v, transcript %v", negID, view["status"], got)
		}
		return true
	}
	want := []string{"negotiation_message/propose_terms", "negotiation_message/counter_terms"}
	standing, _ := view["standing"].(map[string]any)
	if view["status"] != negotiation.StatusLive || !slices.Equal(got, want) || mnInt(ctrReply["seq"]) != 2 ||
		standing == nil || standing["by"] != bouncer.id {
		t.Errorf("%s: counter won but status %v, standing %v, transcript %v", negID, view["status"], standing, got)
	}
	return false
}

func mnIndex(t *testing.T, re any) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscan(fmt.Sprint(re), &i); err != nil {
		t.Fatalf("re %v", re)
	}
	return i
}
