package deliveries

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// TypeEvidence is the JWS header typ of a deal's evidence.
const TypeEvidence = "venue-evidence+jwt"

// ErrEvidence is wrapped by every error of VerifyEvidence about the token;
// receipt.ErrUnknownKey when its kid is not in the JWKS.
var ErrEvidence = errors.New("deliveries: evidence does not verify")

// GrantClaims are the claims of the grant a binding frame was checked
// against (DELEGATION.md "The grant token"), and the token itself, signed by
// the agent's principal.
type GrantClaims struct {
	Issuer    string          `json:"iss"` // the principal key's thumbprint
	Subject   string          `json:"sub"` // the agent
	JTI       string          `json:"jti"`
	IssuedAt  string          `json:"iat"`
	NotBefore string          `json:"nbf,omitempty"`
	ExpiresAt string          `json:"exp"`
	Scope     json.RawMessage `json:"grant"`
	Token     string          `json:"token"`
}

// Binding is one binding frame of the transcript and the grant that
// applied to it (nil: none did, the frame landed without one).
type Binding struct {
	Seq       int64        `json:"seq"`
	By        string       `json:"by"`
	FrameType string       `json:"frame_type"`
	Grant     *GrantClaims `json:"grant"`
}

// Evidence is what a deal's evidence attests (PROTOCOL.md "Evidence").
type Evidence struct {
	NegotiationID string            `json:"negotiation_id"`
	Receipt       string            `json:"receipt"`    // the negotiation's receipt (compact JWS)
	Transcript    []receipt.Entry   `json:"transcript"` // every entry, seq 1 on
	Grants        []Binding         `json:"grants"`     // one per binding frame, in seq order
	Deliveries    []json.RawMessage `json:"deliveries"` // as the wire shows them, oldest first
	Settlement    json.RawMessage   `json:"settlement"` // as GET /v1/settlements lists it; null for none

	Issuer   string    `json:"-"`
	IssuedAt time.Time `json:"-"`
	JTI      string    `json:"-"`
}

type evidenceClaims struct {
	jwt.RegisteredClaims
	Evidence
}

// binding frame types (PROTOCOL.md "The eleven frames": checked against a grant).
var bindingFrames = map[string]bool{
	negotiation.TypeProposeTerms: true, negotiation.TypeCounterTerms: true, negotiation.TypeAccept: true,
}

// Evidence builds and signs the evidence of negotiation negID for agentID,
// one of its parties. Errors: not_found (no such negotiation, or agentID
// is not a party: the venue does not say which); invalid_state (it has not
// ended: no receipt yet).
func (s *Service) Evidence(ctx context.Context, agentID, negID string) (string, error) {
	st, err := s.deal(ctx, negID)
	if err != nil {
		return "", err
	}
	if agentID == "" || !st.IsParty(agentID) {
		return "", wire.Errorf(wire.CodeNotFound, "no negotiation %s", negID)
	}
	if !receipt.Signs(&st) {
		return "", wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: evidence follows its ending", negID, st.Status)
	}
	signer := s.Signer()
	rcpt, err := signer.Receipt(&st)
	if err != nil {
		return "", err
	}
	entries, err := s.Venue.Transcript(ctx, negID, 0)
	if err != nil {
		return "", err
	}
	ev := Evidence{NegotiationID: negID, Receipt: rcpt, Transcript: make([]receipt.Entry, len(entries)),
		Grants: []Binding{}, Deliveries: []json.RawMessage{}, Settlement: json.RawMessage("null")}
	for i, e := range entries {
		ev.Transcript[i] = receipt.Entry{Seq: e.Seq, Frame: e.Frame, Hash: e.Hash}
	}
	if ev.Grants, err = s.bindings(ctx, &st, entries); err != nil {
		return "", err
	}
	d := DealOf(&st)
	rec, err := s.record(ctx, d)
	if err != nil {
		return "", err
	}
	for i := range rec.Deliveries {
		b, _ := json.Marshal(rec.Deliveries[i].View())
		ev.Deliveries = append(ev.Deliveries, b)
	}
	if d.Settles() {
		list, err := s.Venue.Settlements(ctx, st.Brand.AgentID)
		if err != nil {
			return "", err
		}
		for _, in := range list {
			if in.NegotiationID == negID {
				ev.Settlement, _ = json.Marshal(Item(in, &rec))
			}
		}
	}
	ev.IssuedAt = s.Clock.Now()
	return SignEvidence(signer.Key(), ev)
}

