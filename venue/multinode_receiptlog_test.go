package venue_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
)

// Endings committed on three nodes sharing Postgres give one log without
// gaps: every node serves the same checkpoint (signed by the one log key),
// every receipt's log_index, and proofs that verify against a checkpoint
// taken from another node.
func TestMultiNodeReceiptLog(t *testing.T) {
	t.Parallel()
	const total = 24
	c := newMNCluster(t, mnStart)
	nodes := []*mnNode{c.node("A"), c.node("B"), c.node("C")}
	brand := nodes[0].register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := nodes[1].register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := nodes[0].lobby(brand), nodes[1].lobby(bouncer)
	ids := make([]string, total)
	for i := range total {
		ids[i] = mnMatch(t, bl, kl, bouncer, fmt.Sprint(i))
		n := nodes[i%3]
		s, _ := n.room("brand@"+n.name, brand, ids[i], "")
		s.send(map[string]any{"type": "walk", "id": "w"})
		s.expect(negotiation.TypeMessageAck)
		s.expect(negotiation.TypeNegotiationEnded)
		s.ws.Close()
	}
	keys := map[string]bool{}
	for _, n := range nodes {
		keys[verifierKey(t, n.url)] = true
	}
	if len(keys) != 1 {
		t.Fatalf("the nodes serve %d log keys, want one: %v", len(keys), keys)
	}
	vkey := verifierKey(t, nodes[2].url)
	cp := checkpointAtLeast(t, nodes[0].url, vkey, total)
	if cp.Size != total {
		t.Fatalf("checkpoint of %d entries for %d endings", cp.Size, total)
	}
	_, b := logGet(t, nodes[2].url, fmt.Sprintf("/v1/log/entries?start=0&end=%d", total+5))
	var es struct{ Entries []receiptlog.Entry }
	if err := json.Unmarshal(b, &es); err != nil || len(es.Entries) != total {
		t.Fatalf("entries: %s %v", b, err)
	}
	var jwks map[string]any
	nodes[1].do("GET", "/.well-known/jwks.json", "", nil, &jwks)
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	receipts := make([]string, total)
	for i, e := range es.Entries {
		claims, err := receipt.Verify(e.Receipt, mustJSON(t, jwks))
		if err != nil || e.Index != int64(i) || !want[claims.NegotiationID] {
			t.Fatalf("entry %d (index %d): %v %+v", i, e.Index, err, claims)
		}
		delete(want, claims.NegotiationID)
		receipts[i] = e.Receipt
	}
	if err := receiptlog.VerifyRoot(receipts, cp); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		tok, idx := logIndexOf(t, nodes[(i+1)%3].url, id)
		if receipts[idx] != tok {
			t.Fatalf("%s: the receipt served is not entry %d", id, idx)
		}
		if err := receiptlog.VerifyInclusion(tok, inclusionOf(t, nodes[(i+2)%3].url, id, cp.Size), cp); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}
