package negotiation

import (
	"encoding/json"
	"testing"

	"github.com/venuehq/venue/wire"
)

// legacyView is how the public view was built before View: the
// negotiation_started frame marshalled and parsed back for its context. View
// must give the same JSON.
func legacyView(st State) map[string]any {
	v := map[string]any{
		"negotiation_id": st.ID, "offer_id": st.OfferID, "offer": st.Offer, "status": st.Status,
		"brand": st.Brand, "bouncer": st.Bouncer, "arena": st.Arena,
		"created_at": wire.Time(st.CreatedAt), "last_seq": st.LastSeq, "head_hash": st.HeadHash,
	}
	if !st.StartedAt.IsZero() {
		v["started_at"], v["deadline_at"] = wire.Time(st.StartedAt), wire.Time(st.DeadlineAt)
	}
	var started map[string]any
	_ = json.Unmarshal(st.StartedFrame(), &started)
	if ctx, ok := started["context"].(map[string]any); ok {
		v["turn"], v["turn_deadline_at"], v["standing"] = ctx["turn"], ctx["turn_deadline_at"], ctx["standing"]
		if p, ok := ctx["turn_paused"]; ok {
			v["turn_paused"] = p
		}
	}
	if st.Status == StatusPending {
		v["request_expires_at"] = wire.Time(st.RequestExpiresAt)
	}
	if !st.EndedAt.IsZero() {
		v["ended_at"] = wire.Time(st.EndedAt)
		if st.EndedBy != "" {
			v["ended_by"] = st.EndedBy
		}
		if st.Reason != "" {
			v["reason"] = st.Reason
		}
	}
	if st.Status == StatusDeal {
		v["terms"], v["offer_hash"] = st.DealTerms, st.DealOfferHash
	}
	return v
}

func TestViewIsTheLegacyView(t *testing.T) {
	pending := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, false, t0)
	states := map[string]State{"pending": pending}
	r := newRoom(t, false)
	states["live"] = *clone(t, r.s)
	r.ok(brand, propose(termsA, 60), sec)
	states["standing with expiry"] = *clone(t, r.s)
	r.ok(bouncer, `{"type":"escalate","content":"more?"}`, 2*sec)
	r.ok(bouncer, counter(termsB), 3*sec)
	states["escalation open"] = *clone(t, r.s)
	r.ok(brand, accept, 4*sec)
	states["deal"] = *clone(t, r.s)
	w := newRoom(t, true)
	w.ok(bouncer, `{"type":"walk"}`, sec)
	states["walked"] = *clone(t, w.s)
	for name, st := range states {
		got, err := json.Marshal(st.View())
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(legacyView(st))
		if string(got) != string(want) {
			t.Errorf("%s:\n view   %s\n legacy %s", name, got, want)
		}
	}
}

func TestLobbyPushes(t *testing.T) {
	st := NewRequest(negID, "off1", offerJSON, brandParty, bouncerParty, true, t0)
	var req map[string]any
	if err := json.Unmarshal(st.RequestedFrame(), &req); err != nil {
		t.Fatal(err)
	}
	if req["type"] != TypeNegotiationRequested || req["negotiation_id"] != negID || req["arena"] != true || req["expires_at"] != wire.Time(st.RequestExpiresAt) {
		t.Fatalf("negotiation_requested %v", req)
	}
	if _, err := st.Decline("not now", t0); err != nil {
		t.Fatal(err)
	}
	if got := string(st.DeclinedFrame()); got != `{"negotiation_id":"neg1","reason":"not now","type":"negotiation_declined"}` {
		t.Fatalf("negotiation_declined %s", got)
	}
}
