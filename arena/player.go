package arena

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// errEnded stops a player.
var errEnded = errors.New("ended")

// player is one house agent in one negotiation.
type player struct {
	h      *House
	a      houseAgent
	negID  string
	anchor int64
	log    *slog.Logger

	room     *client.Room
	turn     string
	deadline time.Time
	standing *struct {
		by      string
		cents   int64
		terms   json.RawMessage
		expires time.Time
	}
	// base is the terms the house's next proposal keeps every key of (it
	// moves only the amount): the offer's terms when the room opens, then
	// the terms of the other side's latest proposal.
	base     json.RawMessage
	last     int64
	counters int
	walked   bool
	// upTo is the last seq of the latest negotiation_started: the frames up
	// to it that follow are a replay its context already sums up (turn,
	// standing), so they change neither, and the player does not move
	// before it has seen them (seen), or it would answer the same frame
	// twice.
	upTo, seen int64
}

func (p *player) run(ctx context.Context, c *client.Client) error {
	room, err := c.DialRoom(ctx, p.negID, client.RoomOptions{})
	if err != nil {
		return err
	}
	p.room = room
	defer room.Close()
	var walkTimer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-room.Done():
			return room.Err()
		case <-walkTimer:
			walkTimer = nil
			if !p.walked {
				p.walked = true
				_, err := room.Walk(ctx, "Out of time; thank you for the practice.")
				return err
			}
		case ev, ok := <-room.Events():
			if !ok {
				return room.Err()
			}
			if err := p.observe(ev); errors.Is(err, errEnded) {
				return nil
			}
			if p.seen < p.upTo {
				continue // the replay the context announced is still coming
			}
			if ev.Type == "negotiation_started" && !p.deadline.IsZero() && walkTimer == nil {
				if d := p.deadline.Sub(p.h.cfg.Clock.Now()) - WalkMargin + time.Second; d > 0 {
					t := p.h.cfg.Clock.NewTimer(d)
					defer t.Stop()
					walkTimer = t.C()
				}
			}
			if err := p.act(ctx); errors.Is(err, errEnded) {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func termsCents(raw json.RawMessage) int64 {
	t, err := negotiation.ParseTerms(raw)
	if err != nil {
		return 0
	}
	return t.AmountCents
}

// observe updates what the player knows from one event.
func (p *player) observe(ev client.Event) error {
	p.seen = max(p.seen, ev.Seq)
	if ev.Seq > 0 && ev.Seq <= p.upTo && ev.Type != "negotiation_ended" {
		return nil // a transcript frame the context sums up
	}
	switch ev.Type {
	case "negotiation_started":
		ctx := ev.Context
		if ctx == nil {
			return nil
		}
		if ctx.Status != negotiation.StatusLive {
			return errEnded
		}
		p.turn, p.deadline, p.upTo = ctx.Turn, parseTime(ctx.DeadlineAt), ctx.LastSeq
		if t := offerTerms(ev.Offer); t != nil && p.base == nil {
			p.base = t
		}
		p.standing = nil
		if s := ctx.Standing; s != nil {
			p.setStanding(s.By, s.Terms, s.ExpiresAt)
		}
	case "negotiation_message":
		p.turn = ev.Turn
		switch ev.FrameType {
		case negotiation.TypeProposeTerms, negotiation.TypeCounterTerms:
			p.setStanding(ev.From, ev.Terms, ev.ExpiresAt)
			if ev.From == p.a.id { // a replay of its own
				p.last = termsCents(ev.Terms)
				if ev.FrameType == negotiation.TypeCounterTerms {
					p.counters++
				}
			}
		case negotiation.TypeReject, negotiation.TypeWithdraw:
			p.standing = nil
		}
	case "proposal_expired":
		p.standing = nil
	case "negotiation_ended":
		return errEnded
	}
	return nil
}

func (p *player) setStanding(by string, terms json.RawMessage, expires string) {
	p.standing = &struct {
		by      string
		cents   int64
		terms   json.RawMessage
		expires time.Time
	}{by, termsCents(terms), terms, parseTime(expires)}
	if by != p.a.id && len(terms) > 0 {
		p.base = terms
	}
}

// offerTerms is the terms object of an offer; nil for none.
func offerTerms(offer json.RawMessage) json.RawMessage {
	var o struct {
		Terms json.RawMessage `json:"terms"`
	}
	if json.Unmarshal(offer, &o) != nil || len(o.Terms) == 0 || o.Terms[0] != '{' {
		return nil
	}
	return o.Terms
}

// WithAmount is terms with amount_usd set to cents and every other key
// kept as it is (the house moves only the amount: PROTOCOL.md "Practising
// against the house"). Terms that are not a JSON object give just the
// amount.
func WithAmount(terms json.RawMessage, cents int64) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(terms) > 0 && json.Unmarshal(terms, &m) != nil {
		m = map[string]json.RawMessage{}
	}
	m["amount_usd"] = grants.USDJSON(cents)
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(fmt.Sprintf(`{"amount_usd":%s}`, grants.USDJSON(cents)))
	}
	return b
}

// act sends the strategy's move, if any, and learns from its ack.
func (p *player) act(ctx context.Context) error {
	for range 3 { // a refused move is decided again from what changed
		pos := Position{Role: p.a.role, AnchorCents: p.anchor, LastCents: p.last, Counters: p.counters,
			OnTurn: p.turn == p.a.id, Now: p.h.cfg.Clock.Now(), Deadline: p.deadline}
		if s := p.standing; s != nil {
			pos.Standing = &StandingView{Theirs: s.by != p.a.id, AmountCents: s.cents, ExpiresAt: s.expires}
		}
		m := Decide(pos)
		var ack *client.Ack
		var err error
		switch m.Kind {
		case MoveWait:
			return nil
		case MovePropose, MoveCounter:
			base := p.base
			if m.Kind == MoveCounter && p.standing != nil && p.standing.by != p.a.id {
				base = p.standing.terms // the terms it answers
			}
			terms := WithAmount(base, m.AmountCents)
			if m.Kind == MovePropose {
				ack, err = p.room.Propose(ctx, terms, ProposalTTL, m.Content)
			} else {
				ack, err = p.room.Counter(ctx, terms, ProposalTTL, m.Content)
			}
			if err == nil {
				p.last = m.AmountCents
				if m.Kind == MoveCounter {
					p.counters++
				}
				p.setStanding(p.a.id, terms, ack.ExpiresAt)
			}
		case MoveAccept:
			ack, err = p.room.Accept(ctx, client.AcceptOpts{})
			if err == nil {
				return errEnded
			}
		case MoveWalk:
			p.walked = true
			if _, err = p.room.Walk(ctx, m.Content); err == nil {
				return errEnded
			}
		case MoveMessage:
			ack, err = p.room.Message(ctx, m.Content)
		}
		if err == nil {
			p.turn, p.seen = ack.Turn, max(p.seen, ack.Seq)
			return nil
		}
		var we *client.Error
		if errors.As(err, &we) && we.Code == wire.CodeInvalidState {
			// The table changed under us (an expiry, an ending): the
			// events that explain it follow; decide again on them.
			p.log.Info("house agent: move refused", "move", m.Kind, "err", err)
			p.standing = nil
			continue
		}
		return err
	}
	return nil
}
