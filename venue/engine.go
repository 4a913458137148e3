package venue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/timers"
)

// engine is one frame's way through (ARCHITECTURE.md): a room step committed
// by the store, its events published on the bus, its next clock armed.
type engine struct {
	store  store.Store
	bus    bus.Bus
	timers timers.Timers
	clock  clock.Clock
	log    *slog.Logger
}

// envelope is what travels on a negotiation's bus topic. It is encoded as
// one header line "KIND SEQ HASH FROM TO" ("-" for an empty field; ids and
// hashes hold no spaces) and the frame bytes after it, so a hop costs no
// JSON work.
type envelope struct {
	Kind  string          // "e" transcript entry, "p" private, "t" thinking
	Seq   int64           // entries
	Hash  string          // entries
	From  string          // entries (negotiation_message) and thinking
	To    string          // private
	Frame json.RawMessage // the frame as sent
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e envelope) encode() []byte {
	head := e.Kind + " " + strconv.FormatInt(e.Seq, 10) + " " + orDash(e.Hash) + " " + orDash(e.From) + " " + orDash(e.To) + "\n"
	b := make([]byte, 0, len(head)+len(e.Frame))
	return append(append(b, head...), e.Frame...)
}

// decodeEnvelope parses encode's output; ok is false for anything else.
func decodeEnvelope(b []byte) (e envelope, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return e, false
	}
	f := strings.Split(string(b[:i]), " ")
	if len(f) != 5 {
		return e, false
	}
	seq, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return e, false
	}
	undash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	return envelope{Kind: f[0], Seq: seq, Hash: undash(f[2]), From: undash(f[3]), To: undash(f[4]), Frame: b[i+1:]}, true
}

var _ lobby.Rooms = (*engine)(nil)

// Create implements lobby.Rooms.
func (e *engine) Create(ctx context.Context, st negotiation.State) error {
	if err := e.store.CreateNegotiation(ctx, st); err != nil {
		return err
	}
	return e.timers.Schedule(ctx, st.ID, st.NextWake())
}

// Update implements lobby.Rooms: store.Update, then publish and re-arm.
func (e *engine) Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	return e.apply(ctx, id, step, nil)
}

// apply is Update with reply called after the commit and before the publish,
// so a sender's message_ack precedes what its frame caused (a deal's
// negotiation_ended, say).
func (e *engine) apply(ctx context.Context, id string, step store.Step, reply func(negotiation.Outcome, error)) (negotiation.State, negotiation.Outcome, error) {
	start := time.Now()
	var prevWake time.Time
	st, out, err := e.store.Update(ctx, id, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		prevWake = st.NextWake()
		return step(tx, st)
	})
	metricStoreLatency.Observe(time.Since(start).Seconds())
	if reply != nil {
		reply(out, err)
	}
	if out.Changed() {
		e.publish(ctx, st, out)
		// A wake no later than the state's next clock is always armed. When
		// the next clock moved later (every move restarts the turn clock),
		// the armed wake fires early, finds nothing due and re-arms (fire):
		// one timer write per clock that comes due, not one per frame.
		if next := st.NextWake(); prevWake.IsZero() || (!next.IsZero() && next.Before(prevWake)) {
			if terr := e.timers.Schedule(ctx, id, next); terr != nil {
				e.log.Error("arm timer", "negotiation_id", id, "err", terr)
			}
		}
	}
	return st, out, err
}

// Push implements lobby.Rooms.
func (e *engine) Push(ctx context.Context, agentID string, frame json.RawMessage) {
	if err := e.bus.Publish(ctx, bus.AgentTopic(agentID), frame); err != nil {
		e.log.Error("push to lobby", "agent_id", agentID, "err", err)
	}
}

func (e *engine) publish(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	topic := bus.NegotiationTopic(st.ID)
	for _, en := range out.Entries {
		if en.Type == negotiation.TypeNegotiationEnded {
			metricOutcomes.WithLabelValues(st.Status).Inc()
			e.log.Info("negotiation ended", "negotiation_id", st.ID, "status", st.Status, "seq", en.Seq)
		}
		e.send(ctx, topic, envelope{Kind: "e", Seq: en.Seq, Hash: en.Hash, From: en.From, Frame: en.Frame})
	}
	for _, p := range out.Private {
		e.send(ctx, topic, envelope{Kind: "p", To: p.To, Frame: p.Frame})
	}
	if out.Declined {
		f := lobby.DeclinedFrame(st)
		e.Push(ctx, st.Brand.AgentID, f)
		if out.Lapsed { // a bouncer's own decline got its reply
			e.Push(ctx, st.Bouncer.AgentID, f)
		}
		e.log.Info("negotiation request declined", "negotiation_id", st.ID, "reason", st.Reason)
	}
}

func (e *engine) send(ctx context.Context, topic string, env envelope) {
	if err := e.bus.Publish(ctx, topic, env.encode()); err != nil {
		// The store has it: sockets catch up from there on the next event.
		e.log.Warn("publish", "topic", topic, "err", err)
	}
}

// fire settles the clocks of one negotiation (a timer woke us).
func (e *engine) fire(ctx context.Context, id string) {
	var now time.Time
	st, out, err := e.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		now = e.clock.Now()
		return st.Tick(now), nil
	})
	if errors.Is(err, store.ErrNotFound) {
		e.log.Warn("wake for a negotiation the store does not have; dropped", "negotiation_id", id)
		_ = e.timers.Schedule(ctx, id, time.Time{})
		return
	}
	if err != nil {
		e.log.Error("settle clocks; retrying in a second", "negotiation_id", id, "err", err)
		_ = e.timers.Schedule(ctx, id, e.clock.Now().Add(time.Second))
		return
	}
	// The wake that fired was used up: arm the next clock, whether this
	// wake settled one (a clock came due) or was early (the clock it was
	// armed for had moved later, or another node re-armed meanwhile).
	if err := e.timers.Schedule(ctx, id, st.NextWake()); err != nil {
		e.log.Error("arm timer", "negotiation_id", id, "err", err)
	}
	for _, en := range out.Entries {
		metricTimerLateness.Observe(now.Sub(en.At).Seconds())
	}
}

// rearm schedules every running negotiation's next clock from the store (on
// start: a restart loses no deadline).
func (e *engine) rearm(ctx context.Context) (int, error) {
	wakes, err := e.store.Wakes(ctx)
	if err != nil {
		return 0, err
	}
	for _, w := range wakes {
		if err := e.timers.Schedule(ctx, w.NegotiationID, w.At); err != nil {
			return 0, err
		}
	}
	return len(wakes), nil
}
