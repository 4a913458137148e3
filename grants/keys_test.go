package grants

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
)

func TestPrivateKeyPEM(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b := MarshalPrivateKeyPEM(priv)
	if !strings.HasPrefix(string(b), "-----BEGIN PRIVATE KEY-----\n") {
		t.Fatalf("PEM = %s", b)
	}
	got, err := ParsePrivateKeyPEM(b)
	if err != nil || !got.Equal(priv) || !pub.Equal(got.Public()) {
		t.Fatalf("round trip: %v", err)
	}
	if MarshalPrivateKeyPEM(priv[:10]) != nil {
		t.Fatal("a short key must marshal to nil")
	}

	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"not PEM", []byte("hello")},
		{"public key block", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}})},
		{"garbage DER", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})},
		{"ECDSA key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := ParsePrivateKeyPEM(tt.in); !errors.Is(err, ErrBadKey) {
				t.Fatalf("err = %v, want ErrBadKey", err)
			}
		})
	}
}
