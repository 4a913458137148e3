package grants

import (
	"crypto"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

type fixture struct {
	pub   ed25519.PublicKey
	priv  ed25519.PrivateKey
	thumb string
	now   time.Time
	opts  VerifyOptions
}

// setup returns a principal key pair and options for agent "ag_1" at a fixed now.
func setup(t *testing.T) fixture {
	t.Helper()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 8, 19, 22, 0, time.UTC)
	return fixture{pub, priv, Thumbprint(PublicJWK(pub)), now,
		VerifyOptions{Audience: "venue", Subject: "ag_1", Now: now}}
}

func (f fixture) claims() map[string]any {
	return map[string]any{
		"iss": f.thumb, "sub": "ag_1", "aud": []string{"venue"},
		"iat": f.now.Add(-time.Minute).Unix(), "exp": f.now.Add(time.Hour).Unix(), "jti": "g-1",
		"grant": map[string]any{"role": "brand", "amount_usd": map[string]any{"max": 3500}},
	}
}

var b64u = base64.RawURLEncoding

// forge builds a compact JWS from header and claims; sign gets the signing
// input and returns the signature (nil: empty signature).
func forge(t *testing.T, header, claims map[string]any, sign func(string) []byte) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	in := b64u.EncodeToString(h) + "." + b64u.EncodeToString(c)
	var sig []byte
	if sign != nil {
		sig = sign(in)
	}
	return in + "." + b64u.EncodeToString(sig)
}

func edSigner(priv ed25519.PrivateKey) func(string) []byte {
	return func(in string) []byte { return ed25519.Sign(priv, []byte(in)) }
}

