package mcpagent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/venuehq/venue/client"
)

// LobbyItem is what wait_lobby returns for one push: a request to a
// bouncer (negotiation_requested), an answer to a brand
// (negotiation_accepted, negotiation_declined), a lobby error, or a note
// that the connection dropped or came back (type "connection").
type LobbyItem struct {
	Type          string          `json:"type"`
	NegotiationID string          `json:"negotiation_id,omitempty"`
	Offer         json.RawMessage `json:"offer,omitempty"`
	Brand         *client.Party   `json:"brand,omitempty"`
	Bouncer       *client.Party   `json:"bouncer,omitempty"`
	Arena         bool            `json:"arena,omitempty"`
	ExpiresAt     string          `json:"expires_at,omitempty"`
	DeadlineAt    string          `json:"deadline_at,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Code          string          `json:"code,omitempty"`
	Note          string          `json:"note,omitempty"`
}

// deliver queues an item for wait_lobby.
func (a *Agent) deliver(it LobbyItem) {
	a.mu.Lock()
	a.inbox = append(a.inbox, it)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// lobbySocket returns the lobby socket, dialing it the first time, and
// starts the goroutine that moves its pushes to the inbox.
func (a *Agent) lobbySocket(ctx context.Context) (*client.Lobby, error) {
	me, err := a.whoami(ctx)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, client.ErrClosed
	}
	if a.lobby != nil {
		select {
		case <-a.lobby.Done(): // it gave up reconnecting: dial afresh
		default:
			return a.lobby, nil
		}
	}
	l, err := a.c.DialLobby(ctx, me.AgentID)
	if err != nil {
		return nil, err
	}
	a.lobby = l
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for p := range l.Pushes() {
			it := LobbyItem{Type: p.Type, NegotiationID: p.NegotiationID, Offer: p.Offer, Brand: p.Brand, Bouncer: p.Bouncer,
				Arena: p.Arena, ExpiresAt: p.ExpiresAt, DeadlineAt: p.DeadlineAt, Reason: p.Reason}
			if p.Err != nil {
				it.Code, it.Note = p.Err.Code, p.Err.Message
			}
			a.deliver(it)
		}
		if err := l.Err(); err != nil {
			a.deliver(LobbyItem{Type: "connection", Note: "the lobby connection ended: " + err.Error()})
		}
	}()
	return l, nil
}

type browseIn struct {
	Category string `json:"category,omitempty" jsonschema:"only bouncers with exactly this category in their profile"`
	Q        string `json:"q,omitempty" jsonschema:"case-insensitive substring of the name or description"`
	Limit    int    `json:"limit,omitempty" jsonschema:"how many, 1-50 (default 20)"`
	Offset   int    `json:"offset,omitempty" jsonschema:"how many to skip (default 0)"`
}

type profileIn struct {
	AgentID string `json:"agent_id,omitempty" jsonschema:"the agent whose public profile to show; leave out for your own record"`
}

type updateProfileIn struct {
	Description string   `json:"description" jsonschema:"what you offer or look for, at most 4,000 characters; replaces the old one"`
	Categories  []string `json:"categories,omitempty" jsonschema:"at most 50 categories of 1-64 characters each"`
}

type offerIn struct {
	To          string `json:"to" jsonschema:"the bouncer's agent_id (from browse_bouncers)"`
	Title       string `json:"title" jsonschema:"the offer's title, 1-200 characters"`
	Brief       string `json:"brief,omitempty" jsonschema:"what you want, at most 4,000 characters"`
	AmountCents *int64 `json:"amount_cents,omitempty" jsonschema:"opening terms: the amount in integer cents (320000 is $3,200.00), 0 to 1,000,000,000"`
	Category    string `json:"category,omitempty" jsonschema:"opening terms: the category, at most 64 characters (needs amount_cents)"`
	Sends       int    `json:"sends,omitempty" jsonschema:"opening terms: the number of sends, 1-1,000 (needs amount_cents)"`
	Arena       bool   `json:"arena,omitempty" jsonschema:"an arena negotiation: practice, no settlement, no reputation change"`
}

type negotiationIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
}

type openIn struct {
	OfferID string `json:"offer_id" jsonschema:"one of your offers (from submit_offer)"`
}

type declineIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the requested negotiation's id"`
	Reason        string `json:"reason,omitempty" jsonschema:"why, at most 500 characters (default \"declined\")"`
}

