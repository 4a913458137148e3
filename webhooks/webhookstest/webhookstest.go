// Package webhookstest is the contract suite every webhooks.Store passes.
package webhookstest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/webhooks"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// Event is an event of agent of type typ at t0.
func Event(agent, typ string, i int) events.Event {
	return events.New(agent, "", json.RawMessage(fmt.Sprintf(`{"type":%q,"i":%d}`, typ, i)), t0)
}

// Run runs the suite on s (empty) over ev, the event log it reads.
func Run(t *testing.T, s webhooks.Store, ev events.Store) {
	t.Run("crud", func(t *testing.T) { testCRUD(t, s) })
	t.Run("feed", func(t *testing.T) { testFeed(t, s, ev) })
	t.Run("claim", func(t *testing.T) { testClaim(t, s, ev) })
	t.Run("disable", func(t *testing.T) { testDisable(t, s, ev) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, s, ev) })
}

func put(t *testing.T, s webhooks.Store, agent string, types ...string) {
	t.Helper()
	w := webhooks.Webhook{AgentID: agent, URL: "https://example.com/" + agent, Events: types, Secret: webhooks.NewSecret(), CreatedAt: t0}
	if err := s.Put(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

func appendN(t *testing.T, ev events.Store, agent, typ string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		e := Event(agent, typ, i)
		ids = append(ids, e.ID)
		if err := ev.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func testCRUD(t *testing.T, s webhooks.Store) {
	ctx := context.Background()
	if _, err := s.Get(ctx, "crud"); !errors.Is(err, webhooks.ErrNotFound) {
		t.Fatalf("Get of none: %v", err)
	}
	if err := s.Delete(ctx, "crud"); !errors.Is(err, webhooks.ErrNotFound) {
		t.Fatalf("Delete of none: %v", err)
	}
	if err := s.SetSecret(ctx, "crud", []byte("k")); !errors.Is(err, webhooks.ErrNotFound) {
		t.Fatalf("SetSecret of none: %v", err)
	}
	put(t, s, "crud", "negotiation_requested", "message_received")
	w, err := s.Get(ctx, "crud")
	if err != nil || w.URL != "https://example.com/crud" || len(w.Events) != 2 || len(w.Secret) != webhooks.SecretBytes ||
		!w.CreatedAt.Equal(t0) || !w.DisabledAt.IsZero() {
		t.Fatalf("Get = %+v, %v", w, err)
	}
	if err := s.SetSecret(ctx, "crud", []byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Get(ctx, "crud"); string(w.Secret) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("secret not replaced: %x", w.Secret)
	}
	put(t, s, "crud")
	if w, _ := s.Get(ctx, "crud"); w.Events != nil {
		t.Fatalf("replaced webhook keeps events %v", w.Events)
	}
	if err := s.Delete(ctx, "crud"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "crud"); !errors.Is(err, webhooks.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

// claimAll claims everything due at now.
func claimAll(t *testing.T, s webhooks.Store, now time.Time) map[string]webhooks.Delivery {
	t.Helper()
	ds, err := s.Claim(context.Background(), now, webhooks.Lease, 1000)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]webhooks.Delivery{}
	for _, d := range ds {
		m[d.Event.ID] = d
	}
	return m
}

func testFeed(t *testing.T, s webhooks.Store, ev events.Store) {
	ctx := context.Background()
	appendN(t, ev, "feed", "negotiation_message", 3) // before the webhook: not delivered
	put(t, s, "feed", "negotiation_message", "settlement_updated")
	want := appendN(t, ev, "feed", "negotiation_message", 3)
	appendN(t, ev, "feed", "negotiation_started", 2) // not wanted
	want = append(want, appendN(t, ev, "feed", "settlement_updated", 1)...)
	appendN(t, ev, "other", "negotiation_message", 2) // no webhook
	n, err := s.Feed(ctx, t0)
	if err != nil || n != len(want) {
		t.Fatalf("Feed = %d, %v; want %d", n, err, len(want))
	}
	if n, err := s.Feed(ctx, t0); err != nil || n != 0 {
		t.Fatalf("second Feed = %d, %v", n, err)
	}
	got := claimAll(t, s, t0)
	if len(got) != len(want) {
		t.Fatalf("claimed %d, want %d", len(got), len(want))
	}
	for _, id := range want {
		d, ok := got[id]
		if !ok || d.AgentID != "feed" || d.Attempts != 1 || d.URL != "https://example.com/feed" || len(d.Secret) == 0 {
			t.Fatalf("delivery of %s: %+v", id, d)
		}
		var m map[string]any
		if err := json.Unmarshal(d.Event.Data, &m); err != nil || m["type"] != d.Event.Type || !d.Event.CreatedAt.Equal(t0) {
			t.Fatalf("event %+v (%v)", d.Event, err)
		}
		if err := s.Record(ctx, webhooks.Attempt{AgentID: "feed", EventID: id, EventType: d.Event.Type, N: 1, At: t0, Status: 200, Result: webhooks.ResultDelivered}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "feed"); err != nil {
		t.Fatal(err)
	}
}

func testClaim(t *testing.T, s webhooks.Store, ev events.Store) {
	ctx := context.Background()
	put(t, s, "claim")
	ids := appendN(t, ev, "claim", "negotiation_message", 2)
	if _, err := s.Feed(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if got := claimAll(t, s, t0.Add(-time.Second)); len(got) != 0 {
		t.Fatalf("claimed before due: %v", got)
	}
	if got := claimAll(t, s, t0); len(got) != 2 {
		t.Fatalf("claimed %d of 2", len(got))
	}
	if got := claimAll(t, s, t0.Add(webhooks.Lease-time.Millisecond)); len(got) != 0 {
		t.Fatalf("claimed again within the lease: %v", got)
	}
	// The lease ran out (the node died mid-attempt): claimed again, attempt 2.
	t1 := t0.Add(webhooks.Lease)
	got := claimAll(t, s, t1)
	if len(got) != 2 || got[ids[0]].Attempts != 2 {
		t.Fatalf("after the lease: %+v", got)
	}
	// The first claim's late answer changes nothing.
	if err := s.Record(ctx, webhooks.Attempt{AgentID: "claim", EventID: ids[0], N: 1, At: t1, Status: 200, Result: webhooks.ResultDelivered}); err != nil {
		t.Fatal(err)
	}
	if as, _ := s.Attempts(ctx, "claim", 10); len(as) != 0 {
		t.Fatalf("a lost claim was recorded: %+v", as)
	}
	// Attempt 2 of ids[0] fails: due again at next; ids[1] delivered.
	next := t1.Add(5 * time.Minute)
	rec := []webhooks.Attempt{
		{AgentID: "claim", EventID: ids[0], EventType: "negotiation_message", N: 2, At: t1, URL: "https://example.com/claim", Status: 500, Result: webhooks.ResultRetrying, Next: next},
		{AgentID: "claim", EventID: ids[1], EventType: "negotiation_message", N: 2, At: t1.Add(time.Second), Error: "timeout: no answer in 10 s", Result: webhooks.ResultDelivered},
	}
	for _, a := range rec {
		if err := s.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if got := claimAll(t, s, next.Add(-time.Millisecond)); len(got) != 0 {
		t.Fatalf("claimed before its retry: %v", got)
	}
	got = claimAll(t, s, next)
	if len(got) != 1 || got[ids[0]].Attempts != 3 {
		t.Fatalf("retry: %+v", got)
	}
	if err := s.Record(ctx, webhooks.Attempt{AgentID: "claim", EventID: ids[0], EventType: "negotiation_message", N: 3, At: next, Status: 500, Result: webhooks.ResultFailed}); err != nil {
		t.Fatal(err)
	}
	if got := claimAll(t, s, next.Add(100*time.Hour)); len(got) != 0 {
		t.Fatalf("given up, claimed again: %v", got)
	}
	as, err := s.Attempts(ctx, "claim", 10)
	if err != nil || len(as) != 3 || as[0].N != 3 || as[0].Result != webhooks.ResultFailed || as[2].Status != 500 ||
		!as[2].Next.Equal(next) || as[2].URL != "https://example.com/claim" || as[1].Error == "" || !as[0].Next.IsZero() {
		t.Fatalf("Attempts = %+v, %v", as, err)
	}
	if as, _ := s.Attempts(ctx, "claim", 1); len(as) != 1 {
		t.Fatalf("limit 1: %d", len(as))
	}
	if err := s.Purge(ctx, next.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if as, _ := s.Attempts(ctx, "claim", 10); len(as) != 0 {
		t.Fatalf("after Purge: %+v", as)
	}
	if err := s.Delete(ctx, "claim"); err != nil {
		t.Fatal(err)
	}
}

func testDisable(t *testing.T, s webhooks.Store, ev events.Store) {
	ctx := context.Background()
	put(t, s, "gone")
	ids := appendN(t, ev, "gone", "negotiation_message", 3)
	if _, err := s.Feed(ctx, t0); err != nil {
		t.Fatal(err)
	}
	ds, err := s.Claim(ctx, t0, webhooks.Lease, 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Claim = %v, %v", ds, err)
	}
	if err := s.Record(ctx, webhooks.Attempt{AgentID: "gone", EventID: ds[0].Event.ID, N: 1, At: t0, Status: 410, Result: webhooks.ResultDisabled}); err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Get(ctx, "gone"); !w.DisabledAt.Equal(t0) {
		t.Fatalf("not disabled: %+v", w)
	}
	appendN(t, ev, "gone", "negotiation_message", 1)
	if n, _ := s.Feed(ctx, t0); n != 0 {
		t.Fatalf("a disabled webhook fed %d", n)
	}
	if got := claimAll(t, s, t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a disabled webhook's deliveries claimed: %v", got)
	}
	// Set again: enabled, only later events.
	put(t, s, "gone")
	if w, _ := s.Get(ctx, "gone"); !w.DisabledAt.IsZero() {
		t.Fatalf("still disabled: %+v", w)
	}
	later := appendN(t, ev, "gone", "negotiation_message", 1)
	if _, err := s.Feed(ctx, t0); err != nil {
		t.Fatal(err)
	}
	got := claimAll(t, s, t0.Add(time.Hour))
	if len(got) != 1 || got[later[0]].Event.ID == "" {
		t.Fatalf("after re-enabling: %v (old %v)", got, ids)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if got := claimAll(t, s, t0.Add(2*time.Hour)); len(got) != 0 {
		t.Fatalf("deleted webhook's deliveries claimed: %v", got)
	}
}

// testConcurrent feeds and claims from four goroutines at once: every
// event is queued once and claimed once.
func testConcurrent(t *testing.T, s webhooks.Store, ev events.Store) {
	ctx := context.Background()
	agents := []string{"c1", "c2", "c3"}
	want := map[string]bool{}
	for _, a := range agents {
		put(t, s, a)
		for _, id := range appendN(t, ev, a, "negotiation_message", 20) {
			want[id] = true
		}
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := s.Feed(ctx, t0); err != nil {
					t.Error(err)
					return
				}
				ds, err := s.Claim(ctx, t0, webhooks.Lease, 7)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, d := range ds {
					claimed[d.Event.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if _, err := s.Feed(ctx, t0); err != nil {
		t.Fatal(err)
	}
	rest, err := s.Claim(ctx, t0, webhooks.Lease, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rest {
		claimed[d.Event.ID]++
	}
	for id := range want {
		if claimed[id] != 1 {
			t.Fatalf("event %s claimed %d times", id, claimed[id])
		}
	}
	if len(claimed) != len(want) {
		t.Fatalf("claimed %d events, want %d", len(claimed), len(want))
	}
}

// Verify checks a delivery as a Standard Webhooks receiver does, written
// from the specification (standardwebhooks.com, "Verifying webhook
// authenticity"), not from the package: the key is the base64 after
// whsec_, the signed content "{webhook-id}.{webhook-timestamp}.{body}",
// the header a space-separated list of "v1,<base64 HMAC-SHA256>"; the
// timestamp within 5 minutes of now.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return fmt.Errorf("bad id %q or timestamp %q", id, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s too far from %s", ts, now)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, b64, ok := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no valid signature in %q", h.Get("webhook-signature"))
}
