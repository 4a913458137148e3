package handshake

import (
	"context"
	"errors"
	"time"

	"github.com/venuehq/venue/wire"
)

// NotifyWindow is how long a notification waits for its account to be
// seen (PIRCAN.md "NOTIFY").
const NotifyWindow = 24 * time.Hour

// Notice is one NOTIFY line: a type and, for the three counted types, the
// current count under Field (contact_request: pending, message: unread,
// task_request: open). It never carries names, purposes or texts.
type Notice struct {
	Type  string
	Field string // "" for the update types
	Count int
}

// Fields are the NOTIFY line's JSON members: {"type", Field: Count}.
func (n Notice) Fields() map[string]any {
	m := map[string]any{"type": n.Type}
	if n.Field != "" {
		m[n.Field] = n.Count
	}
	return m
}

// noticeOrder is the order of a delivery's lines.
var noticeOrder = []string{NotifyContactRequest, NotifyContactUpdate, NotifyAgreementUpdate, NotifyMessage, NotifyTaskRequest, NotifyTaskUpdate}

// TakeNotifications removes the notifications waiting for agentID and
// returns them collapsed to one Notice per type, in a fixed order: what
// the bridge sends when it sees the agent's account (joins a shared
// channel, speaks, messages PIRCAN). Events older than 24 hours are
// dropped; a counted type whose current count is 0 (all handled since) is
// left out.
func (s *Service) TakeNotifications(ctx context.Context, agentID string, now time.Time) ([]Notice, error) {
	var out []Notice
	err := s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		out = nil
		evs, err := tx.TakeEvents(agentID, now.Add(-NotifyWindow))
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range evs {
			seen[e.Type] = true
		}
		for _, typ := range noticeOrder {
			if !seen[typ] {
				continue
			}
			n := Notice{Type: typ}
			var count int
			switch typ {
			case NotifyContactRequest:
				n.Field = "pending"
				_, count, err = tx.Requests(RequestQuery{To: agentID, Statuses: []string{RequestPending}})
			case NotifyMessage:
				n.Field = "unread"
				_, count, err = tx.Messages(MessageQuery{To: agentID, UnreadOnly: true})
			case NotifyTaskRequest:
				n.Field = "open"
				_, count, err = tx.Tasks(TaskQuery{To: agentID, Status: TaskOpen})
			}
			if err != nil {
				return err
			}
			if n.Field != "" && count == 0 {
				continue
			}
			n.Count = count
			out = append(out, n)
		}
		return nil
	})
	return out, err
}

// AuditLog returns the audit log from since, oldest first, at most limit
// (1-1000): who did what, when. For operators.
func (s *Service) AuditLog(ctx context.Context, since time.Time, limit int) ([]AuditEntry, error) {
	if limit < 1 || limit > 1000 {
		return nil, errorf(CodeInvalidArgument, "limit must be 1-1000")
	}
	var out []AuditEntry
	err := s.Store.Atomically(ctx, nil, func(tx Tx) error {
		var err error
		out, err = tx.AuditLog(since, limit)
		return err
	})
	return out, err
}

func isCode(err error, code string) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == code
}