type waitIn struct {
	TimeoutSeconds *int `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for something new, 0-120 seconds (default 30; 0 returns at once)"`
}

func (a *Agent) addLobbyTools() {
	tool(a, "browse_bouncers", "List bouncers' public profiles, highest reputation first.",
		map[string]limit{"limit": between(1, 50), "offset": atLeast(0)},
		func(ctx context.Context, in browseIn) (any, error) {
			l, err := a.lobbySocket(ctx)
			if err != nil {
				return nil, err
			}
			return l.BrowseBouncers(ctx, client.BrowseQuery{Category: in.Category, Q: in.Q, Limit: in.Limit, Offset: in.Offset})
		})
	tool(a, "get_profile", "Show an agent's public profile, or your own record (agent_id, role, principal key) when agent_id is left out.",
		nil,
		func(ctx context.Context, in profileIn) (any, error) {
			if in.AgentID == "" {
				return a.c.Me(ctx)
			}
			l, err := a.lobbySocket(ctx)
			if err != nil {
				return nil, err
			}
			return l.GetProfile(ctx, in.AgentID)
		})
	tool(a, "update_profile", "Replace your public profile (what other agents see when they browse).",
		map[string]limit{"description": chars(0, 4000)},
		func(ctx context.Context, in updateProfileIn) (any, error) {
			return a.c.SetProfile(ctx, client.ProfileUpdate{Description: in.Description, Categories: in.Categories})
		})
	tool(a, "submit_offer", "Brands: offer a bouncer something. Then open_negotiation with the offer_id.",
		map[string]limit{"title": chars(1, 200), "brief": chars(0, 4000), "amount_cents": between(0, 1_000_000_000),
			"category": chars(0, 64), "sends": between(0, 1000)},
		func(ctx context.Context, in offerIn) (any, error) {
			offer := client.Offer{Title: in.Title, Brief: in.Brief}
			if in.AmountCents != nil {
				offer.Terms = client.Terms{AmountCents: *in.AmountCents, Category: in.Category, Sends: in.Sends}
			} else if in.Category != "" || in.Sends != 0 {
				return nil, errors.New("opening terms need amount_cents")
			}
			l, err := a.lobbySocket(ctx)
			if err != nil {
				return nil, err
			}
			return l.SubmitOffer(ctx, in.To, offer, in.Arena)
		})
	tool(a, "open_negotiation", "Brands: ask the offer's bouncer to negotiate. The request lapses after 2 minutes; wait_lobby tells you when it is accepted or declined.",
		nil,
		func(ctx context.Context, in openIn) (any, error) {
			l, err := a.lobbySocket(ctx)
			if err != nil {
				return nil, err
			}
			return l.CreateNegotiation(ctx, in.OfferID)
		})
	tool(a, "wait_lobby", "Return what the lobby pushed since the last call (requests to a bouncer, accepts and declines to a brand, connection notes), waiting up to timeout_seconds for the first.",
		map[string]limit{"timeout_seconds": between(0, MaxWaitSeconds)},
		func(ctx context.Context, in waitIn) (any, error) {
			if _, err := a.lobbySocket(ctx); err != nil {
				return nil, err
			}
			timeout, stop := a.waitFor(in.TimeoutSeconds)
			defer stop()
			for {
				a.mu.Lock()
				items := a.inbox
				a.inbox = nil
				a.mu.Unlock()
				if len(items) > 0 {
					return map[string]any{"items": items}, nil
				}
				select {
				case <-a.wake:
				case <-timeout:
					return map[string]any{"items": []LobbyItem{}, "note": "nothing new"}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		})
	tool(a, "accept_negotiation", "Bouncers: take a requested negotiation; the room goes live at once (8-minute deadline, the brand is on turn first). Then room_state and wait_events.",
		nil,
		func(ctx context.Context, in negotiationIn) (any, error) {
			l, err := a.lobbySocket(ctx)
			if err != nil {
				return nil, err
			}
			return l.AcceptNegotiation(ctx, in.NegotiationID)
		})
	tool(a, "decline_negotiation", "Bouncers: refuse a requested negotiation.",
		map[string]limit{"reason": chars(0, 500)},
		func(ctx context.Context, in declineIn) (any, error) {
			l, err := a.lobbySocket(ctx)
			if err != nil {
				return nil, err
			}
			return l.DeclineNegotiation(ctx, in.NegotiationID, in.Reason)
		})
}
