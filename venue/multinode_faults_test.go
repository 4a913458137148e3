package venue_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/negotiation"
)

// Redis loses the venue's wakes mid-negotiation (the timers key gone, as
// after FLUSHALL, a restart without persistence or a failover to an empty
// replica) and its scripts (SCRIPT FLUSH): the node notices, re-arms from
// the store, and the proposal's expiry and the turn clock are still
// announced at their times.
func TestRedisLosesWakesMidNegotiation(t *testing.T) {
	t.Parallel()
	start := mnStart
	c := newMNCluster(t, start)
	n := c.node("a")
	brand := n.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := n.register(c, "Newsletter", negotiation.RoleBouncer)
	negID := mnMatch(t, n.lobby(brand), n.lobby(bouncer), bouncer, "r")
	br, _ := n.room("brand", brand, negID, "")
	c.clock.Set(start.Add(5 * time.Second))
	br.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 900}, "ttl_seconds": 10})
	br.expectSeq(negotiation.TypeMessageAck, 1)
	expires := start.Add(15 * time.Second)

	c.forgetTimers()
	opts, err := redis.ParseURL(c.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	// The node notices within a poll and re-arms: the wake is back in Redis.
	deadline := time.Now().Add(mnWait)
	for {
		n, err := rdb.ZCount(t.Context(), c.prefix+":timers", "-inf", "(+inf").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d wakes in Redis %s after the loss; the node did not re-arm", n, mnWait)
		}
		time.Sleep(10 * time.Millisecond) // polling Redis for an event, not waiting on a timer
	}
	c.clock.Set(expires.Add(100 * time.Millisecond))
	if m := br.expectSeq(negotiation.TypeProposalExpired, 2); !mnTime(t, m["at"]).Equal(expires.Truncate(time.Millisecond)) {
		t.Fatalf("proposal_expired at %v, want %v", m["at"], expires)
	}
}
