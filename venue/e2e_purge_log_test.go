package venue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/venue"
)

// purgeKeepsLog checks, through get (a public GET on the venue: status
// and JSON), that once the ended arena negotiation negID is in the receipt
// log, purging arena negotiations (purge) deletes the negotiation but not
// its log entry nor its negotiation-to-index lookup.
func purgeKeepsLog(t *testing.T, negID string, get func(path string, out any) int, purge func() int) {
	t.Helper()
	var proof struct {
		LeafIndex *int64 `json:"leaf_index"`
		TreeSize  int64  `json:"tree_size"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for get("/v1/log/proof/inclusion?negotiation_id="+negID, &proof) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the log", negID)
		}
		time.Sleep(10 * time.Millisecond) // polls a condition the venue makes true
	}
	if n := purge(); n != 1 {
		t.Fatalf("purged %d arena negotiations, want 1", n)
	}
	var m map[string]any
	if code := get("/v1/negotiations/"+negID, &m); code != http.StatusNotFound {
		t.Fatalf("the purged negotiation: %d %v", code, m)
	}
	var after struct {
		LeafIndex *int64 `json:"leaf_index"`
		TreeSize  int64  `json:"tree_size"`
	}
	if code := get("/v1/log/proof/inclusion?negotiation_id="+negID, &after); code != http.StatusOK || after.LeafIndex == nil || *after.LeafIndex != *proof.LeafIndex {
		t.Fatalf("inclusion after the purge: %d %+v (before %+v)", code, after, proof)
	}
	var es struct {
		Entries []struct {
			Receipt string `json:"receipt"`
		} `json:"entries"`
	}
	if code := get("/v1/log/entries?start=0&end=10", &es); code != http.StatusOK || int64(len(es.Entries)) <= *after.LeafIndex || es.Entries[*after.LeafIndex].Receipt == "" {
		t.Fatalf("entries after the purge: %d %+v", code, es)
	}
}

// TestE2EPurgeKeepsLog: on the embedded default.
func TestE2EPurgeKeepsLog(t *testing.T) {
	t.Parallel()
	st := memory.New()
	v := newE2E(t, func(c *venue.Config) { c.Store = st })
	_, _, negID, b, _ := v.live(true)
	b.send(`{"type":"walk"}`)
	b.expect("message_ack")
	purgeKeepsLog(t, negID, func(path string, out any) int {
		code, m := v.do("GET", path, "", nil)
		remarshal(t, m, out)
		return code
	}, func() int {
		n, err := st.PurgeArena(context.Background(), v.clock.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// TestMultiNodePurgeKeepsLog: on Postgres (the log's rows have no foreign
// key to the negotiation).
func TestMultiNodePurgeKeepsLog(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	var st store.Store
	a := c.nodeWith("A", func(cfg *venue.Config) { st = cfg.Store })
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := a.register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := a.lobby(brand), a.lobby(bouncer)
	bl.send(map[string]any{"type": "submit_offer", "id": "o", "to": bouncer.id, "arena": true, "offer": map[string]any{"title": "Practice"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)
	kl.expect("negotiation_requested")
	kl.send(map[string]any{"type": "accept_negotiation", "id": "a", "negotiation_id": negID})
	kl.expect("negotiation_accepted")
	br, _ := a.room("brand@A", brand, negID, "")
	br.send(map[string]any{"type": "walk", "id": "w"})
	br.expect("message_ack")
	purgeKeepsLog(t, negID, func(path string, out any) int { return a.do("GET", path, "", nil, out) }, func() int {
		n, err := st.PurgeArena(context.Background(), c.clock.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// remarshal copies a decoded JSON object into out.
func remarshal(t *testing.T, m map[string]any, out any) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}
