package arena

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/venuehq/venue/client"
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
		expires time.Time
	}
	last     int64
	counters int
	walked   bool
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
	switch ev.Type {
	case "negotiation_started":
		ctx := ev.Context
		if ctx == nil {
			return nil
		}
		if ctx.Status != negotiation.StatusLive {
			return errEnded
		}
		p.turn, p.deadline = ctx.Turn, parseTime(ctx.DeadlineAt)
		p.standing = nil
		if s := ctx.Standing; s != nil {
			p.setStanding(s.By, termsCents(s.Terms), s.ExpiresAt)
		}
	case "negotiation_message":
		p.turn = ev.Turn
		switch ev.FrameType {
		case negotiation.TypeProposeTerms, negotiation.TypeCounterTerms:
			p.setStanding(ev.From, termsCents(ev.Terms), ev.ExpiresAt)
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

func (p *player) setStanding(by string, cents int64, expires string) {
	p.standing = &struct {
		by      string
		cents   int64
		expires time.Time
	}{by, cents, parseTime(expires)}
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
			terms := json.RawMessage(fmt.Sprintf(`{"amount_usd":%d.%02d}`, m.AmountCents/100, m.AmountCents%100))
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
				p.setStanding(p.a.id, m.AmountCents, ack.ExpiresAt)
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
			p.turn = ack.Turn
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
