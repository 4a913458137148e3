// Package hub owns the live rooms of one venue node (ARCHITECTURE.md "One
// frame's way"): it commits room steps through the store, publishes what
// they produced on the bus, arms each negotiation's next clock and settles
// the clocks that come due (the fire pool), and keeps every socket's
// subscription to a room in seq order, catching up from the store after a
// gap. A transport reaches rooms only through a Hub and a small Transport
// (today the WebSocket, by way of room.Session; `venue mcp` is a client of
// the venue, not a transport); the hub never waits on one: the bus callback only
// enqueues, and every store read a subscription needs runs on that
// subscription's own goroutine, so one slow reader or one slow read delays
// nobody else.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/timers"
)

// FireWorkers is how many due clocks settle at once by default: a wave of
// expiries is handed to the store all at once, and on Postgres the store's
// writer groups their steps into a few shared commits (with fewer, the
// wave settled in rounds, one batch commit after another).
const FireWorkers = 1024

// Config is what a Hub runs on. Store, Bus, Timers and Clock are required;
// Log defaults to slog.Default(), FireWorkers to FireWorkers.
type Config struct {
	Store       store.Store
	Bus         bus.Bus
	Timers      timers.Timers
	Clock       clock.Clock
	Log         *slog.Logger
	FireWorkers int
	// Committed, if set, is called on the committing node after every step
	// that changed a negotiation, once it is committed, its sender answered
	// and its frames published: the arena feed and the settler of live
	// deals learn of steps here. It runs off the committing caller's path,
	// on a goroutine of the hub's, one step at a time in commit order; a
	// hook that blocks delays only the hooks after it (WaitCommitted).
	// st is the state after the step, the hook's alone to read (never
	// written by the hub again; the hook must not change it either): one
	// copy a step, not one per hook (BENCHMARKS.md "Issue 21, fifth pass").
	Committed func(ctx context.Context, st *negotiation.State, out negotiation.Outcome)
	// Pushed, if set, is called with every lobby push this node sends
	// (Push), once per push across the nodes, in order with Committed and
	// like it off the caller's path: the event log learns of pushes here.
	Pushed func(ctx context.Context, agentID string, frame []byte)
	// ReconcileEvery is how often Run reconciles the steps of unknown
	// outcome and the local subscriptions with the store (default
	// DefaultReconcileEvery; see Reconcile).
	ReconcileEvery time.Duration
	// Metrics is where the hub registers its series (the node's registry);
	// nil: they count on their own, served nowhere.
	Metrics prometheus.Registerer
}

// Hub is one node's live rooms.
type Hub struct {
	store   store.Store
	bus     bus.Bus
	timers  timers.Timers
	clock   clock.Clock
	log     *slog.Logger
	workers int
	after   *afterCommit // the Committed hook's queue, nil without one
	m       *metrics

	mu       sync.RWMutex
	receipts *receipt.Cache // set by SetReceipts once the key is loaded

	every   time.Duration
	suspect suspects
	subsMu  sync.Mutex
	subs    map[string]map[*Subscription]struct{} // local subscriptions by negotiation

	wakesMu sync.RWMutex
	wakes   map[string]func(context.Context, string) // other clocks' wakes, by key prefix
}

// HandleWakes sends the timers' wakes of keys that start with prefix to fn
// instead of a negotiation's clocks: another feature's durable clock (a
// sealed brief's collect_until, PROTOCOL.md "Sealed briefs") shares the
// node's timers and fire pool. Call it before Run. fn runs on a fire
// worker and may read and write the store.
func (h *Hub) HandleWakes(prefix string, fn func(ctx context.Context, key string)) {
	h.wakesMu.Lock()
	defer h.wakesMu.Unlock()
	if h.wakes == nil {
		h.wakes = map[string]func(context.Context, string){}
	}
	h.wakes[prefix] = fn
}

// wakeHandler returns the handler of key's prefix, nil for a negotiation.
func (h *Hub) wakeHandler(key string) func(context.Context, string) {
	h.wakesMu.RLock()
	defer h.wakesMu.RUnlock()
	for p, fn := range h.wakes {
		if strings.HasPrefix(key, p) {
			return fn
		}
	}
	return nil
}

