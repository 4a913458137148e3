package venue

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// loadKey loads the venue's receipt keys: from cfg.KeyFile (created on
// first start) or from the store, so every node signs with the same key.
// The first key signs; retired ones stay in the JWKS so receipts signed
// before a rotation still verify. Stored keys are sealed with
// cfg.KeySealer when one is given; without one the venue warns.
func (s *Server) loadKey(ctx context.Context) error {
	if s.cfg.KeySealer == nil {
		s.log.Warn("the receipt key is stored in the clear: set VENUE_KEY_ENCRYPTION_KEY to seal it (SECURITY.md)")
	}
	if s.cfg.KeyFile != "" {
		keys, err := receipt.LoadOrCreateKeys(s.cfg.KeyFile, s.cfg.KeySealer)
		if err != nil {
			return fmt.Errorf("venue: receipt key %s: %w", s.cfg.KeyFile, err)
		}
		s.setKeys(keys)
		return nil
	}
	cur, err := s.store.VenueKey(ctx, func() ([]byte, error) {
		k, err := receipt.NewKey()
		if err != nil {
			return nil, err
		}
		return s.cfg.KeySealer.Seal(k)
	})
	if err != nil {
		return fmt.Errorf("venue: receipt key from the store: %w", err)
	}
	k, err := receipt.Open(cur, s.cfg.KeySealer)
	if err != nil {
		return fmt.Errorf("venue: receipt key from the store: %w", err)
	}
	keys := []receipt.Key{k}
	all, err := s.store.VenueKeys(ctx)
	if err != nil {
		return fmt.Errorf("venue: receipt keys from the store: %w", err)
	}
	for _, vk := range all {
		old, err := receipt.Open(vk.Key, s.cfg.KeySealer)
		if err != nil {
			return fmt.Errorf("venue: receipt key %d from the store: %w", vk.ID, err)
		}
		if old.KID != k.KID {
			keys = append(keys, old)
		}
	}
	s.setKeys(keys)
	return nil
}

// setKeys makes keys[0] the receipt key of this node (the hub signs with
// it) and publishes all of them in the JWKS.
func (s *Server) setKeys(keys []receipt.Key) {
	s.jwks = receipt.JWKS(keys...)
	s.receipts = receipt.NewCache(keys[0], 0)
	s.hub.SetReceipts(s.receipts)
}

// handleJWKS is GET /.well-known/jwks.json: the public receipt keys with
// their kids, the current one first, then the retired ones.
func (s *Server) handleJWKS(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", s.jwks)
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
