package deliveries

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/venuehq/venue/receipt"
)

// TestVerifyEvidence: what VerifyEvidence refuses besides a bad signature.
func TestVerifyEvidence(t *testing.T) {
	t.Parallel()
	key, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	jwks := receipt.JWKS(key)
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	rc := receipt.Claims{NegotiationID: "neg_1", Brand: "agt_b", Bouncer: "agt_k", Status: "deal",
		StartedAt: "2026-11-30T08:00:00.000Z", EndedAt: "2026-11-30T08:01:00.000Z", IssuedAt: at}
	rcpt, err := receipt.Sign(key, rc)
	if err != nil {
		t.Fatal(err)
	}
	base := Evidence{NegotiationID: "neg_1", Receipt: rcpt, Transcript: []receipt.Entry{}, Grants: []Binding{},
		Settlement: json.RawMessage(`{"negotiation_id":"neg_1","payer":"agt_b","payee":"agt_k"}`), IssuedAt: at}
	sign := func(ev Evidence) string {
		tok, err := SignEvidence(key, ev)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if _, _, err := VerifyEvidence(sign(base), jwks); err != nil {
		t.Fatalf("good: %v", err)
	}
	other := base
	other.NegotiationID = "neg_2"
	swapped := base
	swapped.Settlement = json.RawMessage(`{"negotiation_id":"neg_1","payer":"agt_k","payee":"agt_b"}`)
	binding := base
	binding.Grants = []Binding{{Seq: 1, By: "agt_b", FrameType: "accept"}}
	delivery := base
	delivery.Deliveries = []json.RawMessage{json.RawMessage(`{"negotiation_id":"neg_9"}`)}
	for name, tok := range map[string]string{
		"a receipt as evidence (typ)": rcpt,
		"receipt of another":          sign(other),
		"settlement the wrong way":    sign(swapped),
		"binding of no frame":         sign(binding),
		"delivery of another":         sign(delivery),
	} {
		if _, _, err := VerifyEvidence(tok, jwks); !errors.Is(err, ErrEvidence) {
			t.Errorf("%s: %v, want ErrEvidence", name, err)
		}
	}
	otherKey, _ := receipt.NewKey()
	if _, _, err := VerifyEvidence(sign(base), receipt.JWKS(otherKey)); !errors.Is(err, receipt.ErrUnknownKey) {
		t.Errorf("unknown kid: %v", err)
	}
}
