package grants

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/venuehq/venue/wire"
)

// Token types (the JWS header `typ`, DELEGATION.md "The checks"). "application/" may prefix
// them and case is ignored, as RFC 7515 §4.1.9 allows.
const (
	TypeGrant    = "grant+jwt"
	TypeDecision = "decision+jwt"
)

// DefaultLeeway is the clock skew allowed on exp, nbf and iat when a token is
// verified and VerifyOptions.Leeway is zero.
const DefaultLeeway = 30 * time.Second

// MaxTokenLen is the longest token accepted, in bytes; longer is malformed.
const MaxTokenLen = 16 << 10

// MaxLifetime is how far ahead exp may be; further is malformed (a typo or
// an overflow, never a real grant).
const MaxLifetime = 10 * 365 * 24 * time.Hour

// jtiRE is what a jti may be: 1-128 URL-safe characters, so it can be named
// in DELETE /v1/grants/<jti> and stored anywhere.
var jtiRE = regexp.MustCompile(`^[A-Za-z0-9._~:-]{1,128}$`)

const algEdDSA = "EdDSA"

// VerifyOptions are what the venue expects of a token.
type VerifyOptions struct {
	Audience string        // the venue's configured audience; must be in aud (required)
	Subject  string        // the agent id; must equal sub (required for grants, unused for decisions)
	Now      time.Time     // the time to judge exp, nbf and iat at
	Leeway   time.Duration // allowed skew; 0 means DefaultLeeway, negative means none
}

func (o VerifyOptions) leeway() time.Duration {
	switch {
	case o.Leeway == 0:
		return DefaultLeeway
	case o.Leeway < 0:
		return 0
	}
	return o.Leeway
}

// jwsClaims is a claims struct that embeds jwt.RegisteredClaims.
type jwsClaims interface {
	jwt.Claims
	registered() *jwt.RegisteredClaims
}

// verifyJWS checks everything the grant and decision tokens share: size,
// header (alg EdDSA, typ, no crit), signature by principal, iss = thumb,
// aud, sub (if checkSub), exp required, nbf and iat with leeway, jti present.
// On success claims is filled. Header faults are reported before the
// signature is checked; claim faults only once the signature holds.
func verifyJWS(token, typ string, principal ed25519.PublicKey, thumb string, o VerifyOptions, checkSub bool, claims jwsClaims) *TokenError {
	if len(token) > MaxTokenLen {
		return tokenErr(CodeMalformed, "token is longer than %d bytes", MaxTokenLen)
	}
	if len(principal) != ed25519.PublicKeySize {
		return tokenErr(CodeBadSignature, "no valid principal key to verify with")
	}
	if own := thumbprintOf(principal); thumb == "" {
		thumb = own
	} else if thumb != own {
		return tokenErr(CodeWrongIssuer, "the principal thumbprint does not match the principal key")
	}
	if o.Audience == "" {
		return tokenErr(CodeWrongAudience, "the venue has no audience configured")
	}
	if checkSub && o.Subject == "" {
		return tokenErr(CodeWrongSubject, "no agent id to check sub against")
	}
	if te := checkHeader(token, typ); te != nil {
		return te
	}
	if te := checkPayload(token); te != nil {
		return te
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{algEdDSA}),
		jwt.WithTimeFunc(func() time.Time { return o.Now }),
		jwt.WithLeeway(o.leeway()),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(thumb),
		jwt.WithAudience(o.Audience),
		jwt.WithStrictDecoding(),
	}
	if checkSub {
		opts = append(opts, jwt.WithSubject(o.Subject))
	}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, func(*jwt.Token) (any, error) {
		return principal, nil
	})
	if err != nil {
		return classify(err, claims.registered(), thumb, o, checkSub)
	}
	rc := claims.registered()
	if rc.ID == "" {
		return tokenErr(CodeMalformed, "jti is required")
	}
	if !jtiRE.MatchString(rc.ID) {
		return tokenErr(CodeMalformed, "jti must be 1-128 characters of A-Z a-z 0-9 . _ ~ : -")
	}
	if rc.ExpiresAt != nil && rc.ExpiresAt.After(o.Now.Add(MaxLifetime)) {
		return tokenErr(CodeMalformed, "exp is more than 10 years ahead")
	}
	return nil
}

