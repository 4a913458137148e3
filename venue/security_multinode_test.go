package venue_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/negotiation"
)

// TestSecurityKeyRotationClosesSocketsOnEveryNode: an agent replaces its key
// through node A; its lobby socket on node B closes (1008) too, and the
// old key opens nothing on either node.
func TestSecurityKeyRotationClosesSocketsOnEveryNode(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	a, b := c.node("A"), c.node("B")
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	onB := b.lobby(brand)
	// A round trip proves the socket on B is set up before the rotation.
	onB.send(map[string]any{"type": "browse_bouncers", "id": "1"})
	onB.expect("bouncers")
	c.clock.Advance(time.Second) // the new key is issued after the old one
	var out map[string]string
	if code := a.do("POST", "/v1/agents/me/api-key", brand.key, nil, &out); code != http.StatusCreated {
		t.Fatalf("rotate: %d %v", code, out)
	}
	if code := onB.closeCode(); code != websocket.ClosePolicyViolation {
		t.Fatalf("the socket on the other node closed with %d, want 1008", code)
	}
	for _, n := range []*mnNode{a, b} {
		if code := n.do("GET", "/v1/agents/me", brand.key, nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("old key on %s: %d", n.name, code)
		}
		if code := n.do("GET", "/v1/agents/me", out["api_key"], nil, nil); code != http.StatusOK {
			t.Fatalf("new key on %s: %d", n.name, code)
		}
	}
}
