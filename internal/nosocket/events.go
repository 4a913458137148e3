package nosocket

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	pgstore "github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/wire"
)

// Events is GET /v1/events?after=&limit=: the agent's events from log,
// oldest first (PROTOCOL.md "Without a socket"). Errors: invalid_argument
// for a limit outside 1-events.MaxLimit, another parameter or one given
// twice, not_found for an after that names none of the agent's kept events.
func Events(log events.Store) echo.HandlerFunc {
	return func(c echo.Context) error {
		if werr := wire.QueryOnly(c.Request().URL.RawQuery, "after", "limit"); werr != nil {
			return werr
		}
		limit := events.MaxLimit
		if v := c.QueryParam("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > events.MaxLimit {
				return wire.Errorf(wire.CodeInvalidArgument, "limit is an integer from 1 to %d", events.MaxLimit)
			}
			limit = n
		}
		evs, err := log.After(c.Request().Context(), agentOf(c).ID, c.QueryParam("after"), limit)
		if errors.Is(err, events.ErrUnknownAfter) {
			return wire.Errorf(wire.CodeNotFound, "after names none of your kept events")
		} else if err != nil {
			return err
		}
		if evs == nil {
			evs = []events.Event{}
		}
		return c.JSON(http.StatusOK, map[string]any{"events": evs})
	}
}

// Recorder writes the per-agent event log of a node: what the parties'
// sockets carry of each committed step and every lobby push (ARCHITECTURE.md
// "Packages", events). Set Rooms before the first step commits.
type Recorder struct {
	Events events.Store
	Rooms  *hub.Hub
	Now    func() time.Time
	// Wake tells the webhooks there are new events (when the store wrote
	// them in the step's transaction, behind the Events' back).
	Wake func()
	Log  *slog.Logger
	// written: the store writes each step's events in its transaction
	// (InTx), Committed does not.
	written bool
}

// InTx hands the event log's entries of each step to a store that writes
// them in the step's own transaction (Postgres with its event log on the
// same database, ev an *eventspg.Store: store/postgres SetEvents);
// Committed then leaves them alone.
func (r *Recorder) InTx(st store.Store, ev events.Store) {
	es, ok := st.(interface{ SetEvents(pgstore.EventsOf) })
	if _, pg := ev.(*eventspg.Store); !ok || !pg {
		return
	}
	es.SetEvents(func(st *negotiation.State, out negotiation.Outcome) []events.Event {
		return r.stepEvents(st, out, r.Rooms.OutboundOf)
	})
	r.written = true
}

// Committed appends to the event log what the parties' sockets would
// carry of a committed step, unless the store wrote it with the step
// (InTx). It runs in the hub's Committed hook, once per step across the
// nodes.
func (r *Recorder) Committed(ctx context.Context, st *negotiation.State, out negotiation.Outcome) {
	if r.written {
		if out.Started || len(out.Pushes) > 0 || len(out.Entries) > 0 || len(out.Private) > 0 {
			r.Wake() // the webhooks have new events to deliver
		}
		return
	}
	r.append(ctx, r.stepEvents(st, out, func(st *negotiation.State, frame json.RawMessage, hash string) []byte {
		return r.Rooms.Outbound(ctx, st.ID, frame, hash)
	})...)
}

// stepEvents is the event log's entries of a committed step: what the
// parties' sockets carry of it, its lobby pushes (negotiation_accepted),
// negotiation_started, the transcript frames
// (a party's own negotiation_message excepted: it had the ack) and the
// private frames; outbound makes a transcript frame as sockets carry it.
func (r *Recorder) stepEvents(st *negotiation.State, out negotiation.Outcome, outbound func(*negotiation.State, json.RawMessage, string) []byte) []events.Event {
	now := r.Now()
	parties := []string{st.Brand.AgentID, st.Bouncer.AgentID}
	n := len(out.Pushes) + len(out.Private)
	if out.Started {
		n += len(parties)
	}
	for _, en := range out.Entries {
		n += len(parties)
		if en.Type == negotiation.TypeNegotiationMessage {
			n-- // not to its sender
		}
	}
	evs := make([]events.Event, 0, n) // an Event is 120 bytes: no spare room
	for _, p := range out.Pushes {    // lobby pushes, as Pushed would keep them
		evs = append(evs, events.New(p.To, "", p.Frame, now))
	}
	if out.Started {
		f := st.StartedFrame()
		for _, p := range parties {
			evs = append(evs, events.NewTyped(p, st.ID, negotiation.TypeNegotiationStarted, f, now))
		}
	}
	for _, en := range out.Entries {
		f := outbound(st, en.Frame, en.Hash)
		for _, p := range parties {
			if en.From != p || en.Type != negotiation.TypeNegotiationMessage {
				evs = append(evs, events.NewTyped(p, st.ID, en.Type, f, now))
			}
		}
	}
	for _, p := range out.Private {
		evs = append(evs, events.New(p.To, st.ID, p.Frame, now))
	}
	return evs
}

// Pushed appends a lobby push to its agent's event log (the hub's Pushed
// hook).
func (r *Recorder) Pushed(ctx context.Context, agentID string, frame []byte) {
	r.append(ctx, events.New(agentID, "", frame, r.Now()))
}

func (r *Recorder) append(ctx context.Context, evs ...events.Event) {
	if len(evs) == 0 {
		return
	}
	if err := r.Events.Append(ctx, evs...); err != nil {
		r.Log.Error("event log: append", "events", len(evs), "err", err)
	}
}
