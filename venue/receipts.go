package venue

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

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
		s.setKey(k)
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
	s.setKey(k)
	return nil
}

// setKey makes k the receipt key of this node: the hub signs with it.
func (s *Server) setKey(k receipt.Key) {
	s.receipts = receipt.NewCache(k, 0)
	s.hub.SetReceipts(s.receipts)
}

// handleJWKS is GET /.well-known/jwks.json: the public receipt key with kid.
func (s *Server) handleJWKS(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", receipt.JWKS(s.receipts.Key()))
}

// handleReceipt is GET /v1/negotiations/:id/receipt -> {"receipt": JWT}.
func (s *Server) handleReceipt(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	if !receipt.Signs(&st) {
		return wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: a receipt is signed when it ends", st.ID, st.Status)
	}
	tok, err := s.receipts.Receipt(&st)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"receipt": tok})
}