// bindings finds, for each binding frame of the transcript, the grant that
// applied when it landed (DELEGATION.md "Which grant applies"): the
// sender's grants uploaded by then and not revoked by then, signed by its
// principal key.
func (s *Service) bindings(ctx context.Context, st *negotiation.State, entries []negotiation.Entry) ([]Binding, error) {
	held := map[string]grants.Held{}
	for _, id := range []string{st.Brand.AgentID, st.Bouncer.AgentID} {
		a, err := s.Venue.Agent(ctx, id)
		if err != nil {
			return nil, err
		}
		recs, err := s.Venue.Grants(ctx, id)
		if err != nil {
			return nil, err
		}
		held[id] = grants.Held{AgentID: id, Thumbprint: a.PrincipalThumbprint, Records: recs}
	}
	out := []Binding{}
	for _, e := range entries {
		var f struct {
			Type      string `json:"type"`
			FrameType string `json:"frame_type"`
			From      string `json:"from"`
			At        string `json:"at"`
		}
		if json.Unmarshal(e.Frame, &f) != nil || f.Type != negotiation.TypeNegotiationMessage || !bindingFrames[f.FrameType] {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f.At)
		if err != nil {
			return nil, fmt.Errorf("deliveries: transcript of %s: seq %d: at %q: %w", st.ID, e.Seq, f.At, err)
		}
		b := Binding{Seq: e.Seq, By: f.From, FrameType: f.FrameType}
		h, ok := held[f.From]
		if ok {
			asOf := grants.Held{AgentID: h.AgentID, Thumbprint: h.Thumbprint}
			for _, r := range h.Records {
				if r.CreatedAt.After(at) {
					continue
				}
				if r.RevokedAt.After(at) {
					r.RevokedAt = time.Time{}
				}
				asOf.Records = append(asOf.Records, r)
			}
			au, err := grants.NewAuthority(asOf)
			if err != nil {
				return nil, err
			}
			if g := au.Pick(f.From, st.ID, at).Grant; g != nil {
				for _, r := range asOf.Records {
					if r.JTI == g.JTI && r.Issuer == g.Issuer {
						b.Grant = &GrantClaims{Issuer: r.Issuer, Subject: r.AgentID, JTI: r.JTI, IssuedAt: wire.Time(r.IssuedAt),
							ExpiresAt: wire.Time(r.ExpiresAt), Scope: r.Scope, Token: r.Token}
						if !r.NotBefore.IsZero() {
							b.Grant.NotBefore = wire.Time(r.NotBefore)
						}
					}
				}
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// SignEvidence signs ev with the venue key: header {"alg":"EdDSA",
// "kid":k.KID,"typ":"venue-evidence+jwt"}, claims iss ("venue" when
// ev.Issuer is ""), iat (ev.IssuedAt, required), jti (128 random bits when
// ev.JTI is "") and those of Evidence. The compact token is the body of
// GET /v1/negotiations/{id}/evidence.
func SignEvidence(k receipt.Key, ev Evidence) (string, error) {
	if k.Public() == nil || k.KID == "" {
		return "", fmt.Errorf("deliveries: sign evidence: %w: no valid key", grants.ErrBadKey)
	}
	if ev.IssuedAt.IsZero() {
		return "", fmt.Errorf("deliveries: sign evidence of %s: issued-at is required", ev.NegotiationID)
	}
	if ev.Issuer == "" {
		ev.Issuer = receipt.DefaultIssuer
	}
	if ev.JTI == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		ev.JTI = base64.RawURLEncoding.EncodeToString(b[:])
	}
	c := evidenceClaims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: ev.Issuer, IssuedAt: jwt.NewNumericDate(ev.IssuedAt), ID: ev.JTI},
		Evidence:         ev,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, &c)
	t.Header["typ"] = TypeEvidence
	t.Header["kid"] = k.KID
	s, err := t.SignedString(k.Private)
	if err != nil {
		return "", fmt.Errorf("deliveries: sign evidence of %s: %w", ev.NegotiationID, err)
	}
	return s, nil
}

// VerifyEvidence checks a deal's evidence offline against the venue's JWKS
// (PROTOCOL.md "Evidence"): the token's signature (alg EdDSA, typ
// venue-evidence+jwt, a kid of the set); the receipt inside it (receipt.
// Verify against the same set) names the same negotiation; the transcript
// is the whole chain the receipt commits to (receipt.VerifyTranscript);
// every binding names a binding frame of the transcript by its sender; the
// deliveries and the settlement name the negotiation, the settlement its
// parties. It returns the evidence and the receipt's claims. Errors wrap
// ErrEvidence, receipt.ErrUnknownKey, receipt.ErrInvalid (the receipt) or
// receipt.ErrTranscript.
func VerifyEvidence(token string, jwks []byte) (*Evidence, *receipt.Claims, error) {
	keys, err := receipt.PublicKeys(jwks)
	if err != nil {
		return nil, nil, err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrEvidence, fmt.Sprintf(format, a...))
	}
	if err := strictToken(token); err != nil {
		return nil, nil, bad("%v", err)
	}
	var c evidenceClaims
	_, err = jwt.NewParser(
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithoutClaimsValidation(), // evidence never lapses
	).ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); typ != TypeEvidence {
			return nil, fmt.Errorf("%w: typ %v, want %s", ErrEvidence, t.Header["typ"], TypeEvidence)
		}
		kid, _ := t.Header["kid"].(string)
		pub, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("%w %q", receipt.ErrUnknownKey, kid)
		}
		return pub, nil
	})
	if err != nil {
		if errors.Is(err, receipt.ErrUnknownKey) {
			return nil, nil, fmt.Errorf("deliveries: verify evidence: %w", err)
		}
		return nil, nil, bad("%v", err)
	}
	ev := c.Evidence
	rc0 := c.RegisteredClaims
	ev.Issuer, ev.JTI = rc0.Issuer, rc0.ID
	if rc0.IssuedAt != nil {
		ev.IssuedAt = rc0.IssuedAt.UTC()
	}
	rc, err := receipt.Verify(ev.Receipt, jwks)
	if err != nil {
		return nil, nil, fmt.Errorf("deliveries: verify evidence: the receipt: %w", err)
	}
	if rc.NegotiationID != ev.NegotiationID {
		return nil, nil, bad("the receipt is of %s, the evidence of %s", rc.NegotiationID, ev.NegotiationID)
	}
	if err := receipt.VerifyTranscript(rc, ev.Transcript); err != nil {
		return nil, nil, fmt.Errorf("deliveries: verify evidence: %w", err)
	}
	if err := checkBindings(&ev); err != nil {
		return nil, nil, bad("%v", err)
	}
	for i, raw := range ev.Deliveries {
		var d struct {
			NegotiationID string `json:"negotiation_id"`
		}
		if json.Unmarshal(raw, &d) != nil || d.NegotiationID != ev.NegotiationID {
			return nil, nil, bad("delivery %d is not of %s", i+1, ev.NegotiationID)
		}
	}
	if len(ev.Settlement) > 0 && string(ev.Settlement) != "null" {
		var stl struct {
			NegotiationID string `json:"negotiation_id"`
			Payer         string `json:"payer"`
			Payee         string `json:"payee"`
		}
		if json.Unmarshal(ev.Settlement, &stl) != nil || stl.NegotiationID != ev.NegotiationID ||
			stl.Payer != rc.Brand || stl.Payee != rc.Bouncer {
			return nil, nil, bad("the settlement is not the brand's payment to the bouncer of %s", ev.NegotiationID)
		}
	}
	return &ev, rc, nil
}

