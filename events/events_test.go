package events_test

import (
	"context"
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

func TestSettlementUpdated(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	item := map[string]string{"settlement_id": "stl_1", "status": "settled"}
	evs := events.SettlementUpdated("agt_payer", "agt_payee", "neg_1", item, at)
	if len(evs) != 2 || evs[0].AgentID != "agt_payer" || evs[1].AgentID != "agt_payee" || evs[0].ID == evs[1].ID {
		t.Fatalf("events = %+v", evs)
	}
	for _, e := range evs {
		if e.Type != events.TypeSettlementUpdated || e.NegotiationID != "neg_1" || !e.CreatedAt.Equal(at) {
			t.Fatalf("event = %+v", e)
		}
		var d struct {
			Type          string
			NegotiationID string `json:"negotiation_id"`
			Settlement    map[string]string
		}
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Type != events.TypeSettlementUpdated || d.NegotiationID != "neg_1" || d.Settlement["status"] != "settled" {
			t.Fatalf("data = %s (%v)", e.Data, err)
		}
	}
	if one := events.SettlementUpdated("agt_x", "agt_x", "neg_1", item, at); len(one) != 1 {
		t.Fatalf("same payer and payee: %d events", len(one))
	}
}

type pushes struct{ got []string }

func (p *pushes) Push(_ context.Context, agentID string, frame json.RawMessage) {
	p.got = append(p.got, agentID+" "+string(frame))
}

func TestRecording(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var p pushes
	st := events.NewMemory()
	r := events.Recording(&p, st, func() time.Time { return at }, nil)
	r.Push(context.Background(), "agt_a", json.RawMessage(`{"type":"contact_requested","request":{}}`))
	evs, err := st.After(context.Background(), "agt_a", "", 10)
	if err != nil || len(evs) != 1 || evs[0].Type != "contact_requested" || !evs[0].CreatedAt.Equal(at) || len(p.got) != 1 {
		t.Fatalf("events %+v, %v; pushed %v", evs, err, p.got)
	}
}
