package connect

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// twin sends one lobby request through its REST twin (POST
// /v1/agents/me/lobby, PROTOCOL.md "Without a socket") and decodes the
// frame the venue answers; an error frame fails the test.
func twin(t *testing.T, c *client.Client, frame map[string]any) map[string]any {
	t.Helper()
	raw, err := c.Raw(context.Background(), "POST", "/v1/agents/me/lobby", frame, true)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] == "error" {
		t.Fatalf("%v: %s", frame["type"], raw)
	}
	return m
}

// TestBriefAwardedGoesIntoTheRoom is PROTOCOL.md "Sealed briefs" played
// with connect on all three sides: the brand, and two bouncers. Each
// bouncer is told of the brief (who, what, until when, how to quote); the
// brand is told of the quotes at collect_until (the venue's fake clock
// moved); the brand awards one through the REST twin; the awarded bouncer
// is told the award in its own words (the brand is the other side, not
// itself) and that its quote won, the other that the brief closed without
// it; brand and awarded bouncer both go on into the room, where the quote
// stands, and back to the lobby when the brand accepts it.
func TestBriefAwardedGoesIntoTheRoom(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Now())
	base := startVenue(t, func(c *venue.Config) { c.Clock = fc })
	brand, brandID := agent(t, base, "Acme", "brand", grants.Scope{})
	bouncerA, aID := agent(t, base, "Letters A", "bouncer", grants.Scope{})
	bouncerB, bID := agent(t, base, "Letters B", "bouncer", grants.Scope{})

	b := start(t, Options{URL: base, Key: brand.APIKey()})
	ka := start(t, Options{URL: base, Key: bouncerA.APIKey()})
	kb := start(t, Options{URL: base, Key: bouncerB.APIKey()})
	for _, s := range []*session{b, ka, kb} {
		s.out.waitFor(t, `lobby +you are `)
	}

	sent := twin(t, brand, map[string]any{"type": "submit_brief", "to": []string{aID, bID}, "collect_seconds": 10,
		"offer": map[string]any{"title": "Spring launch", "terms": map[string]any{"amount_usd": 3000}}})
	briefID := sent["brief_id"].(string)
	offers := sent["offers"].([]any)
	offerA := offers[0].(map[string]any)["offer_id"].(string)
	offerB := offers[1].(map[string]any)["offer_id"].(string)
	until := regexp.QuoteMeta(sent["collect_until"].(string))

	for _, k := range []struct {
		s     *session
		offer string
	}{{ka, offerA}, {kb, offerB}} {
		got := k.s.out.waitFor(t, `brief +`+briefID+` [^\n]*\n`)
		want := `brief +` + briefID + ` from Acme \(` + brandID + `, reputation 0\): "Spring launch" \$3,000\.00, quote until ` + until +
			` \(sealed till then\); quote or decline with submit_quote or decline_brief, offer_id ` + k.offer + ` \(POST /v1/agents/me/lobby; connect has no verb for them\)\n`
		if !regexp.MustCompile(want).MatchString(got) {
			t.Fatalf("brief_received:\n%s\nwant %s", got, want)
		}
	}

	quoted := twin(t, bouncerA, map[string]any{"type": "submit_quote", "offer_id": offerA, "terms": map[string]any{"amount_usd": 3200}, "content": "Two sends."})
	quoteID := quoted["quote_id"].(string)
	fc.Advance(10 * time.Second)
	got := b.out.waitFor(t, `quotes +`+briefID+`[^\n]*\n[^\n]*\n`)
	if !regexp.MustCompile(`quotes +` + briefID + `: 1 standing quote; award one within the hour with award_quote and its quote_id \(POST /v1/agents/me/lobby; connect has no verb for it\)\n +` +
		quoteID + ` from ` + aID + `: \$3,200\.00  "Two sends\."\n`).MatchString(got) {
		t.Fatalf("quotes_ready:\n%s", got)
	}

	award := twin(t, brand, map[string]any{"type": "award_quote", "quote_id": quoteID})
	negID := award["negotiation_id"].(string)
	got = ka.out.waitFor(t, `live +`+negID+`[^\n]*\n`)
	if !regexp.MustCompile(`live +`+negID+`: your negotiation with the brand Acme \(`+brandID+`, reputation 0\) is live until \S+\n`).MatchString(got) ||
		strings.Contains(got, "took your request") {
		t.Fatalf("the awarded bouncer is told:\n%s", got)
	}
	ka.out.waitFor(t, `brief +`+briefID+` \("Spring launch" from Acme\) closed: your quote won: negotiation `+negID+`\n`)
	kb.out.waitFor(t, `brief +`+briefID+` \("Spring launch" from Acme\) closed: the brand awarded another bouncer's quote\n`)
	b.out.waitFor(t, `live +`+negID+`: your negotiation with the bouncer Letters A \(`+aID+`, reputation 0\) is live until \S+\n`)

	// Both go on into the room, where the quote stands.
	ka.out.waitFor(t, `negotiation_started negotiation `+negID+`: brand Acme, bouncer Letters A  turn: brand  .*standing: \$3,200\.00 by bouncer \(you\)`)
	b.out.waitFor(t, `negotiation_started negotiation `+negID+`: brand Acme, bouncer Letters A  turn: brand \(you\)  .*standing: \$3,200\.00 by bouncer`)
	b.line(t, "[ACCEPT]")
	for _, s := range []*session{b, ka} {
		s.out.waitFor(t, `receipt +verified: deal`)
		s.out.waitFor(t, `lobby +back in the lobby as `)
		s.line(t, "quit")
	}
	kb.line(t, "quit")
	for _, s := range []*session{b, ka, kb} {
		if err := s.end(t); err != nil {
			t.Fatalf("Run: %v\n%s", err, s.out.String())
		}
		if e := s.err.String(); e != "" {
			t.Fatalf("stderr: %s", e)
		}
	}
}

