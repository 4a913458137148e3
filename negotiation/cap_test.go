package negotiation

import (
	"strings"
	"testing"

	"github.com/venuehq/venue/wire"
)

// TestTranscriptCap: a full transcript takes no more messages or
// proposals, but an ending frame still lands.
func TestTranscriptCap(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, `{"type":"message","content":"hi"}`, sec)
	r.s.LastSeq = MaxTranscriptFrames // as if full; the chain check is not the point here
	r.entries = nil
	before := snapshot(t, r.s)
	_, err := r.s.Apply(bouncer, mustFrame(t, `{"type":"message","content":"more"}`), at(2*sec), r.check)
	wantCode(t, err, wire.CodeInvalidState)
	if we, _ := err.(*wire.Error); we == nil || !strings.Contains(we.Message, "transcript is full") {
		t.Fatalf("refused for another reason: %v", err)
	}
	if snapshot(t, r.s) != before {
		t.Fatal("a refused frame changed the state")
	}
	if _, err := r.s.Apply(bouncer, mustFrame(t, propose(termsA, 0)), at(2*sec), r.check); err == nil {
		t.Fatal("a proposal landed in a full transcript")
	}
	out, err := r.s.Apply(bouncer, mustFrame(t, `{"type":"walk"}`), at(3*sec), r.check)
	if err != nil || !out.Ended {
		t.Fatalf("walk in a full transcript: %v ended %v", err, out.Ended)
	}
}
