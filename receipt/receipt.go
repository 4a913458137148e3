package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

// TypeReceipt is the JWS header typ of a receipt.
const TypeReceipt = "receipt+jwt"

// DefaultIssuer is the iss of a receipt whose Claims.Issuer is empty.
const DefaultIssuer = "venue"

// Endings of a negotiation (PROTOCOL.md "Transcript, offer hash and chain hash"), the receipt's status.
const (
	StatusDeal       = "deal"
	StatusWalked     = "walked"
	StatusTurnMissed = "turn_missed"
	StatusExpired    = "expired"
)

// ErrInvalid is wrapped by every error of [Sign] about its claims and of
// [Verify] about the token; ErrUnknownKey when the kid is not in the JWKS.
var (
	ErrInvalid    = errors.New("receipt: invalid")
	ErrUnknownKey = errors.New("receipt: unknown kid")
)

// Claims is what a receipt attests (PROTOCOL.md "Transcript, offer hash and chain hash"). Times are wire strings,
// RFC 3339 UTC with milliseconds ("2026-11-30T08:19:22.134Z").
type Claims struct {
	NegotiationID string          `json:"negotiation_id"`
	Brand         string          `json:"brand"`                // the brand's agent id
	Bouncer       string          `json:"bouncer"`              // the bouncer's agent id
	Status        string          `json:"status"`               // deal, walked, turn_missed or expired
	Terms         json.RawMessage `json:"terms,omitempty"`      // terms of the deal; empty if none
	OfferHash     string          `json:"offer_hash,omitempty"` // of the terms (PROTOCOL.md "Transcript, offer hash and chain hash"); "" if none
	Arena         bool            `json:"arena"`
	StartedAt     string          `json:"started_at"`
	EndedAt       string          `json:"ended_at"`
	LastSeq       int64           `json:"last_seq"`  // the last transcript seq; 0 for an empty transcript
	HeadHash      string          `json:"head_hash"` // the hash of entry LastSeq; "" for an empty transcript

	Issuer   string    `json:"iss"` // "" signs as DefaultIssuer
	IssuedAt time.Time `json:"iat"` // required; whole seconds on the wire
	JTI      string    `json:"jti"` // "" draws 128 random bits
}

// wireClaims is the JSON claim set of a receipt.
type wireClaims struct {
	jwt.RegisteredClaims
	NegotiationID string          `json:"negotiation_id"`
	Brand         string          `json:"brand"`
	Bouncer       string          `json:"bouncer"`
	Status        string          `json:"status"`
	Terms         json.RawMessage `json:"terms,omitempty"`
	OfferHash     string          `json:"offer_hash,omitempty"`
	Arena         bool            `json:"arena"`
	StartedAt     string          `json:"started_at"`
	EndedAt       string          `json:"ended_at"`
	LastSeq       int64           `json:"last_seq"`
	HeadHash      string          `json:"head_hash"`
}

var hashRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// validate checks the shape of c; iat is checked by the caller.
func (c *Claims) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case c.NegotiationID == "" || c.Brand == "" || c.Bouncer == "":
		return bad("negotiation_id, brand and bouncer are required")
	case c.Status != StatusDeal && c.Status != StatusWalked && c.Status != StatusTurnMissed && c.Status != StatusExpired:
		return bad("status %q, want deal, walked, turn_missed or expired", c.Status)
	case len(c.Terms) > 0 && !json.Valid(c.Terms):
		return bad("terms are not JSON")
	case c.OfferHash != "" && !hashRE.MatchString(c.OfferHash):
		return bad("offer_hash %q is not sha256:<64 hex>", c.OfferHash)
	case c.LastSeq < 0:
		return bad("last_seq %d is negative", c.LastSeq)
	case c.LastSeq == 0 && c.HeadHash != "":
		return bad("head_hash given for an empty transcript")
	case c.LastSeq > 0 && !hashRE.MatchString(c.HeadHash):
		return bad("head_hash %q is not sha256:<64 hex>", c.HeadHash)
	}
	started, err := time.Parse(time.RFC3339Nano, c.StartedAt)
	if err != nil {
		return bad("started_at %q is not RFC 3339", c.StartedAt)
	}
	ended, err := time.Parse(time.RFC3339Nano, c.EndedAt)
	if err != nil {
		return bad("ended_at %q is not RFC 3339", c.EndedAt)
	}
	if ended.Before(started) {
		return bad("ended_at is before started_at")
	}
	return nil
}

