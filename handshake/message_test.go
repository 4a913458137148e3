package handshake_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

func TestSendInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   handshake.SendInput
		want string
	}{
		{"ok", handshake.SendInput{To: "b", Text: "hello"}, ""},
		{"empty", handshake.SendInput{To: "b", Text: " "}, handshake.CodeInvalidArgument},
		{"to self", handshake.SendInput{To: "a", Text: "x"}, handshake.CodeInvalidArgument},
		{"irc 200 chars", handshake.SendInput{To: "b", Text: strings.Repeat("é", 200), IRC: true}, ""},
		{"irc 201 chars", handshake.SendInput{To: "b", Text: strings.Repeat("é", 201), IRC: true}, handshake.CodeTooLong},
		{"rest 60000 bytes", handshake.SendInput{To: "b", Text: strings.Repeat("x", 60000)}, ""},
		{"rest 60001 bytes", handshake.SendInput{To: "b", Text: strings.Repeat("x", 60001)}, handshake.CodeTooLong},
		{"unknown agent", handshake.SendInput{To: "zz", Text: "x"}, handshake.CodeUnknownAgent},
		{"no agreement", handshake.SendInput{To: "c", Text: "x"}, handshake.CodeNotAuthorized},
		{"reply to nothing", handshake.SendInput{To: "b", Text: "x", ReplyTo: "msg_nope"}, handshake.CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.agree(t, "a", "b", t0, "message")
			m, err := f.svc.Send(f.ctx, "a", tc.in, t0)
			wantCode(t, err, tc.want)
			inbox, _ := f.svc.Inbox(f.ctx, tc.in.To, 50, t0)
			if tc.want != "" {
				if len(inbox) != 0 {
					t.Fatalf("a refused send delivered %v", inbox)
				}
				return
			}
			if len(inbox) != 1 || inbox[0].ID != m.ID || inbox[0].ConversationID != m.ID || inbox[0].Hop != 0 {
				t.Fatalf("inbox %+v", inbox)
			}
		})
	}
}

func TestMessageScopeNeeded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "task:x")
	_, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	// A message agreement goes both ways.
	f.agree(t, "a", "b", t0, "message")
	if _, err := f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "x"}, t0); err != nil {
		t.Fatal(err)
	}
}

// Replies to 9 hops: hops 1..8 go, the 9th is loop_limit.
func TestLoopLimit(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "message")
	first, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "hop 0"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	prev, from, to := first, "b", "a"
	for hop := 1; hop <= 9; hop++ {
		m, err := f.svc.Send(f.ctx, from, handshake.SendInput{To: to, Text: "reply", ReplyTo: prev.ID}, t0.Add(time.Duration(hop)*time.Second))
		if hop == 9 {
			wantCode(t, err, handshake.CodeLoopLimit)
			break
		}
		if err != nil {
			t.Fatalf("hop %d: %v", hop, err)
		}
		if m.Hop != hop || m.ConversationID != first.ID {
			t.Fatalf("hop %d: %+v", hop, m)
		}
		prev, from, to = m, to, from
	}
	// A stranger cannot reply into the conversation.
	f.agree(t, "c", "a", t0, "message")
	_, err = f.svc.Send(f.ctx, "c", handshake.SendInput{To: "a", Text: "x", ReplyTo: first.ID}, t0)
	wantCode(t, err, handshake.CodeNotFound)
}

func TestConversationBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "message")
	// 40 messages in a conversation in an hour: a first one and 39 replies
	// each to the first (hop 1 each, so the hop limit is not what stops it).
	first, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "start"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 40; i++ {
		if _, err := f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "r", ReplyTo: first.ID}, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	_, err = f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "r", ReplyTo: first.ID}, t0.Add(time.Minute))
	wantCode(t, err, handshake.CodeConversationBudget)
	// A new conversation is not limited by the old one.
	if _, err := f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "new"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// An hour after the first, one message has left the window.
	if _, err := f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "r", ReplyTo: first.ID}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func TestSenderBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "message")
	for i := range 120 {
		if _, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	_, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, t0.Add(30*time.Minute))
	wantCode(t, err, handshake.CodeRateLimited)
	// The budget is the sender's: b still sends.
	if _, err := f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "x"}, t0.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func TestInbox(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "message")
	for i, text := range []string{"one", "two", "three"} {
		if _, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: text}, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	texts := func(ms []handshake.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Text)
		}
		return out
	}
	got, _ := f.svc.Inbox(f.ctx, "b", 2, t0.Add(time.Minute))
	if !slices.Equal(texts(got), []string{"one", "two"}) || !got[0].ReadAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first read %v", got)
	}
	got, _ = f.svc.Inbox(f.ctx, "b", 2, t0.Add(time.Minute))
	if !slices.Equal(texts(got), []string{"three"}) {
		t.Fatalf("second read %v", texts(got))
	}
	if got, _ = f.svc.Inbox(f.ctx, "b", 2, t0.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("third read %v", texts(got))
	}
	_, err := f.svc.Inbox(f.ctx, "b", 51, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	if types := f.pushes.types("b"); !slices.Contains(types, handshake.FrameMessageReceived) {
		t.Fatalf("pushes %v", types)
	}
}

// Peek reads without marking; MarkRead marks only the reader's own
// messages (the IRC bridge marks a message read once its line was sent).
func TestPeekMarkRead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "message")
	var ids []string
	for i, text := range []string{"one", "two"} {
		m, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: text}, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	for range 2 {
		if got, err := f.svc.Peek(f.ctx, "b", 5, t0.Add(time.Minute)); err != nil || len(got) != 2 {
			t.Fatalf("peek %v %v", got, err)
		}
	}
	// The sender cannot mark the reader's messages; unknown ids are ignored.
	if err := f.svc.MarkRead(f.ctx, "a", ids, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.MarkRead(f.ctx, "b", []string{ids[0], "msg_nope"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ := f.svc.Peek(f.ctx, "b", 5, t0.Add(time.Minute))
	if len(got) != 1 || got[0].ID != ids[1] {
		t.Fatalf("after MarkRead %v", got)
	}
	_, err := f.svc.Peek(f.ctx, "b", 51, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
}
