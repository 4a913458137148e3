package briefs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/wire"
)

// Rooms is what briefs need of the venue's rooms (hub.Hub has it):
// opening the awarded negotiation, its first step, and the lobby pushes.
type Rooms interface {
	Create(ctx context.Context, st negotiation.State) error
	Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error)
	Push(ctx context.Context, agentID string, frame json.RawMessage)
}

// Service answers the sealed-brief requests of the lobby (PROTOCOL.md
// "Sealed briefs") and runs their collect_until clock. Store, Agents,
// Rooms, Timers, Now and NewID are required; SocketURL and ObserveURL
// build negotiation_accepted's URLs.
type Service struct {
	Store      Store
	Agents     store.Store
	Rooms      Rooms
	Timers     timers.Timers
	Clock      clock.Clock // the sweeper's clock (default the wall clock)
	Now        func() time.Time
	NewID      func(prefix string) string
	SocketURL  func(negotiationID string) string
	ObserveURL func(negotiationID string) string
	Log        *slog.Logger
	// BriefsPerHour and OpenBriefs are the limits of one brand (0: the
	// defaults).
	BriefsPerHour, OpenBriefs int
}

// Handles reports whether typ is one of the requests Handle answers.
func Handles(typ string) bool {
	switch typ {
	case TypeSubmitBrief, TypeSubmitQuote, TypeDeclineBrief, TypeAwardQuote:
		return true
	}
	return false
}

// Handle answers one sealed-brief request of agent (typ is one Handles
// accepts, r its fields). A quote refused by the bouncer's grant is
// answered with a scope_block (DELEGATION.md "The checks"), returned as
// the reply; other refusals are errors for the lobby to send as `error`.
func (s *Service) Handle(ctx context.Context, agent store.Agent, typ string, r *wire.Fields) (map[string]any, error) {
	switch typ {
	case TypeSubmitBrief:
		return s.submit(ctx, agent, r)
	case TypeSubmitQuote:
		return s.quote(ctx, agent, r)
	case TypeDeclineBrief:
		return s.decline(ctx, agent, r)
	case TypeAwardQuote:
		return s.award(ctx, agent, r)
	}
	return nil, wire.Errorf(wire.CodeUnknownType, "unknown lobby frame type %q", typ)
}

func (s *Service) limits() (perHour, open int) {
	perHour, open = s.BriefsPerHour, s.OpenBriefs
	if perHour <= 0 {
		perHour = DefaultBriefsPerHour
	}
	if open <= 0 {
		open = DefaultOpenBriefs
	}
	return perHour, open
}

