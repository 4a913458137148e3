package venue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// A negotiation's row locked from another connection (a stuck session, a
// migration): the frame waiting on it is answered `unavailable` once the
// store's lock timeout runs out, nothing stored; another negotiation on the
// same node moves meanwhile; once the lock goes, the same frame (same id)
// is taken.
func TestRowLockedFrameUnavailable(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	n := c.node("a")
	brand := n.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := n.register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := n.lobby(brand), n.lobby(bouncer)
	stuck := mnMatch(t, bl, kl, bouncer, "s")
	free := mnMatch(t, bl, kl, bouncer, "f")
	bs, _ := n.room("brand stuck", brand, stuck, "")
	bf, _ := n.room("brand free", brand, free, "")

	conn, err := pgx.Connect(t.Context(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM `+pgx.Identifier{c.schema, "negotiations"}.Sanitize()+` WHERE id = $1 FOR UPDATE`, stuck); err != nil {
		t.Fatal(err)
	}
	bs.send(map[string]any{"type": "message", "id": "m1", "content": "stuck?"})
	bf.send(map[string]any{"type": "message", "id": "m1", "content": "free"})
	bf.expectSeq(negotiation.TypeMessageAck, 1) // the other negotiation is not held up
	if m := bs.expect(negotiation.TypeError); m["code"] != "unavailable" || m["re"] != "m1" {
		t.Fatalf("blocked frame answered %v, want error unavailable re m1", m)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	bs.send(map[string]any{"type": "message", "id": "m1", "content": "stuck?"})
	bs.expectSeq(negotiation.TypeMessageAck, 1) // nothing of the refused try was stored
}