// Sign signs c with the venue key into a compact receipt: header
// {"alg":"EdDSA","kid":k.KID,"typ":"receipt+jwt"}, claims iss, iat, jti and
// those of [Claims] in snake_case. Receipts carry no exp: they never lapse.
// It refuses claims [Verify] would refuse (errors wrap [ErrInvalid]).
func Sign(k Key, c Claims) (string, error) {
	if k.Public() == nil {
		return "", fmt.Errorf("receipt: sign: %w: no valid private key", grants.ErrBadKey)
	}
	if err := c.validate(); err != nil {
		return "", fmt.Errorf("receipt: sign %s: %w", c.NegotiationID, err)
	}
	if c.IssuedAt.IsZero() {
		return "", fmt.Errorf("receipt: sign %s: %w: issued-at is required", c.NegotiationID, ErrInvalid)
	}
	if c.Issuer == "" {
		c.Issuer = DefaultIssuer
	}
	if c.JTI == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
		c.JTI = base64.RawURLEncoding.EncodeToString(b[:])
	}
	w := wireClaims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: c.Issuer, IssuedAt: jwt.NewNumericDate(c.IssuedAt), ID: c.JTI},
		NegotiationID:    c.NegotiationID, Brand: c.Brand, Bouncer: c.Bouncer, Status: c.Status,
		Terms: c.Terms, OfferHash: c.OfferHash, Arena: c.Arena, StartedAt: c.StartedAt, EndedAt: c.EndedAt,
		LastSeq: c.LastSeq, HeadHash: c.HeadHash,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, &w)
	t.Header["typ"] = TypeReceipt
	t.Header["kid"] = k.kid()
	s, err := t.SignedString(k.Private)
	if err != nil {
		return "", fmt.Errorf("receipt: sign %s: %w", c.NegotiationID, err)
	}
	return s, nil
}

// Verify checks a receipt against a JWKS (as [JWKS] writes it, or fetched
// from /.well-known/jwks.json) and returns its claims. The header must have
// alg EdDSA (nothing else), typ receipt+jwt and a kid found in the set
// (entries that are not Ed25519 are skipped; an entry without kid is known by
// its thumbprint). Errors wrap [ErrUnknownKey] or [ErrInvalid].
func Verify(token string, jwks []byte) (*Claims, error) {
	keys, err := parseJWKS(jwks)
	if err != nil {
		return nil, err
	}
	if err := strictPayload(token); err != nil {
		return nil, err
	}
	var w wireClaims
	_, err = jwt.NewParser(
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithStrictDecoding(),
		jwt.WithoutClaimsValidation(), // receipts never lapse; no clock needed
	).ParseWithClaims(token, &w, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); typ != TypeReceipt {
			return nil, fmt.Errorf("%w: typ %v, want %s", ErrInvalid, t.Header["typ"], TypeReceipt)
		}
		kid, _ := t.Header["kid"].(string)
		pub, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
		}
		return pub, nil
	})
	if err != nil {
		if errors.Is(err, ErrUnknownKey) {
			return nil, fmt.Errorf("receipt: verify: %w", err)
		}
		return nil, fmt.Errorf("receipt: verify: %w: %w", ErrInvalid, err)
	}
	c := &Claims{
		NegotiationID: w.NegotiationID, Brand: w.Brand, Bouncer: w.Bouncer, Status: w.Status,
		Terms: w.Terms, OfferHash: w.OfferHash, Arena: w.Arena, StartedAt: w.StartedAt, EndedAt: w.EndedAt,
		LastSeq: w.LastSeq, HeadHash: w.HeadHash, Issuer: w.Issuer, JTI: w.ID,
	}
	if w.IssuedAt != nil {
		c.IssuedAt = w.IssuedAt.UTC()
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("receipt: verify: %w", err)
	}
	return c, nil
}

// strictPayload refuses a receipt whose header or claims repeat a key: the
// JWT library keeps the last, a person reading the token may see the first.
func strictPayload(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("receipt: verify: %w: not a compact JWS", ErrInvalid)
	}
	for i, part := range parts[:2] {
		raw, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil {
			return fmt.Errorf("receipt: verify: %w: part %d is not base64url", ErrInvalid, i+1)
		}
		if werr := wire.CheckStrict(raw); werr != nil {
			return fmt.Errorf("receipt: verify: %w: %s", ErrInvalid, werr.Message)
		}
	}
	return nil
}

// PublicKeys maps kid to public key for the Ed25519 entries of a JWKS, as
// Verify reads it (other signed documents of the venue, such as a deal's
// evidence, are checked against the same set). Errors wrap [ErrInvalid].
func PublicKeys(jwks []byte) (map[string]ed25519.PublicKey, error) { return parseJWKS(jwks) }

// parseJWKS maps kid to public key for the Ed25519 entries of a JWKS. A
// set that repeats a key anywhere, or two entries with one kid, is refused:
// which of the two a reader would use is not defined.
func parseJWKS(b []byte) (map[string]ed25519.PublicKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := wire.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("receipt: verify: %w: JWKS is not {\"keys\":[...]}", ErrInvalid)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, raw := range set.Keys {
		j, pub, err := grants.ParseJWK(raw)
		if err != nil {
			continue
		}
		kid := j.Kid
		if kid == "" {
			kid = grants.Thumbprint(j)
		}
		if _, dup := keys[kid]; dup {
			return nil, fmt.Errorf("receipt: verify: %w: JWKS lists kid %q twice", ErrInvalid, kid)
		}
		keys[kid] = pub
	}
	return keys, nil
}