// submit is submit_brief {"to":[2-20 bouncers],"offer","arena"?,"collect_seconds"}.
func (s *Service) submit(ctx context.Context, brand store.Agent, r *wire.Fields) (map[string]any, error) {
	if brand.Role != negotiation.RoleBrand {
		return nil, wire.Errorf(wire.CodeForbidden, "submit_brief is for brands")
	}
	var to []string
	if raw, ok := r.M["to"]; !ok || json.Unmarshal(raw, &to) != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "to must be an array of %d-%d bouncer agent_ids", MinBouncers, MaxBouncers)
	}
	offer := r.Object("offer", true)
	arena := r.Bool("arena")
	if !r.Has("collect_seconds") {
		r.Fail("collect_seconds is required")
	}
	secs := r.IntIn("collect_seconds", MinCollectSeconds, MaxCollectSeconds, 0)
	if r.Err != nil {
		return nil, r.Err
	}
	if len(to) < MinBouncers || len(to) > MaxBouncers {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "to must name %d-%d bouncers, not %d", MinBouncers, MaxBouncers, len(to))
	}
	seen := map[string]bool{}
	for _, id := range to {
		if id == "" || seen[id] {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "to must name distinct, non-empty agent_ids")
		}
		seen[id] = true
	}
	if werr := negotiation.CheckOffer(offer); werr != nil {
		return nil, werr
	}
	now := s.Now()
	perHour, maxOpen := s.limits()
	recent, open, err := s.Store.Counts(ctx, brand.ID, now.Add(-time.Hour), now)
	if err != nil {
		return nil, err
	}
	if recent >= perHour {
		return nil, wire.Errorf(wire.CodeRateLimited, "you submitted %d briefs in the last hour (at most %d)", recent, perHour)
	}
	if open >= maxOpen {
		return nil, wire.Errorf(wire.CodeRateLimited, "you have %d briefs collecting quotes (at most %d); wait for a collect_until", open, maxOpen)
	}
	b := Brief{ID: s.NewID("brf"), Brand: brand.Party(), Offer: offer, Arena: arena, CreatedAt: now,
		CollectUntil: now.Add(time.Duration(secs) * time.Second)}
	for _, id := range to {
		k, err := s.Agents.Agent(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
		} else if err != nil {
			return nil, err
		}
		if k.Role != negotiation.RoleBouncer {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "agent %s is not a bouncer", id)
		}
		blocked, err := s.Agents.Blocked(ctx, id, brand.ID)
		if err != nil {
			return nil, err
		}
		if blocked {
			return nil, wire.Errorf(wire.CodeForbidden, "bouncer %s does not take requests from you", id)
		}
		b.Offers = append(b.Offers, Addressed{OfferID: s.NewID("off"), To: id})
	}
	if err := s.Store.CreateBrief(ctx, b); err != nil {
		return nil, err
	}
	s.arm(ctx, b.ID, b.CollectUntil)
	offers := make([]map[string]any, len(b.Offers))
	for i, o := range b.Offers {
		offers[i] = map[string]any{"offer_id": o.OfferID, "to": o.To}
		s.Rooms.Push(ctx, o.To, ReceivedFrame(&b, o))
	}
	return map[string]any{"type": TypeBriefSubmitted, "brief_id": b.ID, "offers": offers, "collect_until": wire.Time(b.CollectUntil)}, nil
}

// arm schedules the brief's quotes_ready wake; a failure is logged (the
// sweeper arms what is overdue in the store).
func (s *Service) arm(ctx context.Context, id string, at time.Time) {
	if err := s.Timers.Schedule(ctx, WakePrefix+id, at); err != nil {
		s.log().Error("arm a brief's collect_until", "brief_id", id, "err", err)
	}
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// ReceivedFrame is brief_received, pushed to one addressed bouncer.
func ReceivedFrame(b *Brief, o Addressed) json.RawMessage {
	f, _ := json.Marshal(map[string]any{
		"type": TypeBriefReceived, "brief_id": b.ID, "offer_id": o.OfferID, "brand": b.Brand,
		"offer": b.Offer, "arena": b.Arena, "collect_until": wire.Time(b.CollectUntil),
	})
	return f
}

// addressedTo returns the brief and offer of offerID if it is addressed to
// bouncer; not_found otherwise (another's offer is not revealed).
func (s *Service) addressedTo(ctx context.Context, bouncer store.Agent, offerID, verb string) (Brief, Addressed, error) {
	if bouncer.Role != negotiation.RoleBouncer {
		return Brief{}, Addressed{}, wire.Errorf(wire.CodeForbidden, "%s is for bouncers", verb)
	}
	b, err := s.Store.BriefOfOffer(ctx, offerID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Brief{}, Addressed{}, err
	}
	if o := b.offer(offerID); err == nil && o != nil && o.To == bouncer.ID {
		return b, *o, nil
	}
	return Brief{}, Addressed{}, wire.Errorf(wire.CodeNotFound, "no brief offer %s addressed to you", offerID)
}

func closedErr(b *Brief, verb string) error {
	return wire.Errorf(wire.CodeInvalidState, "%s: brief %s collected its quotes until %s, or you declined it", verb, b.ID, wire.Time(b.CollectUntil))
}

// quote is submit_quote {"offer_id","terms","content"?}: checked against the
// bouncer's grant as a propose_terms to the brand would be.
func (s *Service) quote(ctx context.Context, bouncer store.Agent, r *wire.Fields) (map[string]any, error) {
	offerID := r.NonEmpty("offer_id")
	termsRaw := r.Object("terms", true)
	content := r.String("content", false)
	if r.Err != nil {
		return nil, r.Err
	}
	if utf8.RuneCountInString(content) > negotiation.MaxContentLen {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "content is longer than %d characters", negotiation.MaxContentLen)
	}
	t, werr := negotiation.ParseTerms(termsRaw)
	if werr != nil {
		return nil, werr
	}
	b, o, err := s.addressedTo(ctx, bouncer, offerID, TypeSubmitQuote)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	if !b.Collecting(now) || !o.DeclinedAt.IsZero() {
		return nil, closedErr(&b, TypeSubmitQuote)
	}
	fails, err := s.check(ctx, bouncer.ID, b.Brand.AgentID, t, b.Arena, now)
	if err != nil {
		return nil, err
	}
	if len(fails) > 0 {
		return scopeBlock(fails), nil
	}
	canon, err := jcs.Transform(t.Raw)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "terms cannot be canonicalised: %v", err)
	}
	hash, err := negotiation.OfferHash(canon)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "terms cannot be canonicalised: %v", err)
	}
	q := Quote{ID: s.NewID("quo"), BriefID: b.ID, OfferID: offerID, From: bouncer.ID, Terms: canon, OfferHash: hash, Content: content, At: now}
	if err := s.Store.PutQuote(ctx, q, now); errors.Is(err, ErrClosed) {
		return nil, closedErr(&b, TypeSubmitQuote)
	} else if err != nil {
		return nil, err
	}
	return map[string]any{"type": TypeQuoteSubmitted, "quote_id": q.ID, "offer_hash": q.OfferHash}, nil
}

