package negotiation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/wire"
)

// The operations FuzzRoom reads off its input, one byte each (op % opCount),
// most followed by argument bytes.
const (
	opFrame    = iota // 0..10: a party frame, of partyTypes[op]
	opAdvance  = 11   // time += 0..90 s
	opNudge    = 12   // time += 0..2.55 s in 10 ms steps
	opTick     = 13   // timers fire
	opWake     = 14   // time jumps to NextWake exactly
	opResolve  = 15   // the principal decides an escalation
	opStranger = 16   // a frame from someone who is not a party
	opCount    = 17
)

var partyTypes = []string{
	TypeMessage, TypeResearch, TypeThinking, TypeProposeTerms, TypeCounterTerms, TypeAccept,
	TypeReject, TypeWithdraw, TypeEscalate, TypeWalk, TypeClose,
}

var knownStatus = map[string]bool{
	StatusPending: true, StatusDeclined: true, StatusLive: true,
	StatusDeal: true, StatusWalked: true, StatusTurnMissed: true, StatusExpired: true,
}

var endStatus = map[string]bool{StatusDeal: true, StatusWalked: true, StatusTurnMissed: true, StatusExpired: true}

// fuzzRoom runs one negotiation driven by fuzz bytes and checks the
// invariants after every step.
type fuzzRoom struct {
	t      *testing.T
	data   []byte
	s      *State
	now    time.Time
	arena  bool
	check  Checker
	seq    int64
	head   string
	lastAt time.Time
	ended  bool // a negotiation_ended entry went out
	// settled is when the clocks were last settled (Start, Apply, Tick,
	// Resolve): the state's invariants hold as of then.
	settled time.Time
	hashes  []string // offer hashes seen, for stale accepts
	props   []string // proposal ids seen
	escs    []string // escalation ids seen
}

func (r *fuzzRoom) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *fuzzRoom) party(b byte) string {
	if b&1 == 0 {
		return brand
	}
	return bouncer
}

var fuzzAmounts = []string{"0", "1", "3000", "3200", "3200.0", "32e2", "3200.5", "10000000", "31.99"}

