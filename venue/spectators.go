package venue

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/internal/wsconn"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/spectate"
)

// spectatorCutoff says whether this request reads st behind the parties
// (spectate.Cutoff with Config.ObserveDelay), and the moment it shows: a
// party authenticated with its Bearer key reads it as it is.
func (s *Server) spectatorCutoff(c echo.Context, st *negotiation.State) (time.Time, bool) {
	cut, ok := spectate.Cutoff(st, s.clock.Now(), s.cfg.ObserveDelay)
	if !ok {
		return cut, false
	}
	if key, _ := socketKey(c); key != "" {
		if a, err := s.dir.Authenticate(c.Request().Context(), key); err == nil && (a.ID == st.Brand.AgentID || a.ID == st.Bouncer.AgentID) {
			return cut, false
		}
	}
	return cut, true
}

// delayedView answers GET /v1/negotiations/:id with the view as it stood
// at cut, and delayed_seconds.
func (s *Server) delayedView(c echo.Context, st negotiation.State, cut time.Time) error {
	entries, err := s.store.Transcript(c.Request().Context(), st.ID, 0)
	if err != nil {
		return err
	}
	then := spectate.AsOf(st, entries, cut)
	v := then.View()
	v["delayed_seconds"] = int64(s.cfg.ObserveDelay / time.Second)
	return c.JSON(http.StatusOK, v)
}

// observerDelay is the delay of an observer socket about to open, and
// the seq it replays after: none (since itself) unless the negotiation is
// read behind the parties; then its negotiation_started is the room at the
// cutoff, and when since asks for nothing the replay starts at the
// cutoff's last seq, so nothing committed since is skipped.
func (s *Server) observerDelay(ctx context.Context, st *negotiation.State, since int64) (observerDelay, int64, error) {
	cut, ok := spectate.Cutoff(st, s.clock.Now(), s.cfg.ObserveDelay)
	if !ok {
		return observerDelay{}, since, nil
	}
	entries, err := s.store.Transcript(ctx, st.ID, 0)
	if err != nil {
		return observerDelay{}, 0, err
	}
	then := spectate.AsOf(*st, entries, cut)
	if since < 0 || since > then.LastSeq {
		since = then.LastSeq
	}
	return observerDelay{s: s, started: then.StartedFrame()}, since, nil
}

// observerDelay puts a spectate.Delayed in front of an observer's socket
// (started nil: nothing).
type observerDelay struct {
	s       *Server
	started []byte
}

// wrap returns the transport of the socket cn, whose context is ctx.
func (o observerDelay) wrap(ctx context.Context, cn *wsconn.Conn) hub.Transport {
	if o.started == nil {
		return cn
	}
	d := &spectate.Delayed{T: cn, Delay: o.s.cfg.ObserveDelay, Clock: o.s.clock, Started: func() []byte { return o.started }}
	go d.Run(ctx)
	return d
}

// handleWatchers is GET /v1/negotiations/:id/watchers: how many observer
// sockets of the negotiation are open on every node (PROTOCOL.md "Pages").
func (s *Server) handleWatchers(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	n, err := s.watchers.Count(c.Request().Context(), st.ID)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.JSON(http.StatusOK, map[string]any{"negotiation_id": st.ID, "watchers": n})
}