// check runs the grant checks on t as agent's propose_terms to
// counterparty now, the budget against what live deals spent as read.
func (s *Service) check(ctx context.Context, agent, counterparty string, t negotiation.Terms, arena bool, now time.Time) ([]negotiation.Failure, error) {
	au, err := hub.LoadAuthority(ctx, s.Agents, agent)
	if err != nil {
		return nil, err
	}
	recs, err := s.Agents.Grants(ctx, agent)
	if err != nil {
		return nil, err
	}
	spent := func(iss, jti string) int64 {
		for _, rec := range recs {
			if rec.Issuer == iss && rec.JTI == jti {
				return rec.SpentCents
			}
		}
		return 0
	}
	return hub.TermsFailures(au, spent, agent, negotiation.TypeProposeTerms, t, counterparty, arena, now), nil
}

// scopeBlock is the refusal of a quote, shaped as DELEGATION.md
// "scope_block" shapes a refused binding frame.
func scopeBlock(fails []negotiation.Failure) map[string]any {
	names := make([]string, len(fails))
	msgs := make([]string, len(fails))
	for i, f := range fails {
		names[i], msgs[i] = f.Check, f.Message
	}
	return map[string]any{
		"type": negotiation.TypeScopeBlock, "frame_type": TypeSubmitQuote, "checks": fails,
		"message": fmt.Sprintf("%s did not land, nothing was sent to anyone (failed: %s): %s",
			TypeSubmitQuote, strings.Join(names, ", "), strings.Join(msgs, "; ")),
	}
}

// decline is decline_brief {"offer_id","reason"?}.
func (s *Service) decline(ctx context.Context, bouncer store.Agent, r *wire.Fields) (map[string]any, error) {
	offerID := r.NonEmpty("offer_id")
	reason := r.String("reason", false)
	if r.Err != nil {
		return nil, r.Err
	}
	if utf8.RuneCountInString(reason) > MaxReasonLen {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "reason is longer than %d characters", MaxReasonLen)
	}
	b, _, err := s.addressedTo(ctx, bouncer, offerID, TypeDeclineBrief)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = "declined"
	}
	if err := s.Store.Decline(ctx, offerID, reason, s.Now()); errors.Is(err, ErrClosed) {
		return nil, closedErr(&b, TypeDeclineBrief)
	} else if err != nil {
		return nil, err
	}
	return map[string]any{"type": TypeBriefDeclined, "offer_id": offerID}, nil
}