func (r *fuzzRoom) terms() string {
	b := r.next()
	kv := []string{`"amount_usd":` + fuzzAmounts[int(b)%len(fuzzAmounts)]}
	if b&16 != 0 {
		kv = append(kv, `"sends":`+[]string{"1", "2", "1000"}[int(b>>2)%3])
	}
	if b&32 != 0 {
		kv = append(kv, `"category":"primary_slot"`)
	}
	if b&128 != 0 {
		kv = append(kv, `"note":{"slot":["a","b"]}`)
	}
	if b&64 != 0 {
		for i, j := 0, len(kv)-1; i < j; i, j = i+1, j-1 {
			kv[i], kv[j] = kv[j], kv[i]
		}
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// frame builds the JSON of a party frame of type typ from the next bytes.
func (r *fuzzRoom) frame(typ string) string {
	m := []string{`"type":"` + typ + `"`}
	if b := r.next(); b&3 != 0 {
		m = append(m, fmt.Sprintf(`"id":"c%d"`, int(b>>2)%6)) // few ids: resends happen
	}
	switch typ {
	case TypeMessage, TypeResearch, TypeEscalate, TypeWalk:
		m = append(m, `"content":"`+[]string{"hi", "", "two sends?", "bye"}[r.next()%4]+`"`)
	}
	switch typ {
	case TypeProposeTerms, TypeCounterTerms:
		m = append(m, `"terms":`+r.terms())
		if b := r.next(); b%4 != 0 {
			m = append(m, fmt.Sprintf(`"ttl_seconds":%d`, int(b)*2-20))
		}
	case TypeEscalate:
		if r.next()&1 == 1 {
			m = append(m, `"terms":`+r.terms())
		}
	case TypeAccept:
		st := r.s.Standing
		b := r.next()
		switch b % 7 {
		case 1:
			if st != nil {
				m = append(m, `"offer_hash":"`+st.OfferHash+`"`)
			}
		case 2:
			if len(r.hashes) > 0 {
				m = append(m, `"offer_hash":"`+r.hashes[int(b>>3)%len(r.hashes)]+`"`)
			}
		case 3:
			if st != nil {
				m = append(m, `"proposal_id":"`+st.ID+`"`)
			}
		case 4:
			if len(r.props) > 0 {
				m = append(m, `"proposal_id":"`+r.props[int(b>>3)%len(r.props)]+`"`)
			}
		case 5:
			m = append(m, `"terms":`+r.terms())
		case 6:
			if st != nil {
				m = append(m, `"terms":`+string(st.Terms))
			}
		}
	}
	return "{" + strings.Join(m, ",") + "}"
}

func (r *fuzzRoom) snapshot() string {
	b, err := json.Marshal(r.s)
	if err != nil {
		r.t.Fatalf("marshal state: %v", err)
	}
	return string(b)
}

// settle returns the state as settling the clocks alone at now leaves it.
func (r *fuzzRoom) settle() (*State, Outcome) {
	c := clone(r.t, r.s)
	out := c.Tick(r.now)
	return c, out
}

func (r *fuzzRoom) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("at +%v: %s\nstate %s", r.now.Sub(t0), fmt.Sprintf(format, args...), r.snapshot())
}

// entries checks the entries of one outcome against the transcript so far.
func (r *fuzzRoom) entries(out Outcome, settleOnly bool) {
	r.t.Helper()
	for _, e := range out.Entries {
		if r.ended {
			r.fail("entry %d after negotiation_ended: %s", e.Seq, e.Frame)
		}
		if e.Seq != r.seq+1 {
			r.fail("seq %d after %d", e.Seq, r.seq)
		}
		h, err := ChainHash(r.head, e.Frame)
		if err != nil || h != e.Hash {
			r.fail("entry %d: hash %s, chain gives %s (%v)", e.Seq, e.Hash, h, err)
		}
		var fr map[string]any
		if err := json.Unmarshal(e.Frame, &fr); err != nil {
			r.fail("entry %d: %v", e.Seq, err)
		}
		if fr["seq"] != float64(e.Seq) || fr["at"] != wire.Time(e.At) {
			r.fail("entry %d says seq %v at %v", e.Seq, fr["seq"], fr["at"])
		}
		if e.At.After(r.now) || e.At.Before(r.lastAt) {
			r.fail("entry %d at %v, out of order", e.Seq, e.At)
		}
		typ := fr["type"]
		if settleOnly && typ != TypeProposalExpired && typ != TypeNegotiationEnded {
			r.fail("clock settling wrote %s", e.Frame)
		}
		if typ == TypeNegotiationEnded {
			r.ended = true
			if !out.Ended {
				r.fail("negotiation_ended without Outcome.Ended")
			}
		}
		if typ == TypeNegotiationMessage {
			if h, ok := fr["offer_hash"].(string); ok {
				r.hashes = append(r.hashes, h)
			}
			if p, ok := fr["proposal_id"].(string); ok {
				r.props = append(r.props, p)
			}
		}
		r.seq, r.head, r.lastAt = e.Seq, e.Hash, e.At
	}
	if out.Ended && !r.ended {
		r.fail("Outcome.Ended without negotiation_ended")
	}
	if out.Reputation != nil {
		if r.arena || !out.Ended {
			r.fail("reputation %v (arena %v, ended %v)", out.Reputation, r.arena, out.Ended)
		}
		for who, d := range out.Reputation {
			if !r.s.IsParty(who) || (d != ReputationDeal && d != ReputationTurnMissed) {
				r.fail("reputation %v", out.Reputation)
			}
		}
	}
	for _, p := range out.Private {
		if !r.s.IsParty(p.To) {
			r.fail("private frame to %q", p.To)
		}
		var fr map[string]any
		if json.Unmarshal(p.Frame, &fr) != nil || fr["type"] != TypeEscalationResolved {
			r.fail("private frame %s", p.Frame)
		}
	}
}

// invariants checks the state itself.
func (r *fuzzRoom) invariants() {
	r.t.Helper()
	s := r.s
	if !knownStatus[s.Status] {
		r.fail("status %q", s.Status)
	}
	if s.LastSeq != r.seq || s.HeadHash != r.head {
		r.fail("LastSeq %d HeadHash %s, transcript at %d %s", s.LastSeq, s.HeadHash, r.seq, r.head)
	}
	if endStatus[s.Status] != r.ended {
		r.fail("status %s, negotiation_ended sent: %v", s.Status, r.ended)
	}
	if p := s.Standing; p != nil {
		if s.Status != StatusLive || !s.IsParty(p.By) || p.ID == "" || p.Seq < 1 || p.Seq > s.LastSeq {
			r.fail("standing %+v", p)
		}
		if h, err := OfferHash(p.Terms); err != nil || h != p.OfferHash {
			r.fail("standing hash %s, terms hash %s (%v)", p.OfferHash, h, err)
		}
		if !p.ExpiresAt.IsZero() && !p.ExpiresAt.After(r.settled) {
			r.fail("a proposal past its expiry stands")
		}
	}
	if s.Status != StatusLive {
		if len(s.Escalations) != 0 || s.TurnPaused || s.TurnLeft != 0 {
			r.fail("not live with clocks held")
		}
		if s.Status != StatusPending && !s.NextWake().IsZero() {
			r.fail("an ended negotiation wakes at %v", s.NextWake())
		}
		return
	}
	if !s.DeadlineAt.After(r.settled) || !s.NextWake().After(r.settled) {
		r.fail("live past a clock: deadline %v, next wake %v", s.DeadlineAt, s.NextWake())
	}
	if !s.IsParty(s.Turn) {
		r.fail("turn %q", s.Turn)
	}
	if s.TurnPaused != s.TurnDeadlineAt.IsZero() {
		r.fail("turn paused %v with deadline %v", s.TurnPaused, s.TurnDeadlineAt)
	}
	if s.TurnPaused {
		if s.escalationOf(s.Turn) == nil || s.TurnLeft <= 0 || s.TurnLeft > TurnTime {
			r.fail("paused turn without an escalation of the party on turn, or left %v", s.TurnLeft)
		}
	} else if s.TurnLeft != 0 || !s.TurnDeadlineAt.After(r.settled) || s.TurnDeadlineAt.After(r.settled.Add(TurnTime)) {
		r.fail("running turn: left %v, deadline %v", s.TurnLeft, s.TurnDeadlineAt)
	}
	seen := map[string]bool{}
	for _, e := range s.Escalations {
		if !s.IsParty(e.By) || seen[e.By] || !e.LapsesAt.After(r.settled) || e.LapsesAt.After(r.settled.Add(EscalationLapse)) {
			r.fail("escalation %+v", e)
		}
		seen[e.By] = true
	}
}

// step runs one operation.
func (r *fuzzRoom) step() {
	r.t.Helper()
	op := int(r.next()) % opCount
	before := r.snapshot()
	switch {
	case op <= 10 || op == opStranger:
		typ := partyTypes[op%len(partyTypes)]
		from := r.party(r.next())
		if op == opStranger {
			from = stranger
			typ = partyTypes[int(r.next())%len(partyTypes)]
		}
		js := r.frame(typ)
		f, werr := DecodeFrame([]byte(js))
		if werr != nil {
			if werr.Code != wire.CodeInvalidArgument {
				r.fail("%s: %v", js, werr)
			}
			return
		}
		if typ == TypeThinking {
			fr, terr := r.s.Thinking(from, r.now)
			if (terr == nil) == (fr == nil) || r.snapshot() != before {
				r.fail("thinking: %s %v, or it changed the state", fr, terr)
			}
			return
		}
		want, wantOut := r.settle()
		out, err := r.s.Apply(from, f, r.now, r.check)
		if !out.Replay {
			r.settled = r.now
			// The clocks settle first, exactly as a tick would have.
			if len(out.Entries) < len(wantOut.Entries) {
				r.fail("%s: %d entries, the clocks alone settle %d", js, len(out.Entries), len(wantOut.Entries))
			}
			for i, e := range wantOut.Entries {
				if string(out.Entries[i].Frame) != string(e.Frame) {
					r.fail("%s: entry %d is %s, a tick gives %s", js, i, out.Entries[i].Frame, e.Frame)
				}
			}
		}
		switch {
		case err != nil:
			var we *wire.Error
			var sb *ScopeBlock
			switch {
			case errors.As(err, &sb):
				if !f.Binding() || len(sb.Checks) == 0 || sb.FrameType != typ || sb.Re != f.ID {
					r.fail("%s: scope_block %+v", js, sb)
				}
			case errors.As(err, &we):
			default:
				r.fail("%s: error %T %v", js, err, err)
			}
			if out.Ack != nil || out.Replay || out.EscalationID != "" {
				r.fail("%s refused (%v) with an ack", js, err)
			}
			if got := r.snapshot(); got != snapshot(r.t, want) {
				r.fail("%s refused (%v) but the state is not as the clocks left it:\n got %s\nwant %s", js, err, got, snapshot(r.t, want))
			}
			if len(out.Entries) != len(wantOut.Entries) {
				r.fail("%s refused: %d entries, clocks alone %d", js, len(out.Entries), len(wantOut.Entries))
			}
			r.entries(out, true)
		case out.Replay:
			if out.Ack == nil || len(out.Entries) != 0 || len(out.Private) != 0 || out.Changed() || r.snapshot() != before {
				r.fail("%s replay changed something: %+v", js, out)
			}
			if f.ID == "" || string(r.s.Acks[ackKey(from, f.ID)]) != string(out.Ack) {
				r.fail("%s replay of an ack that is not stored", js)
			}
		default:
			if !r.s.IsParty(from) || out.Ack == nil || len(out.Entries) == 0 {
				r.fail("%s landed from %s: %+v", js, from, out)
			}
			var ack struct {
				Seq int64  `json:"seq"`
				Re  string `json:"re"`
			}
			if json.Unmarshal(out.Ack, &ack) != nil || ack.Re != f.ID {
				r.fail("ack %s", out.Ack)
			}
			found := false
			for _, e := range out.Entries {
				var m map[string]any
				_ = json.Unmarshal(e.Frame, &m)
				if e.Seq == ack.Seq && m["type"] == TypeNegotiationMessage && m["from"] == from && m["frame_type"] == typ {
					found = true
				}
			}
			if !found {
				r.fail("ack %s names no entry of the frame", out.Ack)
			}
			if (typ == TypeEscalate) != (out.EscalationID != "") {
				r.fail("EscalationID %q for %s", out.EscalationID, typ)
			}
			if out.EscalationID != "" {
				r.escs = append(r.escs, out.EscalationID)
			}
			r.entries(out, false)
		}
	case op == opAdvance:
		r.now = r.now.Add(time.Duration(r.next()%91) * time.Second)
	case op == opNudge:
		r.now = r.now.Add(time.Duration(r.next()) * 10 * time.Millisecond)
	case op == opWake:
		if w := r.s.NextWake(); w.After(r.now) {
			r.now = w
		}
	case op == opTick:
		out := r.s.Tick(r.now)
		r.settled = r.now
		if out.Ack != nil || out.EscalationID != "" {
			r.fail("tick outcome %+v", out)
		}
		r.entries(out, true)
	case op == opResolve:
		b := r.next()
		id := "nope"
		if len(r.s.Escalations) > 0 && b&1 == 0 {
			id = r.s.Escalations[int(b>>1)%len(r.s.Escalations)].ID
		} else if len(r.escs) > 0 {
			id = r.escs[int(b>>1)%len(r.escs)]
		}
		decision := []string{"approve", "deny"}[(b>>4)&1]
		want, _ := r.settle()
		out, err := r.s.Resolve(id, decision, r.now)
		r.settled = r.now
		if err != nil {
			if got := r.snapshot(); got != snapshot(r.t, want) {
				r.fail("refused Resolve changed the state")
			}
			r.entries(out, true)
			break
		}
		if len(out.Private) == 0 || want.Escalation(id) == nil || r.s.Escalation(id) != nil {
			r.fail("Resolve %s: %+v", id, out)
		}
		r.entries(out, true)
	}
	if cl := r.s.Clone(); snapshot(r.t, &cl) != r.snapshot() {
		r.fail("Clone differs from the state")
	}
	// Stores keep the state as JSON: carry on with what a store gives back.
	if c := clone(r.t, r.s); snapshot(r.t, c) != r.snapshot() {
		r.fail("the JSON round trip changes the state")
	} else {
		r.s = c
	}
	r.invariants()
}

func FuzzRoom(f *testing.F) {
	seeds := [][]byte{
		{},
		{0, 0},
		// propose (brand), accept (bouncer, offer_hash)
		{0, 0, opFrame + 3, 0, 0, 3, 0, opAdvance, 5, opFrame + 5, 1, 1, 1},
		// propose with a ttl, wake at its expiry, accept too late
		{2, 0, opFrame + 3, 0, 5, 0x33, 1, opWake, opFrame + 5, 1, 0, 0},
		// escalate on turn, wait, resolve, miss the turn
		{0, 0, opFrame + 8, 0, 1, 2, 1, 7, opAdvance, 90, opAdvance, 90, opResolve, 0, opWake, opTick},
		// escalation lapses
		{0, 0, opFrame + 8, 0, 0, 2, 0, opWake, opTick, opWake, opTick},
		// talk back and forth until the deadline
		{1, 0, opFrame, 0, 0, 0, opAdvance, 50, opFrame, 1, 0, 0, opAdvance, 50, opFrame, 0, 0, 0, opAdvance, 50,
			opFrame, 1, 0, 0, opAdvance, 50, opFrame, 0, 0, 0, opAdvance, 50, opFrame, 1, 0, 0, opAdvance, 50,
			opFrame, 0, 0, 0, opAdvance, 50, opFrame, 1, 0, 0, opAdvance, 50, opFrame, 0, 0, 0, opAdvance, 50,
			opFrame, 1, 0, 0, opWake, opWake, opTick},
		// counter, reject, withdraw, walk
		{0, 1, opFrame + 3, 0, 0, 3, 0, opFrame + 4, 1, 0, 2, 0, opFrame + 6, 0, 0, opFrame + 3, 0, 0, 4, 0,
			opFrame + 7, 0, 0, opFrame + 9, 1, 0, 0},
		// resends of the same id, a stranger, thinking
		{0, 0, opFrame, 0, 1, 0, opFrame, 0, 1, 1, opStranger, 0, 0, 0, 0, opFrame + 2, 1, 0, opFrame + 10, 0, 1},
		// the request lapses before the start
		{250, 0, opFrame, 0, 0, 0, opTick},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzRoom{t: t, data: data, now: t0}
		b0 := r.next()
		r.arena = b0&1 == 1
		s := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, r.arena, t0)
		r.s = &s
		// A grant-like check: a ceiling for the brand, a floor for the
		// bouncer, and sometimes a second failing check.
		lim := r.next()
		ceiling, floor := int64(lim%8)*100_000, int64(lim>>5)*50_000
		r.check = func(b Binding) []Failure {
			var fails []Failure
			if b.Role == RoleBrand && ceiling > 0 && b.Terms.AmountCents > ceiling {
				fails = append(fails, Failure{Check: "amount_usd", Message: "over the ceiling"})
			}
			if b.Role == RoleBouncer && b.Terms.AmountCents < floor {
				fails = append(fails, Failure{Check: "amount_usd", Message: "under the floor"})
			}
			if len(fails) > 0 && b.Terms.Sends == 1000 {
				fails = append(fails, Failure{Check: "sends", Message: "too many"})
			}
			return fails
		}
		r.now = t0.Add(time.Duration(b0>>1) * time.Second) // the bouncer accepts after 0..127 s
		out, err := r.s.Start(r.now)
		r.settled = r.now
		lapsed := !r.now.Before(t0.Add(RequestLapse))
		if (err != nil) != lapsed || out.Declined != lapsed || len(out.Entries) != 0 {
			t.Fatalf("Start at +%v: %v %+v", r.now.Sub(t0), err, out)
		}
		r.invariants()
		for n := 0; len(r.data) > 0 && n < 500; n++ {
			r.step()
		}
		// However it went, the end of time ends it.
		r.now = r.now.Add(time.Hour)
		out = r.s.Tick(r.now)
		r.settled = r.now
		r.entries(out, true)
		r.invariants()
		if r.s.Status == StatusLive || r.s.Status == StatusPending {
			t.Fatalf("still %s an hour later", r.s.Status)
		}
		t.Logf("ended %s (%s) after %d transcript entries", r.s.Status, r.s.Reason, r.s.LastSeq)
	})
}
