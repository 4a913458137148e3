// Package lobby answers the six lobby requests of PROTOCOL.md "Lobby socket" as
// PROTOCOL.md "Lobby socket" shapes them: browse_bouncers, get_profile, submit_offer,
// create_negotiation, accept_negotiation, decline_negotiation. It pushes
// negotiation_requested / _accepted / _declined to the agents concerned.
// The sealed-brief requests (PROTOCOL.md "Sealed briefs") it hands to
// package briefs.
package lobby

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Lobby frame types.
const (
	TypeBrowseBouncers      = "browse_bouncers"
	TypeGetProfile          = "get_profile"
	TypeSubmitOffer         = "submit_offer"
	TypeCreateNegotiation   = "create_negotiation"
	TypeAcceptNegotiation   = "accept_negotiation"
	TypeDeclineNegotiation  = "decline_negotiation"
	TypeBouncers            = "bouncers"
	TypeProfile             = "profile"
	TypeOfferSubmitted      = "offer_submitted"
	TypeNegotiationCreated  = "negotiation_created"
	TypeNegotiationAccepted = negotiation.TypeNegotiationAccepted
	TypeNegotiationDeclined = negotiation.TypeNegotiationDeclined
	TypeNegotiationReq      = negotiation.TypeNegotiationRequested
)

// Rooms is what the lobby needs of the venue: committing room steps (which
// also publishes their events and re-arms their clocks) and pushing frames to
// an agent's lobby sockets on any node.
type Rooms interface {
	// Create stores a new pending negotiation and arms its lapse.
	Create(ctx context.Context, st negotiation.State) error
	// Update commits one room step (store.Store.Update) and publishes it.
	Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error)
	// Push sends a frame to every lobby socket of the agent.
	Push(ctx context.Context, agentID string, frame json.RawMessage)
	// SubscribeAgent calls fn with every push for agentID until cancel; fn
	// must not block.
	SubscribeAgent(agentID string, fn func([]byte)) (cancel func())
}

// Service answers lobby requests. Now and NewID are injected; SocketURL
// returns the negotiation socket path for a negotiation id and
// ObserveURL the observe path.
type Service struct {
	Store      store.Store
	Rooms      Rooms
	Now        func() time.Time
	NewID      func(prefix string) string
	SocketURL  func(negotiationID string) string
	ObserveURL func(negotiationID string) string
	// PendingPerPair and PendingPerBouncer are the request quotas (0: the
	// defaults in quota.go).
	PendingPerPair, PendingPerBouncer int
	// Briefs answers the sealed-brief requests (PROTOCOL.md "Sealed
	// briefs"); nil: they are unknown types.
	Briefs *briefs.Service
}

// Handle answers one lobby frame from agent. It returns the reply frame (an
// `error` frame for bad input; the socket stays open), always carrying the
// request's `id` as `re`.
func (s *Service) Handle(ctx context.Context, agent store.Agent, data []byte) json.RawMessage {
	re := negotiation.ClientID(data)
	m, werr := wire.DecodeObject(data)
	if werr != nil {
		return wire.ErrorFrame(werr, re)
	}
	r := wire.NewFields(m)
	typ := r.NonEmpty("type")
	if id, ok := m["id"]; ok && string(id) != "null" {
		var s string
		if json.Unmarshal(id, &s) != nil || utf8.RuneCountInString(s) > negotiation.MaxIDLen {
			return wire.ErrorFrame(wire.Errorf(wire.CodeInvalidArgument, "id must be a string of at most %d characters", negotiation.MaxIDLen), "")
		}
	}
	if r.Err != nil {
		return wire.ErrorFrame(r.Err, re)
	}
	var reply map[string]any
	var err error
	switch typ {
	case TypeBrowseBouncers:
		reply, err = s.browse(ctx, r)
	case TypeGetProfile:
		reply, err = s.profile(ctx, r)
	case TypeSubmitOffer:
		reply, err = s.submitOffer(ctx, agent, r)
	case TypeCreateNegotiation:
		reply, err = s.createNegotiation(ctx, agent, r)
	case TypeAcceptNegotiation:
		reply, err = s.accept(ctx, agent, r)
	case TypeDeclineNegotiation:
		reply, err = s.decline(ctx, agent, r)
	case TypeBlockBrand, TypeUnblockBrand:
		reply, err = s.block(ctx, agent, r, typ == TypeBlockBrand)
	default:
		if s.Briefs != nil && briefs.Handles(typ) {
			reply, err = s.Briefs.Handle(ctx, agent, typ, r)
			break
		}
		err = wire.Errorf(wire.CodeUnknownType, "unknown lobby frame type %q", typ)
	}
	if err != nil {
		return wire.ErrorFrame(toWire(err), re)
	}
	if re != "" {
		reply["re"] = re
	}
	b, _ := json.Marshal(reply)
	return b
}

