package venue

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// LogReadsPerSecond is how many requests a second one client address may
// make to the receipt log's routes (bursts of LogReadBurst).
const (
	LogReadsPerSecond = 20
	LogReadBurst      = 100
)

// logOrigin is the receipt log's origin: cfg.LogOrigin or the default of
// the public URL (PROTOCOL.md "The receipt log").
func (s *Server) logOrigin() string {
	if s.cfg.LogOrigin != "" {
		return s.cfg.LogOrigin
	}
	return receiptlog.DefaultOrigin(s.httpBase())
}

// startLog opens the receipt log (its keys) once the receipt key is
// loaded; Start runs its sequencer.
func (s *Server) startLog(ctx context.Context) error {
	st, own := s.cfg.ReceiptLog, false
	if st == nil {
		st, own = receiptlog.NewMemory(s.store.Negotiation, store.ErrNotFound), true
		s.cfg.ReceiptLog = st
	}
	l, err := receiptlog.New(ctx, receiptlog.Config{
		Store: st, Origin: s.logOrigin(), Sealer: s.cfg.KeySealer, Clock: s.clock, Logger: s.log,
		Receipt: func(st *negotiation.State) (string, error) { return s.keys.Signer().Receipt(st) },
	})
	if err != nil {
		return err
	}
	s.rlog = l
	// Receipts made before the log existed are appended in the order they
	// were made: on Postgres the migration queued them; a log of our own in
	// memory queues the store's here.
	if own {
		ended, err := s.store.Negotiations(ctx, store.NegotiationQuery{Statuses: []string{
			negotiation.StatusDeal, negotiation.StatusWalked, negotiation.StatusTurnMissed, negotiation.StatusExpired}})
		if err != nil {
			return err
		}
		for i := len(ended) - 1; i >= 0; i-- { // newest first: oldest first
			if err := st.Enqueue(ctx, ended[i].ID); err != nil {
				return err
			}
		}
	}
	// A checkpoint exists from the start, if only of the empty log.
	if _, err := l.Sequence(ctx); err != nil {
		return err
	}
	return nil
}

// logEnded queues an ended negotiation's receipt for the log and wakes the
// sequencer (hub.Config.Committed).
func (s *Server) logEnded(ctx context.Context, st *negotiation.State) {
	if s.rlog == nil || !receipt.Signs(st) {
		return
	}
	if err := s.cfg.ReceiptLog.Enqueue(ctx, st.ID); err != nil {
		s.log.Warn("receipt log: enqueue", "negotiation_id", st.ID, "err", err)
	}
	s.rlog.Wake()
}

// ReceiptLog is the node's view of the receipt log (nil before Start).
func (s *Server) ReceiptLog() *receiptlog.Log { return s.rlog }

// mountLog adds the receipt log's public routes (PROTOCOL.md "The receipt
// log"), limited per client address.
func (s *Server) mountLog(e *echo.Echo) {
	limit := middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(LogReadsPerSecond), Burst: LogReadBurst, ExpiresIn: 10 * time.Minute,
		}),
		IdentifierExtractor: func(c echo.Context) (string, error) { return clientKey(c), nil },
		DenyHandler: func(echo.Context, string, error) error {
			return httpapi.OverCap(time.Second, "over %d receipt log requests a second from this address", LogReadsPerSecond)
		},
	})
	e.GET("/v1/log/checkpoint", s.handleCheckpoint, limit)
	e.GET("/v1/log/proof/inclusion", s.handleInclusion, limit)
	e.GET("/v1/log/proof/consistency", s.handleConsistency, limit)
	e.GET("/v1/log/entries", s.handleEntries, limit)
	if err := s.mountPages(e); err != nil {
		panic(err) // the embedded documents render: a test renders them
	}
}

// logError maps the log's errors to the wire's.
func logError(err error) error {
	switch {
	case errors.Is(err, receiptlog.ErrNotFound):
		return wire.Errorf(wire.CodeNotFound, "not in the receipt log (yet): a receipt is logged within a few seconds of the ending")
	case errors.Is(err, receiptlog.ErrBadRequest), errors.Is(err, receiptlog.ErrSize):
		return wire.Errorf(wire.CodeInvalidArgument, "%s", err.Error())
	}
	return err
}

// queryInt reads an optional non-negative integer query parameter (def
// when absent); invalid_argument when it is not one.
func queryInt(c echo.Context, name string, def int64) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "%s=%q is not a non-negative integer", name, v)
	}
	return n, nil
}

