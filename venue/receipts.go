package venue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// loadKey loads the venue's receipt key: from cfg.KeyFile (created on first
// start) or from the store, so every node signs with the same key.
func (s *Server) loadKey(ctx context.Context) error {
	if s.cfg.KeyFile != "" {
		k, err := receipt.LoadOrCreate(s.cfg.KeyFile)
		if err != nil {
			return fmt.Errorf("venue: receipt key %s: %w", s.cfg.KeyFile, err)
		}
		s.key = k
		return nil
	}
	pem, err := s.store.VenueKey(ctx, func() ([]byte, error) {
		k, err := receipt.NewKey()
		if err != nil {
			return nil, err
		}
		return k.PEM(), nil
	})
	if err != nil {
		return fmt.Errorf("venue: receipt key from the store: %w", err)
	}
	k, err := receipt.ParseKey(pem)
	if err != nil {
		return fmt.Errorf("venue: receipt key from the store: %w", err)
	}
	s.key = k
	return nil
}

// handleJWKS is GET /.well-known/jwks.json: the public receipt key with kid.
func (s *Server) handleJWKS(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", receipt.JWKS(s.key))
}

// receiptFor signs the receipt of an ended negotiation (VENUE.md §8). It is
// deterministic (iat = ended_at, jti = the negotiation id, Ed25519), so every
// node and every replay gives the same token; it is cached.
func (s *Server) receiptFor(st negotiation.State) (string, error) {
	if v, ok := s.receipts.Load(st.ID); ok {
		return v.(string), nil
	}
	c := receipt.Claims{
		NegotiationID: st.ID, Brand: st.Brand.AgentID, Bouncer: st.Bouncer.AgentID, Status: st.Status,
		Arena: st.Arena, StartedAt: wire.Time(st.StartedAt), EndedAt: wire.Time(st.EndedAt),
		LastSeq: st.LastSeq, HeadHash: st.HeadHash, IssuedAt: st.EndedAt, JTI: st.ID,
	}
	if st.Status == negotiation.StatusDeal {
		c.Terms, c.OfferHash = st.DealTerms, st.DealOfferHash
	}
	tok, err := receipt.Sign(s.key, c)
	if err != nil {
		return "", err
	}
	s.receipts.Store(st.ID, tok)
	return tok, nil
}

// receiptOf returns the receipt of an ended negotiation, "" if it has not
// ended or cannot be signed (logged).
func (s *Server) receiptOf(negID string) string {
	if v, ok := s.receipts.Load(negID); ok {
		return v.(string)
	}
	st, err := s.store.Negotiation(context.Background(), negID)
	if err != nil || !st.Ended() || st.Status == negotiation.StatusDeclined {
		return ""
	}
	tok, err := s.receiptFor(st)
	if err != nil {
		s.log.Error("sign receipt", "negotiation_id", negID, "err", err)
		return ""
	}
	return tok
}

// endedType is how a stored negotiation_ended frame spells its type (the
// venue builds every transcript frame with encoding/json).
var endedType = []byte(`"type":"` + negotiation.TypeNegotiationEnded + `"`)

// isEnded reports whether a transcript frame is negotiation_ended: a byte
// search first (cheap, almost always false), then the type itself, since
// opaque terms may contain the same bytes.
func isEnded(frame json.RawMessage) bool {
	if !bytes.Contains(frame, endedType) {
		return false
	}
	var h struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(frame, &h) == nil && h.Type == negotiation.TypeNegotiationEnded
}

// handleReceipt is GET /v1/negotiations/:id/receipt -> {"receipt": JWT}.
func (s *Server) handleReceipt(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	if st.Status == negotiation.StatusPending || st.Status == negotiation.StatusLive || st.Status == negotiation.StatusDeclined {
		return wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: a receipt is signed when it ends", st.ID, st.Status)
	}
	tok, err := s.receiptFor(st)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"receipt": tok})
}
