package venue_test

import (
	"testing"

	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/venue"
	"github.com/venuehq/venue/watchers"
)

// TestMultiNodeWatchers: observers of one negotiation on two nodes
// (Postgres + Redis) are counted together, whichever node is asked.
func TestMultiNodeWatchers(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	shared := func(cfg *venue.Config) {
		rc, err := redisbus.Client(t.Context(), c.redisURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		cfg.Watchers = &watchers.Shared{Client: rc, Prefix: c.prefix, Clock: c.clock}
	}
	a, b := c.nodeWith("A", shared), c.nodeWith("B", shared)
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := a.lobby(brand), b.lobby(bouncer)
	negID := mnMatch(t, bl, kl, bouncer, "w")
	a.room("brand@A", brand, negID, "")
	a.observe("obs1@A", negID)
	b.observe("obs2@B", negID)
	b.observe("obs3@B", negID)
	for _, n := range []*mnNode{a, b} {
		var got struct {
			Watchers int `json:"watchers"`
		}
		if code := n.do("GET", "/v1/negotiations/"+negID+"/watchers", "", nil, &got); code != 200 || got.Watchers != 3 {
			t.Fatalf("node %s: %d watchers (%d), want 3 across both nodes", n.name, got.Watchers, code)
		}
	}
}
