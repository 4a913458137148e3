package negotiation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gowebpki/jcs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/wire"
)

// The fake clock: every test counts durations from t0, the moment the bouncer
// accepted (started_at). Nothing sleeps and nothing reads the wall clock.
var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const (
	brand    = "ag_brand"
	bouncer  = "ag_bouncer"
	stranger = "ag_stranger"
	negID    = "neg1"
	sec      = time.Second
	minute   = time.Minute
)

var (
	brandParty   = Party{AgentID: brand, Name: "Acme", Reputation: 10}
	bouncerParty = Party{AgentID: bouncer, Name: "Bob's list", Reputation: 3}
	offerJSON    = json.RawMessage(`{"title":"Newsletter slot","brief":"two sends"}`)
)

// room drives a State and checks, after every step, that the transcript
// seqs run on by one and the hash chain verifies.
type room struct {
	t       *testing.T
	s       *State
	check   Checker
	entries []Entry
}

// newRoom returns a live room started at t0 (requested 30 s earlier).
func newRoom(t *testing.T, arena bool) *room {
	t.Helper()
	s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, arena, at(-30*sec))
	out, err := s.Start(t0)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if len(out.Entries) != 0 || out.Declined || out.Ended {
		t.Fatalf("Start produced %+v", out)
	}
	return &room{t: t, s: &s}
}

func mustFrame(t *testing.T, js string) Frame {
	t.Helper()
	f, err := DecodeFrame([]byte(js))
	if err != nil {
		t.Fatalf("DecodeFrame(%s): %v", js, err)
	}
	return f
}

func snapshot(t *testing.T, s *State) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func clone(t *testing.T, s *State) *State {
	t.Helper()
	var c State
	if err := json.Unmarshal([]byte(snapshot(t, s)), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// record checks and keeps the entries of one step.
func (r *room) record(out Outcome) {
	r.t.Helper()
	for _, e := range out.Entries {
		prev := ""
		if n := len(r.entries); n > 0 {
			prev = r.entries[n-1].Hash
			if e.Seq != r.entries[n-1].Seq+1 {
				r.t.Fatalf("seq %d after %d", e.Seq, r.entries[n-1].Seq)
			}
			if e.At.Before(r.entries[n-1].At) {
				r.t.Fatalf("entry %d at %v, before the previous one", e.Seq, e.At)
			}
		} else if e.Seq != 1 {
			r.t.Fatalf("first seq %d", e.Seq)
		}
		h, err := ChainHash(prev, e.Frame)
		if err != nil || h != e.Hash {
			r.t.Fatalf("entry %d: hash %s, ChainHash gives %s (%v)", e.Seq, e.Hash, h, err)
		}
		if seq := frameOf(r.t, e.Frame)["seq"]; seq != float64(e.Seq) {
			r.t.Fatalf("entry %d carries seq %v", e.Seq, seq)
		}
		r.entries = append(r.entries, e)
	}
	if n := len(r.entries); n > 0 {
		if r.s.LastSeq != r.entries[n-1].Seq || r.s.HeadHash != r.entries[n-1].Hash {
			r.t.Fatalf("LastSeq %d / HeadHash %s, the transcript ends at %d / %s", r.s.LastSeq, r.s.HeadHash, r.entries[n-1].Seq, r.entries[n-1].Hash)
		}
	}
}

func (r *room) apply(from, js string, d time.Duration) (Outcome, error) {
	r.t.Helper()
	out, err := r.s.Apply(from, mustFrame(r.t, js), at(d), r.check)
	r.record(out)
	return out, err
}

// ok applies a frame that must land.
func (r *room) ok(from, js string, d time.Duration) Outcome {
	r.t.Helper()
	out, err := r.apply(from, js, d)
	if err != nil {
		r.t.Fatalf("%s %s at %v: %v", from, js, d, err)
	}
	if out.Ack == nil || out.Replay {
		r.t.Fatalf("%s %s at %v: ack %s replay %v", from, js, d, out.Ack, out.Replay)
	}
	return out
}

// refused applies a frame that must not land, and checks that it left the
// state exactly as settling the clocks alone would have.
func (r *room) refused(from, js string, d time.Duration) (Outcome, error) {
	r.t.Helper()
	settled := clone(r.t, r.s)
	want := settled.Tick(at(d))
	out, err := r.apply(from, js, d)
	if err == nil {
		r.t.Fatalf("%s %s at %v landed: %s", from, js, d, out.Ack)
	}
	if out.Ack != nil {
		r.t.Fatalf("refused frame got an ack: %s", out.Ack)
	}
	if got, wantS := snapshot(r.t, r.s), snapshot(r.t, settled); got != wantS {
		r.t.Fatalf("refused %s changed the state:\n got %s\nwant %s", js, got, wantS)
	}
	if len(out.Entries) != len(want.Entries) {
		r.t.Fatalf("refused frame produced %d entries, clock settling %d", len(out.Entries), len(want.Entries))
	}
	return out, err
}

func (r *room) tick(d time.Duration) Outcome {
	r.t.Helper()
	out := r.s.Tick(at(d))
	r.record(out)
	return out
}

func frameOf(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("frame %s: %v", raw, err)
	}
	return m
}

// types returns the frame types of entries.
func types(t *testing.T, es []Entry) []string {
	t.Helper()
	var ts []string
	for _, e := range es {
		ts = append(ts, frameOf(t, e.Frame)["type"].(string))
	}
	return ts
}

func wantTypes(t *testing.T, es []Entry, want ...string) {
	t.Helper()
	if got := types(t, es); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("entries %v, want %v", got, want)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T), want wire error %s", err, err, code)
	}
	if we.Code != code {
		t.Fatalf("error %q (%s), want %q", we.Code, we.Message, code)
	}
}