// award is award_quote {"quote_id"}: within AwardWindow after
// collect_until, once per brief, the quote checked again against the
// bouncer's grant; it opens a live negotiation with the quote standing.
func (s *Service) award(ctx context.Context, brand store.Agent, r *wire.Fields) (map[string]any, error) {
	quoteID := r.NonEmpty("quote_id")
	if r.Err != nil {
		return nil, r.Err
	}
	if brand.Role != negotiation.RoleBrand {
		return nil, wire.Errorf(wire.CodeForbidden, "award_quote is for brands")
	}
	q, err := s.Store.Quote(ctx, quoteID)
	var b Brief
	if err == nil {
		b, err = s.Store.Brief(ctx, q.BriefID)
	}
	if errors.Is(err, ErrNotFound) || (err == nil && b.Brand.AgentID != brand.ID) {
		return nil, wire.Errorf(wire.CodeNotFound, "no quote %s on a brief of yours", quoteID)
	} else if err != nil {
		return nil, err
	}
	now := s.Now()
	switch {
	case now.Before(b.CollectUntil):
		return nil, wire.Errorf(wire.CodeInvalidState, "quotes are sealed until %s", wire.Time(b.CollectUntil))
	case b.AwardedQuote != "":
		return nil, wire.Errorf(wire.CodeInvalidState, "brief %s was awarded already (negotiation %s)", b.ID, b.NegotiationID)
	case !now.Before(b.CollectUntil.Add(AwardWindow)):
		return nil, wire.Errorf(wire.CodeInvalidState, "brief %s could be awarded until %s", b.ID, wire.Time(b.CollectUntil.Add(AwardWindow)))
	}
	bouncer, err := s.Agents.Agent(ctx, q.From)
	if err != nil {
		return nil, err
	}
	t, werr := negotiation.ParseTerms(q.Terms)
	if werr != nil {
		return nil, werr
	}
	if fails, err := s.check(ctx, bouncer.ID, brand.ID, t, b.Arena, now); err != nil {
		return nil, err
	} else if len(fails) > 0 {
		return nil, noLongerStands(quoteID, fails)
	}
	negID := s.NewID("neg")
	won, err := s.Store.Award(ctx, b.ID, q.ID, negID, now)
	if err != nil {
		return nil, err
	}
	if !won {
		return nil, wire.Errorf(wire.CodeInvalidState, "brief %s was awarded already", b.ID)
	}
	st, err := s.open(ctx, &b, q, t, brand, bouncer, negID, now)
	if err != nil {
		if uerr := s.Store.Unaward(context.WithoutCancel(ctx), b.ID, q.ID); uerr != nil {
			s.log().Error("take back a failed award", "brief_id", b.ID, "err", uerr)
		}
		return nil, err
	}
	for _, o := range b.Offers {
		f := map[string]any{"type": TypeBriefClosed, "brief_id": b.ID, "offer_id": o.OfferID, "awarded": o.OfferID == q.OfferID}
		if o.OfferID == q.OfferID {
			f["negotiation_id"] = st.ID
		}
		fb, _ := json.Marshal(f)
		s.Rooms.Push(ctx, o.To, fb)
	}
	return map[string]any{"type": lobbyNegotiationCreated, "negotiation_id": st.ID, "status": st.Status}, nil
}

const lobbyNegotiationCreated = "negotiation_created"

func noLongerStands(quoteID string, fails []negotiation.Failure) error {
	names := make([]string, len(fails))
	for i, f := range fails {
		names[i] = f.Check
	}
	return wire.Errorf(wire.CodeInvalidState, "quote %s no longer stands: it is not within the bouncer's authority now (failed: %s)", quoteID, strings.Join(names, ", "))
}