var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func TestVerify(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, otherPriv, _ := GenerateKey()
	edHeader := func() map[string]any { return map[string]any{"alg": "EdDSA", "typ": "grant+jwt"} }

	tests := []struct {
		name   string
		header func(h map[string]any)
		claims func(c map[string]any)
		sign   func(string) []byte // default: the principal's key
		raw    func(tok string) string
		code   string // "" = valid
	}{
		{name: "valid"},
		{name: "aud as a single string", claims: func(c map[string]any) { c["aud"] = "venue" }},
		{name: "aud among several", claims: func(c map[string]any) { c["aud"] = []string{"other", "venue"} }},
		{name: "typ with application/ prefix", header: func(h map[string]any) { h["typ"] = "application/grant+jwt" }},
		{name: "typ upper case", header: func(h map[string]any) { h["typ"] = "GRANT+JWT" }},
		{name: "no iat", claims: func(c map[string]any) { delete(c, "iat") }},
		{name: "exp passed within leeway", claims: func(c map[string]any) { c["exp"] = f.now.Add(-20 * time.Second).Unix() }},
		{name: "nbf future within leeway", claims: func(c map[string]any) { c["nbf"] = f.now.Add(20 * time.Second).Unix() }},

		{name: "alg none unsigned", header: func(h map[string]any) { h["alg"] = "none" }, sign: func(string) []byte { return nil }, code: CodeWrongAlgorithm},
		{name: "alg HS256 keyed with the public key", header: func(h map[string]any) { h["alg"] = "HS256" },
			sign: func(in string) []byte { m := hmac.New(sha256.New, f.pub); m.Write([]byte(in)); return m.Sum(nil) }, code: CodeWrongAlgorithm},
		{name: "alg RS256", header: func(h map[string]any) { h["alg"] = "RS256" }, sign: func(in string) []byte {
			sum := sha256.Sum256([]byte(in))
			s, err := rsa.SignPKCS1v15(rand.Reader, rsaKey(), crypto.SHA256, sum[:])
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, code: CodeWrongAlgorithm},
		{name: "alg lower case", header: func(h map[string]any) { h["alg"] = "eddsa" }, code: CodeWrongAlgorithm},
		{name: "alg Ed25519", header: func(h map[string]any) { h["alg"] = "Ed25519" }, code: CodeWrongAlgorithm},
		{name: "alg missing", header: func(h map[string]any) { delete(h, "alg") }, code: CodeWrongAlgorithm},
		{name: "alg shadowed by Alg", header: func(h map[string]any) { h["alg"] = "none"; h["Alg"] = "EdDSA" }, code: CodeMalformed},
		{name: "typ JWT", header: func(h map[string]any) { h["typ"] = "JWT" }, code: CodeWrongType},
		{name: "typ missing", header: func(h map[string]any) { delete(h, "typ") }, code: CodeWrongType},
		{name: "typ decision+jwt", header: func(h map[string]any) { h["typ"] = "decision+jwt" }, code: CodeWrongType},
		{name: "crit header", header: func(h map[string]any) { h["crit"] = []string{"exp"} }, code: CodeMalformed},

		{name: "signed by another key", sign: edSigner(otherPriv), code: CodeBadSignature},
		{name: "empty signature", sign: func(string) []byte { return nil }, code: CodeBadSignature},
		{name: "payload changed after signing", raw: func(tok string) string {
			p := strings.Split(tok, ".")
			c, _ := b64u.DecodeString(p[1])
			c = []byte(strings.Replace(string(c), `"max":3500`, `"max":9500`, 1))
			return p[0] + "." + b64u.EncodeToString(c) + "." + p[2]
		}, code: CodeBadSignature},
		{name: "signature bit flipped", raw: func(tok string) string {
			p := strings.Split(tok, ".")
			s, _ := b64u.DecodeString(p[2])
			s[0] ^= 1
			return p[0] + "." + p[1] + "." + b64u.EncodeToString(s)
		}, code: CodeBadSignature},
		{name: "bad signature beats expiry", sign: edSigner(otherPriv),
			claims: func(c map[string]any) { c["exp"] = f.now.Add(-time.Hour).Unix() }, code: CodeBadSignature},

		{name: "iss another thumbprint", claims: func(c map[string]any) { c["iss"] = rfc8037Kid }, code: CodeWrongIssuer},
		{name: "iss missing", claims: func(c map[string]any) { delete(c, "iss") }, code: CodeWrongIssuer},
		{name: "wrong issuer beats expiry", claims: func(c map[string]any) {
			c["iss"] = "x"
			c["exp"] = f.now.Add(-time.Hour).Unix()
		}, code: CodeWrongIssuer},
		{name: "sub another agent", claims: func(c map[string]any) { c["sub"] = "ag_2" }, code: CodeWrongSubject},
		{name: "sub missing", claims: func(c map[string]any) { delete(c, "sub") }, code: CodeWrongSubject},
		{name: "aud another venue", claims: func(c map[string]any) { c["aud"] = []string{"other"} }, code: CodeWrongAudience},
		{name: "aud missing", claims: func(c map[string]any) { delete(c, "aud") }, code: CodeWrongAudience},
		{name: "expired beyond leeway", claims: func(c map[string]any) { c["exp"] = f.now.Add(-31 * time.Second).Unix() }, code: CodeExpired},
		{name: "nbf beyond leeway", claims: func(c map[string]any) { c["nbf"] = f.now.Add(time.Minute).Unix() }, code: CodeNotYetValid},
		{name: "iat in the future", claims: func(c map[string]any) { c["iat"] = f.now.Add(time.Minute).Unix() }, code: CodeNotYetValid},

		{name: "exp missing", claims: func(c map[string]any) { delete(c, "exp") }, code: CodeMalformed},
		{name: "exp a string", claims: func(c map[string]any) { c["exp"] = "tomorrow" }, code: CodeMalformed},
		{name: "jti missing", claims: func(c map[string]any) { delete(c, "jti") }, code: CodeMalformed},
		{name: "jti empty", claims: func(c map[string]any) { c["jti"] = "" }, code: CodeMalformed},
		{name: "grant missing", claims: func(c map[string]any) { delete(c, "grant") }, code: CodeMalformed},
		{name: "grant null", claims: func(c map[string]any) { c["grant"] = nil }, code: CodeMalformed},
		{name: "grant three decimals", claims: func(c map[string]any) {
			c["grant"] = map[string]any{"amount_usd": map[string]any{"max": json.Number("1.001")}}
		}, code: CodeMalformed},
		{name: "grant unknown key", claims: func(c map[string]any) { c["grant"] = map[string]any{"spend": 1} }, code: CodeMalformed},
		{name: "two parts", raw: func(tok string) string { return tok[:strings.LastIndex(tok, ".")] }, code: CodeMalformed},
		{name: "four parts", raw: func(tok string) string { return tok + ".x" }, code: CodeMalformed},
		{name: "empty", raw: func(string) string { return "" }, code: CodeMalformed},
		{name: "header not base64", raw: func(tok string) string { return "%%%" + tok[strings.Index(tok, "."):] }, code: CodeMalformed},
		{name: "header not JSON", raw: func(tok string) string { return b64u.EncodeToString([]byte("[1]")) + tok[strings.Index(tok, "."):] }, code: CodeMalformed},
		{name: "payload not JSON", raw: func(tok string) string {
			p := strings.Split(tok, ".")
			in := p[0] + "." + b64u.EncodeToString([]byte("nope"))
			return in + "." + b64u.EncodeToString(ed25519.Sign(f.priv, []byte(in)))
		}, code: CodeMalformed},
		{name: "too long", raw: func(tok string) string { return tok + strings.Repeat("A", MaxTokenLen) }, code: CodeMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, c := edHeader(), f.claims()
			if tt.header != nil {
				tt.header(h)
			}
			if tt.claims != nil {
				tt.claims(c)
			}
			sign := tt.sign
			if sign == nil {
				sign = edSigner(f.priv)
			}
			tok := forge(t, h, c, sign)
			if tt.raw != nil {
				tok = tt.raw(tok)
			}
			g, err := Verify(tok, f.pub, f.thumb, f.opts)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if g.JTI != "g-1" || g.Subject != "ag_1" || g.Issuer != f.thumb || g.Raw != tok ||
					g.Scope.Role != "brand" || *g.Scope.Amount.MaxCents != 350000 {
					t.Fatalf("grant = %+v", g)
				}
				return
			}
			var te *TokenError
			if !errors.As(err, &te) || te.Code != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
			if g != nil {
				t.Fatalf("grant %+v returned with an error", g)
			}
		})
	}
}

