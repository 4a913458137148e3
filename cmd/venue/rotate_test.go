package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
)

// TestRotateKey: the printed body carries the new public key and a proof
// that the current key verifies for that key and agent.
func TestRotateKey(t *testing.T) {
	curFile, curPub := principalKey(t)
	newFile, newPub := principalKey(t)
	out, _, err := execute(t, rotateKeyCmd(), "", "--key", curFile, "--new-key", newFile, "--agent", "agt_1")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		PrincipalKey grants.JWK `json:"principal_key"`
		Proof        string     `json:"proof"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	newThumb := grants.Thumbprint(grants.PublicJWK(newPub))
	if grants.Thumbprint(body.PrincipalKey) != newThumb {
		t.Fatalf("principal_key is not the new key: %+v", body.PrincipalKey)
	}
	opts := grants.VerifyOptions{Audience: "venue", Subject: "agt_1", Now: time.Now()}
	if err := grants.VerifyRotation(body.Proof, curPub, grants.Thumbprint(grants.PublicJWK(curPub)), newThumb, opts); err != nil {
		t.Fatalf("proof: %v", err)
	}
	if _, _, err := execute(t, rotateKeyCmd(), "", "--key", curFile, "--agent", "agt_1"); err == nil {
		t.Fatal("no --new-key accepted")
	}
}
