package receipt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/venuehq/venue/grants"
)

// PEM block types a stored receipt key may take.
const (
	pemPrivateKey = "PRIVATE KEY"              // PKCS#8, in the clear
	pemSealedKey  = "VENUE SEALED PRIVATE KEY" // PKCS#8 sealed by a Sealer
)

// sealAAD binds a sealed blob to its use: a sealed receipt key cannot be
// passed off as anything else sealed with the same key-encryption key.
var sealAAD = []byte("venue receipt key v1")

// ErrSealed is returned when a stored key is sealed and no key-encryption
// key was given to open it.
var ErrSealed = errors.New("receipt: the stored key is sealed; the key-encryption key is needed to open it")

// Sealer encrypts the receipt private key where it is stored (the store's
// venue_keys table or a key file) with AES-256-GCM under a key-encryption
// key the operator keeps outside the store (SECURITY.md "Deployment"): a
// copy of the database alone then cannot sign receipts.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer takes a 32-byte key-encryption key.
func NewSealer(kek []byte) (*Sealer, error) {
	if len(kek) != 32 {
		return nil, fmt.Errorf("receipt: key-encryption key is %d bytes, want 32", len(kek))
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, fmt.Errorf("receipt: key-encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("receipt: key-encryption key: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// ParseSealer reads a key-encryption key written as base64 (standard or
// URL alphabet, padded or not) of 32 bytes, as `openssl rand -base64 32`
// prints it.
func ParseSealer(text string) (*Sealer, error) {
	text = strings.TrimSpace(text)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(text); err == nil {
			return NewSealer(b)
		}
	}
	return nil, errors.New("receipt: key-encryption key is not base64 (make one with: openssl rand -base64 32)")
}

// Seal returns k as a sealed PEM block ("VENUE SEALED PRIVATE KEY": a
// 12-byte nonce, then the AES-GCM ciphertext of the PKCS#8 DER). With a nil
// Sealer it returns the PKCS#8 PEM in the clear.
func (s *Sealer) Seal(k Key) ([]byte, error) {
	if s == nil {
		if p := k.PEM(); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("receipt: seal: %w", grants.ErrBadKey)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("receipt: seal: %w", err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return pem.EncodeToMemory(&pem.Block{Type: pemSealedKey, Bytes: s.aead.Seal(nonce, nonce, der, sealAAD)}), nil
}

// Open reads one stored key: a PKCS#8 PEM in the clear (accepted with or
// without a Sealer, so a venue can start sealing keys it had stored
// before), or a sealed one, which needs s ([ErrSealed] without it; a
// wrong key-encryption key or a changed blob fails authentication).
func Open(b []byte, s *Sealer) (Key, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != pemSealedKey {
		return ParseKey(b)
	}
	if s == nil {
		return Key{}, ErrSealed
	}
	n := s.aead.NonceSize()
	if len(block.Bytes) < n {
		return Key{}, errors.New("receipt: sealed key is truncated")
	}
	der, err := s.aead.Open(nil, block.Bytes[:n], block.Bytes[n:], sealAAD)
	if err != nil {
		return Key{}, errors.New("receipt: sealed key does not open with this key-encryption key")
	}
	return ParseKey(pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}))
}

// IsSealed reports whether a stored key is sealed.
func IsSealed(b []byte) bool {
	block, _ := pem.Decode(b)
	return block != nil && block.Type == pemSealedKey
}
