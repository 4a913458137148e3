package venue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/venue"
)

// Nodes sharing a log name it alike: a node whose --public-url would name
// it otherwise does not start and says which --log-origin to give; a node
// named by nothing but its listen address keeps the log's name, and its
// /v1/info lists the key under that name.
func TestMultiNodeOneLogOrigin(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	a := c.nodeWith("A", func(cfg *venue.Config) { cfg.PublicURL = "https://venue.example" })
	want := receiptlog.KeyName(verifierKey(t, a.url))
	if want != "venue.example/log" {
		t.Fatalf("node A names its log key %q", want)
	}
	_, err := c.startNode("B", func(cfg *venue.Config) { cfg.PublicURL = "https://other.example" })
	var oe *receiptlog.OriginError
	if !errors.As(err, &oe) || oe.Log != want || !strings.Contains(err.Error(), "--log-origin venue.example/log") {
		t.Fatalf("node B, named otherwise, started or said %v", err)
	}
	d := c.node("D") // 127.0.0.1, no public URL
	if got := receiptlog.KeyName(verifierKey(t, d.url)); got != want {
		t.Fatalf("node D names the log key %q, want %q", got, want)
	}
	var info struct {
		Origin string `json:"log_origin"`
	}
	d.do("GET", "/v1/info", "", nil, &info)
	if info.Origin != want {
		t.Fatalf("node D's /v1/info: log_origin %q, want %q", info.Origin, want)
	}
}

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
