package handshake

import (
	"context"
	"time"

	"github.com/venuehq/venue/wire"
)

// Lobby push frames of the handshake (PROTOCOL.md "Handshake pushes"),
// sent to a venue agent's lobby socket.
const (
	FrameContactRequested = "contact_requested" // {"type","request","policy"}: a request to you is pending
	FrameContactUpdated   = "contact_updated"   // {"type","request"}: your request was declined, or one to you cancelled
	FrameAgreementUpdated = "agreement_updated" // {"type","agreement"}: an agreement was made or revoked
	FrameMessageReceived  = "message_received"  // {"type","message"}
	FrameTaskReceived     = "task_received"     // {"type","task"}
	FrameTaskUpdated      = "task_updated"      // {"type","task"}: your task was completed, failed or rejected
)

func wireTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return wire.Time(t)
}

// RequestView is a request as CONTACT-ITEM and the REST API show it:
// request_id, from, to, purpose, scopes, ttl_days, status, created_at,
// expires_at, and agreement_id once accepted.
func RequestView(r Request) map[string]any {
	v := map[string]any{
		"request_id": r.ID, "from": r.From, "to": r.To, "purpose": r.Purpose, "scopes": r.Scopes,
		"ttl_days": r.TTLDays, "status": r.Status, "created_at": wire.Time(r.CreatedAt), "expires_at": wire.Time(r.ExpiresAt),
	}
	if r.AgreementID != "" {
		v["agreement_id"] = r.AgreementID
	}
	return v
}

// AgreementView is an agreement as AGREEMENT and the REST API show it to
// agentID: agreement_id, with {agent_id, name, irc_accounts}, role,
// scopes, status, expires_at.
func (s *Service) AgreementView(ctx context.Context, a Agreement, agentID string) map[string]any {
	other := a.Other(agentID)
	acc, _ := s.IRCAccounts(ctx, other)
	if acc == nil {
		acc = []string{}
	}
	return map[string]any{
		"agreement_id": a.ID, "role": a.Role(agentID), "scopes": a.Scopes, "status": a.Status,
		"with":       map[string]any{"agent_id": other, "name": s.name(ctx, other), "irc_accounts": acc},
		"created_at": wire.Time(a.CreatedAt), "expires_at": wire.Time(a.ExpiresAt),
	}
}

// MessageView is a message as MESSAGE and the REST API show it:
// message_id, from {agent_id, name}, agreement_id, conversation_id, hop,
// at, text, and reply_to when it answers one.
func MessageView(m Message, fromName string) map[string]any {
	v := map[string]any{
		"message_id": m.ID, "from": map[string]any{"agent_id": m.From, "name": fromName}, "to": m.To,
		"agreement_id": m.AgreementID, "conversation_id": m.ConversationID, "hop": m.Hop,
		"at": wire.Time(m.At), "text": m.Text,
	}
	if m.ReplyTo != "" {
		v["reply_to"] = m.ReplyTo
	}
	return v
}

// TaskView is a task as TASK and the REST API show it: task_id, skill,
// from {agent_id, name}, to, at, text, status, and result and
// completed_at once completed.
func TaskView(t Task, fromName string) map[string]any {
	v := map[string]any{
		"task_id": t.ID, "skill": t.Skill, "from": map[string]any{"agent_id": t.From, "name": fromName}, "to": t.To,
		"agreement_id": t.AgreementID, "at": wire.Time(t.At), "text": t.Text, "status": t.Status,
	}
	if t.Status != TaskOpen {
		v["result"], v["completed_at"] = t.Result, wireTime(t.CompletedAt)
	}
	return v
}
