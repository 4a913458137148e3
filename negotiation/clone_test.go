package negotiation

import (
	"encoding/json"
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
	c.Acks["k"] = json.RawMessage(`{}`)
	c.Tick(at(Deadline))
	if snapshot(t, r.s) != orig {
		t.Fatal("changing the clone changed the original")
	}
	var empty State
	if got := empty.Clone(); got.Standing != nil || got.Acks != nil || got.Escalations != nil {
		t.Fatalf("clone of the zero state: %+v", got)
	}
}
