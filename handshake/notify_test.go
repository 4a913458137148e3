package handshake_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

func TestNotifications(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var hooked []string
	f.svc.OnEvent = func(agentID, typ string) { hooked = append(hooked, agentID+" "+typ) }
	f.contact(t, "c", "b", t0)
	f.contact(t, "d", "b", t0)
	ag := f.agree(t, "a", "b", t0, "message", "task:x")
	for range 3 {
		if _, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "x", Text: "do"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Revoke(f.ctx, handshake.AgentActor("a"), ag.ID, t0); err != nil {
		t.Fatal(err)
	}
	if len(hooked) != 9 {
		t.Fatalf("OnEvent calls %v", hooked)
	}
	// b reads one message before it is seen again: the count is current.
	if _, err := f.svc.Inbox(f.ctx, "b", 1, t0); err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.TakeNotifications(f.ctx, "b", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"type": "contact_request", "pending": 2},
		{"type": "agreement_update"},
		{"type": "message", "unread": 2},
		{"type": "task_request", "open": 1},
	}
	var fields []map[string]any
	for _, n := range got {
		fields = append(fields, n.Fields())
	}
	if !reflect.DeepEqual(fields, want) {
		t.Fatalf("got %v\nwant %v", fields, want)
	}
	// Taken: nothing waits any more.
	if again, _ := f.svc.TakeNotifications(f.ctx, "b", t0.Add(time.Hour)); len(again) != 0 {
		t.Fatalf("again %v", again)
	}
	// a hears that its request was accepted.
	if na, _ := f.svc.TakeNotifications(f.ctx, "a", t0.Add(time.Hour)); len(na) != 1 || na[0].Type != handshake.NotifyContactUpdate {
		t.Fatalf("a got %v", na)
	}
}

func TestNotificationsWindow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.contact(t, "a", "b", t0)
	r := f.contact(t, "c", "b", t0.Add(time.Hour))
	// 24 hours after the first event: it is dropped, the second stays.
	got, _ := f.svc.TakeNotifications(f.ctx, "b", t0.Add(24*time.Hour))
	if len(got) != 1 || got[0].Count != 2 {
		t.Fatalf("got %+v", got)
	}
	// An event for something already handled is left out.
	f.contact(t, "d", "a", t0.Add(2*time.Hour))
	outs, _, _ := f.svc.Contacts(f.ctx, "a", handshake.ContactsQuery{}, t0.Add(2*time.Hour))
	if _, err := f.svc.Decline(f.ctx, handshake.AgentActor("a"), outs[0].ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.svc.TakeNotifications(f.ctx, "a", t0.Add(3*time.Hour)); len(got) != 0 {
		t.Fatalf("handled request still notified: %+v", got)
	}
	// Everything older than 24 hours is gone.
	_ = r
	f.contact(t, "m00", "c", t0)
	if got, _ := f.svc.TakeNotifications(f.ctx, "c", t0.Add(48*time.Hour)); len(got) != 0 {
		t.Fatalf("stale %+v", got)
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ag := f.agree(t, "a", "b", t0, "message")
	if _, err := f.svc.Revoke(f.ctx, handshake.AgentActor("b"), ag.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A refused action leaves no trace.
	_, _ = f.svc.Revoke(f.ctx, handshake.AgentActor("b"), ag.ID, t0.Add(time.Minute))
	log, err := f.svc.AuditLog(f.ctx, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, e.Actor+" "+e.Action)
	}
	want := []string{"agent:a contact", "agent:b agree", "agent:b accept", "agent:b revoke"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit %v, want %v", got, want)
	}
	if !log[3].At.Equal(t0.Add(time.Minute)) || log[3].Subject != ag.ID {
		t.Fatalf("revoke entry %+v", log[3])
	}
}
