package venue

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/inproc"
)

// Caps are the connection caps of one node (PROTOCOL.md "Limits and close
// codes"). Zero fields take the defaults below; a negative field means no
// cap (load tests).
type Caps struct {
	Connections             int // open connections, REST and sockets, at accept (503 over it)
	SocketsPerAddress       int // WebSockets per client address (IPv6: per /64)
	LobbyPerAgent           int // lobby sockets per agent
	PartyPerNegotiation     int // party sockets per agent per negotiation
	ObserversPerNegotiation int // observer sockets per negotiation
}

// Default caps.
const (
	DefaultConnections             = 10000
	DefaultSocketsPerAddress       = 128
	DefaultLobbyPerAgent           = 4
	DefaultPartyPerNegotiation     = 4
	DefaultObserversPerNegotiation = 200
	// capRetryAfter is the Retry-After of a refused socket: a slot frees
	// when a socket closes, which may be at once.
	capRetryAfter = 5 * time.Second
)

func (c Caps) withDefaults() Caps {
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0 // admission: no cap
		}
	}
	def(&c.Connections, DefaultConnections)
	def(&c.SocketsPerAddress, DefaultSocketsPerAddress)
	def(&c.LobbyPerAgent, DefaultLobbyPerAgent)
	def(&c.PartyPerNegotiation, DefaultPartyPerNegotiation)
	def(&c.ObserversPerNegotiation, DefaultObserversPerNegotiation)
	return c
}

// LobbyQuotas bound the requests pending with one bouncer: from one brand,
// and in all (lobby.Service.PendingPerPair, PendingPerBouncer).
type LobbyQuotas struct {
	PendingPerPair, PendingPerBouncer int
}

// SharedLimiter is a rate limit the nodes of a venue share (package
// admission/redislimit): Allow counts one hit of key and says whether it is
// within the limit, and if not how long until it may be.
type SharedLimiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// sharedLimit puts cfg.RegisterLimiter in front of local (the node's own
// limit): over the shared limit, 429 with its Retry-After; if the shared
// limiter fails, the local one decides.
func (s *Server) sharedLimit(local echo.MiddlewareFunc) echo.MiddlewareFunc {
	if s.cfg.RegisterLimiter == nil {
		return local
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		fallback := local(next)
		return func(c echo.Context) error {
			ok, after, err := s.cfg.RegisterLimiter.Allow(c.Request().Context(), clientKey(c))
			switch {
			case err != nil:
				s.log.Warn("shared registration limit unavailable; this node's applies", "err", err)
				return fallback(c)
			case !ok:
				return httpapi.OverCap(after, "too many registrations from this address; try again later")
			}
			return next(c)
		}
	}
}

// sharedFrame counts one party frame of agentID in negID against
// cfg.FrameLimiter (every node's sockets together); true when there is none
// or it fails (this node's budget still applies).
func (s *Server) sharedFrame(ctx context.Context, agentID, negID string) bool {
	if s.cfg.FrameLimiter == nil {
		return true
	}
	ok, _, err := s.cfg.FrameLimiter.Allow(ctx, agentID+" "+negID)
	if err != nil {
		s.log.Warn("shared frame budget unavailable; this node's applies", "err", err)
		return true
	}
	return ok
}

// Principal routes (revocations and escalation decisions, which need no
// API key) are limited per client address: PrincipalPerMinute a minute,
// bursts of the same size, so a stream of forged tokens costs the store
// little.
const PrincipalPerMinute = 60

// principalLimit is the per-address limit of the principal's routes.
func (s *Server) principalLimit() echo.MiddlewareFunc {
	return middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(PrincipalPerMinute / 60.0), Burst: PrincipalPerMinute, ExpiresIn: 10 * time.Minute,
		}),
		IdentifierExtractor: func(c echo.Context) (string, error) { return clientKey(c), nil },
		DenyHandler: func(echo.Context, string, error) error {
			return httpapi.OverCap(time.Second, "too many revocations from this address; try again in a second")
		},
	})
}

// admits is the node's bookkeeping of held sockets and shared budgets.
type admits struct {
	addresses, lobbies, parties, observers admission.Counter
	budgets                                admission.Budgets
}

// clientKey is the caps' key of the request's client address (echo's
// RealIP: the TCP peer, or X-Forwarded-For from a trusted proxy).
func clientKey(c echo.Context) string { return admission.AddressKey(c.RealIP()) }

// admitSocket takes the caps of a socket before its upgrade: the client
// address's, and kind's (lobby: per agent; party: per agent and
// negotiation; observer: per negotiation). Over a cap it returns a 429
// error with Retry-After; else the release function (call it when the
// socket closes).
func (s *Server) admitSocket(c echo.Context, kind, agentID, negID string) (func(), error) {
	caps := s.cfg.Caps
	var slots []admission.Slot
	if !inproc.Local(c.Request()) { // the house agents have caps of their own
		slots = append(slots, admission.Slot{Counter: &s.admits.addresses, Key: clientKey(c), Max: caps.SocketsPerAddress})
	}
	switch kind {
	case "lobby":
		slots = append(slots, admission.Slot{Counter: &s.admits.lobbies, Key: agentID, Max: caps.LobbyPerAgent})
	case "party":
		slots = append(slots, admission.Slot{Counter: &s.admits.parties, Key: agentID + " " + negID, Max: caps.PartyPerNegotiation})
	case "observer":
		slots = append(slots, admission.Slot{Counter: &s.admits.observers, Key: negID, Max: caps.ObserversPerNegotiation})
	}
	release, refused, ok := admission.AcquireAll(slots...)
	if ok {
		return release, nil
	}
	s.metrics.capRefusals.WithLabelValues(kind).Inc()
	if refused == 0 && !inproc.Local(c.Request()) {
		return nil, httpapi.OverCap(capRetryAfter, "too many sockets from this address (at most %d)", caps.SocketsPerAddress)
	}
	switch kind {
	case "lobby":
		return nil, httpapi.OverCap(capRetryAfter, "too many lobby sockets for this agent (at most %d)", caps.LobbyPerAgent)
	case "party":
		return nil, httpapi.OverCap(capRetryAfter, "too many sockets for this agent in this negotiation (at most %d)", caps.PartyPerNegotiation)
	default:
		return nil, httpapi.OverCap(capRetryAfter, "too many observers of this negotiation (at most %d)", caps.ObserversPerNegotiation)
	}
}

// shareBudget makes cn draw its frames from the budget that every socket
// of agentID in negID shares (so a second socket does not double the rate),
// and returns the function that gives it back.
func (s *Server) shareBudget(cn *conn, agentID, negID string) func() {
	lim, release := s.admits.budgets.Get(agentID + " " + negID)
	cn.rate.Share(lim)
	return release
}

// countPings makes a ping from the client draw on the socket's frame budget
// like any frame: over it, no pong and a refusal (sustained: close 1008).
func (c *conn) countPings() {
	c.ws.SetPingHandler(func(data string) error {
		if ok, closed := c.rate.Allow(); !ok {
			if closed {
				c.closeWith(ClosePolicy, "too many refused frames")
			}
			return nil
		}
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil
		}
		return err
	})
}

// newBudgets sets the shared frame budgets' rate from the limits.
func newBudgets(l Limits) admission.Budgets {
	return admission.Budgets{Rate: rate.Limit(l.FramesPerSecond), Burst: l.FrameBurst}
}
