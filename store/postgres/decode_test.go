package postgres

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// sameDecode checks that decodeState reads raw into the State that
// encoding/json reads it into.
func sameDecode(t *testing.T, raw []byte) {
	t.Helper()
	var want negotiation.State
	wantErr := json.Unmarshal(raw, &want)
	got, err := decodeState("neg", raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decodeState(%q): error %v, encoding/json: %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeState(%q):\n got %#v\nwant %#v", raw, got, want)
	}
}

// fullState has every field of negotiation.State set, raw JSON with
// spacing and characters encoding/json escapes among them.
func fullState() negotiation.State {
	at := time.Date(2026, 12, 3, 14, 0, 0, 123456789, time.UTC)
	return negotiation.State{
		ID: "neg_1", OfferID: "off_1", Offer: json.RawMessage(`{ "title": "<b>Spring</b> & co", "n": [1, 2.50, true, null] }`),
		Brand: negotiation.Party{AgentID: "agt_b", Name: "Brand ☃", Reputation: -3}, Bouncer: negotiation.Party{AgentID: "agt_k", Name: "K\u2028", Reputation: 7},
		Arena: true, Status: negotiation.StatusLive, CreatedAt: at, RequestExpiresAt: at.Add(time.Minute),
		StartedAt: at.Add(time.Second), DeadlineAt: at.Add(8 * time.Minute), Turn: "agt_k",
		TurnDeadlineAt: at.Add(time.Minute), TurnPaused: true, TurnLeft: 42 * time.Second,
		Standing: &negotiation.Proposal{ID: "p1", By: "agt_b", Terms: json.RawMessage(`{"amount_usd": 10, "note": "a\tb"}`),
			AmountCents: 1000, Category: "tech", Sends: 2, OfferHash: "sha256:ab", Seq: 3, ExpiresAt: at.Add(30 * time.Second)},
		Escalations: []negotiation.Escalation{{ID: "e1", By: "agt_k", OpenedAt: at, LapsesAt: at.Add(time.Hour), Content: "ask", Terms: json.RawMessage(`{"x":1}`)}},
		Acks:        map[string]json.RawMessage{"agt_b\nc1": json.RawMessage(`{"type":"ack","id":"c1"}`)},
		AckOrder:    []string{"agt_b\nc1"},
		LastSeq:     9, HeadHash: "sha256:cd", LastAt: at, EndedAt: at.Add(2 * time.Minute), EndedBy: "agt_b",
		Reason: "deal", DealTerms: json.RawMessage(`{"amount_usd":10}`),
	}
}

// TestDecodeStateSame: what encodeState writes, and JSON a store may hold
// from an earlier build (unknown fields, nulls), decode the same with both
// decoders.
func TestDecodeStateSame(t *testing.T) {
	full := fullState()
	raw, err := encodeState(&full)
	if err != nil {
		t.Fatal(err)
	}
	sameDecode(t, raw)
	if st, err := decodeState("neg", raw); err != nil || st.Offer == nil || st.Standing == nil || len(st.Acks) != 1 {
		t.Fatalf("decoded %+v, %v: fields lost", st, err)
	}
	for _, s := range []string{
		`{}`,
		`{"negotiation_id":"n","unknown":{"a":[1]},"standing":null,"acks":null,"turn_left_ns":5}`,
		`{"negotiation_id":"n","offer":null,"deal_terms":"x"}`,
		`{"last_seq":"1"}`,
		`{"created_at":"not a time"}`,
		`[1]`,
		`{"negotiation_id":`,
	} {
		sameDecode(t, []byte(s))
	}
}

// FuzzDecodeStateSame: every state column encodeState can write decodes
// the same with both decoders. The fuzzer's input is read (by
// encoding/json) into a State, which encodeState writes: the space
// covered is the States, not arbitrary JSON (segmentio is stricter about
// malformed times, which time.Time.MarshalJSON never writes).
func FuzzDecodeStateSame(f *testing.F) {
	full := fullState()
	raw, _ := encodeState(&full)
	f.Add(raw)
	f.Add([]byte(`{"negotiation_id":"n","standing":{"terms":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var st negotiation.State
		if json.Unmarshal(b, &st) != nil {
			return
		}
		raw, err := encodeState(&st)
		if err != nil {
			return // a State encoding/json cannot write (say, a RawMessage that is not JSON) is never stored
		}
		sameDecode(t, raw)
	})
}

// BenchmarkDecodeState is the writer's decode of one state column (a
// fuller state than the bench's 760 bytes).
func BenchmarkDecodeState(b *testing.B) {
	st := fullState()
	raw, err := encodeState(&st)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeState("neg", raw); err != nil {
			b.Fatal(err)
		}
	}
}
