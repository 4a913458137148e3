package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventstest"
)

func TestMemory(t *testing.T) { eventstest.Run(t, events.NewMemory()) }

// TestNewTyped: the event a caller that knows the frame's type builds is
// New's but for its fresh id.
func TestNewTyped(t *testing.T) {
	t.Parallel()
	frame := []byte(`{"type":"negotiation_message","negotiation_id":"neg_1","seq":3}`)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.FixedZone("x", 3600))
	a, b := events.New("agt_1", "", frame, at), events.NewTyped("agt_1", "neg_1", "negotiation_message", frame, at)
	if a.ID == b.ID || len(b.ID) != len(a.ID) || b.ID[:4] != "evt_" {
		t.Fatalf("ids %q %q", a.ID, b.ID)
	}
	a.ID = b.ID
	if ja, _ := json.Marshal(a); string(ja) != string(must(json.Marshal(b))) || a.AgentID != b.AgentID || !a.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("New %+v, NewTyped %+v", a, b)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
