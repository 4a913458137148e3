package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/receipt"
)

func TestRevokeGrantToken(t *testing.T) {
	t.Parallel()
	keyFile, pub := principalKey(t)
	stdout, _, err := execute(t, revokeCmd(), "", "--key", keyFile, "--agent", "agt_1", "--grant", "grant-b")
	if err != nil {
		t.Fatal(err)
	}
	r, err := grants.VerifyRevocation(strings.TrimSpace(stdout), pub, "", grants.VerifyOptions{Audience: "venue", Subject: "agt_1", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != grants.RevokeGrant || r.GrantJTI != "grant-b" {
		t.Fatalf("revocation %+v", r)
	}
	for _, args := range [][]string{
		{"--key", keyFile, "--agent", "agt_1"},                                 // no --grant
		{"--key", keyFile, "--grant", "g"},                                     // no --agent
		{"--agent", "agt_1", "--grant", "g"},                                   // no --key
		{"--key", keyFile, "--agent", "agt_1", "--grant", "a/b"},               // not a jti
		{"--key", keyFile, "--agent", "agt_1", "--grant", "g", "--ttl", "25h"}, // too long
	} {
		if _, _, err := execute(t, revokeCmd(), "", args...); err == nil {
			t.Errorf("revoke %v: accepted", args)
		}
	}
}

// TestRevokeAPIKeyPost: --new-key prints a fresh key whose SHA-256 is the
// token's new_key_sha256; --post sends the token with no API key.
func TestRevokeAPIKeyPost(t *testing.T) {
	t.Parallel()
	keyFile, pub := principalKey(t)
	var got struct {
		path, auth string
		body       map[string]string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth = r.URL.Path, r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		_, _ = w.Write([]byte(`{"revoked":"api_key"}`))
	}))
	t.Cleanup(srv.Close)
	stdout, stderr, err := execute(t, revokeAPIKeyCmd(), "", "--key", keyFile, "--agent", "agt_1", "--new-key", "--post", "--url", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got.path != revocationsPath || got.auth != "" || !strings.Contains(stdout, `"revoked":"api_key"`) {
		t.Fatalf("posted to %s auth %q, printed %q", got.path, got.auth, stdout)
	}
	r, err := grants.VerifyRevocation(got.body["token"], pub, "", grants.VerifyOptions{Audience: "venue", Subject: "agt_1", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`bsk_[A-Za-z0-9_-]{43}`).FindString(stderr)
	sum := sha256.Sum256([]byte(key))
	if key == "" || r.Kind != grants.RevokeAPIKey || r.NewKeyHash != hex.EncodeToString(sum[:]) {
		t.Fatalf("key %q, revocation %+v", key, r)
	}
}

// TestRotateVenueKeyFile: each rotation adds a key in front and keeps the
// old ones; with VENUE_KEY_ENCRYPTION_KEY unset it warns.
func TestRotateVenueKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "venue.pem")
	first, err := receipt.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envKeyEncryptionKey, "")
	stdout, stderr, err := execute(t, rotateVenueKeyCmd(), "", "--key-file", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "warning") || !strings.Contains(stdout, "new receipt key") {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	keys, err := receipt.LoadOrCreateKeys(path, nil)
	if err != nil || len(keys) != 2 || keys[1].KID != first.KID || keys[0].KID == first.KID {
		t.Fatalf("keys %v, %v", len(keys), err)
	}
	t.Setenv(envKeyEncryptionKey, "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=")
	if _, stderr, err = execute(t, rotateVenueKeyCmd(), "", "--key-file", path); err != nil || strings.Contains(stderr, "warning") {
		t.Fatalf("sealed rotation: %v %q", err, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), "-----BEGIN VENUE SEALED PRIVATE KEY-----") {
		t.Fatalf("the new key is not sealed: %.60s %v", b, err)
	}
	t.Setenv(envKeyEncryptionKey, "not base64!")
	if _, _, err := execute(t, rotateVenueKeyCmd(), "", "--key-file", path); err == nil {
		t.Fatal("a bad key-encryption key was taken")
	}
	// Nowhere to write: refused, without a warning about a key it will
	// not store.
	t.Setenv(envKeyEncryptionKey, "")
	if _, stderr, err := execute(t, rotateVenueKeyCmd(), "", "--key-file", "", "--database-url", ""); err == nil ||
		!strings.Contains(err.Error(), "needs --key-file or --database-url") || strings.Contains(stderr, "warning") {
		t.Fatalf("without a place for the key: %v, stderr %q", err, stderr)
	}
}
