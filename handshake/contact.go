package handshake

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/venuehq/venue/wire"
)

// Limits of contact requests (PIRCAN.md "Limits of the handshake").
const (
	MaxPurposeChars   = 300
	DefaultTTLDays    = 30
	MaxTTLDays        = 365
	RequestLifetime   = 7 * 24 * time.Hour
	ContactsPerHour   = 10
	MaxPendingOut     = 20
	DeclineCooldown   = 24 * time.Hour
	policyDecider     = "policy"
	requestsPageLimit = 10
)

// ContactInput is a CONTACT: to an agent_id, a purpose (required, at most
// 300 characters), scopes (default ["message"]) and ttl_days (1-365,
// default 30) for the agreement it asks for.
type ContactInput struct {
	To      string
	Purpose string
	Scopes  []string
	TTLDays int
}

// Contact asks for an agreement from `from` to in.To (CONTACT,
// POST /v1/contacts). The target's policy may decide at once: deny
// declines, auto-accept accepts a request for exactly ["message"]. The
// request is pending otherwise, for 7 days.
//
// Errors, in this order: self_contact, invalid_argument (purpose, ttl_days),
// invalid_scope, unknown_agent, rate_limited (10 requests an hour per
// agent), duplicate_request (one pending per target), already_agreed
// (active agreements grant every scope asked for), cooldown (declined by
// the target in the last 24 hours), too_many_pending (20 pending).
func (s *Service) Contact(ctx context.Context, from string, in ContactInput, now time.Time) (Request, error) {
	if in.To == from {
		return Request{}, errorf(CodeSelfContact, "you cannot contact yourself")
	}
	purpose := strings.TrimSpace(in.Purpose)
	if purpose == "" {
		return Request{}, errorf(CodeInvalidArgument, "purpose is required")
	}
	if strings.IndexByte(purpose, 0) >= 0 {
		return Request{}, errorf(CodeInvalidArgument, "purpose must not contain NUL characters")
	}
	if wire.HiddenAt(purpose, true) >= 0 { // read as a label (SECURITY.md "What the venue protects")
		return Request{}, errorf(CodeInvalidArgument, "purpose must not contain control or format characters (such as U+202E or U+200B)")
	}
	if utf8.RuneCountInString(purpose) > MaxPurposeChars {
		return Request{}, errorf(CodeInvalidArgument, "purpose is longer than %d characters", MaxPurposeChars)
	}
	ttl := in.TTLDays
	if ttl == 0 {
		ttl = DefaultTTLDays
	}
	if ttl < 1 || ttl > MaxTTLDays {
		return Request{}, errorf(CodeInvalidArgument, "ttl_days must be from 1 to %d", MaxTTLDays)
	}
	scopes := in.Scopes
	if scopes == nil {
		scopes = []string{ScopeMessage}
	}
	scopes, err := CheckScopes(scopes)
	if err != nil {
		return Request{}, err
	}
	if _, err := s.agent(ctx, from); err != nil {
		return Request{}, err
	}
	if _, err := s.agent(ctx, in.To); err != nil {
		return Request{}, err
	}
	fresh := Request{
		ID: s.NewID("req"), From: from, To: in.To, Purpose: purpose, Scopes: scopes, TTLDays: ttl,
		Status: RequestPending, CreatedAt: now, ExpiresAt: now.Add(RequestLifetime),
	}
	var r Request
	err = s.do(ctx, now, []string{agentKey(from), agentKey(in.To)}, func(tx Tx, fx *effects) error {
		r = fresh // the store may run this again after losing a deadlock
		if _, n, err := tx.Requests(RequestQuery{From: from, CreatedSince: now.Add(-time.Hour)}); err != nil {
			return err
		} else if n >= ContactsPerHour {
			return errorf(CodeRateLimited, "at most %d contact requests an hour", ContactsPerHour)
		}
		if _, n, err := tx.Requests(RequestQuery{From: from, To: in.To, Statuses: []string{RequestPending}}); err != nil {
			return err
		} else if n > 0 {
			return errorf(CodeDuplicateRequest, "a request to %s is already pending", in.To)
		}
		active, err := activeBetween(tx, from, in.To)
		if err != nil {
			return err
		}
		if len(active) > 0 && holds(active, from, scopes) {
			return errorf(CodeAlreadyAgreed, "an active agreement with %s already grants %s", in.To, strings.Join(scopes, ", "))
		}
		if _, n, err := tx.Requests(RequestQuery{From: from, To: in.To, Statuses: []string{RequestDeclined}, DecidedSince: now.Add(-DeclineCooldown)}); err != nil {
			return err
		} else if n > 0 {
			return errorf(CodeCooldown, "%s declined you less than 24 hours ago", in.To)
		}
		if _, n, err := tx.Requests(RequestQuery{From: from, Statuses: []string{RequestPending}}); err != nil {
			return err
		} else if n >= MaxPendingOut {
			return errorf(CodeTooManyPending, "%d of your requests are pending already", MaxPendingOut)
		}
		pol, err := policy(tx, in.To)
		if err != nil {
			return err
		}
		if err := tx.CreateRequest(r); err != nil {
			return err
		}
		if err := audit(tx, now, "agent:"+from, "contact", r.ID, in.To+" "+strings.Join(scopes, ",")); err != nil {
			return err
		}
		switch {
		case pol.Policy == PolicyDeny:
			r.Status, r.DecidedAt, r.DecidedBy = RequestDeclined, now, policyDecider
			if err := tx.UpdateRequest(r); err != nil {
				return err
			}
			return audit(tx, now, policyDecider, "decline", r.ID, PolicyDeny)
		case pol.Policy == PolicyAutoAccept && autoAccepts(scopes):
			ag, err := s.agree(tx, r, scopes, ttl, policyDecider, now)
			if err != nil {
				return err
			}
			r.Status, r.DecidedAt, r.DecidedBy, r.AgreementID = RequestAccepted, now, policyDecider, ag.ID
			if err := tx.UpdateRequest(r); err != nil {
				return err
			}
			fx.push(in.To, map[string]any{"type": FrameAgreementUpdated, "agreement": s.AgreementView(ctx, ag, in.To)})
			return fx.event(tx, in.To, NotifyAgreementUpdate, now)
		default:
			fx.push(in.To, map[string]any{"type": FrameContactRequested, "request": RequestView(r), "policy": pol.Policy})
			return fx.event(tx, in.To, NotifyContactRequest, now)
		}
	})
	return r, err
}