func TestSignGrantVerify(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := GrantClaims{
		Subject: "ag_1", Audience: "venue",
		IssuedAt: f.now.Add(-time.Minute), ExpiresAt: f.now.Add(time.Hour), NotBefore: f.now.Add(-time.Minute),
		Scope: Scope{Role: "bouncer", Amount: &AmountLimit{MinCents: ptr[int64](120050)}, Categories: []string{"story"}},
	}
	tok, err := SignGrant(f.priv, c)
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := b64u.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]string
	if err := json.Unmarshal(hdr, &h); err != nil || h["alg"] != "EdDSA" || h["typ"] != "grant+jwt" {
		t.Fatalf("header %s", hdr)
	}
	for _, thumb := range []string{f.thumb, ""} { // "" computes the thumbprint
		g, err := Verify(tok, f.pub, thumb, f.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.JTI) != 22 || g.Issuer != f.thumb || !g.IssuedAt.Equal(c.IssuedAt) || !g.ExpiresAt.Equal(c.ExpiresAt) ||
			!g.NotBefore.Equal(c.NotBefore) || *g.Scope.Amount.MinCents != 120050 || g.Scope.Categories[0] != "story" {
			t.Fatalf("grant = %+v", g)
		}
	}
	other, _ := SignGrant(f.priv, c)
	if g1, _ := Verify(tok, f.pub, "", f.opts); g1 != nil {
		if g2, _ := Verify(other, f.pub, "", f.opts); g2 == nil || g1.JTI == g2.JTI {
			t.Fatal("random jti repeated")
		}
	}

	tests := []struct {
		name string
		o    func(o *VerifyOptions)
		pub  ed25519.PublicKey
		tp   string
		code string
	}{
		{"thumbprint of another key", nil, f.pub, rfc8037Kid, CodeWrongIssuer},
		{"no audience configured", func(o *VerifyOptions) { o.Audience = "" }, f.pub, "", CodeWrongAudience},
		{"no subject given", func(o *VerifyOptions) { o.Subject = "" }, f.pub, "", CodeWrongSubject},
		{"nil principal", nil, nil, "", CodeBadSignature},
		{"custom leeway 2h accepts expired", func(o *VerifyOptions) { o.Now = f.now.Add(2 * time.Hour); o.Leeway = 2 * time.Hour }, f.pub, "", ""},
		{"negative leeway is none", func(o *VerifyOptions) { o.Now = c.ExpiresAt.Add(time.Second); o.Leeway = -1 }, f.pub, "", CodeExpired},
		{"at exp is expired without leeway", func(o *VerifyOptions) { o.Now = c.ExpiresAt; o.Leeway = -1 }, f.pub, "", CodeExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := f.opts
			if tt.o != nil {
				tt.o(&o)
			}
			_, err := Verify(tok, tt.pub, tt.tp, o)
			var te *TokenError
			if tt.code == "" && err != nil || tt.code != "" && (!errors.As(err, &te) || te.Code != tt.code) {
				t.Fatalf("err = %v, want %q", err, tt.code)
			}
		})
	}
}

