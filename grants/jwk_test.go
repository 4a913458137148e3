package grants

import (
	"crypto/ed25519"
	"errors"
	"testing"
)

// RFC 8037 appendix A.3: the thumbprint of the A.2 public key.
const (
	rfc8037X   = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	rfc8037Kid = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
)

func TestThumbprintRFC8037(t *testing.T) {
	t.Parallel()
	j := JWK{Kty: "OKP", Crv: "Ed25519", X: rfc8037X, Kid: "ignored"}
	if got := Thumbprint(j); got != rfc8037Kid {
		t.Fatalf("Thumbprint = %q, want %q", got, rfc8037Kid)
	}
	_, pub, err := ParseJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"` + rfc8037X + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := Thumbprint(PublicJWK(pub)); got != rfc8037Kid {
		t.Fatalf("Thumbprint(PublicJWK) = %q, want %q", got, rfc8037Kid)
	}
}

func TestParseJWK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		wantErr bool
		wantKid string
	}{
		{"valid", `{"kty":"OKP","crv":"Ed25519","x":"` + rfc8037X + `"}`, false, ""},
		{"valid with kid alg use", `{"kty":"OKP","crv":"Ed25519","x":"` + rfc8037X + `","kid":"k1","alg":"EdDSA","use":"sig"}`, false, "k1"},
		{"private member d", `{"kty":"OKP","crv":"Ed25519","x":"` + rfc8037X + `","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}`, true, ""},
		{"kty EC", `{"kty":"EC","crv":"Ed25519","x":"` + rfc8037X + `"}`, true, ""},
		{"crv X25519", `{"kty":"OKP","crv":"X25519","x":"` + rfc8037X + `"}`, true, ""},
		{"crv lower case", `{"kty":"OKP","crv":"ed25519","x":"` + rfc8037X + `"}`, true, ""},
		{"x missing", `{"kty":"OKP","crv":"Ed25519"}`, true, ""},
		{"x null", `{"kty":"OKP","crv":"Ed25519","x":null}`, true, ""},
		{"x number", `{"kty":"OKP","crv":"Ed25519","x":12}`, true, ""},
		{"x padded", `{"kty":"OKP","crv":"Ed25519","x":"` + rfc8037X + `="}`, true, ""},
		{"x standard base64", `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`, true, ""},
		{"x non-canonical trailing bits", `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURp"}`, true, ""},
		{"x 31 bytes", `{"kty":"OKP","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, true, ""},
		{"x 33 bytes", `{"kty":"OKP","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, true, ""},
		{"array", `[]`, true, ""},
		{"null", `null`, true, ""},
		{"not json", `kty=OKP`, true, ""},
		{"empty", ``, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, pub, err := ParseJWK([]byte(tt.raw))
			if tt.wantErr {
				if !errors.Is(err, ErrBadKey) {
					t.Fatalf("err = %v, want ErrBadKey", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(pub) != ed25519.PublicKeySize || j.X != rfc8037X || j.Kid != tt.wantKid {
				t.Fatalf("got %+v (%d bytes)", j, len(pub))
			}
		})
	}
}

func TestPublicJWKRoundTrip(t *testing.T) {
	t.Parallel()
	pub, _, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	j := PublicJWK(pub)
	if j.Kty != "OKP" || j.Crv != "Ed25519" || j.Kid != "" {
		t.Fatalf("PublicJWK = %+v", j)
	}
	raw := []byte(`{"kty":"` + j.Kty + `","crv":"` + j.Crv + `","x":"` + j.X + `"}`)
	_, got, err := ParseJWK(raw)
	if err != nil || !got.Equal(pub) {
		t.Fatalf("ParseJWK(PublicJWK) = %x, %v", got, err)
	}
	if tp := Thumbprint(j); len(tp) != 43 {
		t.Fatalf("thumbprint %q is not 43 chars", tp)
	}
}