// open creates the awarded negotiation and, in one step, takes it live
// with the quote standing as the bouncer's propose_terms (ttl
// QuoteTTLSeconds), the bouncer's authority checked again under the
// budget's lock. Nothing is stored when the step fails; the pending
// request it created is declined ("award_failed").
func (s *Service) open(ctx context.Context, b *Brief, q Quote, t negotiation.Terms, brand, bouncer store.Agent, negID string, now time.Time) (negotiation.State, error) {
	if _, err := s.Agents.Offer(ctx, q.OfferID); errors.Is(err, store.ErrNotFound) {
		off := store.Offer{ID: q.OfferID, Brand: brand.ID, Bouncer: bouncer.ID, Body: b.Offer, Arena: b.Arena, CreatedAt: now}
		if err := s.Agents.CreateOffer(ctx, off); err != nil {
			return negotiation.State{}, err
		}
	} else if err != nil {
		return negotiation.State{}, err
	}
	au, err := hub.LoadAuthority(ctx, s.Agents, bouncer.ID, brand.ID)
	if err != nil {
		return negotiation.State{}, err
	}
	st := negotiation.NewRequest(negID, q.OfferID, b.Offer, brand.Party(), bouncer.Party(), b.Arena, now)
	if err := s.Rooms.Create(ctx, st); err != nil {
		return negotiation.State{}, err
	}
	frame := negotiation.Frame{Type: negotiation.TypeProposeTerms, Terms: &t, TTLSeconds: QuoteTTLSeconds, Content: q.Content, HasContent: q.Content != ""}
	st, _, err = s.Rooms.Update(ctx, negID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		out, err := st.Start(now)
		if err != nil {
			return negotiation.Outcome{}, err
		}
		proposed, err := st.Apply(bouncer.ID, frame, now, nil)
		if err != nil {
			return negotiation.Outcome{}, err
		}
		fails, _, err := hub.StandingCheck(au, tx, st, now)
		if err != nil {
			return negotiation.Outcome{}, err
		}
		if len(fails) > 0 {
			return negotiation.Outcome{}, noLongerStands(q.ID, fails)
		}
		proposed.Started = out.Started
		proposed.Entries = append(out.Entries, proposed.Entries...)
		// Both parties' negotiation_accepted are the step's own pushes:
		// their lobbies and event logs have them ahead of the room's frames.
		accepted, err := json.Marshal(st.AcceptedFrame(s.SocketURL(st.ID), s.ObserveURL(st.ID)))
		if err != nil {
			return negotiation.Outcome{}, err
		}
		proposed.Pushes = append(proposed.Pushes, negotiation.Private{To: brand.ID, Frame: accepted}, negotiation.Private{To: bouncer.ID, Frame: accepted})
		return proposed, nil
	})
	if err != nil {
		if _, _, derr := s.Rooms.Update(context.WithoutCancel(ctx), negID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			return st.Decline("award_failed", now)
		}); derr != nil {
			s.log().Error("decline the request of a failed award", "negotiation_id", negID, "err", derr)
		}
		return negotiation.State{}, err
	}
	return st, nil
}

// Replay returns the brief_received frames of the briefs still collecting
// that are addressed to bouncerID and not declined, with their offer ids
// (a reconnecting bouncer's lobby sends each it has not sent).
func (s *Service) Replay(ctx context.Context, bouncerID string) (frames []json.RawMessage, offerIDs []string) {
	bs, err := s.Store.OpenFor(ctx, bouncerID, s.Now())
	if err != nil {
		s.log().Warn("replay open briefs", "agent_id", bouncerID, "err", err)
		return nil, nil
	}
	for i := range bs {
		for _, o := range bs[i].Offers {
			if o.To == bouncerID && o.DeclinedAt.IsZero() {
				frames = append(frames, ReceivedFrame(&bs[i], o))
				offerIDs = append(offerIDs, o.OfferID)
			}
		}
	}
	return frames, offerIDs
}

// ReceivedOffer returns the offer_id of a brief_received frame, "" for any
// other frame (the lobby sends each brief_received once a session).
func ReceivedOffer(frame []byte) string {
	if !strings.Contains(string(frame), `"`+TypeBriefReceived+`"`) {
		return ""
	}
	var f struct {
		Type    string `json:"type"`
		OfferID string `json:"offer_id"`
	}
	if json.Unmarshal(frame, &f) != nil || f.Type != TypeBriefReceived {
		return ""
	}
	return f.OfferID
}

