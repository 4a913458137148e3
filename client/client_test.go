package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
)

// testStart is the fake clock's reading when a test venue starts.
var testStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// setup starts a venue on a fake clock and returns a client for it.
func setup(t *testing.T) (*client.Client, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(testStart)
	base, stop := startVenue(fc)
	t.Cleanup(stop)
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	return c, fc
}

func mustAgent(t *testing.T, c *client.Client, fc *clock.Fake, name, role string, scope grants.Scope) agent {
	t.Helper()
	a, err := newAgent(context.Background(), c, name, role, scope, fc.Now())
	if err != nil {
		t.Fatalf("agent %s: %v", name, err)
	}
	return a
}

func wantCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Fatalf("want *client.Error %d %s, got %#v (%v)", status, code, e, err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "ftp://x", "localhost:8080", "http://"} {
		if _, err := client.New(bad); err == nil {
			t.Errorf("New(%q) took it", bad)
		}
	}
	c, err := client.New("https://venue.example/api/")
	if err != nil || c.BaseURL() != "https://venue.example/api" {
		t.Fatalf("New: %v %v", c, err)
	}
	k := c.WithKey("bsk_x")
	if k.APIKey() != "bsk_x" || c.APIKey() != "" {
		t.Fatal("WithKey changed the original or did not set the key")
	}
}

func TestRegisterAndREST(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := context.Background()

	info, err := c.Info(ctx)
	if err != nil || info.Audience != "venue" || !strings.HasSuffix(info.JWKSURI, "/.well-known/jwks.json") {
		t.Fatalf("info: %+v %v", info, err)
	}

	_, err = c.Register(ctx, "  ", "brand", nil)
	wantCode(t, err, http.StatusUnprocessableEntity, "invalid_argument")
	a, err := c.Register(ctx, "Acme", "brand", nil)
	if err != nil || !strings.HasPrefix(a.APIKey, "bsk_") || a.ID == "" {
		t.Fatalf("register: %+v %v", a, err)
	}
	me := c.WithKey(a.APIKey)

	// No principal key yet: a grant cannot be checked.
	_, err = me.UploadGrant(ctx, "x.y.z")
	wantCode(t, err, http.StatusUnprocessableEntity, "no_principal_key")

	pub, priv, _ := grants.GenerateKey()
	thumb, err := me.SetPrincipalKey(ctx, grants.PublicJWK(pub))
	if err != nil || thumb != grants.Thumbprint(grants.PublicJWK(pub)) {
		t.Fatalf("principal key: %q %v", thumb, err)
	}
	now := fc.Now()
	tok, _ := grants.SignGrant(priv, grants.GrantClaims{Subject: a.ID, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		Scope: grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(350000)}, Categories: []string{"primary_slot"}}})
	g, err := me.UploadGrant(ctx, tok)
	if err != nil || g.Status != "active" || g.Issuer != thumb || g.JTI == "" {
		t.Fatalf("upload grant: %+v %v", g, err)
	}
	_, err = me.UploadGrant(ctx, tok)
	wantCode(t, err, http.StatusConflict, "duplicate_jti")
	list, err := me.Grants(ctx)
	if err != nil || len(list) != 1 || list[0].JTI != g.JTI {
		t.Fatalf("grants: %+v %v", list, err)
	}
	if err := me.RevokeGrant(ctx, g.JTI); err != nil {
		t.Fatal(err)
	}
	if list, _ := me.Grants(ctx); list[0].Status != "revoked" {
		t.Fatalf("after revoke: %+v", list)
	}
	wantCode(t, me.RevokeGrant(ctx, "nope"), http.StatusNotFound, "not_found")

	p, err := me.SetProfile(ctx, client.ProfileUpdate{Description: "We sell shoes", Categories: []string{"primary_slot"}, Audience: []byte(`{"size":1000}`)})
	if err != nil || p.Description != "We sell shoes" || p.AgentID != a.ID {
		t.Fatalf("set profile: %+v %v", p, err)
	}
	p, err = c.Profile(ctx, a.ID)
	if err != nil || p.Name != "Acme" || p.Role != "brand" || !slices.Equal(p.Categories, []string{"primary_slot"}) || string(p.Audience) != `{"size":1000}` {
		t.Fatalf("profile: %+v %v", p, err)
	}
	_, err = c.Profile(ctx, "agt_nope")
	wantCode(t, err, http.StatusNotFound, "not_found")
	mine, err := me.Me(ctx)
	if err != nil || mine.PrincipalKey == nil || mine.PrincipalThumbprint != thumb || mine.CreatedAt == "" {
		t.Fatalf("me: %+v %v", mine, err)
	}

	// Bad and missing keys.
	_, err = c.WithKey("bsk_nope").Me(ctx)
	wantCode(t, err, http.StatusUnauthorized, "unauthorized")
	if _, err := c.Me(ctx); err == nil || !strings.Contains(err.Error(), "api_key") {
		t.Fatalf("Me without a key: %v", err)
	}
	// Public reads of unknown negotiations.
	_, err = c.Transcript(ctx, "neg_nope")
	wantCode(t, err, http.StatusNotFound, "not_found")
	_, err = c.Receipt(ctx, "neg_nope")
	wantCode(t, err, http.StatusNotFound, "not_found")
	_, err = c.Decide(ctx, "neg_nope.e1", "x")
	wantCode(t, err, http.StatusNotFound, "not_found")
	if jwks, err := c.JWKS(ctx); err != nil || !strings.Contains(string(jwks), `"keys"`) {
		t.Fatalf("jwks: %s %v", jwks, err)
	}
}

