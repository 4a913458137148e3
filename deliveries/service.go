package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// DefaultSweepEvery is how often each node looks for deliveries past their
// approval window.
const DefaultSweepEvery = time.Minute

// TypeDeliveryUpdated is the event of a delivery's change (PROTOCOL.md
// "Deliveries"); settlement changes are events.TypeSettlementUpdated.
const TypeDeliveryUpdated = "delivery_updated"

// Service runs the rules of deliveries on a Store: one change at a time
// per deal on every node, then (after the change committed, on this node
// alone) the events to both parties and the Settler told. Fields are set
// before the first call.
type Service struct {
	Store  Store       // the deals' records
	Venue  store.Store // negotiations, settlements, transcripts, grants
	Events events.Store
	// Settler is told of each change of a settlement (nil: a
	// settlement.Recorder on Log).
	Settler settlement.Settler
	// Signer is the node's receipt key ring's signer (keyring.Ring.Signer):
	// receipts and evidence are signed with its key.
	Signer func() *receipt.Cache
	Clock  clock.Clock
	// Window is the approval window (0: DefaultApprovalWindow).
	Window time.Duration
	// SweepEvery is how often Run looks for due deliveries (0: DefaultSweepEvery).
	SweepEvery time.Duration
	Log        *slog.Logger

	mu      sync.Mutex
	queue   []func(context.Context)
	running bool
	idle    chan struct{} // closed when the queue is empty and no job runs
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Service) settler() settlement.Settler {
	if s.Settler == nil {
		return settlement.Recorder{Log: s.log()}
	}
	return s.Settler
}

func (s *Service) window() time.Duration {
	if s.Window <= 0 {
		return DefaultApprovalWindow
	}
	return s.Window
}

// deal reads the negotiation: not_found when there is none.
func (s *Service) deal(ctx context.Context, negID string) (negotiation.State, error) {
	st, err := s.Venue.Negotiation(ctx, negID)
	if errors.Is(err, store.ErrNotFound) {
		return st, wire.Errorf(wire.CodeNotFound, "no negotiation %s", negID)
	}
	return st, err
}

// Submit is POST /v1/negotiations/{id}/deliveries by agentID: the rules of
// Submit under the deal's lock. Errors: *wire.Error (not_found, forbidden,
// invalid_state), or the store's.
func (s *Service) Submit(ctx context.Context, agentID, negID string, sub Submission) (Delivery, error) {
	st, err := s.deal(ctx, negID)
	if err != nil {
		return Delivery{}, err
	}
	if !st.IsParty(agentID) {
		return Delivery{}, wire.Errorf(wire.CodeForbidden, "only the bouncer party of %s submits deliveries", negID)
	}
	d := DealOf(&st)
	var got Delivery
	rec, err := s.Store.Update(ctx, negID, func(r *Record) error {
		dl, werr := Submit(r, d, agentID, sub, NewID(), s.Clock.Now(), s.window())
		if werr != nil {
			return werr
		}
		got = *dl
		return nil
	})
	if err != nil {
		return Delivery{}, err
	}
	s.changed(ctx, &st, rec, &got, "")
	return got, nil
}

// Answer is the brand's approve (approve true) or dispute of delivery
// dlvID. Errors: *wire.Error (not_found, forbidden, invalid_state), or the
// store's.
func (s *Service) Answer(ctx context.Context, agentID, negID, dlvID string, approve bool, reason string) (Delivery, error) {
	st, err := s.deal(ctx, negID)
	if err != nil {
		return Delivery{}, err
	}
	if !st.IsParty(agentID) {
		return Delivery{}, wire.Errorf(wire.CodeForbidden, "only the brand party of %s approves or disputes deliveries", negID)
	}
	d := DealOf(&st)
	var got Delivery
	var before string
	rec, err := s.Store.Update(ctx, negID, func(r *Record) error {
		before = r.Settlement
		if before == "" && d.Settles() {
			before = settlement.StatusPending
		}
		dl, werr := Answer(r, d, agentID, dlvID, approve, reason, s.Clock.Now())
		if werr != nil {
			return werr
		}
		got = *dl
		return nil
	})
	if err != nil {
		return Delivery{}, err
	}
	s.changed(ctx, &st, rec, &got, before)
	return got, nil
}

// Sweep approves, as the venue, every delivery past its approval window
// at the clock's now; it returns how many. Each is approved once across
// the nodes: the store's lock and the rule's check of the status under it
// let one node's sweep change it, the others find it answered.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.Clock.Now()
	ids, err := s.Store.Due(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, negID := range ids {
		st, err := s.deal(ctx, negID)
		if err != nil {
			return n, err
		}
		var got *Delivery
		var before string
		rec, err := s.Store.Update(ctx, negID, func(r *Record) error {
			before = r.Settlement
			got = nil
			if dl := AutoApprove(r, now); dl != nil {
				c := *dl
				got = &c
				return nil
			}
			return errNothingDue
		})
		if errors.Is(err, errNothingDue) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
		s.changed(ctx, &st, rec, got, before)
	}
	return n, nil
}

var errNothingDue = errors.New("deliveries: nothing due")

// Run sweeps every SweepEvery on the clock until ctx is done, then waits
// for the Settler to hear of every change made so far.
func (s *Service) Run(ctx context.Context) error {
	every := s.SweepEvery
	if every <= 0 {
		every = DefaultSweepEvery
	}
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("deliveries: sweep of due approvals", "err", err)
		}
		t := s.Clock.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// report is the settlement.Report handed to a Releaser.