// Fire is the wake of a brief's collect_until (key WakePrefix+id): the one
// call that marks it ready pushes quotes_ready to the brand; a wake before
// collect_until re-arms, a failure retries in a second.
func (s *Service) Fire(ctx context.Context, key string) {
	id := strings.TrimPrefix(key, WakePrefix)
	b, err := s.Store.Brief(ctx, id)
	if errors.Is(err, ErrNotFound) {
		_ = s.Timers.Schedule(ctx, key, time.Time{})
		return
	}
	if err != nil {
		s.log().Error("read a brief at its collect_until; retrying in a second", "brief_id", id, "err", err)
		s.arm(ctx, id, s.Now().Add(time.Second))
		return
	}
	now := s.Now()
	if !b.ReadyAt.IsZero() {
		return
	}
	if now.Before(b.CollectUntil) {
		s.arm(ctx, id, b.CollectUntil)
		return
	}
	quotes, won, err := s.Store.MarkReady(ctx, id, now)
	if err != nil {
		s.log().Error("mark a brief's quotes ready; retrying in a second", "brief_id", id, "err", err)
		s.arm(ctx, id, s.Now().Add(time.Second))
		return
	}
	if !won {
		return
	}
	s.Rooms.Push(ctx, b.Brand.AgentID, ReadyFrame(b.ID, quotes))
}

// ReadyFrame is quotes_ready.
func ReadyFrame(briefID string, quotes []Quote) json.RawMessage {
	if quotes == nil {
		quotes = []Quote{}
	}
	f, _ := json.Marshal(map[string]any{"type": TypeQuotesReady, "brief_id": briefID, "quotes": quotes})
	return f
}

// wakes adapts the Store to timers.WakeStore, keys WakePrefix+id.
type wakes struct{ s Store }

func (w wakes) Wakes(ctx context.Context) ([]store.Wake, error) {
	return w.Overdue(ctx, time.Time{}, 0)
}

func (w wakes) Overdue(ctx context.Context, before time.Time, limit int) ([]store.Wake, error) {
	due, err := w.s.Unready(ctx, before, limit)
	if err != nil {
		return nil, err
	}
	out := make([]store.Wake, len(due))
	for i, d := range due {
		out[i] = store.Wake{NegotiationID: WakePrefix + d.ID, At: d.At}
	}
	return out, nil
}

// Run re-arms the collect_until of every brief not yet ready from the store
// (a restart loses none), then, until ctx is done, arms those overdue in
// the store every few seconds (a wake the timers lost). The wakes
// themselves come to Fire (hub.HandleWakes).
func (s *Service) Run(ctx context.Context) error {
	sw := &timers.Sweeper{Store: wakes{s.Store}, Timers: s.Timers, Clock: s.Clock, Log: s.log()}
	if _, err := sw.Rearm(ctx); err != nil {
		s.log().Error("re-arm briefs' collect_until from the store", "err", err)
	}
	return sw.Run(ctx)
}

// View is GET /v1/briefs/{brief_id} for its brand (PROTOCOL.md "Sealed
// briefs"): the brief and its offers; from collect_until on, which offers
// were declined, the quotes and the award. Anyone else gets not_found.
func (s *Service) View(ctx context.Context, agent store.Agent, id string) (map[string]any, error) {
	b, err := s.Store.Brief(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && b.Brand.AgentID != agent.ID) {
		return nil, wire.Errorf(wire.CodeNotFound, "no brief %s of yours", id)
	} else if err != nil {
		return nil, err
	}
	now := s.Now()
	v := map[string]any{
		"brief_id": b.ID, "brand": b.Brand, "offer": b.Offer, "arena": b.Arena,
		"created_at": wire.Time(b.CreatedAt), "collect_until": wire.Time(b.CollectUntil),
		"award_until": wire.Time(b.CollectUntil.Add(AwardWindow)),
	}
	sealed := now.Before(b.CollectUntil)
	offers := make([]map[string]any, len(b.Offers))
	for i, o := range b.Offers {
		offers[i] = map[string]any{"offer_id": o.OfferID, "to": o.To}
		if !sealed {
			offers[i]["declined"] = !o.DeclinedAt.IsZero()
		}
	}
	v["offers"] = offers
	switch {
	case sealed:
		v["status"] = "collecting"
		return v, nil
	case b.AwardedQuote != "":
		v["status"] = "awarded"
		v["award"] = map[string]any{"quote_id": b.AwardedQuote, "negotiation_id": b.NegotiationID, "awarded_at": wire.Time(b.AwardedAt)}
	case now.Before(b.CollectUntil.Add(AwardWindow)):
		v["status"] = "ready"
	default:
		v["status"] = "closed"
	}
	quotes, err := s.Store.Quotes(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	if quotes == nil {
		quotes = []Quote{}
	}
	v["quotes"] = quotes
	return v, nil
}