// handleCheckpoint is GET /v1/log/checkpoint: the latest signed checkpoint
// (a signed note, text/plain), 404 before the first.
func (s *Server) handleCheckpoint(c echo.Context) error {
	msg, _, err := s.rlog.Checkpoint(c.Request().Context())
	if err != nil {
		return err
	}
	if msg == nil {
		return wire.Errorf(wire.CodeNotFound, "the receipt log has no checkpoint yet")
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=1")
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", msg)
}

// handleInclusion is GET /v1/log/proof/inclusion?negotiation_id=ID[&tree_size=N].
func (s *Server) handleInclusion(c echo.Context) error {
	id := c.QueryParam("negotiation_id")
	if id == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "negotiation_id is required")
	}
	size, err := queryInt(c, "tree_size", 0)
	if err != nil {
		return err
	}
	if c.QueryParam("tree_size") != "" && size == 0 {
		return wire.Errorf(wire.CodeInvalidArgument, "tree_size must be at least 1")
	}
	idx, size, hashes, err := s.rlog.InclusionProof(c.Request().Context(), id, size)
	if err != nil {
		return logError(err)
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=60")
	return c.JSON(http.StatusOK, receiptlog.InclusionProof{LeafIndex: idx, TreeSize: size, Hashes: hashes})
}

// handleConsistency is GET /v1/log/proof/consistency?first=M&second=N.
func (s *Server) handleConsistency(c echo.Context) error {
	if c.QueryParam("first") == "" || c.QueryParam("second") == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "first and second are required")
	}
	first, err := queryInt(c, "first", 0)
	if err != nil {
		return err
	}
	second, err := queryInt(c, "second", 0)
	if err != nil {
		return err
	}
	hashes, err := s.rlog.ConsistencyProof(c.Request().Context(), first, second)
	if err != nil {
		return logError(err)
	}
	if hashes == nil {
		hashes = [][]byte{}
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSON(http.StatusOK, receiptlog.ConsistencyProof{First: first, Second: second, Hashes: hashes})
}

// handleEntries is GET /v1/log/entries?start=&end= (end exclusive, at most
// receiptlog.MaxEntries).
func (s *Server) handleEntries(c echo.Context) error {
	if c.QueryParam("start") == "" || c.QueryParam("end") == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "start and end are required")
	}
	start, err := queryInt(c, "start", 0)
	if err != nil {
		return err
	}
	end, err := queryInt(c, "end", 0)
	if err != nil {
		return err
	}
	es, err := s.rlog.Entries(c.Request().Context(), start, end)
	if err != nil {
		return logError(err)
	}
	if int64(len(es)) == end-start {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": es})
}

// logInfo is the receipt log's part of GET /v1/info.
func (s *Server) logInfo() map[string]any {
	if s.rlog == nil {
		return nil
	}
	cur, retired := s.rlog.VerifierKeys()
	if retired == nil {
		retired = []receiptlog.VerifierKeyInfo{}
	}
	base := s.httpBase()
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return map[string]any{
		"log_verifier_key": cur, "log_retired_keys": retired, "log_origin": s.rlog.Origin(),
		"log_checkpoint_uri": base + "/v1/log/checkpoint",
	}
}

// receiptBody is GET /v1/negotiations/{id}/receipt: the logged receipt
// and its log_index once it is in the log, else the receipt signed now.
func (s *Server) receiptBody(ctx context.Context, st *negotiation.State, cache *receipt.Cache) (map[string]any, error) {
	if s.rlog != nil {
		idx, tok, err := s.rlog.Index(ctx, st.ID)
		if err == nil {
			return map[string]any{"receipt": tok, "log_index": idx}, nil
		}
		if !errors.Is(err, receiptlog.ErrNotFound) {
			return nil, err
		}
	}
	tok, err := cache.Receipt(st)
	if err != nil {
		return nil, err
	}
	return map[string]any{"receipt": tok}, nil
}

// handleRotateLogKey is the admin listener's POST /log/rotate-key: a fresh
// log key signs from now on, the current one retired at the log's size
// (receiptlog.Rotate), and a checkpoint is signed with the new key at once.
// It is how `venue log rotate-key` reaches the embedded default's log,
// which lives in this process; on Postgres any node's will do.
// 200 {"key_id","log_verifier_key"}.
func (s *Server) handleRotateLogKey(c echo.Context) error {
	if s.rlog == nil {
		return wire.Errorf(wire.CodeUnavailable, "the receipt log is not started")
	}
	ctx := c.Request().Context()
	k, err := receiptlog.Rotate(ctx, s.cfg.ReceiptLog, s.cfg.KeySealer, s.clock.Now())
	if err != nil {
		return err
	}
	if _, err := s.rlog.Sequence(ctx); err != nil {
		return err
	}
	cur, _ := s.rlog.VerifierKeys()
	return c.JSON(http.StatusOK, map[string]any{"key_id": k.ID, "log_verifier_key": cur})
}
