package venue_test

import (
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/venue"
)

// TestE2EHandshakeRetention: the node's purge loop deletes the
// handshake's rows past Config.HandshakeRetention (a message of 3 days
// with a 2-day retention; the audit entry kept for the default 365 days);
// a retention under a day is refused by New.
func TestE2EHandshakeRetention(t *testing.T) {
	t.Parallel()
	if _, err := venue.New(venue.Config{HandshakeRetention: &handshake.Retention{Messages: time.Hour}}); err == nil {
		t.Fatal("an hour's retention of messages was accepted")
	}
	hs := hsmemory.New()
	keep := handshake.DefaultRetention
	keep.Messages = 48 * time.Hour
	v := newE2E(t, func(c *venue.Config) { c.Handshake, c.HandshakeRetention = hs, &keep })
	old := v.clock.Now().Add(-72 * time.Hour)
	write := func(tx handshake.Tx) error {
		if err := tx.CreateMessage(handshake.Message{ID: "msg_old", AgreementID: "agr", From: "a", To: "b", Text: "t", ConversationID: "msg_old", At: old}); err != nil {
			return err
		}
		return tx.Audit(handshake.AuditEntry{At: old, Actor: "policy", Action: "send", Subject: "msg_old"})
	}
	if err := hs.Atomically(t.Context(), nil, write); err != nil {
		t.Fatal(err)
	}
	left := func() (msgs, audit int) {
		err := hs.Atomically(t.Context(), nil, func(tx handshake.Tx) error {
			_, n, err := tx.Messages(handshake.MessageQuery{})
			msgs = n
			es, err2 := tx.AuditLog(time.Time{}, 10)
			audit = len(es)
			if err == nil {
				err = err2
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	deadline := time.Now().Add(e2eWait)
	for {
		// The node's loop may not have armed its timer yet: every turn
		// moves the clock on by a whole period.
		v.clock.Advance(10 * time.Minute)
		msgs, audit := left()
		if msgs == 0 {
			if audit != 1 {
				t.Fatalf("the audit entry of 3 days ago went with the message (%d left)", audit)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 3-day-old message is still stored")
		}
		time.Sleep(10 * time.Millisecond) // the purge runs on the node's own goroutine
	}
}