// toWire maps store and rule errors to wire errors. A store error reaches
// the client only as a fixed message: its text names the backend, tables
// and ids (SECURITY.md).
func toWire(err error) *wire.Error {
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return we
	case errors.Is(err, store.ErrNotFound):
		return wire.Errorf(wire.CodeNotFound, "no such agent, offer or negotiation")
	case errors.Is(err, store.ErrConflict):
		return wire.Errorf(wire.CodeConflict, "that conflicts with what is already stored; nothing was changed")
	default:
		return wire.Errorf(wire.CodeInternal, "the venue could not do that; nothing was changed")
	}
}

// BrowseDropOut is how long an agent may go unseen (no lobby socket opened
// or held) before browse_bouncers leaves it out; it is not deleted.
const BrowseDropOut = 30 * 24 * time.Hour

func (s *Service) browse(ctx context.Context, r *wire.Fields) (map[string]any, error) {
	q := store.AgentQuery{Role: negotiation.RoleBouncer, Category: r.String("category", false), Q: r.String("q", false)}
	q.Limit = r.IntIn("limit", 1, 50, 20)
	q.Offset = r.IntIn("offset", 0, 1<<30, 0)
	q.OnlineOnly = r.Bool("online")
	if r.Err != nil {
		return nil, r.Err
	}
	q.Now = s.Now()
	q.ActiveSince = q.Now.Add(-BrowseDropOut)
	agents, total, err := s.Store.Agents(ctx, q)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, len(agents))
	for _, a := range agents {
		p := directory.PublicProfile(a)
		p["online"] = a.Online // judged at q.Now; a single profile does not say
		items = append(items, p)
	}
	return map[string]any{"type": TypeBouncers, "items": items, "total": total, "offset": q.Offset}, nil
}

func (s *Service) profile(ctx context.Context, r *wire.Fields) (map[string]any, error) {
	id := r.NonEmpty("agent_id")
	if r.Err != nil {
		return nil, r.Err
	}
	a, err := s.Store.Agent(ctx, id)
	if err != nil {
		return nil, err
	}
	p := directory.PublicProfile(a)
	p["type"] = TypeProfile
	return p, nil
}

func (s *Service) submitOffer(ctx context.Context, brand store.Agent, r *wire.Fields) (map[string]any, error) {
	if brand.Role != negotiation.RoleBrand {
		return nil, wire.Errorf(wire.CodeForbidden, "submit_offer is for brands")
	}
	to := r.NonEmpty("to")
	offer := r.Object("offer", true)
	arena := r.Bool("arena")
	if r.Err != nil {
		return nil, r.Err
	}
	if werr := negotiation.CheckOffer(offer); werr != nil {
		return nil, werr
	}
	bouncer, err := s.Store.Agent(ctx, to)
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "no agent %s", to)
	} else if err != nil {
		return nil, err
	}
	if bouncer.Role != negotiation.RoleBouncer {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "agent %s is not a bouncer", to)
	}
	off := store.Offer{ID: s.NewID("off"), Brand: brand.ID, Bouncer: to, Body: offer, Arena: arena, CreatedAt: s.Now()}
	if err := s.Store.CreateOffer(ctx, off); err != nil {
		return nil, err
	}
	return map[string]any{"type": TypeOfferSubmitted, "offer_id": off.ID, "to": to, "arena": arena}, nil
}

