package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/receipt"
)

// TestVerifyEvidenceOffline: `venue verify-evidence --jwks FILE` passes an
// evidence signed by a key of the set and fails one signed by another key
// or changed in transit.
func TestVerifyEvidenceOffline(t *testing.T) {
	t.Parallel()
	key, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := receipt.NewKey()
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	rcpt, err := receipt.Sign(key, receipt.Claims{NegotiationID: "neg_1", Brand: "agt_b", Bouncer: "agt_k", Status: "walked",
		StartedAt: "2026-11-30T08:00:00.000Z", EndedAt: "2026-11-30T08:01:00.000Z", IssuedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	ev := deliveries.Evidence{NegotiationID: "neg_1", Receipt: rcpt, Transcript: []receipt.Entry{}, Grants: []deliveries.Binding{},
		Settlement: []byte("null"), IssuedAt: at}
	good, err := deliveries.SignEvidence(key, ev)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := deliveries.SignEvidence(other, ev)
	parts := strings.Split(good, ".")
	changed := parts[0] + "." + parts[1][:len(parts[1])-4] + "AAAA." + parts[2]
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, receipt.JWKS(key), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(tok string) (string, error) {
		var out, errOut bytes.Buffer
		err := runCobra(t, verifyEvidenceCmd(), strings.NewReader(tok), &out, &errOut, "-", "--jwks", jwks)
		return out.String(), err
	}
	if out, err := run(good); err != nil || !strings.Contains(out, "evidence OK: negotiation neg_1, walked") {
		t.Fatalf("good evidence: %v\n%s", err, out)
	}
	for name, tok := range map[string]string{"another key": foreign, "changed": changed, "not a JWS": "x.y"} {
		if out, err := run(tok); err == nil || !strings.Contains(out, "FAILED:") {
			t.Fatalf("%s verified: %s", name, out)
		}
	}
}
