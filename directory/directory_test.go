package directory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/wire"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func setup(t *testing.T) *Service {
	t.Helper()
	return &Service{Store: memory.New(), Now: func() time.Time { return t0 }}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	we, ok := err.(*wire.Error)
	if !ok || we.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func TestRegisterAndAuthenticate(t *testing.T) {
	d := setup(t)
	ctx := context.Background()
	pub, _, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	jwk, _ := json.Marshal(grants.PublicJWK(pub))
	a, key, err := d.Register(ctx, Registration{Name: "  Acme  ", Role: "brand", PrincipalKey: jwk})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "Acme" || !strings.HasPrefix(key, APIKeyPrefix) || !strings.HasPrefix(a.ID, "agt_") || a.PrincipalThumbprint == "" {
		t.Fatalf("registered %+v with key %q", a, key)
	}
	got, err := d.Authenticate(ctx, key)
	if err != nil || got.ID != a.ID {
		t.Fatalf("authenticate: %v %+v", err, got)
	}
	_, err = d.Authenticate(ctx, key+"x")
	wantCode(t, err, wire.CodeUnauthorized)
	_, err = d.Authenticate(ctx, "")
	wantCode(t, err, wire.CodeUnauthorized)
	_, err = d.Agent(ctx, "agt_nobody")
	wantCode(t, err, wire.CodeNotFound)
}

func TestRegisterRefuses(t *testing.T) {
	d := setup(t)
	for _, r := range []Registration{
		{Name: "", Role: "brand"},
		{Name: strings.Repeat("x", 81), Role: "brand"},
		{Name: "evil\u202eeman", Role: "brand"},
		{Name: "tab\tname", Role: "brand"},
		{Name: "ok", Role: "admin"},
		{Name: "ok", Role: "bouncer", PrincipalKey: json.RawMessage(`{"kty":"RSA"}`)},
	} {
		_, _, err := d.Register(context.Background(), r)
		wantCode(t, err, wire.CodeInvalidArgument)
	}
	if _, total, _ := d.Find(context.Background(), store.AgentQuery{Limit: 50}); total != 0 {
		t.Fatalf("%d agents stored after refusals", total)
	}
}

func TestSetProfile(t *testing.T) {
	d := setup(t)
	ctx := context.Background()
	a, _, err := d.Register(ctx, Registration{Name: "K", Role: "bouncer"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.SetProfile(ctx, a.ID, store.Profile{Description: "news", Categories: []string{"tech"}, Audience: json.RawMessage(`{"size":5}`)})
	if err != nil || got.Profile.Description != "news" {
		t.Fatalf("set profile: %v %+v", err, got)
	}
	for _, p := range []store.Profile{
		{Description: strings.Repeat("é", MaxDescription+1)},
		{Categories: make([]string, MaxCategories+1)},
		{Categories: []string{""}},
		{Audience: json.RawMessage(`[1]`)},
		{Description: "Trusted \u202egnp.exe\u202c bouncer"},
		{Description: "zero\u200bwidth"},
		{Description: "a bell \a"},
		{Categories: []string{"prim\u200bary_slot"}},
		{Categories: []string{"primary\nslot"}},
	} {
		_, err := d.SetProfile(ctx, a.ID, p)
		wantCode(t, err, wire.CodeInvalidArgument)
	}
	if _, err := d.SetProfile(ctx, a.ID, store.Profile{Description: "news\n\tweekly"}); err != nil {
		t.Fatalf("a description with a line break and a tab: %v", err)
	}
	if _, err := d.SetProfile(ctx, a.ID, store.Profile{Description: "news"}); err != nil {
		t.Fatal(err)
	}
	after, _ := d.Agent(ctx, a.ID)
	if after.Profile.Description != "news" {
		t.Fatal("a refused profile changed the stored one")
	}
	pp := PublicProfile(after)
	if pp["agent_id"] != a.ID || pp["description"] != "news" {
		t.Fatalf("public profile %v", pp)
	}
	if _, ok := pp["principal_key"]; ok {
		t.Fatal("the public profile shows the principal key")
	}
}
