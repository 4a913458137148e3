package grants

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignDecisionVerify(t *testing.T) {
	t.Parallel()
	f := setup(t)
	approve := DecisionClaims{EscalationID: "esc_1", Decision: DecisionApprove, Audience: "venue",
		IssuedAt: f.now, ExpiresAt: f.now.Add(10 * time.Minute),
		Grant: &Scope{Amount: &AmountLimit{MaxCents: ptr[int64](400000)}}}
	deny := DecisionClaims{EscalationID: "esc_2", Decision: DecisionDeny, Audience: "venue",
		IssuedAt: f.now, ExpiresAt: f.now.Add(10 * time.Minute), JTI: "d-2"}

	tok, err := SignDecision(f.priv, approve)
	if err != nil {
		t.Fatal(err)
	}
	o := f.opts
	o.Subject = "" // not used for decisions
	d, err := VerifyDecision(tok, f.pub, f.thumb, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.EscalationID != "esc_1" || d.Decision != DecisionApprove || d.Scope == nil ||
		*d.Scope.Amount.MaxCents != 400000 || d.JTI == "" || d.Issuer != f.thumb || d.Raw != tok {
		t.Fatalf("decision = %+v", d)
	}

	g, err := d.AsGrant("ag_1", "neg_1")
	if err != nil {
		t.Fatal(err)
	}
	if g.Subject != "ag_1" || g.Scope.NegotiationID != "neg_1" || g.JTI != d.JTI || !g.ExpiresAt.Equal(d.ExpiresAt) {
		t.Fatalf("AsGrant = %+v", g)
	}
	if d.Scope.NegotiationID != "" {
		t.Fatal("AsGrant changed the decision's scope")
	}
	if Select([]*Grant{g}, "neg_1", f.now, nil) != g || Select([]*Grant{g}, "neg_2", f.now, nil) != nil {
		t.Fatal("an escalation grant must apply to its negotiation only")
	}

	named := *d
	named.Scope = &Scope{NegotiationID: "neg_9"}
	if _, err := named.AsGrant("ag_1", "neg_1"); !errors.Is(err, ErrBadScope) {
		t.Fatalf("AsGrant of a scope naming another negotiation: %v", err)
	}

	dtok, err := SignDecision(f.priv, deny)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := VerifyDecision(dtok, f.pub, "", o)
	if err != nil || dd.Decision != DecisionDeny || dd.Scope != nil || dd.JTI != "d-2" {
		t.Fatalf("deny = %+v, %v", dd, err)
	}
	if _, err := dd.AsGrant("ag_1", "neg_1"); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("AsGrant(deny) = %v", err)
	}

	// A grant token is not a decision, nor the reverse.
	gtok, err := SignGrant(f.priv, GrantClaims{Subject: "ag_1", Audience: "venue", IssuedAt: f.now, ExpiresAt: f.now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var te *TokenError
	if _, err := VerifyDecision(gtok, f.pub, "", o); !errors.As(err, &te) || te.Code != CodeWrongType {
		t.Fatalf("grant as decision: %v", err)
	}
	if _, err := Verify(tok, f.pub, "", f.opts); !errors.As(err, &te) || te.Code != CodeWrongType {
		t.Fatalf("decision as grant: %v", err)
	}
}

func TestVerifyDecisionRefuses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, other, _ := GenerateKey()
	base := func() map[string]any {
		return map[string]any{"iss": f.thumb, "aud": "venue", "iat": f.now.Unix(), "exp": f.now.Add(time.Minute).Unix(),
			"jti": "d-1", "escalation_id": "esc_1", "decision": "approve", "grant": map[string]any{"max_sends": 3}}
	}
	tests := []struct {
		name   string
		alg    string
		claims func(c map[string]any)
		signer []byte
		code   string
	}{
		{name: "valid", code: ""},
		{name: "alg none", alg: "none", code: CodeWrongAlgorithm},
		{name: "other key", signer: other, code: CodeBadSignature},
		{name: "expired", claims: func(c map[string]any) { c["exp"] = f.now.Add(-time.Hour).Unix() }, code: CodeExpired},
		{name: "exp missing", claims: func(c map[string]any) { delete(c, "exp") }, code: CodeMalformed},
		{name: "wrong aud", claims: func(c map[string]any) { c["aud"] = "x" }, code: CodeWrongAudience},
		{name: "wrong iss", claims: func(c map[string]any) { c["iss"] = "x" }, code: CodeWrongIssuer},
		{name: "no jti", claims: func(c map[string]any) { delete(c, "jti") }, code: CodeMalformed},
		{name: "no escalation_id", claims: func(c map[string]any) { delete(c, "escalation_id") }, code: CodeMalformed},
		{name: "decision maybe", claims: func(c map[string]any) { c["decision"] = "maybe" }, code: CodeMalformed},
		{name: "decision upper case", claims: func(c map[string]any) { c["decision"] = "APPROVE" }, code: CodeMalformed},
		{name: "approve without grant", claims: func(c map[string]any) { delete(c, "grant") }, code: CodeMalformed},
		{name: "approve with null grant", claims: func(c map[string]any) { c["grant"] = nil }, code: CodeMalformed},
		{name: "approve with bad grant", claims: func(c map[string]any) { c["grant"] = map[string]any{"max_sends": 0.5} }, code: CodeMalformed},
		{name: "deny with grant", claims: func(c map[string]any) { c["decision"] = "deny" }, code: CodeMalformed},
		{name: "deny with null grant", claims: func(c map[string]any) { c["decision"] = "deny"; c["grant"] = nil }, code: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base()
			if tt.claims != nil {
				tt.claims(c)
			}
			alg := "EdDSA"
			if tt.alg != "" {
				alg = tt.alg
			}
			key := f.priv
			if tt.signer != nil {
				key = tt.signer
			}
			tok := forge(t, map[string]any{"alg": alg, "typ": "decision+jwt"}, c, edSigner(key))
			_, err := VerifyDecision(tok, f.pub, f.thumb, f.opts)
			var te *TokenError
			if tt.code == "" && err != nil || tt.code != "" && (!errors.As(err, &te) || te.Code != tt.code) {
				t.Fatalf("err = %v, want %q", err, tt.code)
			}
		})
	}
}