// checkPayload refuses a claims set that repeats a member (also one that
// differs only in case): encoding/json would keep the last, while a reader
// of the token may believe the first, so a principal could sign a limit the
// venue does not enforce. It then checks the date claims (see checkDates).
func checkPayload(token string) *TokenError {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenErr(CodeMalformed, "token is not a compact JWS (three dot-separated parts)")
	}
	raw, err := b64.DecodeString(parts[1])
	if err != nil {
		return tokenErr(CodeMalformed, "payload is not base64url")
	}
	m, werr := wire.DecodeObject(raw)
	if werr != nil {
		return tokenErr(CodeMalformed, "claims: %s", werr.Message)
	}
	return checkDates(m)
}

// checkHeader decodes the JOSE header with exact member names (so that
// "Alg" cannot shadow "alg") and checks alg, typ and crit.
func checkHeader(token, typ string) *TokenError {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenErr(CodeMalformed, "token is not a compact JWS (three dot-separated parts)")
	}
	raw, err := b64.DecodeString(parts[0])
	if err != nil {
		return tokenErr(CodeMalformed, "header is not base64url")
	}
	if _, werr := wire.DecodeObject(raw); werr != nil {
		return tokenErr(CodeMalformed, "header: %s", werr.Message)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil || h == nil {
		return tokenErr(CodeMalformed, "header is not a JSON object")
	}
	var alg, gotTyp string
	if err := json.Unmarshal(h["alg"], &alg); err != nil || alg != algEdDSA {
		return tokenErr(CodeWrongAlgorithm, "alg %s is refused; only EdDSA is accepted", rawShort(h["alg"]))
	}
	if err := json.Unmarshal(h["typ"], &gotTyp); err != nil ||
		!(strings.EqualFold(gotTyp, typ) || strings.EqualFold(gotTyp, "application/"+typ)) {
		return tokenErr(CodeWrongType, "typ %s, want %q", rawShort(h["typ"]), typ)
	}
	if _, ok := h["crit"]; ok {
		return tokenErr(CodeMalformed, "crit header parameters are not supported")
	}
	return nil
}

// rawShort shows a JSON value in a message: as written, cut to 40 bytes.
func rawShort(v json.RawMessage) string {
	switch {
	case len(v) == 0:
		return "(missing)"
	case len(v) > 40:
		return string(v[:40]) + "..."
	}
	return string(v)
}

// classify turns a parser error into a TokenError. Signature and shape
// come first; claim faults are then named in a fixed order.
func classify(err error, c *jwt.RegisteredClaims, thumb string, o VerifyOptions, checkSub bool) *TokenError {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return tokenErr(CodeMalformed, "%v", err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return tokenErr(CodeBadSignature, "the signature does not verify with the principal key")
	case c.Issuer != thumb:
		return tokenErr(CodeWrongIssuer, "iss %s is not the thumbprint of the principal key", quoteShort(c.Issuer))
	case checkSub && c.Subject != o.Subject:
		return tokenErr(CodeWrongSubject, "sub %s is not agent %s", quoteShort(c.Subject), quoteShort(o.Subject))
	case !slices.Contains(c.Audience, o.Audience):
		return tokenErr(CodeWrongAudience, "aud does not contain %s", quoteShort(o.Audience))
	case c.ExpiresAt == nil:
		return tokenErr(CodeMalformed, "exp is required")
	case errors.Is(err, jwt.ErrTokenExpired):
		return tokenErr(CodeExpired, "expired at %s", stamp(c.ExpiresAt.Time))
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return tokenErr(CodeNotYetValid, "not valid before %s", stamp(c.NotBefore.Time))
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return tokenErr(CodeNotYetValid, "issued in the future, at %s", stamp(c.IssuedAt.Time))
	}
	return tokenErr(CodeMalformed, "%v", err)
}

// stamp formats t as the wire does (PROTOCOL.md "Registration and auth"): RFC 3339, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// timeOf returns the time of an optional NumericDate in UTC; zero if absent.
func timeOf(d *jwt.NumericDate) time.Time {
	if d == nil {
		return time.Time{}
	}
	return d.UTC()
}
