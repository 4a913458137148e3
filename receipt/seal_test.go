package receipt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testSealer(t *testing.T, b byte) *Sealer {
	t.Helper()
	s, err := NewSealer(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSealOpen: a sealed key holds no PKCS#8 in the clear, opens with its
// key-encryption key only, and a changed byte fails; a clear key opens with
// or without a sealer.
func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := testSealer(t, 1)
	sealed, err := s.Seal(k)
	if err != nil {
		t.Fatal(err)
	}
	if !IsSealed(sealed) || bytes.Contains(sealed, []byte("BEGIN PRIVATE KEY")) {
		t.Fatalf("sealed form: %s", sealed)
	}
	got, err := Open(sealed, s)
	if err != nil || !got.Private.Equal(k.Private) {
		t.Fatalf("open: %v", err)
	}
	if _, err := Open(sealed, nil); !errors.Is(err, ErrSealed) {
		t.Errorf("open without a sealer: %v, want ErrSealed", err)
	}
	if _, err := Open(sealed, testSealer(t, 2)); err == nil {
		t.Error("opened with another key-encryption key")
	}
	other, err := s.Seal(k)
	if err != nil || bytes.Equal(other, sealed) {
		t.Errorf("sealing twice gave the same bytes (nonce reuse?): %v", err)
	}
	// Flip one byte of the ciphertext (inside the base64 body).
	lines := strings.Split(string(sealed), "\n")
	body := []byte(lines[1])
	body[10] ^= 'A' ^ 'B'
	if body[10] == lines[1][10] {
		body[10] = 'C'
	}
	lines[1] = string(body)
	if _, err := Open([]byte(strings.Join(lines, "\n")), s); err == nil {
		t.Error("a changed sealed key opened")
	}
	for _, sl := range []*Sealer{nil, s} {
		if got, err := Open(k.PEM(), sl); err != nil || !got.Private.Equal(k.Private) {
			t.Errorf("clear key with sealer %v: %v", sl != nil, err)
		}
	}
	if _, err := NewSealer(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key-encryption key was taken")
	}
	if _, err := ParseSealer("not base64!"); err == nil {
		t.Error("a non-base64 key-encryption key was taken")
	}
	if _, err := ParseSealer("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="); err != nil {
		t.Errorf("base64 of 32 bytes: %v", err)
	}
}

// TestRotateFile: rotation puts a new key first and keeps the old ones, in
// order, for the JWKS; sealed files need their key-encryption key.
func TestRotateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "venue.pem")
	s := testSealer(t, 7)
	first, err := LoadOrCreateKeys(path, s)
	if err != nil || len(first) != 1 {
		t.Fatalf("create: %v %v", first, err)
	}
	k2, err := RotateFile(path, s)
	if err != nil {
		t.Fatal(err)
	}
	k3, err := RotateFile(path, s)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := LoadOrCreateKeys(path, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[0].KID != k3.KID || keys[1].KID != k2.KID || keys[2].KID != first[0].KID {
		t.Fatalf("keys after two rotations: %d", len(keys))
	}
	if _, err := LoadOrCreateKeys(path, nil); !errors.Is(err, ErrSealed) {
		t.Errorf("a sealed file without the key: %v", err)
	}
	if _, err := RotateFile(path, testSealer(t, 8)); err == nil {
		t.Error("rotated a file it cannot read")
	}
	b, err := os.ReadFile(path)
	if err != nil || bytes.Contains(b, []byte("BEGIN PRIVATE KEY")) {
		t.Fatalf("the file holds a key in the clear: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after rotation: %v %v", st.Mode(), err)
	}
	if jwks := JWKS(keys...); strings.Count(string(jwks), `"kid"`) != 3 {
		t.Fatalf("JWKS of three keys: %s", jwks)
	}
}