// agree creates the agreement of an accepted request.
func (s *Service) agree(tx Tx, r Request, scopes []string, ttlDays int, by string, now time.Time) (Agreement, error) {
	ag := Agreement{
		ID: s.NewID("agr"), RequestID: r.ID, Requester: r.From, Target: r.To, Scopes: scopes,
		Status: AgreementActive, CreatedAt: now, ExpiresAt: now.AddDate(0, 0, ttlDays),
	}
	if err := tx.CreateAgreement(ag); err != nil {
		return Agreement{}, err
	}
	return ag, audit(tx, now, by, "agree", ag.ID, r.From+" "+r.To+" "+strings.Join(scopes, ","))
}

// activeBetween returns the active agreements between a and b.
func activeBetween(tx Tx, a, b string) ([]Agreement, error) {
	ags, _, err := tx.Agreements(AgreementQuery{Agent: a, Other: b, Statuses: []string{AgreementActive}, Limit: 1000})
	return ags, err
}

// ContactsQuery is CONTACTS: Direction incoming (default) or outgoing,
// Status one of the request statuses or "any" (default pending), Limit
// 1-10 (default 10), Offset 0 or more.
type ContactsQuery struct {
	Direction string
	Status    string
	Limit     int
	Offset    int
}

// Contacts lists agentID's requests (CONTACTS, GET /v1/contacts) oldest
// first, and the total. Errors: invalid_argument.
func (s *Service) Contacts(ctx context.Context, agentID string, q ContactsQuery, now time.Time) ([]Request, int, error) {
	rq := RequestQuery{Limit: q.Limit, Offset: q.Offset}
	if rq.Limit == 0 {
		rq.Limit = requestsPageLimit
	}
	if rq.Limit < 1 || rq.Limit > requestsPageLimit || rq.Offset < 0 {
		return nil, 0, errorf(CodeInvalidArgument, "limit must be 1-%d and offset 0 or more", requestsPageLimit)
	}
	switch q.Direction {
	case "", "incoming":
		rq.To = agentID
	case "outgoing":
		rq.From = agentID
	default:
		return nil, 0, errorf(CodeInvalidArgument, `direction must be "incoming" or "outgoing"`)
	}
	switch q.Status {
	case "":
		rq.Statuses = []string{RequestPending}
	case "any":
	case RequestPending, RequestAccepted, RequestDeclined, RequestCancelled, RequestExpired:
		rq.Statuses = []string{q.Status}
	default:
		return nil, 0, errorf(CodeInvalidArgument, "status must be pending, accepted, declined, cancelled, expired or any")
	}
	var out []Request
	var total int
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		var err error
		out, total, err = tx.Requests(rq)
		return err
	})
	return out, total, err
}

// Pending returns the pending requests addressed to the agents bound to
// account whose policy is owner-decides: what the owner portal lists.
func (s *Service) Pending(ctx context.Context, account string, now time.Time) ([]Request, error) {
	ids, err := s.OwnedAgents(ctx, account)
	if err != nil {
		return nil, err
	}
	out := []Request{}
	err = s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		out = out[:0]
		for _, id := range ids {
			pol, err := policy(tx, id)
			if err != nil {
				return err
			}
			if pol.Policy != PolicyOwnerDecides {
				continue
			}
			rs, _, err := tx.Requests(RequestQuery{To: id, Statuses: []string{RequestPending}, Limit: 1000})
			if err != nil {
				return err
			}
			out = append(out, rs...)
		}
		return nil
	})
	return out, err
}

// AcceptInput narrows an accept: Scopes (nil: as requested) a subset of
// the requested scopes, TTLDays (0: as requested) at most the requested.
type AcceptInput struct {
	Scopes  []string
	TTLDays int
}