// New returns a hub on cfg. It does not run the clocks yet (see Run).
func New(cfg Config) *Hub {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.FireWorkers <= 0 {
		cfg.FireWorkers = FireWorkers
	}
	if cfg.ReconcileEvery <= 0 {
		cfg.ReconcileEvery = DefaultReconcileEvery
	}
	h := &Hub{store: cfg.Store, bus: cfg.Bus, timers: cfg.Timers, clock: cfg.Clock, log: cfg.Log, workers: cfg.FireWorkers,
		every: cfg.ReconcileEvery, m: newMetrics(cfg.Metrics)}
	if cfg.Committed != nil || cfg.Pushed != nil {
		h.after = &afterCommit{fn: cfg.Committed, pushed: cfg.Pushed}
	}
	return h
}

// SetReceipts gives the hub the receipt signer: negotiation_ended frames
// carry the receipt from then on (DELEGATION.md "Receipts").
func (h *Hub) SetReceipts(c *receipt.Cache) {
	h.mu.Lock()
	h.receipts = c
	h.mu.Unlock()
}

// Receipts returns the receipt signer (nil before SetReceipts).
func (h *Hub) Receipts() *receipt.Cache {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.receipts
}

// receiptByID returns the receipt of negotiation negID, "" if it has not
// ended in the room or cannot be signed (logged). It may read the store:
// call it only off the bus goroutine.
func (h *Hub) receiptByID(ctx context.Context, negID string) string {
	c := h.Receipts()
	if c == nil {
		return ""
	}
	if tok, ok := c.Cached(negID); ok {
		return tok
	}
	st, err := h.store.Negotiation(ctx, negID)
	if err != nil || !receipt.Signs(&st) {
		return ""
	}
	tok, err := c.Receipt(&st)
	if err != nil {
		h.log.Error("sign receipt", "negotiation_id", negID, "err", err)
		return ""
	}
	return tok
}

// Create stores a new pending negotiation and arms its lapse (lobby.Rooms).
func (h *Hub) Create(ctx context.Context, st negotiation.State) error {
	if err := h.store.CreateNegotiation(ctx, st); err != nil {
		return err
	}
	return h.timers.Schedule(ctx, st.ID, st.NextWake())
}

// Update commits one room step, publishes what it produced and re-arms the
// negotiation's clock (lobby.Rooms). It returns the state after the step,
// its outcome and the step's error.
func (h *Hub) Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	return h.apply(ctx, id, step, nil)
}

// apply is Update with reply called after the commit (and the arming of a
// clock it moved earlier) and before the publish, so a sender's message_ack
// precedes what its frame caused (a deal's negotiation_ended, say). The
// Committed hook is queued before the reply and the publish (it never
// waits) and runs off this path.
//
// A step the store could not resolve (store.ErrOutcomeUnknown) makes the
// negotiation a suspect (see Reconcile); the next committed step, a
// replayed ack (the sender's resend) or the reconciliation publishes what
// of it landed.
func (h *Hub) apply(ctx context.Context, id string, step store.Step, reply func(negotiation.Outcome, error)) (negotiation.State, negotiation.Outcome, error) {
	start := time.Now()
	// What the step's last run saw, in one variable the closure shares
	// (one allocation, not one each).
	var run struct {
		prevWake time.Time
		stepped  []negotiation.Entry // the entries of the step's last run
	}
	st, out, err := h.store.Update(ctx, id, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		run.prevWake = st.NextWake()
		o, err := step(tx, st)
		run.stepped = o.Entries
		return o, err
	})
	prevWake, stepped := run.prevWake, run.stepped
	h.m.storeLatency.Observe(time.Since(start).Seconds())
	// What was committed is armed and published even if the caller has gone
	// (its socket closed while the commit was under way).
	ctx = context.WithoutCancel(ctx)
	if errors.Is(err, store.ErrOutcomeUnknown) {
		h.m.outcomeUnknown.Inc()
		if len(stepped) > 0 {
			h.suspect.add(id, suspect{entries: stepped, since: h.clock.Now()})
		}
		h.log.Error("a step's commit answer was lost and the store cannot be asked; the sender is told outcome_unknown",
			"negotiation_id", id, "err", err)
	}
	if err == nil && out.Replay {
		// A resend of a frame that landed: whatever it caused is published
		// (if this node lost track of it) and every node's sockets catch
		// up to the store, the clock armed.
		h.recoverSuspect(ctx, st, true)
		h.send(ctx, bus.NegotiationTopic(id), envelope{Kind: KindSync, Seq: st.LastSeq})
		if terr := h.timers.Schedule(ctx, id, st.NextWake()); terr != nil {
			h.log.Error("arm timer", "negotiation_id", id, "err", terr)
		}
	}
	if out.Changed() {
		h.recoverSuspect(ctx, st, true)
		// A wake no later than the state's next clock is always armed, and
		// before the ack: a node that stops right after acknowledging has
		// armed what the frame started. When the next clock moved later
		// (every move restarts the turn clock), the armed wake fires early,
		// finds nothing due and re-arms (fire): one timer write per clock
		// that comes due, not one per frame.
		if next := st.NextWake(); prevWake.IsZero() || (!next.IsZero() && next.Before(prevWake)) {
			if terr := h.timers.Schedule(ctx, id, next); terr != nil {
				h.log.Error("arm timer", "negotiation_id", id, "err", terr)
			}
		}
	}
	if out.Changed() && h.after != nil {
		// Queued before anything of the step is sent: a party that answers
		// the step's frames at once (the house agent) commits the next
		// step only after this one is in the hooks' queue, so the hooks
		// see the steps in commit order (the arena feed's _updated before
		// its _ended).
		h.after.add(ctx, &st, out)
	}
	if reply != nil {
		reply(out, err)
	}
	if out.Changed() {
		h.publish(ctx, st, out)
	}
	return st, out, err
}

