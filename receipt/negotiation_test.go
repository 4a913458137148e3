package receipt

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// ended returns a negotiation that ended in a deal (or walked) at t.
func ended(t *testing.T, id string, deal bool) *negotiation.State {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	st := negotiation.NewRequest(id, "off", json.RawMessage(`{"title":"x"}`),
		negotiation.Party{AgentID: "ag_b"}, negotiation.Party{AgentID: "ag_c"}, false, t0)
	if _, err := st.Start(t0); err != nil {
		t.Fatal(err)
	}
	frames := []string{`{"type":"propose_terms","terms":{"amount_usd":100}}`, `{"type":"accept"}`}
	from := []string{"ag_b", "ag_c"}
	if !deal {
		frames, from = []string{`{"type":"walk"}`}, []string{"ag_b"}
	}
	for i, js := range frames {
		f, werr := negotiation.DecodeFrame([]byte(js))
		if werr != nil {
			t.Fatal(werr)
		}
		if _, err := st.Apply(from[i], f, t0.Add(time.Duration(i+1)*time.Second), nil); err != nil {
			t.Fatal(err)
		}
	}
	return &st
}

func TestClaimsOf(t *testing.T) {
	st := ended(t, "neg_1", true)
	c := ClaimsOf(st)
	if c.NegotiationID != "neg_1" || c.JTI != "neg_1" || c.Status != StatusDeal || c.OfferHash != st.DealOfferHash ||
		string(c.Terms) != string(st.DealTerms) || c.LastSeq != st.LastSeq || c.HeadHash != st.HeadHash || !c.IssuedAt.Equal(st.EndedAt) {
		t.Fatalf("claims %+v of %+v", c, st)
	}
	w := ClaimsOf(ended(t, "neg_2", false))
	if w.Status != StatusWalked || w.Terms != nil || w.OfferHash != "" {
		t.Fatalf("a walk claims terms: %+v", w)
	}
	live := negotiation.NewRequest("neg_3", "off", nil, negotiation.Party{}, negotiation.Party{}, false, time.Now())
	if Signs(&live) || !Signs(st) {
		t.Fatal("Signs is wrong about pending or ended")
	}
}

func TestCacheSignsOnceAndEvicts(t *testing.T) {
	k := newKey(t)
	c := NewCache(k, 2)
	st := ended(t, "neg_1", true)
	tok, err := c.Receipt(st)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := Verify(tok, JWKS(k))
	if err != nil || claims.NegotiationID != "neg_1" {
		t.Fatalf("verify: %v %+v", err, claims)
	}
	again, _ := c.Receipt(st)
	if again != tok {
		t.Fatal("a second signing differs")
	}
	for i := 2; i <= 4; i++ {
		if _, err := c.Receipt(ended(t, fmt.Sprintf("neg_%d", i), false)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 {
		t.Fatalf("cache holds %d receipts, want 2", c.Len())
	}
	if _, ok := c.Cached("neg_1"); ok {
		t.Fatal("the oldest receipt was not evicted")
	}
	if _, ok := c.Cached("neg_4"); !ok {
		t.Fatal("the newest receipt is not cached")
	}
}

// TestCacheKeepsOnlyWhatItIsGiven: Sign keeps nothing (a state not yet
// committed), and Receipt does not answer with a kept receipt over
// another transcript head than the state's.
func TestCacheKeepsOnlyWhatItIsGiven(t *testing.T) {
	k := newKey(t)
	c := NewCache(k, 0)
	walked, deal := ended(t, "neg_1", false), ended(t, "neg_1", true)
	if _, err := c.Sign(walked); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Cached("neg_1"); ok || c.Len() != 0 {
		t.Fatal("Sign kept the receipt of a state that may never land")
	}
	for _, st := range []*negotiation.State{walked, deal} {
		tok, err := c.Receipt(st)
		if err != nil {
			t.Fatal(err)
		}
		claims, err := Verify(tok, JWKS(k))
		if err != nil || claims.LastSeq != st.LastSeq || claims.HeadHash != st.HeadHash || claims.Status != st.Status {
			t.Fatalf("receipt of the %s state: %v %+v", st.Status, err, claims)
		}
		if kept, _ := c.Cached("neg_1"); kept != tok || c.Len() != 1 {
			t.Fatalf("the cache keeps %d receipts, not the %s one", c.Len(), st.Status)
		}
	}
}
