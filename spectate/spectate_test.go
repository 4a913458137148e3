package spectate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/spectate"
	"github.com/venuehq/venue/wire"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestCutoff(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Minute)
	d := 30 * time.Second
	live := negotiation.State{Status: negotiation.StatusLive, StartedAt: t0}
	arena := live
	arena.Arena = true
	endedRecently := negotiation.State{Status: negotiation.StatusDeal, StartedAt: t0, EndedAt: now.Add(-10 * time.Second)}
	endedLongAgo := negotiation.State{Status: negotiation.StatusWalked, StartedAt: t0, EndedAt: now.Add(-31 * time.Second)}
	pending := negotiation.State{Status: negotiation.StatusPending}
	for _, tc := range []struct {
		name  string
		st    negotiation.State
		delay time.Duration
		want  bool
	}{
		{"live", live, d, true},
		{"live, no delay", live, 0, false},
		{"arena", arena, d, false},
		{"ended within the delay", endedRecently, d, true},
		{"ended before the delay", endedLongAgo, d, false},
		{"pending", pending, d, false},
	} {
		cut, ok := spectate.Cutoff(&tc.st, now, tc.delay)
		if ok != tc.want {
			t.Errorf("%s: delayed %v, want %v", tc.name, ok, tc.want)
		}
		if ok && !cut.Equal(now.Add(-d)) {
			t.Errorf("%s: cutoff %v", tc.name, cut)
		}
	}
}

func entry(seq int64, at time.Time, m map[string]any) negotiation.Entry {
	m["seq"], m["at"] = seq, wire.Time(at)
	b, _ := json.Marshal(m)
	return negotiation.Entry{Seq: seq, Frame: b, Hash: fmt.Sprintf("sha256:%d", seq), At: at}
}

// TestAsOf: the room rebuilt at a cutoff has the entries, standing
// proposal and turn of that moment, and is live when it ended later.
func TestAsOf(t *testing.T) {
	t.Parallel()
	brand, bouncer := negotiation.Party{AgentID: "agt_b", Name: "B"}, negotiation.Party{AgentID: "agt_k", Name: "K"}
	st := negotiation.State{ID: "neg_1", Status: negotiation.StatusDeal, Brand: brand, Bouncer: bouncer, StartedAt: t0,
		DeadlineAt: t0.Add(10 * time.Minute), EndedAt: t0.Add(40 * time.Second), EndedBy: "agt_k", LastSeq: 3, HeadHash: "sha256:3",
		DealTerms: json.RawMessage(`{"amount_usd":3500}`), DealAmountCents: 350000}
	turnK := wire.Time(t0.Add(70 * time.Second))
	turnB := wire.Time(t0.Add(80 * time.Second))
	entries := []negotiation.Entry{
		entry(1, t0.Add(10*time.Second), map[string]any{"type": "negotiation_message", "frame_type": "propose_terms", "from": "agt_b", "proposal_id": "prp_1",
			"terms": map[string]any{"amount_usd": 3000}, "offer_hash": "sha256:o1", "turn": "agt_k", "turn_deadline_at": turnK}),
		entry(2, t0.Add(20*time.Second), map[string]any{"type": "negotiation_message", "frame_type": "counter_terms", "from": "agt_k", "proposal_id": "prp_2",
			"terms": map[string]any{"amount_usd": 3500}, "offer_hash": "sha256:o2", "turn": "agt_b", "turn_deadline_at": turnB}),
		entry(3, t0.Add(40*time.Second), map[string]any{"type": "negotiation_ended", "status": "deal", "terms": map[string]any{"amount_usd": 3500}}),
	}
	for _, tc := range []struct {
		cut      time.Duration
		seq      int64
		status   string
		standing string
		turn     string
	}{
		{5, 0, "live", "", "agt_b"},
		{15, 1, "live", "prp_1", "agt_k"},
		{25, 2, "live", "prp_2", "agt_b"},
		{45, 3, "deal", "", ""},
	} {
		got := spectate.AsOf(st, entries, t0.Add(tc.cut*time.Second))
		v := got.View()
		standing := ""
		if got.Standing != nil {
			standing = got.Standing.ID
		}
		turn, _ := v["turn"].(string)
		if got.LastSeq != tc.seq || got.Status != tc.status || standing != tc.standing || turn != tc.turn {
			t.Errorf("at +%ds: seq %d status %s standing %q turn %q, want %d %s %q %q", tc.cut, got.LastSeq, got.Status, standing, turn, tc.seq, tc.status, tc.standing, tc.turn)
		}
		if tc.status == "live" {
			for _, leak := range []string{"ended_at", "terms", "ended_by", "offer_hash"} {
				if _, ok := v[leak]; ok {
					t.Errorf("at +%ds the view shows %s: %v", tc.cut, leak, v)
				}
			}
		}
	}
	if got := spectate.AsOf(st, entries, t0.Add(15*time.Second)); got.TurnDeadlineAt.Format(time.RFC3339) != t0.Add(70*time.Second).Format(time.RFC3339) || got.HeadHash != "sha256:1" {
		t.Errorf("turn deadline %v, head %s", got.TurnDeadlineAt, got.HeadHash)
	}
	if n := len(spectate.Entries(entries, t0.Add(20*time.Second))); n != 2 {
		t.Errorf("entries by +20s: %d", n)
	}
}