// Push sends a frame to every lobby socket of the agent, on any node
// (lobby.Rooms).
func (h *Hub) Push(ctx context.Context, agentID string, frame json.RawMessage) {
	if err := h.bus.Publish(ctx, bus.AgentTopic(agentID), frame); err != nil {
		h.log.Error("push to lobby", "agent_id", agentID, "err", err)
	}
	if h.after != nil {
		h.after.push(context.WithoutCancel(ctx), agentID, frame)
	}
}

// SubscribeAgent calls fn with every lobby push for agentID until cancel.
// fn runs on the bus's delivery goroutine and must not block; a zero-length
// message says pushes may have been lost.
func (h *Hub) SubscribeAgent(agentID string, fn func([]byte)) (cancel func()) {
	return h.bus.Subscribe(bus.AgentTopic(agentID), fn)
}

func (h *Hub) publish(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	for _, p := range out.Pushes {
		// Kept in the event log with the step (Config.Committed), so not
		// handed to Pushed.
		if err := h.bus.Publish(ctx, bus.AgentTopic(p.To), p.Frame); err != nil {
			h.log.Error("push to lobby", "agent_id", p.To, "err", err)
		}
	}
	topic := bus.NegotiationTopic(st.ID)
	for _, en := range out.Entries {
		if en.Type == negotiation.TypeNegotiationEnded {
			// Committed: its receipt is kept for this node's sockets,
			// signed once, no store read (receiptByID).
			if c := h.Receipts(); c != nil && receipt.Signs(&st) {
				if _, err := c.Receipt(&st); err != nil {
					h.log.Error("sign receipt", "negotiation_id", st.ID, "err", err)
				}
			}
			h.m.outcomes.WithLabelValues(st.Status).Inc()
			h.log.Info("negotiation ended", "negotiation_id", st.ID, "status", st.Status, "seq", en.Seq)
		}
		h.send(ctx, topic, envelope{Kind: KindEntry, Seq: en.Seq, Hash: en.Hash, From: en.From, Frame: en.Frame})
	}
	for _, p := range out.Private {
		h.send(ctx, topic, envelope{Kind: KindPrivate, To: p.To, Frame: p.Frame})
	}
	if out.Declined {
		f := st.DeclinedFrame()
		h.Push(ctx, st.Brand.AgentID, f)
		if out.Lapsed { // a bouncer's own decline got its reply
			h.Push(ctx, st.Bouncer.AgentID, f)
		}
		h.log.Info("negotiation request declined", "negotiation_id", st.ID, "reason", st.Reason)
	}
}

func (h *Hub) send(ctx context.Context, topic string, env envelope) {
	if err := h.bus.Publish(ctx, topic, env.encode()); err != nil {
		// The store has it: sockets catch up from there on the next event.
		h.log.Warn("publish", "topic", topic, "err", err)
	}
}

