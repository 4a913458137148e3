package grants

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

const pemPrivateKey = "PRIVATE KEY"

// GenerateKey draws a new Ed25519 key pair for a principal (or the venue).
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("grants: generate key: %w", err)
	}
	return pub, priv, nil
}

// MarshalPrivateKeyPEM encodes priv as a PKCS#8 "PRIVATE KEY" PEM block,
// the form `openssl genpkey -algorithm ed25519` writes. It returns nil if
// priv is not a consistent 64-byte Ed25519 private key.
func MarshalPrivateKeyPEM(priv ed25519.PrivateKey) []byte {
	if checkPrivate(priv) != nil {
		return nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der})
}

// ParsePrivateKeyPEM reads the first PEM block of b, which must be a PKCS#8
// "PRIVATE KEY" holding an Ed25519 key. Errors wrap [ErrBadKey].
func ParsePrivateKeyPEM(b []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrBadKey)
	}
	if block.Type != pemPrivateKey {
		return nil, fmt.Errorf("%w: PEM block %q, want %q (PKCS#8)", ErrBadKey, block.Type, pemPrivateKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: PKCS#8 key is %T, want Ed25519", ErrBadKey, k)
	}
	return priv, nil
}

// checkPrivate reports whether priv is 64 bytes whose public half matches
// its seed.
func checkPrivate(priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("%w: private key is %d bytes, want %d", ErrBadKey, len(priv), ed25519.PrivateKeySize)
	}
	want := ed25519.NewKeyFromSeed(priv.Seed())
	if !bytes.Equal(want[32:], priv[32:]) {
		return fmt.Errorf("%w: public half does not match the seed", ErrBadKey)
	}
	return nil
}
