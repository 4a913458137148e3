package connect

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// TestFormatEventVenueFrames: every frame the venue sends on a negotiation
// socket that reaches the events (PROTOCOL.md "negotiation_started", "What
// everyone else gets", "Private frames", "thinking", and an error or
// scope_block that answers no frame) is a sentence, never the raw frame.
func TestFormatEventVenueFrames(t *testing.T) {
	t.Parallel()
	who := func(id string) string {
		switch id {
		case "":
			return "venue"
		case "agt_brand":
			return "brand (you)"
		}
		return "bouncer"
	}
	for _, tc := range []struct {
		frame string
		want  string // a regexp the line must match
	}{
		{`{"type":"negotiation_started","negotiation_id":"neg_1","context":{"brand":{"agent_id":"agt_brand","name":"Acme"},"bouncer":{"agent_id":"agt_b","name":"Letters"},"status":"live","started_at":"2026-11-30T08:00:00Z","deadline_at":"2026-11-30T08:08:00Z","turn":"agt_brand","last_seq":0}}`,
			`negotiation neg_1: brand Acme, bouncer Letters  turn: brand \(you\)`},
		{`{"type":"negotiation_message","seq":1,"at":"2026-11-30T08:00:01Z","from":"agt_b","frame_type":"propose_terms","terms":{"amount_usd":3200},"proposal_id":"prp_1","offer_hash":"h"}`,
			`#1 +bouncer +propose_terms +\$3,200\.00  \[proposal prp_1\]`},
		{`{"type":"agent_thinking","from":"agt_b","at":"2026-11-30T08:00:01Z"}`, `bouncer +agent_thinking +…`},
		{`{"type":"proposal_expired","proposal_id":"prp_1","by":"agt_b","offer_hash":"h","seq":2,"at":"2026-11-30T08:05:01Z","hash":"x"}`,
			`#2 +venue +proposal_expired +proposal prp_1 by bouncer expired$`},
		{`{"type":"proposal_withdrawn","proposal_id":"prp_2","by":"agt_brand","offer_hash":"h","reason":"grant_revoked","seq":3,"at":"2026-11-30T08:05:02Z","hash":"x"}`,
			`#3 +venue +proposal_withdrawn +proposal prp_2 by brand \(you\) withdrawn by the venue: the proposer's principal revoked the grant it stood on \(grant_revoked\); it can no longer be accepted$`},
		{`{"type":"proposal_withdrawn","proposal_id":"prp_3","by":"agt_b","offer_hash":"h","reason":"grant_revoked","seq":4,"at":"2026-11-30T08:05:03Z","hash":"x"}`,
			`#4 +venue +proposal_withdrawn +proposal prp_3 by bouncer withdrawn by the venue: the proposer's principal revoked the grant it stood on \(grant_revoked\); it can no longer be accepted$`},
		{`{"type":"proposal_withdrawn","proposal_id":"prp_4","by":"agt_b","offer_hash":"h","reason":"something_new","seq":5,"at":"2026-11-30T08:05:04Z","hash":"x"}`,
			`#5 +venue +proposal_withdrawn +proposal prp_4 by bouncer withdrawn by the venue \(something_new\); it can no longer be accepted$`},
		{`{"type":"negotiation_ended","status":"walked","by":"agt_b","reason":"walked","seq":6,"at":"2026-11-30T08:06:00Z","hash":"x","receipt":"r"}`,
			`#6 +venue +negotiation_ended +WALKED  by bouncer$`},
		{`{"type":"escalation_resolved","escalation_id":"esc_1","decision":"approve","at":"2026-11-30T08:06:00Z"}`,
			`escalation_resolved +escalation esc_1: approve$`},
		{`{"type":"error","code":"rate_limited","message":"slow down"}`, `error +rate_limited: slow down$`},
		{`{"type":"scope_block","frame_type":"propose_terms","message":"amount_usd 3600.00 is above the grant's maximum 3000.00"}`,
			`scope_block +amount_usd 3600\.00 is above`},
	} {
		var ev client.Event
		if err := json.Unmarshal([]byte(tc.frame), &ev); err != nil {
			t.Fatal(err)
		}
		ev.Raw = json.RawMessage(tc.frame)
		got := FormatEvent(ev, who)
		if strings.Contains(got, "{") || !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("%s:\n got %q\nwant %q", ev.Type, got, tc.want)
		}
	}
}

// TestProposalWithdrawnSaid: when the venue withdraws the brand's standing
// proposal because the proposer's principal revoked the grant (DELEGATION.md "Revoking
// without the agent"), connect says so in a sentence, not the raw frame.
func TestProposalWithdrawnSaid(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	ctx := context.Background()
	brand := agentOf(t, base, "Acme", "brand", grants.Scope{})
	bouncer, bouncerID := agent(t, base, "Letters", "bouncer", grants.Scope{})
	bl, err := brand.c.DialLobby(ctx, brand.id)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	kl, err := bouncer.DialLobby(ctx, bouncerID)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	off, err := bl.SubmitOffer(ctx, bouncerID, client.Offer{Title: "Spring"}, false) // live: the arena withdraws nothing
	if err != nil {
		t.Fatal(err)
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kl.AcceptNegotiation(ctx, created.NegotiationID); err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{URL: base, Key: brand.c.APIKey(), Negotiation: created.NegotiationID})
	s.out.waitFor(t, `negotiation_started`)
	s.line(t, `[TERMS]{"amount_usd":3000}`)
	got := s.out.waitFor(t, `propose_terms +\$3,000\.00  \[proposal \S+\]  \(landed\)`)
	prp := regexp.MustCompile(`\[proposal (\S+)\]`).FindStringSubmatch(got)[1]
	brand.revokeGrant(t)
	got = s.out.waitFor(t, `proposal_withdrawn[^\n]*\n`)
	line := regexp.MustCompile(`[^\n]*proposal_withdrawn[^\n]*`).FindString(got)
	if !regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} #2 +venue +proposal_withdrawn +proposal ` + regexp.QuoteMeta(prp) + ` by brand \(you\) withdrawn by the venue: the proposer's principal revoked the grant it stood on \(grant_revoked\); it can no longer be accepted$`).MatchString(line) {
		t.Fatalf("the proposal_withdrawn line: %q", line)
	}
	s.in.Close()
	if err := s.end(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