func TestSignDecisionRefuses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ok := DecisionClaims{EscalationID: "e", Decision: DecisionDeny, Audience: "venue", IssuedAt: f.now, ExpiresAt: f.now.Add(time.Minute)}
	tests := []struct {
		name string
		mod  func(c *DecisionClaims)
	}{
		{"no escalation id", func(c *DecisionClaims) { c.EscalationID = "" }},
		{"approve without grant", func(c *DecisionClaims) { c.Decision = DecisionApprove }},
		{"deny with grant", func(c *DecisionClaims) { c.Grant = &Scope{} }},
		{"bad decision", func(c *DecisionClaims) { c.Decision = "yes" }},
		{"approve with bad grant", func(c *DecisionClaims) {
			c.Decision = DecisionApprove
			c.Grant = &Scope{Amount: &AmountLimit{MinCents: ptr[int64](5), MaxCents: ptr[int64](1)}}
		}},
		{"no audience", func(c *DecisionClaims) { c.Audience = "" }},
		{"no expiry", func(c *DecisionClaims) { c.ExpiresAt = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tt.mod(&c)
			if tok, err := SignDecision(f.priv, c); err == nil {
				t.Fatalf("SignDecision = %q, want an error", tok)
			}
		})
	}
	tok, err := SignDecision(f.priv, ok)
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := b64u.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]string
	if json.Unmarshal(hdr, &h) != nil || h["typ"] != "decision+jwt" || h["alg"] != "EdDSA" {
		t.Fatalf("header %s", hdr)
	}
}
