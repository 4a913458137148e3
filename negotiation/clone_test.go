package negotiation

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestCloneSharesNothingMutable(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, propose(termsA, 60), sec)
	r.ok(brand, `{"type":"escalate","id":"e","content":"more?"}`, 2*sec)
	orig := snapshot(t, r.s)
	c := r.s.Clone()
	if snapshot(t, &c) != orig {
		t.Fatal("the clone differs")
	}
	c.Standing.By = "x"
	c.Standing.AmountCents = 1
	c.Escalations[0].By = "x"
	c.Escalations = append(c.Escalations, Escalation{ID: "y"})
	for i := range AckWindow + 1 { // Acks and AckOrder are shared until replaced
		c.rememberAck(fmt.Sprint("k", i), json.RawMessage(`{}`))
	}
	if len(c.Acks) != AckWindow || len(c.AckOrder) != AckWindow || c.AckOrder[0] != "k1" || c.Acks["k0"] != nil {
		t.Fatalf("after %d acks: %d acks, order %v", AckWindow+1, len(c.Acks), c.AckOrder)
	}
	c.Tick(at(Deadline))
	if snapshot(t, r.s) != orig {
		t.Fatal("changing the clone changed the original")
	}
	var empty State
	if got := empty.Clone(); got.Standing != nil || got.Acks != nil || got.Escalations != nil {
		t.Fatalf("clone of the zero state: %+v", got)
	}
}
