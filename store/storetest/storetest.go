// Package storetest is the contract of store.Store: one suite that every
// implementation passes (store/memory, store/postgres), so the embedded
// default and production behave the same. It also finds the test Postgres
// (services.go).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// Run runs the whole contract. newStore returns an empty store for one
// test, cleaned up by the test (t.Cleanup); subtests run in parallel, each
// on its own store.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, f *fixture)
	}{
		{"Agents", testAgents},
		{"AgentConflicts", testAgentConflicts},
		{"Profile", testProfile},
		{"PrincipalKey", testPrincipalKey},
		{"AgentsQuery", testAgentsQuery},
		{"Offers", testOffers},
		{"CreateNegotiation", testCreateNegotiation},
		{"NegotiationLists", testNegotiationLists},
		{"PartyLists", testPartyLists},
		{"NotFound", testNotFound},
		{"UpdateSavesOnlyWhenChanged", testUpdateUnchanged},
		{"UpdateAppendsEntries", testUpdateAppends},
		{"UpdateRefusedLeavesNothing", testUpdateRefused},
		{"UpdateStepErrorWithClocksCommits", testUpdateStepErrorCommits},
		{"UpdateIdempotentResend", testUpdateReplay},
		{"UpdateDeclineWithoutEntries", testUpdateDecline},
		{"UpdateReputation", testUpdateReputation},
		{"UpdateWrongSeqConflicts", testUpdateWrongSeq},
		{"UpdateConcurrentNoFork", testUpdateConcurrent},
		{"Transcript", testTranscript},
		{"Wakes", testWakes},
		{"Grants", testGrants},
		{"GrantRevoke", testGrantRevoke},
		{"GrantsCapped", testGrantsCapped},
		{"GrantsPage", testGrantsPage},
		{"TxBudget", testTxBudget},
		{"TxRollsBackUnchanged", testTxRollback},
		{"TxConflictSpendsNothing", testTxConflictSpendsNothing},
		{"VenueKey", testVenueKey},
		{"GrantJTIPerIssuer", testGrantJTIPerIssuer},
		{"IssuerRevoke", testIssuerRevoke},
		{"ReplaceKey", testReplaceKey},
		{"VenueKeyRotate", testVenueKeyRotate},
		{"LobbyQuotas", testLobbyQuotas},
		{"IRCAgents", testIRCAgents},
		{"CapabilityQuery", testCapabilityQuery},
		{"SettlementsAndReputationEvents", testSettlementsAndEvents},
		{"NegotiationStatusPaging", testNegotiationStatusPaging},
		{"PurgeArena", testPurgeArena},
		{"Presence", testPresence},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, setup(t, newStore(t)))
		})
	}
}

// T0 is the fixtures' clock: whole seconds, so every store (Postgres keeps
// microseconds) returns the times exactly.
var T0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// fixture is one store with a brand and a bouncer registered.
type fixture struct {
	s       store.Store
	ctx     context.Context
	brand   store.Agent
	bouncer store.Agent
	n       int // ids handed out
}

func setup(t *testing.T, s store.Store) *fixture {
	t.Helper()
	f := &fixture{s: s, ctx: t.Context()}
	f.brand = f.agent(t, negotiation.RoleBrand, "Brand")
	f.bouncer = f.agent(t, negotiation.RoleBouncer, "Bouncer")
	return f
}

func (f *fixture) id(prefix string) string {
	f.n++
	return fmt.Sprintf("%s_%04d", prefix, f.n)
}

// agent registers an agent of role named name.
func (f *fixture) agent(t *testing.T, role, name string) store.Agent {
	t.Helper()
	id := f.id("agt")
	a := store.Agent{ID: id, Name: name, Role: role, KeyHash: "hash-" + id, CreatedAt: T0}
	must(t, f.s.CreateAgent(f.ctx, a))
	return a
}

// offer submits an offer of the brand to the bouncer.
func (f *fixture) offer(t *testing.T, arena bool) store.Offer {
	t.Helper()
	o := store.Offer{ID: f.id("off"), Brand: f.brand.ID, Bouncer: f.bouncer.ID,
		Body: json.RawMessage(`{"title": "Spring launch",  "brief":"two sends", "n": 1.50}`), Arena: arena, CreatedAt: T0}
	must(t, f.s.CreateOffer(f.ctx, o))
	return o
}

// pending creates a pending negotiation requested at T0.
func (f *fixture) pending(t *testing.T, arena bool) negotiation.State {
	t.Helper()
	o := f.offer(t, arena)
	st := negotiation.NewRequest(f.id("neg"), o.ID, o.Body, f.brand.Party(), f.bouncer.Party(), arena, T0)
	must(t, f.s.CreateNegotiation(f.ctx, st))
	return st
}

// live creates a negotiation the bouncer accepted at T0: the brand is on turn.
func (f *fixture) live(t *testing.T, arena bool) negotiation.State {
	t.Helper()
	st := f.pending(t, arena)
	after, _, err := f.s.Update(f.ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Start(T0)
	})
	must(t, err)
	if after.Status != negotiation.StatusLive {
		t.Fatalf("after Start: status %q, want live", after.Status)
	}
	return after
}

// apply runs one party frame through the room at now.
func (f *fixture) apply(id, from, frame string, now time.Time) (negotiation.State, negotiation.Outcome, error) {
	fr, werr := negotiation.DecodeFrame([]byte(frame))
	if werr != nil {
		return negotiation.State{}, negotiation.Outcome{}, werr
	}
	return f.s.Update(f.ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(from, fr, now, nil)
	})
}

// mustApply is apply that fails the test on an error.
func (f *fixture) mustApply(t *testing.T, id, from, frame string, now time.Time) (negotiation.State, negotiation.Outcome) {
	t.Helper()
	st, out, err := f.apply(id, from, frame, now)
	if err != nil {
		t.Fatalf("apply %s from %s: %v", frame, from, err)
	}
	return st, out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err is (wraps) target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, w := toJSONValue(t, got), toJSONValue(t, want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, mustMarshal(t, got), mustMarshal(t, want))
	}
}

func toJSONValue(t *testing.T, v any) any {
	t.Helper()
	b, ok := v.(json.RawMessage)
	if !ok {
		b = mustMarshal(t, v)
	}
	if len(b) == 0 {
		return nil
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameState fails unless two states are the same data.
func sameState(t *testing.T, what string, got, want negotiation.State) {
	t.Helper()
	g, w := mustMarshal(t, got), mustMarshal(t, want)
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: state differs\n got %s\nwant %s", what, g, w)
	}
}

// VerifyChain checks that entries are seq 1..n with no gap and that each
// hash chains from the previous (PROTOCOL.md "Transcript, offer hash and chain hash"); it returns the head hash.
func VerifyChain(t testing.TB, entries []negotiation.Entry) string {
	t.Helper()
	prev := ""
	for i, e := range entries {
		if e.Seq != int64(i)+1 {
			t.Fatalf("entry %d has seq %d, want %d", i, e.Seq, i+1)
		}
		h, err := negotiation.ChainHash(prev, e.Frame)
		if err != nil {
			t.Fatalf("seq %d: hash: %v", e.Seq, err)
		}
		if h != e.Hash {
			t.Fatalf("seq %d: stored hash %s, chain gives %s", e.Seq, e.Hash, h)
		}
		prev = h
	}
	return prev
}
