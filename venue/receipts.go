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
	keys, err := s.readKeys(ctx)
	if err != nil {
		return err
	}
	s.setKeys(keys)
	return nil
}

// reloadKeys picks up a rotation (venue rotate-venue-key) without a
// restart: when the signing key changed, the new one signs from now on.
// purgeLoop calls it every purgeEvery; a failure keeps the keys in use.
func (s *Server) reloadKeys(ctx context.Context) {
	keys, err := s.readKeys(ctx)
	if err != nil {
		s.log.Warn("reload receipt keys", "err", err)
		return
	}
	s.keyMu.RLock()
	same := s.receipts != nil && s.receipts.Key().KID == keys[0].KID
	s.keyMu.RUnlock()
	if !same {
		s.setKeys(keys)
		s.log.Info("receipt key rotated", "kid", keys[0].KID)
	}
}

// readKeys reads the receipt keys, the signing one first (see loadKey).
func (s *Server) readKeys(ctx context.Context) ([]receipt.Key, error) {
	if s.cfg.KeyFile != "" {
		keys, err := receipt.LoadOrCreateKeys(s.cfg.KeyFile, s.cfg.KeySealer)
		if err != nil {
			return nil, fmt.Errorf("venue: receipt key %s: %w", s.cfg.KeyFile, err)
		}
		return keys, nil
	}
	cur, err := s.store.VenueKey(ctx, func() ([]byte, error) {
		k, err := receipt.NewKey()
		if err != nil {
			return nil, err
		}
		return s.cfg.KeySealer.Seal(k)
	})
	if err != nil {
		return nil, fmt.Errorf("venue: receipt key from the store: %w", err)
	}
	k, err := receipt.Open(cur, s.cfg.KeySealer)
	if err != nil {
		return nil, fmt.Errorf("venue: receipt key from the store: %w", err)
	}
	keys := []receipt.Key{k}
	all, err := s.store.VenueKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("venue: receipt keys from the store: %w", err)
	}
	for _, vk := range all {
		old, err := receipt.Open(vk.Key, s.cfg.KeySealer)
		if err != nil {
			return nil, fmt.Errorf("venue: receipt key %d from the store: %w", vk.ID, err)
		}
		if old.KID != k.KID {
			keys = append(keys, old)
		}
	}
	return keys, nil
}

// setKeys makes keys[0] the receipt key of this node (the hub signs with
// it) and publishes all of them in the JWKS.
func (s *Server) setKeys(keys []receipt.Key) {
	cache := receipt.NewCache(keys[0], 0)
	s.keyMu.Lock()
	s.jwks = receipt.JWKS(keys...)
	s.receipts = cache
	s.keyMu.Unlock()
	s.hub.SetReceipts(cache)
}

// handleJWKS is GET /.well-known/jwks.json: the public receipt keys with
// their kids, the current one first, then the retired ones.
func (s *Server) handleJWKS(c echo.Context) error {
	s.keyMu.RLock()
	jwks := s.jwks
	s.keyMu.RUnlock()
	return c.Blob(http.StatusOK, "application/json", jwks)
}

// handleReceipt is GET /v1/negotiations/:id/receipt -> {"receipt": JWT,
// "log_index": N} (log_index once the receipt is in the receipt log).
func (s *Server) handleReceipt(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	if !receipt.Signs(&st) {
		return wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: a receipt is signed when it ends", st.ID, st.Status)
	}
	s.keyMu.RLock()
	cache := s.receipts
	s.keyMu.RUnlock()
	body, err := s.receiptBody(c.Request().Context(), &st, cache)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, body)
}