// recorder is a hub.Transport that keeps what it is sent.
type recorder struct {
	mu     sync.Mutex
	frames []string
	got    chan struct{}
	closed string
}

func (r *recorder) Write(b []byte) bool {
	r.mu.Lock()
	r.frames = append(r.frames, string(b))
	r.mu.Unlock()
	r.got <- struct{}{}
	return true
}
func (r *recorder) Close(code int, reason string) {
	r.mu.Lock()
	r.closed = fmt.Sprint(code, " ", reason)
	r.mu.Unlock()
}
func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.frames...)
}

// TestDelayed: frames reach the observer Delay after their time, in
// order, on the (fake) clock; negotiation_started is replaced and goes at
// once.
func TestDelayed(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	rec := &recorder{got: make(chan struct{}, 100)}
	d := &spectate.Delayed{T: rec, Delay: 30 * time.Second, Clock: clk, Started: func() []byte { return []byte(`{"type":"negotiation_started","context":"then"}`) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	d.Write([]byte(`{"type":"negotiation_started","context":"now"}`))
	<-rec.got
	if got := rec.list(); len(got) != 1 || !strings.Contains(got[0], `"then"`) {
		t.Fatalf("started: %q", got)
	}
	frame := func(seq int, at time.Time) []byte {
		return []byte(fmt.Sprintf(`{"type":"negotiation_message","seq":%d,"at":%q}`, seq, wire.Time(at)))
	}
	d.Write(frame(1, t0))
	d.Write([]byte(`{"type":"agent_thinking"}`)) // no at: written now (t0), due t0+30s
	d.Write(frame(2, t0.Add(10*time.Second)))
	if n := d.Held(); n != 3 {
		t.Fatalf("held %d", n)
	}
	clk.Advance(29 * time.Second)
	if n := len(rec.list()); n != 1 {
		t.Fatalf("%d frames sent 29 s in", n)
	}
	clk.Advance(time.Second) // t0+30s: seq 1 and the thinking are due
	<-rec.got
	<-rec.got
	got := rec.list()
	if len(got) != 3 || !strings.Contains(got[1], `"seq":1`) || !strings.Contains(got[2], "agent_thinking") {
		t.Fatalf("at +30s: %q", got)
	}
	if d.Held() != 1 { // seq 2 waits for +40s; nothing can send it before the clock moves
		t.Fatalf("held %d at +30s", d.Held())
	}
	clk.Advance(10 * time.Second)
	<-rec.got
	if got := rec.list(); len(got) != 4 || !strings.Contains(got[3], `"seq":2`) {
		t.Fatalf("at +40s: %q", got)
	}
	// A second negotiation_started (a resync) goes through delayed.
	d.Write([]byte(`{"type":"negotiation_started","context":"again"}`))
	if d.Held() != 1 {
		t.Fatalf("second started not held")
	}
	d.Close(1008, "bye")
	if d.Write(frame(3, t0)) {
		t.Fatal("a write after Close was queued")
	}
}