// wantFields checks some members of a frame; nil means present and null,
// absent means the key must be missing.
func wantFields(t *testing.T, raw json.RawMessage, want map[string]any) {
	t.Helper()
	m := frameOf(t, raw)
	for k, v := range want {
		got, ok := m[k]
		if v == absent {
			if ok {
				t.Errorf("%s: %q present (%v), want absent", raw, k, got)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: %q missing, want %v", raw, k, v)
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("%s: %q = %#v, want %#v", raw, k, got, v)
		}
	}
}

type absentT struct{}

var absent = absentT{}

func ts(d time.Duration) string { return wire.Time(at(d)) }

func propose(terms string, ttl int) string {
	if ttl == 0 {
		return `{"type":"propose_terms","terms":` + terms + `}`
	}
	return fmt.Sprintf(`{"type":"propose_terms","terms":%s,"ttl_seconds":%d}`, terms, ttl)
}

func counter(terms string) string { return `{"type":"counter_terms","terms":` + terms + `}` }

const (
	msgFrame = `{"type":"message","content":"hi"}`
	accept   = `{"type":"accept"}`
	termsA   = `{"amount_usd":3000,"category":"primary_slot","sends":2}`
	termsB   = `{"amount_usd":3200,"category":"primary_slot","sends":2}`
	termsC   = `{"amount_usd":3100,"category":"primary_slot","sends":2}`
)

// --- lobby: request, lapse, start ---

func TestRequestAndStart(t *testing.T) {
	t.Parallel()
	s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
	if s.Status != StatusPending || !s.RequestExpiresAt.Equal(at(RequestLapse)) || s.Ended() {
		t.Fatalf("new request: %+v", s)
	}
	if got := s.NextWake(); !got.Equal(at(2 * minute)) {
		t.Fatalf("NextWake %v", got)
	}
	if _, err := s.Apply(brand, mustFrame(t, msgFrame), at(sec), nil); err == nil {
		t.Fatal("a frame landed in a pending negotiation")
	} else {
		wantCode(t, err, wire.CodeInvalidState)
	}
	out, err := s.Start(at(90 * sec))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 0 {
		t.Fatal("Start wrote entries")
	}
	if s.Status != StatusLive || !s.StartedAt.Equal(at(90*sec)) || !s.DeadlineAt.Equal(at(90*sec+Deadline)) ||
		s.Turn != brand || !s.TurnDeadlineAt.Equal(at(90*sec+TurnTime)) || s.TurnPaused || s.Standing != nil {
		t.Fatalf("started: %s", snapshot(t, &s))
	}
	if got := s.NextWake(); !got.Equal(at(150 * sec)) {
		t.Fatalf("NextWake %v, want the brand's turn deadline", got)
	}
	started := frameOf(t, s.StartedFrame())
	ctx := started["context"].(map[string]any)
	if started["type"] != TypeNegotiationStarted || ctx["turn"] != brand || ctx["turn_deadline_at"] != ts(150*sec) ||
		ctx["deadline_at"] != ts(90*sec+Deadline) || ctx["standing"] != nil {
		t.Fatalf("negotiation_started %v", started)
	}
	// A lapse tick after the start changes nothing.
	if out := s.Tick(at(RequestLapse)); len(out.Entries) != 0 || out.Declined || s.Status != StatusLive {
		t.Fatalf("tick at the old request lapse: %+v", out)
	}
	if _, err := s.Start(at(100 * sec)); err == nil {
		t.Fatal("started twice")
	} else {
		wantCode(t, err, wire.CodeInvalidState)
	}
	if _, err := s.Decline("no", at(100*sec)); err == nil {
		t.Fatal("declined a live negotiation")
	} else {
		wantCode(t, err, wire.CodeInvalidState)
	}
}

func TestRequestLapse(t *testing.T) {
	t.Parallel()
	t.Run("tick", func(t *testing.T) {
		t.Parallel()
		s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
		if out := s.Tick(at(RequestLapse - time.Nanosecond)); out.Declined || out.Changed() || s.Status != StatusPending {
			t.Fatalf("lapsed early: %+v", out)
		}
		out := s.Tick(at(3 * minute)) // a late timer
		if !out.Declined || !out.Changed() || len(out.Entries) != 0 || out.Ended || out.Reputation != nil {
			t.Fatalf("lapse outcome %+v", out)
		}
		if s.Status != StatusDeclined || s.Reason != "expired" || !s.EndedAt.Equal(at(RequestLapse)) || !s.Ended() {
			t.Fatalf("lapsed: %s", snapshot(t, &s))
		}
		if !s.NextWake().IsZero() {
			t.Fatal("a lapsed request still wakes")
		}
		before := snapshot(t, &s)
		_, err := s.Start(at(3 * minute))
		wantCode(t, err, wire.CodeInvalidState)
		if !strings.Contains(err.Error(), "lapsed") {
			t.Errorf("message %q does not say lapsed", err)
		}
		if snapshot(t, &s) != before {
			t.Fatal("refused Start changed the state")
		}
	})
	t.Run("start at exactly the lapse", func(t *testing.T) {
		t.Parallel()
		s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
		out, err := s.Start(at(RequestLapse))
		wantCode(t, err, wire.CodeInvalidState)
		if !out.Declined || s.Status != StatusDeclined {
			t.Fatalf("Start at the lapse: %+v, status %s", out, s.Status)
		}
	})
	t.Run("start just before", func(t *testing.T) {
		t.Parallel()
		s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
		if _, err := s.Start(at(RequestLapse - time.Millisecond)); err != nil || s.Status != StatusLive {
			t.Fatalf("Start: %v, %s", err, s.Status)
		}
	})
	t.Run("decline", func(t *testing.T) {
		t.Parallel()
		s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
		out, err := s.Decline("busy", at(10*sec))
		if err != nil || !out.Declined || s.Status != StatusDeclined || s.Reason != "busy" {
			t.Fatalf("Decline: %v %+v %s", err, out, s.Status)
		}
		_, err = s.Start(at(11 * sec))
		wantCode(t, err, wire.CodeInvalidState)
		_, err = s.Decline("again", at(11*sec))
		wantCode(t, err, wire.CodeInvalidState)
	})
}

// --- turns ---

func TestMoveByPartyOnTurnPassesTurn(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	if r.s.Turn != brand || !r.s.TurnDeadlineAt.Equal(at(TurnTime)) {
		t.Fatalf("brand is not on turn first: %s", snapshot(t, r.s))
	}
	out := r.ok(brand, `{"type":"message","content":"hello","id":"c1"}`, 20*sec)
	if r.s.Turn != bouncer || !r.s.TurnDeadlineAt.Equal(at(80*sec)) {
		t.Fatalf("turn %s until %v", r.s.Turn, r.s.TurnDeadlineAt)
	}
	wantTypes(t, out.Entries, TypeNegotiationMessage)
	wantFields(t, out.Entries[0].Frame, map[string]any{
		"type": TypeNegotiationMessage, "seq": 1.0, "from": brand, "frame_type": TypeMessage, "content": "hello",
		"at": ts(20 * sec), "turn": bouncer, "turn_deadline_at": ts(80 * sec), "re": absent, "terms": absent,
	})
	wantFields(t, out.Ack, map[string]any{
		"type": TypeMessageAck, "id": negID + ".m1", "re": "c1", "seq": 1.0, "at": ts(20 * sec),
		"frame_type": TypeMessage, "turn": bouncer, "turn_deadline_at": ts(80 * sec),
	})
	// The bouncer's 60 s run from the brand's move: missed at 80 s, not 60 s.
	if out := r.tick(79 * sec); len(out.Entries) != 0 {
		t.Fatal("turn missed early")
	}
	out = r.tick(80 * sec)
	wantTypes(t, out.Entries, TypeNegotiationEnded)
	wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusTurnMissed, "by": bouncer, "at": ts(80 * sec)})
}

func TestTurnRules(t *testing.T) {
	t.Parallel()
	type setup func(r *room, actor string)
	none := func(*room, string) {}
	otherProposes := func(r *room, actor string) { r.ok(r.s.Other(actor), propose(termsA, 0), 5*sec) }
	actorProposes := func(r *room, actor string) { r.ok(actor, propose(termsA, 0), 5*sec) }
	cases := []struct {
		frame string
		setup setup
	}{
		{msgFrame, none},
		{`{"type":"research","content":"checking open rates"}`, none},
		{propose(termsB, 0), none},
		{propose(termsB, 0), actorProposes}, // replacing one's own
		{counter(termsB), otherProposes},
		{`{"type":"reject"}`, otherProposes},
		{`{"type":"withdraw"}`, actorProposes},
	}
	for _, tc := range cases {
		for _, actor := range []string{brand, bouncer} {
			for _, onTurn := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/on_turn=%v", frameOf(t, []byte(tc.frame))["type"], actor, onTurn)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					r := newRoom(t, false)
					tc.setup(r, actor)
					if (r.s.Turn == actor) != onTurn {
						r.ok(r.s.Turn, msgFrame, 10*sec) // passes the turn
					}
					if (r.s.Turn == actor) != onTurn {
						t.Fatal("setup failed")
					}
					turn, deadline := r.s.Turn, r.s.TurnDeadlineAt
					out := r.ok(actor, tc.frame, 20*sec)
					if onTurn {
						if r.s.Turn != r.s.Other(actor) || !r.s.TurnDeadlineAt.Equal(at(80*sec)) {
							t.Fatalf("turn %s until %v, want %s until %v", r.s.Turn, r.s.TurnDeadlineAt, r.s.Other(actor), at(80*sec))
						}
					} else if r.s.Turn != turn || !r.s.TurnDeadlineAt.Equal(deadline) {
						t.Fatalf("a move off turn changed the turn: %s until %v, was %s until %v", r.s.Turn, r.s.TurnDeadlineAt, turn, deadline)
					}
					last := out.Entries[len(out.Entries)-1]
					wantFields(t, last.Frame, map[string]any{"turn": r.s.Turn, "turn_deadline_at": wire.Time(r.s.TurnDeadlineAt)})
					wantFields(t, out.Ack, map[string]any{"turn": r.s.Turn, "turn_deadline_at": wire.Time(r.s.TurnDeadlineAt)})
				})
			}
		}
	}
}

