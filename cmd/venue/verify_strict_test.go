package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/venuehq/venue/receipt"
)

// TestVerifyReceiptDuplicateKeys: a transcript whose entry carries "frame"
// twice (a fake one first, the genuine one second) used to print
// "transcript OK"; now it prints FAILED on stdout and exits non-zero. So
// does a receipt body on stdin with "receipt" twice.
func TestVerifyReceiptDuplicateKeys(t *testing.T) {
	t.Parallel()
	n := newSignedNegotiation(t)
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, receipt.JWKS(n.key), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := `"frame":{"type":"offer","from":"agt_b","terms":{"amount_usd":1,"category":"primary_slot","sends":2}},`
	forged := strings.Replace(string(n.transcript), `"frame":{"type":"offer"`, fake+`"frame":{"type":"offer"`, 1)
	if forged == string(n.transcript) {
		t.Fatal("the test did not forge anything")
	}
	path := filepath.Join(t.TempDir(), "transcript.json")
	if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := execute(t, verifyReceiptCmd(), "", n.token, "--transcript", path, "--jwks", jwksFile)
	if err == nil || !strings.Contains(stdout, "FAILED") || strings.Contains(stdout, "transcript OK") {
		t.Fatalf("forged transcript: err %v, stdout:\n%s", err, stdout)
	}
	if !strings.Contains(stdout, "duplicated key") {
		t.Errorf("the reason is not named:\n%s", stdout)
	}
	// The genuine transcript still verifies.
	if err := os.WriteFile(path, n.transcript, 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, _, err := execute(t, verifyReceiptCmd(), "", n.token, "--transcript", path, "--jwks", jwksFile); err != nil || strings.Contains(stdout, "FAILED") {
		t.Fatalf("genuine transcript: %v\n%s", err, stdout)
	}
	body := `{"receipt":"x.y.z","receipt":"` + n.token + `"}`
	stdout, _, err = execute(t, verifyReceiptCmd(), body, "-", "--transcript", path, "--jwks", jwksFile)
	if err == nil || !strings.HasPrefix(stdout, "FAILED") {
		t.Fatalf("receipt twice on stdin: err %v, stdout %s", err, stdout)
	}
}