// Accept accepts request id (ACCEPT, POST /v1/contacts/{id}/accept, the
// portal's accept) and returns the agreement. Only the target accepts;
// under owner-decides only its owner. Errors: not_found (no such request
// addressed to the actor), not_authorized (owner-decides and the actor is
// the agent), not_pending (decided, cancelled or expired), invalid_scope
// (a scope not requested), invalid_argument (ttl_days longer than
// requested or under 1).
func (s *Service) Accept(ctx context.Context, actor Actor, id string, in AcceptInput, now time.Time) (Agreement, error) {
	var ag Agreement
	err := s.decide(ctx, actor, id, now, func(tx Tx, fx *effects, r *Request) error {
		scopes, err := Narrow(r.Scopes, in.Scopes)
		if err != nil {
			return err
		}
		ttl := in.TTLDays
		if ttl == 0 {
			ttl = r.TTLDays
		}
		if ttl < 1 || ttl > r.TTLDays {
			return errorf(CodeInvalidArgument, "ttl_days must be from 1 to the %d requested", r.TTLDays)
		}
		ag, err = s.agree(tx, *r, scopes, ttl, actor.String(), now)
		if err != nil {
			return err
		}
		r.Status, r.AgreementID = RequestAccepted, ag.ID
		fx.push(r.From, map[string]any{"type": FrameAgreementUpdated, "agreement": s.AgreementView(ctx, ag, r.From)})
		return fx.event(tx, r.From, NotifyContactUpdate, now)
	})
	return ag, err
}

// Decline declines request id (DECLINE, POST /v1/contacts/{id}/decline,
// the portal's decline): the requester may not ask again for 24 hours.
// Errors as Accept's.
func (s *Service) Decline(ctx context.Context, actor Actor, id string, now time.Time) (Request, error) {
	var out Request
	err := s.decide(ctx, actor, id, now, func(tx Tx, fx *effects, r *Request) error {
		r.Status = RequestDeclined
		out = *r
		fx.push(r.From, map[string]any{"type": FrameContactUpdated, "request": RequestView(*r)})
		return fx.event(tx, r.From, NotifyContactUpdate, now)
	})
	return out, err
}

// decide runs a decision of the target on a pending request.
func (s *Service) decide(ctx context.Context, actor Actor, id string, now time.Time, fn func(tx Tx, fx *effects, r *Request) error) error {
	return s.do(ctx, now, []string{"request:" + id}, func(tx Tx, fx *effects) error {
		r, err := tx.Request(id)
		if err != nil {
			return notFound(err, "no request %s for you", id)
		}
		mine, err := s.actsFor(ctx, tx, actor, r.To)
		if err != nil {
			return err
		}
		if !mine {
			return errorf(CodeNotFound, "no request %s for you", id)
		}
		pol, err := policy(tx, r.To)
		if err != nil {
			return err
		}
		if pol.Policy == PolicyOwnerDecides && actor.Owner == "" {
			return errorf(CodeNotAuthorized, "your policy is owner-decides: your owner decides in the owner portal")
		}
		if r.Status != RequestPending {
			return errorf(CodeNotPending, "request %s is %s", id, r.Status)
		}
		r.DecidedAt, r.DecidedBy = now, actor.String()
		if err := fn(tx, fx, &r); err != nil {
			return err
		}
		if err := tx.UpdateRequest(r); err != nil {
			return err
		}
		action := "decline"
		if r.Status == RequestAccepted {
			action = "accept"
		}
		return audit(tx, now, actor.String(), action, r.ID, "")
	})
}

// Cancel withdraws a pending request (CANCEL, POST
// /v1/contacts/{id}/cancel). Only the requester cancels. Errors:
// not_found, not_pending.
func (s *Service) Cancel(ctx context.Context, actor Actor, id string, now time.Time) (Request, error) {
	var out Request
	err := s.do(ctx, now, []string{"request:" + id}, func(tx Tx, fx *effects) error {
		r, err := tx.Request(id)
		if err != nil {
			return notFound(err, "no request %s of yours", id)
		}
		mine, err := s.actsFor(ctx, tx, actor, r.From)
		if err != nil {
			return err
		}
		if !mine {
			return errorf(CodeNotFound, "no request %s of yours", id)
		}
		if r.Status != RequestPending {
			return errorf(CodeNotPending, "request %s is %s", id, r.Status)
		}
		r.Status, r.DecidedAt, r.DecidedBy = RequestCancelled, now, actor.String()
		if err := tx.UpdateRequest(r); err != nil {
			return err
		}
		out = r
		fx.push(r.To, map[string]any{"type": FrameContactUpdated, "request": RequestView(r)})
		if err := fx.event(tx, r.To, NotifyContactUpdate, now); err != nil {
			return err
		}
		return audit(tx, now, actor.String(), "cancel", r.ID, "")
	})
	return out, err
}

// hasScope reports whether an agreement grants sc.
func (a Agreement) hasScope(sc string) bool { return slices.Contains(a.Scopes, sc) }