func TestTurnMissed(t *testing.T) {
	t.Parallel()
	for _, arena := range []bool{false, true} {
		t.Run(fmt.Sprintf("arena=%v", arena), func(t *testing.T) {
			t.Parallel()
			r := newRoom(t, arena)
			r.ok(bouncer, msgFrame, 30*sec) // off turn: the brand's clock still runs from 0
			if out := r.tick(TurnTime - time.Nanosecond); out.Changed() {
				t.Fatalf("turn missed early: %+v", out)
			}
			out := r.tick(TurnTime)
			wantTypes(t, out.Entries, TypeNegotiationEnded)
			wantFields(t, out.Entries[0].Frame, map[string]any{
				"status": StatusTurnMissed, "by": brand, "reason": "turn_missed", "at": ts(TurnTime),
				"terms": absent, "offer_hash": absent, "turn": absent,
			})
			if !out.Ended || r.s.Status != StatusTurnMissed || r.s.EndedBy != brand || !r.s.EndedAt.Equal(at(TurnTime)) {
				t.Fatalf("state %s", snapshot(t, r.s))
			}
			if arena {
				if out.Reputation != nil {
					t.Fatalf("arena reputation %v", out.Reputation)
				}
			} else if !reflect.DeepEqual(out.Reputation, map[string]int{brand: ReputationTurnMissed}) || ReputationTurnMissed != -5 {
				t.Fatalf("reputation %v, want brand -5", out.Reputation)
			}
		})
	}
	t.Run("frame at exactly the turn deadline", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		out, err := r.refused(brand, msgFrame, TurnTime)
		wantCode(t, err, wire.CodeInvalidState)
		wantTypes(t, out.Entries, TypeNegotiationEnded)
		if !out.Ended || out.Reputation[brand] != ReputationTurnMissed || r.s.Status != StatusTurnMissed {
			t.Fatalf("outcome %+v", out)
		}
	})
	t.Run("just before", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, msgFrame, TurnTime-time.Millisecond)
		if r.s.Turn != bouncer || r.s.Status != StatusLive {
			t.Fatal("the move did not land")
		}
	})
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	for _, arena := range []bool{false, true} {
		t.Run(fmt.Sprintf("arena=%v", arena), func(t *testing.T) {
			t.Parallel()
			r := newRoom(t, arena)
			// Keep the turns moving every 50 s up to 7:30.
			for d := 50 * sec; d <= 450*sec; d += 50 * sec {
				r.ok(r.s.Turn, msgFrame, d)
			}
			if !r.s.DeadlineAt.Equal(at(8 * minute)) {
				t.Fatalf("deadline %v", r.s.DeadlineAt)
			}
			if out := r.tick(8*minute - time.Nanosecond); out.Changed() {
				t.Fatal("expired early")
			}
			out := r.tick(9 * minute)
			wantTypes(t, out.Entries, TypeNegotiationEnded)
			wantFields(t, out.Entries[0].Frame, map[string]any{
				"status": StatusExpired, "reason": "deadline", "by": absent, "at": ts(8 * minute),
			})
			if out.Reputation != nil || r.s.Status != StatusExpired || r.s.EndedBy != "" {
				t.Fatalf("outcome %+v, state %s", out, snapshot(t, r.s))
			}
		})
	}
	t.Run("frame at exactly the deadline", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		for d := 50 * sec; d <= 450*sec; d += 50 * sec {
			r.ok(r.s.Turn, msgFrame, d)
		}
		out, err := r.refused(r.s.Turn, msgFrame, 8*minute)
		wantCode(t, err, wire.CodeInvalidState)
		wantTypes(t, out.Entries, TypeNegotiationEnded)
		if r.s.Status != StatusExpired {
			t.Fatal(r.s.Status)
		}
	})
	t.Run("escalation does not stop the deadline", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		for d := 50 * sec; d <= 300*sec; d += 50 * sec {
			r.ok(r.s.Turn, msgFrame, d)
		}
		escalator := r.s.Turn
		r.ok(escalator, `{"type":"escalate","content":"more room?"}`, 350*sec)
		out := r.tick(20 * minute)
		wantTypes(t, out.Entries, TypeNegotiationEnded)
		wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusExpired, "at": ts(8 * minute)})
		if len(out.Private) != 0 || len(r.s.Escalations) != 0 || r.s.TurnPaused {
			t.Fatalf("escalation left over: %+v / %s", out.Private, snapshot(t, r.s))
		}
	})
}

// --- the table ---

func TestProposalStateRules(t *testing.T) {
	t.Parallel()
	type step struct {
		from, frame, code string // code "" lands
	}
	cases := []struct {
		name     string
		steps    []step
		standing string // proposer left on the table, "" for none
	}{
		{"propose on an empty table", []step{{brand, propose(termsA, 0), ""}}, brand},
		{"propose replaces own", []step{{brand, propose(termsA, 0), ""}, {brand, propose(termsB, 0), ""}}, brand},
		{"propose while the other's stands", []step{{brand, propose(termsA, 0), ""}, {bouncer, propose(termsB, 0), wire.CodeInvalidState}}, brand},
		{"counter on an empty table", []step{{brand, counter(termsA), wire.CodeInvalidState}}, ""},
		{"counter own", []step{{brand, propose(termsA, 0), ""}, {brand, counter(termsB), wire.CodeInvalidState}}, brand},
		{"counter the other's", []step{{brand, propose(termsA, 0), ""}, {bouncer, counter(termsB), ""}}, bouncer},
		{"counter back", []step{{brand, propose(termsA, 0), ""}, {bouncer, counter(termsB), ""}, {brand, counter(termsC), ""}}, brand},
		{"accept an empty table", []step{{bouncer, accept, wire.CodeInvalidState}}, ""},
		{"accept own", []step{{brand, propose(termsA, 0), ""}, {brand, accept, wire.CodeInvalidState}}, brand},
		{"accept own counter", []step{{brand, propose(termsA, 0), ""}, {bouncer, counter(termsB), ""}, {bouncer, accept, wire.CodeInvalidState}}, bouncer},
		{"reject an empty table", []step{{bouncer, `{"type":"reject"}`, wire.CodeInvalidState}}, ""},
		{"reject own", []step{{brand, propose(termsA, 0), ""}, {brand, `{"type":"reject"}`, wire.CodeInvalidState}}, brand},
		{"reject the other's", []step{{brand, propose(termsA, 0), ""}, {bouncer, `{"type":"reject"}`, ""}}, ""},
		{"withdraw an empty table", []step{{brand, `{"type":"withdraw"}`, wire.CodeInvalidState}}, ""},
		{"withdraw the other's", []step{{brand, propose(termsA, 0), ""}, {bouncer, `{"type":"withdraw"}`, wire.CodeInvalidState}}, brand},
		{"withdraw own", []step{{brand, propose(termsA, 0), ""}, {brand, `{"type":"withdraw"}`, ""}}, ""},
		{"accept after a reject", []step{{brand, propose(termsA, 0), ""}, {bouncer, `{"type":"reject"}`, ""}, {bouncer, accept, wire.CodeInvalidState}}, ""},
		{"accept after a withdraw", []step{{brand, propose(termsA, 0), ""}, {brand, `{"type":"withdraw"}`, ""}, {bouncer, accept, wire.CodeInvalidState}}, ""},
		{"propose after a reject", []step{{brand, propose(termsA, 0), ""}, {bouncer, `{"type":"reject"}`, ""}, {bouncer, propose(termsB, 0), ""}}, bouncer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRoom(t, false)
			for i, st := range tc.steps {
				d := time.Duration(i+1) * sec
				if st.code == "" {
					r.ok(st.from, st.frame, d)
					continue
				}
				_, err := r.refused(st.from, st.frame, d)
				wantCode(t, err, st.code)
			}
			got := ""
			if r.s.Standing != nil {
				got = r.s.Standing.By
			}
			if got != tc.standing {
				t.Fatalf("standing by %q, want %q", got, tc.standing)
			}
		})
	}
}