// checkBindings: each binding is a binding frame of the transcript, by its
// sender, each binding frame listed once, and each grant is the sender's.
func checkBindings(ev *Evidence) error {
	frames := map[int64]Binding{}
	for _, e := range ev.Transcript {
		var f struct {
			Type      string `json:"type"`
			FrameType string `json:"frame_type"`
			From      string `json:"from"`
		}
		if json.Unmarshal(e.Frame, &f) == nil && f.Type == negotiation.TypeNegotiationMessage && bindingFrames[f.FrameType] {
			frames[e.Seq] = Binding{Seq: e.Seq, By: f.From, FrameType: f.FrameType}
		}
	}
	if len(ev.Grants) != len(frames) {
		return fmt.Errorf("%d bindings for %d binding frames", len(ev.Grants), len(frames))
	}
	for _, b := range ev.Grants {
		f, ok := frames[b.Seq]
		if !ok || f.By != b.By || f.FrameType != b.FrameType {
			return fmt.Errorf("binding of seq %d does not match the transcript", b.Seq)
		}
		delete(frames, b.Seq)
		if b.Grant != nil && b.Grant.Subject != b.By {
			return fmt.Errorf("the grant of seq %d is %s's, not the sender's", b.Seq, b.Grant.Subject)
		}
	}
	return nil
}

// strictToken refuses a token whose header or claims repeat a key (the
// JWT library keeps the last; a reader may see the first).
func strictToken(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a compact JWS")
	}
	for i, part := range parts[:2] {
		raw, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil {
			return fmt.Errorf("part %d is not base64url", i+1)
		}
		if werr := wire.CheckStrict(raw); werr != nil {
			return errors.New(werr.Message)
		}
	}
	return nil
}