// fire settles the clocks of one negotiation (a timer woke us).
func (h *Hub) fire(ctx context.Context, id string) {
	var now time.Time
	st, out, err := h.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		now = h.stepNow(st)
		return st.Tick(now), nil
	})
	if errors.Is(err, store.ErrNotFound) {
		h.log.Warn("wake for a negotiation the store does not have; dropped", "negotiation_id", id)
		_ = h.timers.Schedule(ctx, id, time.Time{})
		return
	}
	if err != nil {
		h.log.Error("settle clocks; retrying in a second", "negotiation_id", id, "err", err)
		_ = h.timers.Schedule(ctx, id, h.clock.Now().Add(time.Second))
		return
	}
	// The wake that fired was used up: arm the next clock, whether this
	// wake settled one (a clock came due) or was early (the clock it was
	// armed for had moved later, or another node re-armed meanwhile).
	if err := h.timers.Schedule(ctx, id, st.NextWake()); err != nil {
		h.log.Error("arm timer", "negotiation_id", id, "err", err)
	}
	for _, en := range out.Entries {
		h.m.timerLateness.Observe(now.Sub(en.At).Seconds())
	}
}

// Timers returns the node's timers (another feature's durable clock arms
// its wakes there; see HandleWakes).
func (h *Hub) Timers() timers.Timers { return h.timers }

// Rearm schedules every running negotiation's next clock from the store (on
// start: a restart loses no deadline). It returns how many it armed.
func (h *Hub) Rearm(ctx context.Context) (int, error) {
	wakes, err := h.store.Wakes(ctx)
	if err != nil {
		return 0, err
	}
	for _, w := range wakes {
		if err := h.timers.Schedule(ctx, w.NegotiationID, w.At); err != nil {
			return 0, err
		}
	}
	return len(wakes), nil
}

// Reconcile publishes what landed of this node's steps of unknown outcome
// (PROTOCOL.md "Errors", `outcome_unknown`) and lets every local
// subscription behind its negotiation's stored last seq catch up from the
// store. Run calls it every ReconcileEvery; it returns how many steps of
// unknown outcome remain (the store still unreachable).
func (h *Hub) Reconcile(ctx context.Context) int { return h.reconcile(ctx) }

// Run settles clocks as the timers wake them until ctx is done, at most
// FireWorkers negotiations at once, each in its own store step; it returns
// once every settling it started has finished. Beside it runs a
// timers.Sweeper, so the clocks never depend on the timers keeping their
// wakes: timers that can lose them (redistimers, Lost) are re-armed from
// the store, and clocks overdue in the store are armed every few seconds.
func (h *Hub) Run(ctx context.Context) error {
	var lost <-chan struct{}
	if l, ok := h.timers.(interface{ Lost() <-chan struct{} }); ok {
		lost = l.Lost()
	}
	sw := &timers.Sweeper{Store: h.store, Timers: h.timers, Clock: h.clock, Lost: lost, Log: h.log}
	var sweep sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	sweep.Go(func() { _ = sw.Run(sctx) })
	sweep.Go(func() { h.reconcileLoop(sctx) })
	defer func() { stop(); sweep.Wait() }()
	sem := make(chan struct{}, h.workers)
	var fires sync.WaitGroup
	err := h.timers.Run(ctx, func(ctx context.Context, id string) {
		sem <- struct{}{}
		fires.Add(1)
		go func() {
			defer func() { <-sem; fires.Done() }()
			if fn := h.wakeHandler(id); fn != nil {
				fn(ctx, id)
				return
			}
			h.fire(ctx, id)
		}()
	})
	fires.Wait()
	return err
}

// stepNow is the time a step on st runs at: the venue clock, never before
// the negotiation's last entry. Nodes' venue clocks each trail Postgres's
// by at most their last reading's round trip (ARCHITECTURE.md "One venue
// clock"), so a step on one node may read a little before an entry another
// node stamped; taking the later keeps the transcript's times in seq order
// and is still never ahead of Postgres's clock (no clock fires early).
func (h *Hub) stepNow(st *negotiation.State) time.Time {
	now := h.clock.Now()
	if now.Before(st.LastAt) {
		return st.LastAt
	}
	return now
}