func TestProposalFrames(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	out := r.ok(brand, `{"type":"propose_terms","id":"p","content":"two sends","terms":`+termsA+`}`, 5*sec)
	hashA := mustOfferHash(t, termsA)
	st := r.s.Standing
	if st == nil || st.ID != negID+".p1" || st.By != brand || st.OfferHash != hashA || st.AmountCents != 300000 ||
		st.Category != "primary_slot" || st.Sends != 2 || st.Seq != 1 || !st.ExpiresAt.IsZero() || string(st.Terms) != termsA {
		t.Fatalf("standing %+v", st)
	}
	wantFields(t, out.Entries[0].Frame, map[string]any{
		"frame_type": TypeProposeTerms, "content": "two sends", "proposal_id": negID + ".p1", "offer_hash": hashA,
		"expires_at": absent, "replaces": absent,
		"terms": map[string]any{"amount_usd": 3000.0, "category": "primary_slot", "sends": 2.0},
	})
	wantFields(t, out.Ack, map[string]any{"proposal_id": negID + ".p1", "offer_hash": hashA, "expires_at": absent})

	out = r.ok(bouncer, `{"type":"counter_terms","terms":`+termsB+`,"ttl_seconds":30}`, 10*sec)
	wantFields(t, out.Entries[0].Frame, map[string]any{
		"frame_type": TypeCounterTerms, "proposal_id": negID + ".p2", "replaces": negID + ".p1",
		"offer_hash": mustOfferHash(t, termsB), "expires_at": ts(40 * sec), "content": absent,
	})
	wantFields(t, out.Ack, map[string]any{"proposal_id": negID + ".p2", "expires_at": ts(40 * sec)})
	started := frameOf(t, r.s.StartedFrame())
	standing := started["context"].(map[string]any)["standing"].(map[string]any)
	if standing["proposal_id"] != negID+".p2" || standing["by"] != bouncer || standing["expires_at"] != ts(40*sec) {
		t.Fatalf("negotiation_started standing %v", standing)
	}

	out = r.ok(brand, `{"type":"reject","content":"too much"}`, 15*sec)
	wantFields(t, out.Entries[0].Frame, map[string]any{"frame_type": TypeReject, "proposal_id": negID + ".p2", "content": "too much"})
	if r.s.Standing != nil {
		t.Fatal("reject left the table")
	}
}

func TestProposalTTL(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, propose(termsA, 30), 10*sec)
	if !r.s.Standing.ExpiresAt.Equal(at(40 * sec)) {
		t.Fatalf("expires_at %v", r.s.Standing.ExpiresAt)
	}
	if !r.s.NextWake().Equal(at(40 * sec)) {
		t.Fatalf("NextWake %v", r.s.NextWake())
	}
	if out := r.tick(40*sec - time.Nanosecond); out.Changed() {
		t.Fatal("expired early")
	}
	out := r.tick(45 * sec) // a late timer: the entry still says 40 s
	wantTypes(t, out.Entries, TypeProposalExpired)
	wantFields(t, out.Entries[0].Frame, map[string]any{
		"proposal_id": negID + ".p1", "by": brand, "offer_hash": mustOfferHash(t, termsA), "at": ts(40 * sec),
	})
	if r.s.Standing != nil || r.s.Status != StatusLive || out.Ended {
		t.Fatal("the table was not cleared, or the negotiation ended")
	}
	// The clamp: 5 s stands 10 s, 1000 s stands 300 s.
	r.ok(bouncer, propose(termsB, 5), 50*sec)
	if !r.s.Standing.ExpiresAt.Equal(at(60 * sec)) {
		t.Fatalf("ttl 5: expires_at %v", r.s.Standing.ExpiresAt)
	}
	r.ok(bouncer, propose(termsB, 1000), 55*sec)
	if !r.s.Standing.ExpiresAt.Equal(at(355 * sec)) {
		t.Fatalf("ttl 1000: expires_at %v", r.s.Standing.ExpiresAt)
	}
}

func TestAcceptAtExpiry(t *testing.T) {
	t.Parallel()
	t.Run("exactly at expires_at, no tick", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, propose(termsA, 10), 0)
		out, err := r.refused(bouncer, accept, 10*sec)
		wantCode(t, err, wire.CodeInvalidState)
		wantTypes(t, out.Entries, TypeProposalExpired)
		if r.s.Status != StatusLive || r.s.Standing != nil {
			t.Fatalf("state %s", snapshot(t, r.s))
		}
	})
	t.Run("a moment before", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, propose(termsA, 10), 0)
		out := r.ok(bouncer, accept, 10*sec-time.Millisecond)
		if r.s.Status != StatusDeal {
			t.Fatalf("status %s", r.s.Status)
		}
		wantTypes(t, out.Entries, TypeNegotiationMessage, TypeNegotiationEnded)
	})
	t.Run("naming the expired proposal", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, propose(termsA, 10), 0)
		_, err := r.refused(bouncer, `{"type":"accept","proposal_id":"neg1.p1"}`, 30*sec)
		wantCode(t, err, wire.CodeInvalidState)
	})
}

// A counter that lands just before an accept: the accept is judged against
// the table as it is when it arrives.
func TestCounterBeforeAccept(t *testing.T) {
	t.Parallel()
	t.Run("the counterer's own stale accept", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, propose(termsA, 0), sec)
		r.ok(bouncer, counter(termsB), 2*sec)
		// The bouncer's agent also sent an accept of the brand's proposal;
		// the table holds its own counter now.
		_, err := r.refused(bouncer, `{"type":"accept","proposal_id":"neg1.p1"}`, 3*sec)
		wantCode(t, err, wire.CodeInvalidState)
		_, err = r.refused(bouncer, accept, 3*sec)
		wantCode(t, err, wire.CodeInvalidState)
	})
	t.Run("the other side names what it saw", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(bouncer, propose(termsB, 0), sec)
		r.ok(brand, counter(termsA), 2*sec)
		// The brand changes its mind and accepts p1 after all, naming it,
		// while the bouncer's counter lands first: refused, nothing changes.
		r.ok(bouncer, counter(termsC), 3*sec)
		_, err := r.refused(brand, `{"type":"accept","proposal_id":"neg1.p1"}`, 4*sec)
		var sb *ScopeBlock
		if !errors.As(err, &sb) || sb.Checks[0].Check != "offer_hash" {
			t.Fatalf("error %v, want scope_block offer_hash", err)
		}
	})
	t.Run("a bare accept takes the counter", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, propose(termsA, 0), sec)
		r.ok(bouncer, counter(termsB), 2*sec)
		r.ok(brand, counter(termsC), 3*sec)
		r.ok(bouncer, accept, 4*sec)
		if r.s.Status != StatusDeal || string(r.s.DealTerms) != termsC {
			t.Fatalf("deal on %s", r.s.DealTerms)
		}
	})
}