func TestLobby(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := context.Background()
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters from Lisbon", "bouncer", grants.Scope{})
	other := mustAgent(t, c, fc, "Other Bouncer", "bouncer", grants.Scope{})
	if _, err := bouncer.SetProfile(ctx, client.ProfileUpdate{Description: "Lisbon weekly", Categories: []string{"primary_slot"}}); err != nil {
		t.Fatal(err)
	}

	if _, err := c.DialLobby(ctx, brand.ID); err == nil {
		t.Fatal("DialLobby without a key")
	}
	_, err := brand.DialLobby(ctx, bouncer.ID)
	wantCode(t, err, http.StatusForbidden, "forbidden")

	bl, err := brand.DialLobby(ctx, brand.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	kl, err := bouncer.DialLobby(ctx, bouncer.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()

	found, err := bl.BrowseBouncers(ctx, client.BrowseQuery{Category: "primary_slot"})
	if err != nil || found.Total != 1 || found.Items[0].AgentID != bouncer.ID {
		t.Fatalf("browse: %+v %v", found, err)
	}
	all, err := bl.BrowseBouncers(ctx, client.BrowseQuery{Limit: 1})
	if err != nil || all.Total != 2 || len(all.Items) != 1 {
		t.Fatalf("browse with limit: %+v %v", all, err)
	}
	_, err = bl.BrowseBouncers(ctx, client.BrowseQuery{Limit: 99})
	wantCode(t, err, 0, "invalid_argument")
	p, err := bl.GetProfile(ctx, bouncer.ID)
	if err != nil || p.Description != "Lisbon weekly" {
		t.Fatalf("get_profile: %+v %v", p, err)
	}

	// Wrong role: an error frame, and the socket stays open.
	_, err = kl.SubmitOffer(ctx, brand.ID, client.Offer{Title: "x"}, false)
	wantCode(t, err, 0, "forbidden")
	_, err = bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: ""}, false)
	wantCode(t, err, 0, "invalid_argument")

	// Offer 1 is declined, offer 2 accepted.
	off, err := bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: "Spring", Brief: "two sends", Terms: client.Terms{AmountCents: 2000_00}}, true)
	if err != nil || off.OfferID == "" || !off.Arena || off.To != bouncer.ID {
		t.Fatalf("submit_offer: %+v %v", off, err)
	}
	n1, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil || n1.Status != "pending" || n1.ExpiresAt != "2026-11-30T08:02:00.000Z" {
		t.Fatalf("create_negotiation: %+v %v", n1, err)
	}
	_, err = bl.CreateNegotiation(ctx, off.OfferID)
	wantCode(t, err, 0, "conflict")
	req, err := nextPush(kl, "negotiation_requested")
	if err != nil || req.NegotiationID != n1.NegotiationID || req.Brand == nil || req.Brand.AgentID != brand.ID || !req.Arena {
		t.Fatalf("requested: %+v %v", req, err)
	}
	// Only the addressed bouncer may answer.
	ol, err := other.DialLobby(ctx, other.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer ol.Close()
	_, err = ol.AcceptNegotiation(ctx, n1.NegotiationID)
	wantCode(t, err, 0, "forbidden")
	dec, err := kl.DeclineNegotiation(ctx, n1.NegotiationID, "not my audience")
	if err != nil || dec.Reason != "not my audience" {
		t.Fatalf("decline: %+v %v", dec, err)
	}
	if p, err := nextPush(bl, "negotiation_declined"); err != nil || p.NegotiationID != n1.NegotiationID || p.Reason != "not my audience" {
		t.Fatalf("declined push: %+v %v", p, err)
	}

	off2, _ := bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: "Summer"}, false)
	n2, err := bl.CreateNegotiation(ctx, off2.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nextPush(kl, "negotiation_requested"); err != nil {
		t.Fatal(err)
	}
	acc, err := kl.AcceptNegotiation(ctx, n2.NegotiationID)
	if err != nil || acc.NegotiationID != n2.NegotiationID || !strings.HasSuffix(acc.WSURL, "/v1/negotiations/"+n2.NegotiationID+"/ws") ||
		acc.Brand.AgentID != brand.ID || acc.StartedAt != "2026-11-30T08:00:00.000Z" {
		t.Fatalf("accept: %+v %v", acc, err)
	}
	if p, err := nextPush(bl, "negotiation_accepted"); err != nil || p.NegotiationID != n2.NegotiationID || p.Bouncer == nil || p.ObserveURL == "" {
		t.Fatalf("accepted push: %+v %v", p, err)
	}
	_, err = kl.AcceptNegotiation(ctx, n2.NegotiationID)
	wantCode(t, err, 0, "invalid_state")

	// Close is idempotent; afterwards requests fail and Pushes is closed.
	if err := bl.Close(); err != nil {
		t.Fatal(err)
	}
	_ = bl.Close()
	if _, err := bl.GetProfile(ctx, brand.ID); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, ok := <-bl.Pushes(); ok {
		t.Fatal("Pushes open after Close")
	}
	if bl.Err() != nil {
		t.Fatalf("Err after Close: %v", bl.Err())
	}
}

// TestLobbyRequestLapse: an unanswered request lapses on the venue's clock
// and both sides get negotiation_declined, reason expired.
func TestLobbyRequestLapse(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := context.Background()
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", grants.Scope{})
	bl, _ := brand.DialLobby(ctx, brand.ID)
	defer bl.Close()
	off, _ := bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: "Spring"}, true)
	n, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	// The bouncer connects later: the pending request is pushed again.
	kl, _ := bouncer.DialLobby(ctx, bouncer.ID)
	defer kl.Close()
	if p, err := nextPush(kl, "negotiation_requested"); err != nil || p.NegotiationID != n.NegotiationID {
		t.Fatalf("re-pushed request: %+v %v", p, err)
	}
	fc.Advance(2 * time.Minute)
	for _, l := range []*client.Lobby{bl, kl} {
		if p, err := nextPush(l, "negotiation_declined"); err != nil || p.Reason != "expired" {
			t.Fatalf("lapse: %+v %v", p, err)
		}
	}
	_, err = kl.AcceptNegotiation(ctx, n.NegotiationID)
	wantCode(t, err, 0, "invalid_state")
}