// TestLiveWhileInARoomComesNext: a brand whose second request is accepted
// while it plays the first is told at once, and goes on into the second
// once the first has ended.
func TestLiveWhileInARoomComesNext(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	ctx := context.Background()
	brand, _ := agent(t, base, "Acme", "brand", grants.Scope{})
	bouncer, bouncerID := agent(t, base, "Letters", "bouncer", grants.Scope{})
	kl, err := bouncer.DialLobby(ctx, bouncerID)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	s := start(t, Options{URL: base, Key: brand.APIKey(), Arena: true})
	s.out.waitFor(t, `lobby +you are Acme`)
	s.line(t, "offer "+bouncerID+" 3000 First")
	first := request(t, kl)
	s.line(t, "offer "+bouncerID+" 3100 Second")
	second := request(t, kl)
	if _, err := kl.AcceptNegotiation(ctx, first.NegotiationID); err != nil {
		t.Fatal(err)
	}
	s.out.waitFor(t, `negotiation_started negotiation `+first.NegotiationID)
	if _, err := kl.AcceptNegotiation(ctx, second.NegotiationID); err != nil {
		t.Fatal(err)
	}
	s.out.waitFor(t, `accepted +`+second.NegotiationID+`: Letters \(`+bouncerID+`, reputation 0\) took your request; the room is live until \S+; you go in when `+first.NegotiationID+` ends\n`)
	s.line(t, "[WALK]")
	s.out.waitFor(t, `receipt +verified: walked`)
	s.out.waitFor(t, `lobby +back in the lobby as Acme; offers are arena practice \(arena off: live\) \(help: the commands\)\nlobby +on into `+second.NegotiationID+`, live since you were in `+first.NegotiationID+`\n`)
	s.out.waitFor(t, `negotiation_started negotiation `+second.NegotiationID)
	s.in.Close()
	if err := s.end(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestOnPushWords: pushes that need no venue to reach: each is a line
// worded for this agent's role and place (the lobby, or a room being
// played); a push connect does not know is shown as it came, never dropped.
func TestOnPushWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role, room string
		push       string
		want       string
		live       bool // queued to go into
	}{
		{role: "bouncer", push: `{"type":"negotiation_requested","negotiation_id":"neg_1","offer":{"title":"Spring"},"brand":{"agent_id":"agt_brand","name":"Acme"},"expires_at":"T"}`,
			want: `request  neg_1 from Acme (agt_brand, reputation 0): "Spring", lapses T (type "accept neg_1" or "decline neg_1")`},
		{role: "bouncer", room: "neg_0", push: `{"type":"negotiation_requested","negotiation_id":"neg_1","offer":{"title":"Spring"},"brand":{"agent_id":"agt_brand","name":"Acme"},"expires_at":"T"}`,
			want: `request  neg_1 from Acme (agt_brand, reputation 0): "Spring", lapses T (in the lobby once neg_0 ends: "accept neg_1" or "decline neg_1")`},
		{role: "bouncer", push: `{"type":"negotiation_declined","negotiation_id":"neg_1","reason":"expired"}`,
			want: `lapsed   neg_1: the request was not answered in time (expired)`},
		{role: "brand", push: `{"type":"negotiation_declined","negotiation_id":"neg_1","reason":"not my audience"}`,
			want: `declined neg_1: not my audience`},
		{role: "bouncer", room: "neg_0", push: `{"type":"brief_closed","brief_id":"brf_1","offer_id":"off_1","awarded":true,"negotiation_id":"neg_2"}`,
			want: `brief    brf_1 closed: your quote won: negotiation neg_2; you go in when neg_0 ends`, live: true},
		{role: "brand", push: `{"type":"quotes_ready","brief_id":"brf_1","quotes":[]}`,
			want: `quotes   brf_1: no standing quotes; the brief closes unawarded`},
		{role: "brand", push: `{"type":"negotiation_accepted","negotiation_id":"neg_3","brand":{"agent_id":"agt_other","name":"Other"},"bouncer":{"agent_id":"agt_b","name":"Letters"},"deadline_at":"D"}`,
			want: `accepted neg_3: brand Other (agt_other, reputation 0), bouncer Letters (agt_b, reputation 0), live until D`},
		{role: "brand", push: `{"type":"message_received","message":{"from":"agt_x","text":"hi"}}`,
			want: `push     message_received {"type":"message_received","message":{"from":"agt_x","text":"hi"}}`},
		{role: "brand", push: `{"type":"error","code":"rate_limited","message":"slow down"}`,
			want: `error rate_limited: slow down`},
	} {
		out := newOutput()
		s := &lobbySession{me: client.Profile{AgentID: "agt_me", Role: tc.role}, out: &lineWriter{w: out}, room: tc.room,
			mine: map[string]bool{}, briefs: map[string]client.Push{}, entered: map[string]bool{}}
		p := client.Push{Raw: json.RawMessage(tc.push)}
		if err := json.Unmarshal(p.Raw, &p); err != nil {
			t.Fatal(err)
		}
		if p.Type == "error" {
			p.Err = &client.Error{Code: "rate_limited", Message: "slow down"}
		}
		s.onPush(p)
		if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want {
			t.Errorf("%s (%s):\n got %s\nwant %s", p.Type, tc.role, got, tc.want)
		}
		if got := len(s.live) == 1; got != tc.live {
			t.Errorf("%s (%s): queued to go into: %v, want %v", p.Type, tc.role, got, tc.live)
		}
	}
}