func TestAcceptForms(t *testing.T) {
	t.Parallel()
	terms := `{"sends":2,"amount_usd":3200,"category":"primary_slot"}`
	hash := mustOfferHash(t, terms)
	cases := []struct{ name, frame string }{
		{"bare", accept},
		{"same terms", `{"type":"accept","terms":` + terms + `}`},
		{"terms in another key order and spelling", `{"type":"accept","terms":{"amount_usd":3200.0,"category":"primary_slot","sends":2}}`},
		{"offer_hash", `{"type":"accept","offer_hash":"` + hash + `"}`},
		{"proposal_id", `{"type":"accept","proposal_id":"neg1.p1"}`},
		{"all three", `{"type":"accept","proposal_id":"neg1.p1","offer_hash":"` + hash + `","terms":{"amount_usd":32e2,"sends":2,"category":"primary_slot"}}`},
	}
	for _, tc := range cases {
		for _, arena := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/arena=%v", tc.name, arena), func(t *testing.T) {
				t.Parallel()
				r := newRoom(t, arena)
				r.ok(brand, propose(terms, 120), 5*sec)
				out := r.ok(bouncer, tc.frame, 10*sec)
				wantTypes(t, out.Entries, TypeNegotiationMessage, TypeNegotiationEnded)
				wantFields(t, out.Entries[0].Frame, map[string]any{
					"from": bouncer, "frame_type": TypeAccept, "proposal_id": "neg1.p1", "offer_hash": hash,
					"terms": map[string]any{"sends": 2.0, "amount_usd": 3200.0, "category": "primary_slot"},
				})
				wantFields(t, out.Entries[1].Frame, map[string]any{
					"status": StatusDeal, "offer_hash": hash, "at": ts(10 * sec), "by": absent,
					"terms": map[string]any{"sends": 2.0, "amount_usd": 3200.0, "category": "primary_slot"},
				})
				wantFields(t, out.Ack, map[string]any{"seq": 2.0, "proposal_id": "neg1.p1", "offer_hash": hash})
				if !out.Ended || r.s.Status != StatusDeal || string(r.s.DealTerms) != canonical(t, terms) || r.s.DealOfferHash != hash ||
					r.s.DealAmountCents != 320000 || r.s.Standing != nil || !r.s.EndedAt.Equal(at(10*sec)) {
					t.Fatalf("state %s", snapshot(t, r.s))
				}
				want := map[string]int{brand: ReputationDeal, bouncer: ReputationDeal}
				if arena {
					want = nil
				}
				if !reflect.DeepEqual(out.Reputation, want) {
					t.Fatalf("reputation %v, want %v", out.Reputation, want)
				}
				// A live deal leaves a settlement instruction in USDC minor
				// units; the arena leaves none.
				if arena != (out.Settlement == nil) || !arena && (out.Settlement.AmountMinor != 3_200_000_000 ||
					out.Settlement.Payer != brand || out.Settlement.Payee != bouncer || out.Settlement.Status != "pending" ||
					out.Settlement.NegotiationID != "neg1" || !out.Settlement.CreatedAt.Equal(at(10*sec))) {
					t.Fatalf("settlement %+v (arena %v)", out.Settlement, arena)
				}
				if !r.s.LastAt.Equal(at(10 * sec)) {
					t.Fatalf("last_at %v", r.s.LastAt)
				}
				if !r.s.NextWake().IsZero() {
					t.Fatal("an ended negotiation still wakes")
				}
			})
		}
	}
}

