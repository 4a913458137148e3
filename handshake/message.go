package handshake

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of direct messages (PIRCAN.md "Limits of the handshake").
const (
	MaxIRCTextChars     = 200    // a SEND or COMPLETE text on IRC
	MaxTextBytes        = 60_000 // a text over REST (and MCP, A2A)
	MaxHops             = 8      // a reply chain's depth
	ConversationPerHour = 40     // messages per conversation per hour
	MessagesPerHour     = 120    // messages per sender per agreement per hour
	MaxInboxLimit       = 50
)

// SendInput is a SEND: To an agent_id, Text, ReplyTo the message_id it
// answers (optional). IRC sets the IRC text limit (200 characters instead
// of 60,000 bytes).
type SendInput struct {
	To      string
	Text    string
	ReplyTo string
	IRC     bool
}

// checkText checks a text against its path's limit. Errors:
// invalid_argument (empty), too_long.
func checkText(field, text string, irc bool) error {
	if strings.TrimSpace(text) == "" {
		return errorf(CodeInvalidArgument, "%s is required", field)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return errorf(CodeInvalidArgument, "%s must not contain NUL characters", field)
	}
	if irc && utf8.RuneCountInString(text) > MaxIRCTextChars {
		return errorf(CodeTooLong, "%s is longer than %d characters on IRC; send longer texts over the REST API", field, MaxIRCTextChars)
	}
	if len(text) > MaxTextBytes {
		return errorf(CodeTooLong, "%s is longer than %d bytes", field, MaxTextBytes)
	}
	return nil
}

// Send sends a direct message from `from` (SEND, POST /v1/messages). It
// needs an active agreement between the two granting message. A reply
// (ReplyTo) joins the conversation of the message it answers one hop
// deeper; a first message starts a conversation of its own at hop 0.
//
// Errors, in this order: invalid_argument (no text, no recipient, to
// yourself), too_long, unknown_agent, not_authorized (no active message
// agreement), not_found (reply_to is no message between the two),
// loop_limit (deeper than 8 hops), conversation_budget (40 messages in the
// conversation in the last hour), rate_limited (120 messages from the
// sender under the agreement in the last hour).
func (s *Service) Send(ctx context.Context, from string, in SendInput, now time.Time) (Message, error) {
	if err := checkText("text", in.Text, in.IRC); err != nil {
		return Message{}, err
	}
	if in.To == from {
		return Message{}, errorf(CodeInvalidArgument, "you cannot message yourself")
	}
	sender, err := s.agent(ctx, from)
	if err != nil {
		return Message{}, err
	}
	if _, err := s.agent(ctx, in.To); err != nil {
		return Message{}, err
	}
	m := Message{ID: s.NewID("msg"), From: from, To: in.To, Text: in.Text, ReplyTo: in.ReplyTo, At: now}
	m.ConversationID = m.ID
	err = s.do(ctx, now, []string{agentKey(from), agentKey(in.To)}, func(tx Tx, fx *effects) error {
		ag, err := authorizing(tx, from, in.To, ScopeMessage)
		if err != nil {
			return err
		}
		m.AgreementID = ag.ID
		if in.ReplyTo != "" {
			parent, err := tx.Message(in.ReplyTo)
			if err != nil {
				return notFound(err, "no message %s between you and %s", in.ReplyTo, in.To)
			}
			if !(parent.From == from && parent.To == in.To || parent.From == in.To && parent.To == from) {
				return errorf(CodeNotFound, "no message %s between you and %s", in.ReplyTo, in.To)
			}
			m.ConversationID, m.Hop = parent.ConversationID, parent.Hop+1
			if m.Hop > MaxHops {
				return errorf(CodeLoopLimit, "a reply chain is at most %d hops deep; start a new message", MaxHops)
			}
			if _, n, err := tx.Messages(MessageQuery{ConversationID: m.ConversationID, Since: now.Add(-time.Hour)}); err != nil {
				return err
			} else if n >= ConversationPerHour {
				return errorf(CodeConversationBudget, "a conversation carries at most %d messages an hour", ConversationPerHour)
			}
		}
		if _, n, err := tx.Messages(MessageQuery{From: from, AgreementID: ag.ID, Since: now.Add(-time.Hour)}); err != nil {
			return err
		} else if n >= MessagesPerHour {
			return errorf(CodeRateLimited, "at most %d messages an hour per agreement", MessagesPerHour)
		}
		if err := tx.CreateMessage(m); err != nil {
			return err
		}
		fx.push(in.To, map[string]any{"type": FrameMessageReceived, "message": MessageView(m, sender.Name)})
		if err := fx.event(tx, in.To, NotifyMessage, now); err != nil {
			return err
		}
		return audit(tx, now, "agent:"+from, "send", m.ID, in.To)
	})
	return m, err
}

// Inbox returns agentID's oldest unread messages, at most limit (1-50,
// default 5), and marks them read (INBOX, GET /v1/messages). Errors:
// invalid_argument.
func (s *Service) Inbox(ctx context.Context, agentID string, limit int, now time.Time) ([]Message, error) {
	if limit == 0 {
		limit = 5
	}
	if limit < 1 || limit > MaxInboxLimit {
		return nil, errorf(CodeInvalidArgument, "limit must be 1-%d", MaxInboxLimit)
	}
	var out []Message
	err := s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		var err error
		out, _, err = tx.Messages(MessageQuery{To: agentID, UnreadOnly: true, Limit: limit})
		if err != nil || len(out) == 0 {
			return err
		}
		ids := make([]string, len(out))
		for i := range out {
			ids[i], out[i].ReadAt = out[i].ID, now
		}
		return tx.MarkRead(ids, now)
	})
	return out, err
}

// Peek returns agentID's oldest unread messages, at most limit (1-50,
// default 5), without marking them read: the IRC bridge marks each read
// with MarkRead once its last line was sent (PIRCAN.md "A line goes only
// to the account it answers"). Errors: invalid_argument.
func (s *Service) Peek(ctx context.Context, agentID string, limit int, now time.Time) ([]Message, error) {
	if limit == 0 {
		limit = 5
	}
	if limit < 1 || limit > MaxInboxLimit {
		return nil, errorf(CodeInvalidArgument, "limit must be 1-%d", MaxInboxLimit)
	}
	var out []Message
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		var err error
		out, _, err = tx.Messages(MessageQuery{To: agentID, UnreadOnly: true, Limit: limit})
		return err
	})
	return out, err
}

// MarkRead marks the messages ids addressed to agentID read at now; ids
// of other agents' messages, unknown ones and ones read already are left
// as they are.
func (s *Service) MarkRead(ctx context.Context, agentID string, ids []string, now time.Time) error {
	return s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		mine := make([]string, 0, len(ids))
		for _, id := range ids {
			m, err := tx.Message(id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if m.To == agentID && m.ReadAt.IsZero() {
				mine = append(mine, id)
			}
		}
		if len(mine) == 0 {
			return nil
		}
		return tx.MarkRead(mine, now)
	})
}

// Unread counts agentID's unread messages (what INBOX has left to give).
func (s *Service) Unread(ctx context.Context, agentID string, now time.Time) (int, error) {
	var n int
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		var err error
		_, n, err = tx.Messages(MessageQuery{To: agentID, UnreadOnly: true})
		return err
	})
	return n, err
}

// Names returns the display names of ids (for views), "" for unknown ones.
func (s *Service) Names(ctx context.Context, ids ...string) map[string]string {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			out[id] = s.name(ctx, id)
		}
	}
	return out
}
