package hub

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/timers"
)

// clockNodes is three hubs on one store and one bus, each on its own node
// clock (a clock.Stepped over the shared fake time), read through a venue
// clock synced to the shared time (the store's clock) unless raw.
type clockNodes struct {
	shared *clock.Fake
	walls  [3]*clock.Stepped
	hubs   [3]*Hub
	store  store.Store
}

func newClockNodes(t *testing.T, raw bool, offsets [3]time.Duration) *clockNodes {
	t.Helper()
	n := &clockNodes{shared: clock.NewFake(t0), store: memory.New()}
	b := bus.NewLocal()
	for i := range 3 {
		n.walls[i] = clock.NewStepped(n.shared, offsets[i])
		var c clock.Clock = n.walls[i]
		if !raw {
			v := clock.NewVenue(n.walls[i], time.Second, slog.New(slog.DiscardHandler))
			v.SetReference(func(context.Context) (time.Time, error) { return n.shared.Now(), nil })
			if err := v.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			c = v
		}
		n.hubs[i] = New(Config{Store: n.store, Bus: b, Timers: timers.NewLocal(c), Clock: c})
	}
	return n
}

// proposal: a live negotiation on node 0 with the brand's proposal
// standing for ttl seconds from the shared time now.
func (n *clockNodes) proposal(t *testing.T, id string, ttl int) negotiation.State {
	t.Helper()
	f := &fixture{hub: n.hubs[0], store: &gatedStore{Store: n.store}, clock: n.shared}
	st := f.live(t, id)
	p := frame(t, `{"type":"propose_terms","id":"p1","terms":{"amount_usd":3000,"category":"primary_slot","sends":2},"ttl_seconds":`+strconv.Itoa(ttl)+`}`)
	st, _, err := n.hubs[0].Update(t.Context(), id, func(_ store.Tx, s *negotiation.State) (negotiation.Outcome, error) {
		return s.Apply(s.Turn, p, n.hubs[0].clock.Now(), nil)
	})
	if err != nil || st.Standing == nil {
		t.Fatalf("proposal: %v, standing %v", err, st.Standing)
	}
	return st
}

// A node whose clock runs 5 s fast expires nothing early: 7 s into a 10 s
// proposal, its settling of the clocks leaves the proposal standing and
// an accept on another node makes the deal. With the raw node clock (the
// fault the venue clock removes) the same settling expires it.
func TestSkewedNodeExpiresNothingEarly(t *testing.T) {
	for _, raw := range []bool{false, true} {
		name := map[bool]string{false: "venue clock", true: "raw node clock"}[raw]
		t.Run(name, func(t *testing.T) {
			n := newClockNodes(t, raw, [3]time.Duration{0, 0, 5 * time.Second})
			st := n.proposal(t, "neg_skew", 10)
			n.shared.Advance(7 * time.Second)
			n.hubs[2].fire(t.Context(), st.ID) // the fast node settles the clocks
			after, err := n.store.Negotiation(t.Context(), st.ID)
			if err != nil {
				t.Fatal(err)
			}
			if raw {
				if after.Standing != nil {
					t.Fatal("control: the raw fast clock did not expire the proposal early; the test shows nothing")
				}
				return
			}
			if after.Standing == nil {
				t.Fatal("the 5 s fast node expired the proposal 3 s before its time")
			}
			r := submit(t, n.hubs[0], &after, after.Bouncer.AgentID, frame(t, `{"type":"accept","id":"a1"}`))
			if r.err != nil || r.out.Ack == nil {
				t.Fatalf("on-time accept refused: %v", r.err)
			}
			end, _ := n.store.Negotiation(t.Context(), st.ID)
			if end.Status != negotiation.StatusDeal {
				t.Fatalf("status %s, want deal", end.Status)
			}
		})
	}
}

// A node whose wall clock is stepped forward 10 minutes ends no turn and
// expires no proposal early; stepped back 10 minutes, it stamps its
// entries at the venue's time (inside the negotiation's window, after the
// entries before).
func TestSteppedNodeNeitherFiresEarlyNorStampsOutside(t *testing.T) {
	n := newClockNodes(t, false, [3]time.Duration{})
	st := n.proposal(t, "neg_step", 30)
	n.shared.Advance(2 * time.Second)
	n.walls[1].Step(10 * time.Minute)
	n.hubs[1].fire(t.Context(), st.ID)
	after, err := n.store.Negotiation(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != negotiation.StatusLive || after.Standing == nil || after.LastSeq != st.LastSeq {
		t.Fatalf("after a +10 min step the node settled clocks early: status %s, standing %v, seq %d -> %d",
			after.Status, after.Standing != nil, st.LastSeq, after.LastSeq)
	}
	n.walls[1].Step(-20 * time.Minute) // now 10 minutes slow
	_, out, err := n.hubs[1].Update(t.Context(), st.ID, func(_ store.Tx, s *negotiation.State) (negotiation.Outcome, error) {
		return s.Apply(s.Turn, frame(t, `{"type":"message","content":"stamped"}`), n.hubs[1].clock.Now(), nil)
	})
	if err != nil || len(out.Entries) != 1 {
		t.Fatalf("message: %v", err)
	}
	at := out.Entries[0].At
	if !at.Equal(n.shared.Now()) || at.Before(after.StartedAt) || (!after.DeadlineAt.IsZero() && at.After(after.DeadlineAt)) {
		t.Fatalf("entry stamped %v; venue time %v, window %v..%v", at, n.shared.Now(), after.StartedAt, after.DeadlineAt)
	}
}

// A node whose venue clock trails the node that stamped the last entry (its
// last reading had a longer round trip) stamps its entry at that entry's
// time, never before it: the transcript's times follow its seqs.
func TestTrailingNodeStampsInSeqOrder(t *testing.T) {
	n := newClockNodes(t, false, [3]time.Duration{})
	st := n.proposal(t, "neg_order", 30)
	// Node 1's venue clock reads 150 ms behind the shared clock.
	behind := clock.NewVenue(n.walls[1], time.Second, slog.New(slog.DiscardHandler))
	behind.SetReference(func(context.Context) (time.Time, error) { return n.shared.Now().Add(-150 * time.Millisecond), nil })
	if err := behind.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := New(Config{Store: n.store, Bus: bus.NewLocal(), Timers: timers.NewLocal(behind), Clock: behind})
	got := make(chan error, 1)
	h.Submit(t.Context(), st.ID, st.Brand.AgentID, st.Bouncer.AgentID, st.Bouncer.AgentID,
		frame(t, `{"type":"message","id":"late","content":"hi"}`), func(_ negotiation.Outcome, err error) { got <- err })
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	entries, err := n.store.Transcript(t.Context(), st.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].At.Before(entries[i-1].At) {
			t.Fatalf("seq %d at %v before seq %d at %v", entries[i].Seq, entries[i].At, entries[i-1].Seq, entries[i-1].At)
		}
	}
}