func (s *Service) report(ctx context.Context, settlementID, status string) error {
	negID := "neg_" + strings.TrimPrefix(settlementID, "stl_")
	st, err := s.deal(ctx, negID)
	if err != nil {
		return err
	}
	rec, err := s.Store.Update(ctx, negID, func(r *Record) error {
		if werr := Report(r, status); werr != nil {
			return werr
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.changed(ctx, &st, rec, nil, settlement.StatusReleased)
	return nil
}

// changed runs after a committed change: the delivery's event (when dl is
// not nil) to both parties, and when the settlement's status moved from
// before, its event and the Settler told.
func (s *Service) changed(ctx context.Context, st *negotiation.State, rec Record, dl *Delivery, before string) {
	ctx = context.WithoutCancel(ctx)
	now := s.Clock.Now()
	var evs []events.Event
	if dl != nil {
		f, _ := json.Marshal(map[string]any{"type": TypeDeliveryUpdated, "negotiation_id": st.ID, "delivery": dl.View()})
		for _, p := range []string{st.Brand.AgentID, st.Bouncer.AgentID} {
			evs = append(evs, events.New(p, st.ID, f, now))
		}
	}
	moved := rec.Settlement != "" && rec.Settlement != before && before != ""
	var in settlement.Instruction
	if moved {
		var err error
		in, err = settlement.New(st.ID, st.Brand.AgentID, st.Bouncer.AgentID, st.DealAmountCents, st.EndedAt)
		if err != nil {
			s.log().Error("deliveries: settlement of a deal", "negotiation_id", st.ID, "err", err)
			moved = false
		}
		in.Status = rec.Settlement
		evs = append(evs, events.SettlementUpdated(in.Payer, in.Payee, st.ID, Item(in, &rec), now)...)
	}
	if len(evs) > 0 && s.Events != nil {
		if err := s.Events.Append(ctx, evs...); err != nil {
			s.log().Error("deliveries: event log: append", "negotiation_id", st.ID, "err", err)
		}
	}
	if moved {
		s.tell(func(ctx context.Context) { s.settle(ctx, in) })
	}
}

// settle tells the Settler of one change, and hands a released
// instruction to a Releaser.
func (s *Service) settle(ctx context.Context, in settlement.Instruction) {
	st := s.settler()
	if err := st.Settle(ctx, in); err != nil {
		s.log().Error("settle", "settlement_id", in.ID, "status", in.Status, "err", err)
	}
	if r, ok := st.(settlement.Releaser); ok && in.Status == settlement.StatusReleased {
		if err := r.Release(ctx, in, s.report); err != nil {
			s.log().Error("settlement: release", "settlement_id", in.ID, "err", err)
		}
	}
}

// tell queues a job for the Settler, run in order on a goroutine of its
// own while there are jobs: a Settler that blocks delays no request.
func (s *Service) tell(job func(context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, job)
	if s.running {
		return
	}
	s.running = true
	s.idle = make(chan struct{})
	go s.drain()
}

func (s *Service) drain() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			close(s.idle)
			s.mu.Unlock()
			return
		}
		job := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		job(context.Background())
	}
}

// Wait returns once the Settler heard of every change so far (or ctx's
// error at its deadline).
func (s *Service) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		if !s.running {
			s.mu.Unlock()
			return nil
		}
		idle := s.idle
		s.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Settlements is GET /v1/settlements: the agent's instructions, as payer
// or payee, newest first, each with its status and latest delivery.
func (s *Service) Settlements(ctx context.Context, agentID string) ([]map[string]any, error) {
	list, err := s.Venue.Settlements(ctx, agentID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, in := range list {
		ids[i] = in.NegotiationID
	}
	recs, err := s.Store.Records(ctx, ids)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, len(list))
	for i, in := range list {
		var rec *Record
		if r, ok := recs[in.NegotiationID]; ok {
			rec = &r
		}
		items[i] = Item(in, rec)
	}
	return items, nil
}

// Item is a settlement instruction as GET /v1/settlements lists it
// (PROTOCOL.md "Settlements"): amounts as decimal strings (JSON numbers
// could lose precision), the status the deal's record holds (rec nil: the
// instruction's own) and its latest delivery (null when none).
func Item(in settlement.Instruction, rec *Record) map[string]any {
	status := in.Status
	var delivery any
	if rec != nil {
		if rec.Settlement != "" {
			status = rec.Settlement
		}
		if dl := rec.Latest(); dl != nil {
			delivery = dl.View()
		}
	}
	return map[string]any{
		"settlement_id": in.ID, "negotiation_id": in.NegotiationID, "payer": in.Payer, "payee": in.Payee,
		"currency": "USDC", "decimals": settlement.Decimals,
		"amount_minor": strconv.FormatInt(in.AmountMinor, 10), "amount": settlement.FormatMinor(in.AmountMinor),
		"status": status, "created_at": wire.Time(in.CreatedAt),
		"receipt_url": "/v1/negotiations/" + in.NegotiationID + "/receipt",
		"delivery":    delivery,
	}
}

// record is the deal's record, a fresh one when it has none.
func (s *Service) record(ctx context.Context, d Deal) (Record, error) {
	recs, err := s.Store.Records(ctx, []string{d.ID})
	if err != nil {
		return Record{}, fmt.Errorf("deliveries: record of %s: %w", d.ID, err)
	}
	r, ok := recs[d.ID]
	if !ok {
		r = Record{NegotiationID: d.ID}
	}
	r.init(d)
	return r, nil
}
