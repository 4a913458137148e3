package grants

import (
	"errors"
	"testing"
	"time"
)

func TestRotation(t *testing.T) {
	t.Parallel()
	oldPub, oldPriv, _ := GenerateKey()
	newPub, newPriv, _ := GenerateKey()
	oldThumb, newThumb := Thumbprint(PublicJWK(oldPub)), Thumbprint(PublicJWK(newPub))
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: now}
	claims := RotationClaims{Subject: "agt_1", Audience: "venue", NewThumbprint: newThumb, IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	tok, err := SignRotation(oldPriv, claims)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyRotation(tok, oldPub, oldThumb, newThumb, opts); err != nil {
		t.Fatalf("a good proof: %v", err)
	}
	code := func(err error) string {
		var te *TokenError
		if errors.As(err, &te) {
			return te.Code
		}
		return "?"
	}
	// Signed by the new key (the agent's own), not the current one.
	selfSigned, _ := SignRotation(newPriv, claims)
	if c := code(VerifyRotation(selfSigned, oldPub, oldThumb, newThumb, opts)); c != CodeBadSignature && c != CodeWrongIssuer {
		t.Errorf("self-signed proof: %s", c)
	}
	// For another key.
	if c := code(VerifyRotation(tok, oldPub, oldThumb, "other", opts)); c != CodeMalformed {
		t.Errorf("proof for another key: %s", c)
	}
	// For another agent.
	if c := code(VerifyRotation(tok, oldPub, oldThumb, newThumb, VerifyOptions{Audience: "venue", Subject: "agt_2", Now: now})); c != CodeWrongSubject {
		t.Errorf("proof for another agent: %s", c)
	}
	// Too long-lived.
	long := claims
	long.ExpiresAt = now.Add(48 * time.Hour)
	lt, _ := SignRotation(oldPriv, long)
	if c := code(VerifyRotation(lt, oldPub, oldThumb, newThumb, opts)); c != CodeMalformed {
		t.Errorf("day-long proof: %s", c)
	}
	// A grant token is not a rotation proof.
	g, _ := SignGrant(oldPriv, GrantClaims{Subject: "agt_1", Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if c := code(VerifyRotation(g, oldPub, oldThumb, newThumb, opts)); c != CodeWrongType {
		t.Errorf("grant as proof: %s", c)
	}
}
