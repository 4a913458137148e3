package client_test

import (
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// TestLobbyReconnect: the bouncer's lobby socket is cut while a request is
// pending; the Lobby redials, tells its hook, does not deliver the
// negotiation_requested the venue sends again on the reconnect a second
// time, and its requests work on the new socket.
func TestLobbyReconnect(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", grants.Scope{})

	conn := make(chan client.ConnEvent, 8)
	tp := newTap()
	tapped, _ := client.New(c.BaseURL(), client.WithDialer(tp.dialer()), client.WithAPIKey(bouncer.APIKey()),
		client.WithConnHook(func(e client.ConnEvent) { conn <- e }),
		client.WithLobbyBackoff(client.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}))
	kl, err := tapped.DialLobby(ctx, bouncer.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kl.Close() })
	bl, err := brand.DialLobby(ctx, brand.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bl.Close() })

	request := func() string {
		t.Helper()
		off, err := bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: "Spring"}, true)
		if err != nil {
			t.Fatal(err)
		}
		created, err := bl.CreateNegotiation(ctx, off.OfferID)
		if err != nil {
			t.Fatal(err)
		}
		return created.NegotiationID
	}
	nextPush := func() client.Push {
		t.Helper()
		select {
		case p, ok := <-kl.Pushes():
			if !ok {
				t.Fatalf("pushes closed: %v", kl.Err())
			}
			return p
		case <-time.After(waitFor):
			t.Fatal("no push")
		}
		return client.Push{}
	}

	first := request()
	if p := nextPush(); p.Type != "negotiation_requested" || p.NegotiationID != first {
		t.Fatalf("push %s, want negotiation_requested %s", p.Raw, first)
	}
	if err := tp.last().Conn.Close(); err != nil {
		t.Fatal(err)
	}
	for _, wantUp := range []bool{false, true} {
		select {
		case e := <-conn:
			if e.Socket != "lobby" || e.Up != wantUp || (!wantUp && e.Err == nil) || (wantUp && e.Reconnects != 1) {
				t.Fatalf("conn event %+v, want up=%v", e, wantUp)
			}
		case <-time.After(waitFor):
			t.Fatalf("no conn event up=%v", wantUp)
		}
	}
	// The venue sends the pending request again on the reconnect; the
	// Lobby drops the repeat, so the next push is the next request.
	second := request()
	if p := nextPush(); p.NegotiationID != second {
		t.Fatalf("after the reconnect the next push is %s, want the request %s", p.Raw, second)
	}
	if _, err := kl.AcceptNegotiation(ctx, first); err != nil {
		t.Fatalf("accept on the new socket: %v", err)
	}
	if kl.Reconnects() != 1 {
		t.Fatalf("reconnects %d", kl.Reconnects())
	}
}