func (s *Service) createNegotiation(ctx context.Context, brand store.Agent, r *wire.Fields) (map[string]any, error) {
	if brand.Role != negotiation.RoleBrand {
		return nil, wire.Errorf(wire.CodeForbidden, "create_negotiation is for brands")
	}
	offerID := r.NonEmpty("offer_id")
	if r.Err != nil {
		return nil, r.Err
	}
	off, err := s.Store.Offer(ctx, offerID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && off.Brand != brand.ID) {
		return nil, wire.Errorf(wire.CodeNotFound, "no offer %s of yours", offerID)
	} else if err != nil {
		return nil, err
	}
	if off.NegotiationID != "" {
		return nil, wire.Errorf(wire.CodeConflict, "offer %s already has negotiation %s", offerID, off.NegotiationID)
	}
	bouncer, err := s.Store.Agent(ctx, off.Bouncer)
	if err != nil {
		return nil, err
	}
	if err := s.admitRequest(ctx, brand.ID, bouncer.ID); err != nil {
		return nil, err
	}
	st := negotiation.NewRequest(s.NewID("neg"), off.ID, off.Body, brand.Party(), bouncer.Party(), off.Arena, s.Now())
	if err := s.Rooms.Create(ctx, st); err != nil {
		return nil, err
	}
	s.Rooms.Push(ctx, bouncer.ID, st.RequestedFrame())
	return map[string]any{"type": TypeNegotiationCreated, "negotiation_id": st.ID, "status": st.Status,
		"expires_at": wire.Time(st.RequestExpiresAt)}, nil
}

func (s *Service) addressed(ctx context.Context, bouncer store.Agent, r *wire.Fields, verb string) (string, error) {
	id := r.NonEmpty("negotiation_id")
	if r.Err != nil {
		return "", r.Err
	}
	if bouncer.Role != negotiation.RoleBouncer {
		return "", wire.Errorf(wire.CodeForbidden, "%s is for bouncers", verb)
	}
	st, err := s.Store.Negotiation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", wire.Errorf(wire.CodeNotFound, "no negotiation %s", id)
	} else if err != nil {
		return "", err
	}
	if st.Bouncer.AgentID != bouncer.ID {
		return "", wire.Errorf(wire.CodeForbidden, "negotiation %s is not addressed to you", id)
	}
	return id, nil
}

func (s *Service) accept(ctx context.Context, bouncer store.Agent, r *wire.Fields) (map[string]any, error) {
	id, err := s.addressed(ctx, bouncer, r, TypeAcceptNegotiation)
	if err != nil {
		return nil, err
	}
	// The brand's negotiation_accepted is the step's own push: its lobby
	// and event log have it ahead of negotiation_started.
	st, _, err := s.Rooms.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		out, err := st.Start(s.Now())
		if err != nil {
			return out, err
		}
		b, err := json.Marshal(st.AcceptedFrame(s.SocketURL(st.ID), s.ObserveURL(st.ID)))
		out.Pushes = append(out.Pushes, negotiation.Private{To: st.Brand.AgentID, Frame: b})
		return out, err
	})
	if err != nil {
		return nil, err
	}
	return st.AcceptedFrame(s.SocketURL(st.ID), s.ObserveURL(st.ID)), nil
}

func (s *Service) decline(ctx context.Context, bouncer store.Agent, r *wire.Fields) (map[string]any, error) {
	reason := r.String("reason", false)
	if utf8.RuneCountInString(reason) > 500 {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "reason is longer than 500 characters")
	}
	id, err := s.addressed(ctx, bouncer, r, TypeDeclineNegotiation)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = "declined"
	}
	st, _, err := s.Rooms.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Decline(reason, s.Now())
	})
	if err != nil {
		return nil, err
	}
	// The brand learns of it from the room's commit (the engine pushes a
	// decline to the brand; the bouncer has this reply).
	return st.DeclinedView(), nil
}
