package venue

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// loadKey loads the receipt key ring (package keyring): from cfg.KeyFile or
// from the store, so every node signs with the same key. Without
// cfg.KeySealer the venue warns.
func (s *Server) loadKey(ctx context.Context) error {
	if s.cfg.KeySealer == nil {
		s.log.Warn("the receipt key is stored in the clear: set VENUE_KEY_ENCRYPTION_KEY to seal it (SECURITY.md)")
	}
	return s.keys.Load(ctx)
}

// reloadKeys picks up a rotation (venue rotate-venue-key) without a
// restart; purgeLoop calls it every purgeEvery. A failure keeps the keys
// in use.
func (s *Server) reloadKeys(ctx context.Context) {
	rotated, err := s.keys.Reload(ctx)
	if err != nil {
		s.log.Warn("reload receipt keys", "err", err)
	} else if rotated {
		s.log.Info("receipt key rotated", "kid", s.keys.Signer().Key().KID)
	}
}

// handleJWKS is GET /.well-known/jwks.json: the public receipt keys with
// their kids, the current one first, then the retired ones.
func (s *Server) handleJWKS(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", s.keys.JWKS())
}

// handleReceipt is GET /v1/negotiations/:id/receipt -> {"receipt": JWT,
// "log_index": N} (log_index once the receipt is in the receipt log).
func (s *Server) handleReceipt(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	if cut, ok := s.spectatorCutoff(c, &st); ok && st.EndedAt.After(cut) {
		return wire.Errorf(wire.CodeInvalidState, "negotiation %s is live (as spectators see it, %s behind): a receipt is signed when it ends", st.ID, s.cfg.ObserveDelay)
	}
	if !receipt.Signs(&st) {
		return wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: a receipt is signed when it ends", st.ID, st.Status)
	}
	body, err := s.rlog.ReceiptBody(c.Request().Context(), &st, s.keys.Signer())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, body)
}