func TestSignGrantRefuses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ok := GrantClaims{Subject: "ag_1", Audience: "venue", IssuedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}
	tests := []struct {
		name string
		priv ed25519.PrivateKey
		mod  func(c *GrantClaims)
	}{
		{"short key", f.priv[:32], nil},
		{"inconsistent key", append(append(ed25519.PrivateKey{}, f.priv[:32]...), make([]byte, 32)...), nil},
		{"no subject", f.priv, func(c *GrantClaims) { c.Subject = "" }},
		{"no audience", f.priv, func(c *GrantClaims) { c.Audience = "" }},
		{"no iat", f.priv, func(c *GrantClaims) { c.IssuedAt = time.Time{} }},
		{"no exp", f.priv, func(c *GrantClaims) { c.ExpiresAt = time.Time{} }},
		{"exp before iat", f.priv, func(c *GrantClaims) { c.ExpiresAt = f.now.Add(-time.Hour) }},
		{"exp within the same second", f.priv, func(c *GrantClaims) { c.ExpiresAt = f.now.Add(time.Millisecond) }},
		{"bad scope", f.priv, func(c *GrantClaims) { c.Scope.MaxSends = ptr(-2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			if tt.mod != nil {
				tt.mod(&c)
			}
			if tok, err := SignGrant(tt.priv, c); err == nil {
				t.Fatalf("SignGrant = %q, want an error", tok)
			}
		})
	}
}

func TestTokenErrorHTTPStatus(t *testing.T) {
	t.Parallel()
	want := map[string]int{
		CodeMalformed: 422, CodeBadSignature: 401, CodeWrongAlgorithm: 401, CodeWrongType: 401,
		CodeWrongIssuer: 401, CodeWrongSubject: 403, CodeWrongAudience: 403, CodeExpired: 403,
		CodeNotYetValid: 403, "other": 400,
	}
	for code, status := range want {
		e := &TokenError{Code: code, Message: "m"}
		if got := e.HTTPStatus(); got != status {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, status)
		}
		if !strings.Contains(e.Error(), code) {
			t.Errorf("Error() = %q lacks the code", e.Error())
		}
	}
}
