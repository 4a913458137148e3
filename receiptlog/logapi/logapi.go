// Package logapi carries the receipt log over HTTP (PROTOCOL.md "The
// receipt log"): it opens a node's view of the log, queues ended
// negotiations' receipts for it, and serves the log's public routes, its
// part of GET /v1/info and the log_index of GET
// /v1/negotiations/{id}/receipt. The log itself is package receiptlog.
package logapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
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

// ReadsPerSecond is how many requests a second one client address may
// make to the receipt log's routes (bursts of ReadBurst).
const (
	ReadsPerSecond = 20
	ReadBurst      = 100
)

// API is one node's receipt log over HTTP. Mount its routes when the
// router is built; Open it before serving (its handlers use Log).
type API struct {
	// Log is the node's view of the receipt log (nil before Open).
	Log *receiptlog.Log
	// Store is where the log is kept (set by Open when it keeps its own
	// in memory).
	Store  receiptlog.Store
	Logger *slog.Logger
}

// Open opens the receipt log (its keys) on cfg.Store, or, when that is
// nil, on a log of its own in memory beside negs, into which the receipts
// of the negotiations negs has already ended are queued, oldest first (on
// Postgres the migration queued them). A checkpoint exists from the start,
// if only of the empty log.
func (a *API) Open(ctx context.Context, cfg receiptlog.Config, negs store.Store) error {
	own := cfg.Store == nil
	if own {
		cfg.Store = receiptlog.NewMemory(negs.Negotiation, store.ErrNotFound)
	}
	a.Store, a.Logger = cfg.Store, cfg.Logger
	l, err := receiptlog.New(ctx, cfg)
	if err != nil {
		return err
	}
	a.Log = l
	if own {
		ended, err := negs.Negotiations(ctx, store.NegotiationQuery{Statuses: []string{
			negotiation.StatusDeal, negotiation.StatusWalked, negotiation.StatusTurnMissed, negotiation.StatusExpired}})
		if err != nil {
			return err
		}
		for i := len(ended) - 1; i >= 0; i-- { // newest first: oldest first
			if err := cfg.Store.Enqueue(ctx, ended[i].ID); err != nil {
				return err
			}
		}
	}
	_, err = l.Sequence(ctx)
	return err
}

// Ended queues an ended negotiation's receipt for the log and wakes the
// sequencer (called from hub.Config.Committed).
func (a *API) Ended(ctx context.Context, st *negotiation.State) {
	if a.Log == nil || !receipt.Signs(st) {
		return
	}
	if err := a.Store.Enqueue(ctx, st.ID); err != nil {
		a.Logger.Warn("receipt log: enqueue", "negotiation_id", st.ID, "err", err)
	}
	a.Log.Wake()
}

// Mount adds the receipt log's public routes (PROTOCOL.md "The receipt
// log"), limited per client address.
func (a *API) Mount(e *echo.Echo) {
	limit := middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(ReadsPerSecond), Burst: ReadBurst, ExpiresIn: 10 * time.Minute,
		}),
		IdentifierExtractor: func(c echo.Context) (string, error) { return httpapi.ClientKey(c), nil },
		DenyHandler: func(echo.Context, string, error) error {
			return httpapi.OverCap(time.Second, "over %d receipt log requests a second from this address", ReadsPerSecond)
		},
	})
	e.GET("/v1/log/checkpoint", a.handleCheckpoint, limit)
	e.GET("/v1/log/proof/inclusion", a.handleInclusion, limit)
	e.GET("/v1/log/proof/consistency", a.handleConsistency, limit)
	e.GET("/v1/log/entries", a.handleEntries, limit)
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
// (a signed note, text/plain), 404 before the first. It takes no query
// parameter: any is invalid_argument.
func (a *API) handleCheckpoint(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery); werr != nil {
		return werr
	}
	msg, _, err := a.Log.Checkpoint(c.Request().Context())
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
// Another parameter, or one given twice, is invalid_argument.
func (a *API) handleInclusion(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "negotiation_id", "tree_size"); werr != nil {
		return werr
	}
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
	idx, size, hashes, err := a.Log.InclusionProof(c.Request().Context(), id, size)
	if err != nil {
		return logError(err)
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=60")
	return c.JSON(http.StatusOK, receiptlog.InclusionProof{LeafIndex: idx, TreeSize: size, Hashes: hashes})
}

// handleConsistency is GET /v1/log/proof/consistency?first=M&second=N.
// Another parameter, or one given twice, is invalid_argument.
func (a *API) handleConsistency(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "first", "second"); werr != nil {
		return werr
	}
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
	hashes, err := a.Log.ConsistencyProof(c.Request().Context(), first, second)
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
// receiptlog.MaxEntries). Another parameter, or one given twice, is
// invalid_argument.
func (a *API) handleEntries(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "start", "end"); werr != nil {
		return werr
	}
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
	es, err := a.Log.Entries(c.Request().Context(), start, end)
	if err != nil {
		return logError(err)
	}
	if int64(len(es)) == end-start {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": es})
}

// Info is the receipt log's part of GET /v1/info (nil before Open); base
// is the node's public URL.
func (a *API) Info(base string) map[string]any {
	if a.Log == nil {
		return nil
	}
	cur, retired := a.Log.VerifierKeys()
	if retired == nil {
		retired = []receiptlog.VerifierKeyInfo{}
	}
	return map[string]any{
		"log_verifier_key": cur, "log_retired_keys": retired, "log_origin": a.Log.Origin(),
		"log_checkpoint_uri": strings.TrimRight(base, "/") + "/v1/log/checkpoint",
	}
}

// ReceiptBody is the body of GET /v1/negotiations/{id}/receipt: the
// logged receipt and its log_index once it is in the log, else the receipt
// signed now by cache.
func (a *API) ReceiptBody(ctx context.Context, st *negotiation.State, cache *receipt.Cache) (map[string]any, error) {
	if a.Log != nil {
		idx, tok, err := a.Log.Index(ctx, st.ID)
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

// RotateKey is the admin listener's POST /log/rotate-key: a fresh log key
// (sealed with sealer) signs from now on, the current one retired at the
// log's size (receiptlog.Rotate), and a checkpoint is signed with the new
// key at once. It is how `venue log rotate-key --admin-url` reaches the
// embedded default's log, which lives in the node's memory; on Postgres any
// node's will do. 200 {"key_id","log_verifier_key"}; 503 before Open.
func (a *API) RotateKey(sealer *receipt.Sealer, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(code int, v any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(v)
		}
		fail := func(err error) {
			answer(http.StatusInternalServerError, map[string]any{"error": map[string]string{"code": string(wire.CodeInternal), "message": err.Error()}})
		}
		if a.Log == nil {
			answer(http.StatusServiceUnavailable, map[string]any{"error": map[string]string{"code": string(wire.CodeUnavailable), "message": "the receipt log is not open"}})
			return
		}
		k, err := receiptlog.Rotate(r.Context(), a.Store, sealer, now())
		if err != nil {
			fail(err)
			return
		}
		if _, err := a.Log.Sequence(r.Context()); err != nil {
			fail(err)
			return
		}
		cur, _ := a.Log.VerifierKeys()
		answer(http.StatusOK, map[string]any{"key_id": k.ID, "log_verifier_key": cur})
	})
}