func TestAcceptMismatchBlocks(t *testing.T) {
	t.Parallel()
	hashA, hashB := mustOfferHash(t, termsA), mustOfferHash(t, termsB)
	cases := []struct{ name, frame string }{
		{"stale offer_hash", `{"type":"accept","id":"c9","offer_hash":"` + hashA + `"}`},
		{"unknown offer_hash", `{"type":"accept","id":"c9","offer_hash":"sha256:00"}`},
		{"wrong proposal_id", `{"type":"accept","id":"c9","proposal_id":"neg1.p1"}`},
		{"different terms", `{"type":"accept","id":"c9","terms":` + termsA + `}`},
		{"terms with one more key", `{"type":"accept","id":"c9","terms":{"amount_usd":3200,"category":"primary_slot","sends":2,"x":1}}`},
		{"terms that cannot be canonicalised", `{"type":"accept","id":"c9","terms":{"amount_usd":3200,"category":"primary_slot","sends":2,"x":1e400}}`},
		{"right hash, wrong proposal_id", `{"type":"accept","id":"c9","offer_hash":"` + hashB + `","proposal_id":"neg1.p1"}`},
		{"right proposal_id, wrong terms", `{"type":"accept","id":"c9","proposal_id":"neg1.p2","terms":` + termsA + `}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRoom(t, false)
			r.ok(brand, propose(termsA, 0), sec)
			r.ok(brand, propose(termsB, 0), 2*sec) // replaces p1 with p2
			before := snapshot(t, r.s)
			out, err := r.refused(bouncer, tc.frame, 3*sec)
			if out.Changed() || len(out.Entries) != 0 {
				t.Fatalf("outcome %+v", out)
			}
			var sb *ScopeBlock
			if !errors.As(err, &sb) {
				t.Fatalf("error %v (%T), want *ScopeBlock", err, err)
			}
			if sb.Type != TypeScopeBlock || sb.Re != "c9" || sb.FrameType != TypeAccept || len(sb.Checks) != 1 ||
				sb.Checks[0].Check != "offer_hash" || sb.Checks[0].Limit != hashB || sb.Checks[0].Got == "" {
				t.Fatalf("scope_block %+v", sb)
			}
			if snapshot(t, r.s) != before {
				t.Fatal("the block changed the state")
			}
			// The table still stands and a bare accept takes it.
			r.ok(bouncer, accept, 4*sec)
			if r.s.DealOfferHash != hashB {
				t.Fatal("deal on the wrong terms")
			}
		})
	}
}

func TestChecker(t *testing.T) {
	t.Parallel()
	t.Run("binding", func(t *testing.T) {
		t.Parallel()
		for _, arena := range []bool{false, true} {
			r := newRoom(t, arena)
			var got []Binding
			r.check = func(b Binding) []Failure { got = append(got, b); return nil }
			r.ok(brand, propose(termsA, 0), sec)
			r.ok(bouncer, `{"type":"accept","terms":`+termsA+`}`, 2*sec)
			if len(got) != 2 {
				t.Fatalf("%d checks", len(got))
			}
			wantP := Binding{NegotiationID: negID, Agent: brand, Role: RoleBrand, Counterparty: bouncer, FrameType: TypeProposeTerms,
				Terms: Terms{Raw: json.RawMessage(termsA), AmountCents: 300000, Category: "primary_slot", Sends: 2}, Arena: arena}
			wantA := wantP
			wantA.Agent, wantA.Role, wantA.Counterparty, wantA.FrameType = bouncer, RoleBouncer, brand, TypeAccept
			if !reflect.DeepEqual(got[0], wantP) || !reflect.DeepEqual(got[1], wantA) {
				t.Fatalf("bindings\n%+v\n%+v\nwant\n%+v\n%+v", got[0], got[1], wantP, wantA)
			}
		}
	})
	t.Run("only binding frames are checked", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		var checked []string
		r.check = func(b Binding) []Failure { checked = append(checked, b.FrameType); return nil }
		r.ok(brand, msgFrame, sec)
		r.ok(bouncer, `{"type":"research","content":"x"}`, 2*sec)
		r.ok(bouncer, propose(termsA, 0), 3*sec)
		r.ok(brand, `{"type":"reject"}`, 4*sec)
		r.ok(brand, propose(termsB, 0), 5*sec)
		r.ok(brand, `{"type":"withdraw"}`, 6*sec)
		r.ok(brand, `{"type":"escalate","content":"more?","terms":{"amount_usd":9999999}}`, 7*sec)
		r.ok(bouncer, propose(termsA, 0), 8*sec)
		r.ok(brand, counter(termsB), 9*sec)
		r.ok(bouncer, accept, 10*sec)
		want := []string{TypeProposeTerms, TypeProposeTerms, TypeProposeTerms, TypeCounterTerms, TypeAccept}
		if !reflect.DeepEqual(checked, want) {
			t.Fatalf("checked %v, want %v", checked, want)
		}
	})
	t.Run("failures reported together", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, propose(termsA, 0), sec)
		r.ok(brand, propose(termsB, 0), 2*sec)
		r.check = func(b Binding) []Failure {
			return []Failure{
				{Check: "amount_usd", Limit: "3000", Got: "3200", Message: "below the floor"},
				{Check: "sends", Limit: "1", Got: "2", Message: "too many sends"},
			}
		}
		before := snapshot(t, r.s)
		_, err := r.refused(bouncer, `{"type":"accept","id":"x","offer_hash":"`+mustOfferHash(t, termsA)+`"}`, 3*sec)
		var sb *ScopeBlock
		if !errors.As(err, &sb) {
			t.Fatalf("error %v", err)
		}
		var names []string
		for _, c := range sb.Checks {
			names = append(names, c.Check)
		}
		if !reflect.DeepEqual(names, []string{"amount_usd", "sends", "offer_hash"}) {
			t.Fatalf("checks %v", names)
		}
		if sb.Message == "" {
			t.Error("no message")
		}
		if snapshot(t, r.s) != before {
			t.Fatal("state changed")
		}
		// The block travels as JSON to the sender.
		b, _ := json.Marshal(sb)
		wantFields(t, b, map[string]any{"type": TypeScopeBlock, "re": "x", "frame_type": TypeAccept})
	})
	t.Run("a failing check consumes no seq", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, msgFrame, sec) // seq 1; turn to the bouncer until 61 s
		r.check = func(b Binding) []Failure {
			if b.Terms.AmountCents > 310000 {
				return []Failure{{Check: "amount_usd", Message: "over"}}
			}
			return nil
		}
		for i, fr := range []string{propose(termsB, 0), `{"type":"propose_terms","terms":{"amount_usd":5000}}`} {
			out, err := r.refused(bouncer, fr, time.Duration(10+i)*sec)
			var sb *ScopeBlock
			if !errors.As(err, &sb) || sb.FrameType != TypeProposeTerms || len(out.Entries) != 0 {
				t.Fatalf("error %v, outcome %+v", err, out)
			}
		}
		if r.s.LastSeq != 1 || r.s.Standing != nil || r.s.Turn != bouncer || !r.s.TurnDeadlineAt.Equal(at(61*sec)) {
			t.Fatalf("state %s", snapshot(t, r.s))
		}
		out := r.ok(bouncer, propose(termsA, 0), 20*sec)
		if out.Entries[0].Seq != 2 || r.s.Standing.ID != negID+".p2" {
			t.Fatalf("seq %d, proposal %s", out.Entries[0].Seq, r.s.Standing.ID)
		}
		// Blocked counter: the turn clock keeps running.
		r.check = func(Binding) []Failure { return []Failure{{Check: "grant", Message: "none"}} }
		if _, err := r.refused(brand, counter(termsC), 50*sec); err == nil {
			t.Fatal("landed")
		}
		out = r.tick(80 * sec)
		wantTypes(t, out.Entries, TypeNegotiationEnded)
		wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusTurnMissed, "by": brand})
	})
}

// --- escalation ---

const escalate = `{"type":"escalate","content":"may I go to $3,500?","terms":{"amount_usd":3500}}`

func TestEscalateOnTurn(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	out := r.ok(brand, `{"type":"escalate","id":"e","content":"may I go to $3,500?","terms":{"amount_usd":3500}}`, 20*sec)
	if out.EscalationID != negID+".e1" {
		t.Fatalf("EscalationID %q", out.EscalationID)
	}
	wantFields(t, out.Ack, map[string]any{"escalation_id": negID + ".e1", "turn": brand, "turn_deadline_at": nil, "turn_paused": true})
	wantTypes(t, out.Entries, TypeNegotiationMessage)
	wantFields(t, out.Entries[0].Frame, map[string]any{
		"frame_type": TypeEscalate, "from": brand, "content": absent, "terms": absent,
		"turn": brand, "turn_deadline_at": nil, "turn_paused": true,
	})
	if bytes.Contains(out.Entries[0].Frame, []byte("3500")) || bytes.Contains(out.Entries[0].Frame, []byte("3,500")) {
		t.Fatalf("the public frame reveals the escalation: %s", out.Entries[0].Frame)
	}
	if !r.s.TurnPaused || r.s.TurnLeft != 40*sec || !r.s.TurnDeadlineAt.IsZero() || r.s.Turn != brand {
		t.Fatalf("state %s", snapshot(t, r.s))
	}
	e := r.s.Escalation(negID + ".e1")
	if e == nil || e.By != brand || !e.LapsesAt.Equal(at(5*minute+20*sec)) || e.Content != "may I go to $3,500?" || string(e.Terms) != `{"amount_usd":3500}` {
		t.Fatalf("escalation %+v", e)
	}
	if !r.s.NextWake().Equal(at(5*minute + 20*sec)) {
		t.Fatalf("NextWake %v", r.s.NextWake())
	}
	// Paused: no turn is missed while the principal decides.
	if out := r.tick(3 * minute); out.Changed() {
		t.Fatalf("tick while paused: %+v", out)
	}
	// A second escalation is refused.
	_, err := r.refused(brand, escalate, 3*minute)
	wantCode(t, err, wire.CodeInvalidState)

	out, err = r.s.Resolve(negID+".e1", "approve", at(3*minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 0 || len(out.Private) != 1 || out.Private[0].To != brand || !out.Changed() {
		t.Fatalf("resolve outcome %+v", out)
	}
	wantFields(t, out.Private[0].Frame, map[string]any{
		"type": TypeEscalationResolved, "escalation_id": negID + ".e1", "decision": "approve",
		"at": ts(3 * minute), "turn": brand, "turn_deadline_at": ts(3*minute + 40*sec),
	})
	if r.s.TurnPaused || !r.s.TurnDeadlineAt.Equal(at(3*minute+40*sec)) || len(r.s.Escalations) != 0 {
		t.Fatalf("after resolve %s", snapshot(t, r.s))
	}
	_, err = r.s.Resolve(negID+".e1", "approve", at(3*minute))
	wantCode(t, err, wire.CodeInvalidState)
	if out := r.tick(3*minute + 40*sec - time.Nanosecond); out.Changed() {
		t.Fatal("missed early")
	}
	out = r.tick(3*minute + 40*sec)
	wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusTurnMissed, "by": brand})
}

func TestEscalationLapse(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, escalate, 20*sec)
	if out := r.tick(5*minute + 20*sec - time.Nanosecond); out.Changed() {
		t.Fatal("lapsed early")
	}
	out := r.tick(5*minute + 20*sec)
	if len(out.Entries) != 0 || len(out.Private) != 1 || out.Private[0].To != brand {
		t.Fatalf("lapse outcome %+v", out)
	}
	wantFields(t, out.Private[0].Frame, map[string]any{
		"decision": "lapsed", "escalation_id": negID + ".e1", "at": ts(5*minute + 20*sec),
		"turn": brand, "turn_deadline_at": ts(6 * minute),
	})
	if r.s.TurnPaused || !r.s.TurnDeadlineAt.Equal(at(6*minute)) || len(r.s.Escalations) != 0 {
		t.Fatalf("state %s", snapshot(t, r.s))
	}
	out, err := r.s.Resolve(negID+".e1", "approve", at(5*minute+30*sec))
	wantCode(t, err, wire.CodeInvalidState)
	if out.Changed() {
		t.Fatal("a late decision changed something")
	}
	out = r.tick(6 * minute)
	wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusTurnMissed, "by": brand})
}

// A late timer settles the lapse and the turn it resumes in one tick, each at
// its own time.
func TestEscalationLapseLateTimer(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, escalate, 20*sec)
	out := r.tick(7 * minute)
	if len(out.Private) != 1 {
		t.Fatalf("private %v", out.Private)
	}
	wantFields(t, out.Private[0].Frame, map[string]any{"decision": "lapsed", "at": ts(5*minute + 20*sec)})
	wantTypes(t, out.Entries, TypeNegotiationEnded)
	wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusTurnMissed, "at": ts(6 * minute)})
}

func TestEscalateOffTurn(t *testing.T) {
	t.Parallel()
	t.Run("pauses nothing", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		out := r.ok(bouncer, escalate, 20*sec)
		if r.s.TurnPaused || r.s.Turn != brand || !r.s.TurnDeadlineAt.Equal(at(TurnTime)) {
			t.Fatalf("state %s", snapshot(t, r.s))
		}
		wantFields(t, out.Entries[0].Frame, map[string]any{"turn": brand, "turn_deadline_at": ts(TurnTime), "turn_paused": absent})
		out = r.tick(TurnTime)
		wantFields(t, out.Entries[0].Frame, map[string]any{"status": StatusTurnMissed, "by": brand})
		if len(r.s.Escalations) != 0 {
			t.Fatal("the ending left the escalation open")
		}
	})
	// The rule this pins (PROTOCOL.md is silent): a turn passed to a party
	// whose escalation is open starts paused, with a full turn left.
	t.Run("the turn comes to the escalator", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(bouncer, escalate, 20*sec)
		out := r.ok(brand, msgFrame, 30*sec)
		if r.s.Turn != bouncer || !r.s.TurnPaused || r.s.TurnLeft != TurnTime || !r.s.TurnDeadlineAt.IsZero() {
			t.Fatalf("state %s", snapshot(t, r.s))
		}
		wantFields(t, out.Entries[0].Frame, map[string]any{"turn": bouncer, "turn_deadline_at": nil, "turn_paused": true})
		out, err := r.s.Resolve(negID+".e1", "deny", at(2*minute))
		if err != nil {
			t.Fatal(err)
		}
		wantFields(t, out.Private[0].Frame, map[string]any{"decision": "deny", "turn": bouncer, "turn_deadline_at": ts(3 * minute)})
		if r.s.TurnPaused || !r.s.TurnDeadlineAt.Equal(at(3*minute)) {
			t.Fatalf("state %s", snapshot(t, r.s))
		}
	})
	t.Run("the escalator moves on while paused", func(t *testing.T) {
		t.Parallel()
		r := newRoom(t, false)
		r.ok(brand, escalate, 20*sec)
		r.ok(brand, msgFrame, 30*sec) // a move on turn passes it, escalation or not
		if r.s.Turn != bouncer || r.s.TurnPaused || !r.s.TurnDeadlineAt.Equal(at(90*sec)) || len(r.s.Escalations) != 1 {
			t.Fatalf("state %s", snapshot(t, r.s))
		}
		out, err := r.s.Resolve(negID+".e1", "approve", at(60*sec))
		if err != nil {
			t.Fatal(err)
		}
		wantFields(t, out.Private[0].Frame, map[string]any{"turn": bouncer, "turn_deadline_at": ts(90 * sec)})
		if !r.s.TurnDeadlineAt.Equal(at(90 * sec)) {
			t.Fatal("resolving someone else's turn moved its clock")
		}
	})
}

func TestWalkDuringEscalation(t *testing.T) {
	t.Parallel()
	for _, walker := range []string{brand, bouncer} {
		for _, typ := range []string{TypeWalk, TypeClose} {
			t.Run(walker+"/"+typ, func(t *testing.T) {
				t.Parallel()
				r := newRoom(t, false)
				r.ok(brand, escalate, 20*sec)
				out := r.ok(walker, `{"type":"`+typ+`","content":"bye"}`, 30*sec)
				wantTypes(t, out.Entries, TypeNegotiationMessage, TypeNegotiationEnded)
				wantFields(t, out.Entries[0].Frame, map[string]any{"frame_type": typ, "content": "bye"})
				wantFields(t, out.Entries[1].Frame, map[string]any{"status": StatusWalked, "by": walker, "at": ts(30 * sec), "reason": absent})
				if !out.Ended || out.Reputation != nil || r.s.Status != StatusWalked || r.s.EndedBy != walker ||
					len(r.s.Escalations) != 0 || r.s.TurnPaused || r.s.TurnLeft != 0 {
					t.Fatalf("state %s", snapshot(t, r.s))
				}
				_, err := r.s.Resolve(negID+".e1", "approve", at(40*sec))
				wantCode(t, err, wire.CodeInvalidState)
				if out := r.tick(20 * minute); out.Changed() {
					t.Fatalf("tick after the end: %+v", out)
				}
			})
		}
	}
}

// --- idempotency, transcript, endings ---

func TestIdempotentResend(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	first := r.ok(brand, `{"type":"message","id":"c1","content":"hello"}`, 10*sec)
	before := snapshot(t, r.s)
	for _, d := range []time.Duration{11 * sec, 55 * sec} {
		out, err := r.apply(brand, `{"type":"message","id":"c1","content":"different"}`, d)
		if err != nil || !out.Replay || !bytes.Equal(out.Ack, first.Ack) || len(out.Entries) != 0 || out.Changed() {
			t.Fatalf("resend at %v: %v %+v", d, err, out)
		}
		if snapshot(t, r.s) != before {
			t.Fatal("the resend changed the state")
		}
	}
	// Even once clocks are overdue, a resend only repeats the ack (the next
	// tick settles them).
	late := clone(t, r.s)
	out, err := late.Apply(brand, mustFrame(t, `{"type":"message","id":"c1","content":"x"}`), at(5*minute), nil)
	if err != nil || !out.Replay || !bytes.Equal(out.Ack, first.Ack) || snapshot(t, late) != before {
		t.Fatalf("late resend: %v %+v", err, out)
	}
	// Another sender's id is its own.
	out = r.ok(bouncer, `{"type":"message","id":"c1","content":"hello back"}`, 20*sec)
	if bytes.Equal(out.Ack, first.Ack) {
		t.Fatal("the bouncer got the brand's ack")
	}
	// A refused frame is not remembered: resent later it is judged again.
	_, err = r.refused(brand, `{"type":"accept","id":"c2"}`, 30*sec)
	wantCode(t, err, wire.CodeInvalidState)
	r.ok(bouncer, propose(termsA, 0), 35*sec)
	acc := r.ok(brand, `{"type":"accept","id":"c2"}`, 40*sec)
	if r.s.Status != StatusDeal {
		t.Fatal("no deal")
	}
	// After the end the resend still gets its ack.
	out, err = r.apply(brand, `{"type":"accept","id":"c2"}`, 50*sec)
	if err != nil || !out.Replay || !bytes.Equal(out.Ack, acc.Ack) || len(out.Entries) != 0 {
		t.Fatalf("resend after the deal: %v %+v", err, out)
	}
	// The stored acks survive the store's JSON.
	c := clone(t, r.s)
	out, err = c.Apply(brand, mustFrame(t, `{"type":"message","id":"c1","content":"x"}`), at(60*sec), nil)
	if err != nil || !out.Replay || !bytes.Equal(out.Ack, first.Ack) {
		t.Fatalf("resend on the stored state: %v %+v", err, out)
	}
}

func TestTranscriptChain(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, `{"type":"message","id":"a","content":"hi"}`, sec)
	r.ok(bouncer, `{"type":"research","content":"checking"}`, 2*sec)
	r.ok(bouncer, propose(termsA, 10), 3*sec)
	r.tick(20 * sec) // proposal_expired
	r.ok(bouncer, propose(termsB, 0), 21*sec)
	r.ok(brand, escalate, 22*sec)
	r.ok(brand, counter(termsC), 23*sec)
	r.ok(bouncer, `{"type":"accept","id":"z"}`, 24*sec)
	want := []string{TypeNegotiationMessage, TypeNegotiationMessage, TypeNegotiationMessage, TypeProposalExpired,
		TypeNegotiationMessage, TypeNegotiationMessage, TypeNegotiationMessage, TypeNegotiationMessage, TypeNegotiationEnded}
	wantTypes(t, r.entries, want...)
	// Recompute the chain from nothing.
	prev := ""
	for i, e := range r.entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
		h, err := ChainHash(prev, e.Frame)
		if err != nil || h != e.Hash {
			t.Fatalf("entry %d: chain broken", e.Seq)
		}
		prev = h
	}
	if r.s.HeadHash != prev || r.s.LastSeq != int64(len(want)) {
		t.Fatal("head does not match")
	}
	// A changed byte anywhere breaks the chain from there on.
	bad := append([]byte(nil), r.entries[2].Frame...)
	bad[bytes.Index(bad, []byte("3000"))] = '4'
	if h, _ := ChainHash(r.entries[1].Hash, bad); h == r.entries[2].Hash {
		t.Fatal("a tampered frame verifies")
	}
}

func TestNothingAfterEnd(t *testing.T) {
	t.Parallel()
	endings := map[string]func(r *room){
		"deal": func(r *room) {
			r.ok(brand, propose(termsA, 0), sec)
			r.ok(bouncer, accept, 2*sec)
		},
		"walk":        func(r *room) { r.ok(bouncer, `{"type":"walk"}`, sec) },
		"close":       func(r *room) { r.ok(brand, `{"type":"close"}`, sec) },
		"turn_missed": func(r *room) { r.tick(TurnTime) },
		"expired": func(r *room) {
			for d := 50 * sec; d <= 450*sec; d += 50 * sec {
				r.ok(r.s.Turn, msgFrame, d)
			}
			r.tick(8 * minute)
		},
	}
	frames := []string{
		msgFrame, `{"type":"research","content":"x"}`, propose(termsA, 0), counter(termsA), accept,
		`{"type":"reject"}`, `{"type":"withdraw"}`, escalate, `{"type":"walk"}`, `{"type":"close"}`,
		`{"type":"message","content":"x","id":"fresh"}`,
	}
	for name, end := range endings {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRoom(t, false)
			end(r)
			if !r.s.Ended() || r.s.Standing != nil || len(r.s.Escalations) != 0 {
				t.Fatalf("not ended cleanly: %s", snapshot(t, r.s))
			}
			n := len(r.entries)
			wantTypes(t, r.entries[n-1:], TypeNegotiationEnded)
			for _, from := range []string{brand, bouncer} {
				for _, fr := range frames {
					_, err := r.refused(from, fr, 9*minute)
					wantCode(t, err, wire.CodeInvalidState)
				}
			}
			if _, err := r.s.Thinking(brand, at(9*minute)); err == nil {
				t.Fatal("thinking after the end")
			}
			if out := r.tick(time.Hour); out.Changed() {
				t.Fatal("tick after the end changed something")
			}
			_, err := r.s.Resolve(negID+".e1", "approve", at(time.Hour))
			wantCode(t, err, wire.CodeInvalidState)
			_, err = r.s.Start(at(time.Hour))
			wantCode(t, err, wire.CodeInvalidState)
			if len(r.entries) != n {
				t.Fatal("entries after negotiation_ended")
			}
		})
	}
}

func TestNotAParty(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	_, err := r.refused(stranger, msgFrame, sec)
	wantCode(t, err, wire.CodeForbidden)
	_, err = r.refused(stranger, `{"type":"walk","id":"w"}`, sec)
	wantCode(t, err, wire.CodeForbidden)
	_, terr := r.s.Thinking(stranger, at(sec))
	if terr == nil || terr.Code != wire.CodeForbidden {
		t.Fatalf("thinking by a stranger: %v", terr)
	}
}

func TestThinking(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	before := snapshot(t, r.s)
	fr, err := r.s.Thinking(bouncer, at(5*sec))
	if err != nil {
		t.Fatal(err)
	}
	wantFields(t, fr, map[string]any{"type": TypeAgentThinking, "from": bouncer, "at": ts(5 * sec), "seq": absent})
	if snapshot(t, r.s) != before {
		t.Fatal("thinking changed the state")
	}
	if _, err := r.s.Thinking(brand, at(Deadline)); err == nil {
		t.Fatal("thinking at the deadline")
	}
	// Thinking is not a room frame.
	_, aerr := r.refused(brand, `{"type":"thinking"}`, 6*sec)
	if aerr == nil {
		t.Fatal("thinking landed through Apply")
	}
	s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
	if _, err := s.Thinking(brand, t0); err == nil || err.Code != wire.CodeInvalidState {
		t.Fatalf("thinking while pending: %v", err)
	}
}

// The state is plain data: a store that keeps it as JSON gets the same
// negotiation back, including a paused turn and a ttl.
func TestStateJSONRoundTrip(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, propose(termsA, 100), 10*sec)
	r.ok(bouncer, escalate, 20*sec)
	r.ok(bouncer, counter(termsB), 30*sec)
	r.ok(brand, `{"type":"escalate","content":"x"}`, 35*sec)
	r.ok(bouncer, `{"type":"message","id":"m","content":"hi"}`, 40*sec)
	if !r.s.TurnPaused || r.s.Standing == nil || len(r.s.Escalations) != 2 || len(r.s.Acks) != 1 {
		t.Fatalf("setup: %s", snapshot(t, r.s))
	}
	c := clone(t, r.s)
	if snapshot(t, c) != snapshot(t, r.s) {
		t.Fatal("the JSON round trip loses something")
	}
	outA, outB := r.s.Tick(at(20*minute)), c.Tick(at(20*minute))
	if string(marshal(outA)) != string(marshal(outB)) || snapshot(t, c) != snapshot(t, r.s) {
		t.Fatal("the stored state settles differently")
	}
	if len(outA.Entries) == 0 {
		t.Fatal("nothing settled")
	}
}

// canonical is terms in RFC 8785 form: how the room keeps and relays them.
func canonical(t *testing.T, terms string) string {
	t.Helper()
	c, err := jcs.Transform([]byte(terms))
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// TestAckWindow: resends are recognised for the last AckWindow ids; the
// state keeps no more than that.
func TestAckWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	s := NewRequest("neg1", "off1", []byte(`{}`), Party{AgentID: "brand"}, Party{AgentID: "bouncer"}, true, t0)
	if _, err := s.Start(t0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < AckWindow+8; i++ {
		f := Frame{Type: TypeMessage, ID: fmt.Sprintf("m%d", i), Content: "x", HasContent: true}
		if _, err := s.Apply("brand", f, t0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.Acks) != AckWindow || len(s.AckOrder) != AckWindow {
		t.Fatalf("acks kept: %d / %d, want %d", len(s.Acks), len(s.AckOrder), AckWindow)
	}
	last := Frame{Type: TypeMessage, ID: fmt.Sprintf("m%d", AckWindow+7), Content: "x", HasContent: true}
	if out, err := s.Apply("brand", last, t0, nil); err != nil || !out.Replay {
		t.Fatalf("resend of a recent id: %v %+v", err, out)
	}
	first := Frame{Type: TypeMessage, ID: "m0", Content: "x", HasContent: true}
	if out, err := s.Apply("brand", first, t0, nil); err != nil || out.Replay {
		t.Fatalf("an id older than the window acts again (documented): %v %+v", err, out)
	}
}
