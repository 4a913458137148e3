package handshaketest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

// day is a day, the unit of retention.
const day = 24 * time.Hour

// seedPurge writes, for each kind Purge deletes, rows on both sides of
// T0 (old: before it) and rows Purge must keep whatever their age
// (a pending request, an open task).
func seedPurge(t *testing.T, s handshake.Store) {
	t.Helper()
	do(t, s, func(tx handshake.Tx) error {
		for i, at := range []time.Time{T0.Add(-3 * day), T0.Add(-2 * day), T0.Add(day)} {
			id := fmt.Sprint(i)
			must(t, tx.CreateSignIn(handshake.SignIn{SecretHash: "h" + id, Code: "C" + id, Address: "a", Browser: "b", CreatedAt: at, CodeExpiresAt: at.Add(10 * time.Minute)}))
			must(t, tx.Audit(handshake.AuditEntry{At: at, Actor: "policy", Action: "send", Subject: "s" + id}))
			must(t, tx.CreateMessage(handshake.Message{ID: "m" + id, AgreementID: "g", From: "a", To: "b", Text: "t", ConversationID: "m" + id, At: at}))
			must(t, tx.CreateRequest(handshake.Request{ID: "r" + id, From: "a", To: "b", Purpose: "p", Scopes: []string{"message"}, TTLDays: 1,
				Status: handshake.RequestDeclined, CreatedAt: at.Add(-time.Hour), ExpiresAt: at.Add(7 * day), DecidedAt: at, DecidedBy: "b"}))
			must(t, tx.CreateTask(handshake.Task{ID: "k" + id, AgreementID: "g", From: "a", To: "b", Skill: "x", Text: "t", At: at.Add(-time.Hour),
				Status: handshake.TaskCompleted, Result: "ok", CompletedAt: at}))
		}
		// Kept whatever their age: pending, open. An expired request never
		// decided counts from its expiry.
		must(t, tx.CreateRequest(handshake.Request{ID: "rp", From: "a", To: "c", Purpose: "p", Scopes: []string{"message"}, TTLDays: 1,
			Status: handshake.RequestPending, CreatedAt: T0.Add(-9 * day), ExpiresAt: T0.Add(day)}))
		must(t, tx.CreateRequest(handshake.Request{ID: "rx", From: "a", To: "d", Purpose: "p", Scopes: []string{"message"}, TTLDays: 1,
			Status: handshake.RequestExpired, CreatedAt: T0.Add(-9 * day), ExpiresAt: T0.Add(-2 * day)}))
		return tx.CreateTask(handshake.Task{ID: "ko", AgreementID: "g", From: "a", To: "b", Skill: "x", Text: "t", At: T0.Add(-9 * day), Status: handshake.TaskOpen})
	})
}

// remaining lists the ids left of each kind.
func remaining(t *testing.T, s handshake.Store) (signIns, audit, msgs, reqs, tasks []string) {
	t.Helper()
	do(t, s, func(tx handshake.Tx) error {
		signIns, audit, msgs, reqs, tasks = nil, nil, nil, nil, nil
		for i := range 3 {
			if _, err := tx.SignInBySecret(fmt.Sprint("h", i)); err == nil {
				signIns = append(signIns, fmt.Sprint("h", i))
			} else if !errors.Is(err, handshake.ErrNotFound) {
				return err
			}
		}
		es, err := tx.AuditLog(time.Time{}, 100)
		if err != nil {
			return err
		}
		for _, e := range es {
			audit = append(audit, e.Subject)
		}
		ms, _, err := tx.Messages(handshake.MessageQuery{Limit: 100})
		if err != nil {
			return err
		}
		for _, m := range ms {
			msgs = append(msgs, m.ID)
		}
		rs, _, err := tx.Requests(handshake.RequestQuery{Limit: 100})
		if err != nil {
			return err
		}
		for _, r := range rs {
			reqs = append(reqs, r.ID)
		}
		ks, _, err := tx.Tasks(handshake.TaskQuery{Limit: 100})
		if err != nil {
			return err
		}
		for _, k := range ks {
			tasks = append(tasks, k.ID)
		}
		return nil
	})
	return
}

func wantIDs(t *testing.T, kind string, got []string, want ...string) {
	t.Helper()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s left %q, want %q", kind, got, want)
	}
}

// Purge deletes each kind older than its cutoff, at most limit of each,
// oldest first; pending requests and open tasks stay; a zero cutoff
// deletes none of that kind; a failed transaction deletes nothing.
func testPurge(t *testing.T, s handshake.Store) {
	seedPurge(t, s)
	cut := handshake.PurgeBefore{SignIns: T0, Audit: T0, Messages: T0, Requests: T0, Tasks: T0}
	// Rolled back: nothing goes.
	boom := errors.New("boom")
	err := s.Atomically(t.Context(), nil, func(tx handshake.Tx) error {
		if _, err := tx.Purge(cut, 100); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	si, au, ms, rs, ks := remaining(t, s)
	if len(si) != 3 || len(au) != 3 || len(ms) != 3 || len(rs) != 5 || len(ks) != 4 {
		t.Fatalf("a rolled-back purge deleted: %v %v %v %v %v", si, au, ms, rs, ks)
	}
	// One of each at a time, the oldest first; the audit log kept (zero).
	var p handshake.Purged
	do(t, s, func(tx handshake.Tx) error {
		var err error
		p, err = tx.Purge(handshake.PurgeBefore{SignIns: T0, Messages: T0, Requests: T0, Tasks: T0}, 1)
		return err
	})
	if p != (handshake.Purged{SignIns: 1, Messages: 1, Requests: 1, Tasks: 1}) {
		t.Fatalf("purged %+v with limit 1", p)
	}
	si, au, ms, _, ks = remaining(t, s)
	wantIDs(t, "sign-ins", si, "h1", "h2")
	wantIDs(t, "audit", au, "s0", "s1", "s2")
	wantIDs(t, "messages", ms, "m1", "m2")
	wantIDs(t, "tasks", ks, "k1", "k2", "ko")
	do(t, s, func(tx handshake.Tx) error {
		var err error
		p, err = tx.Purge(cut, 100)
		return err
	})
	// r0 went first (decided 3 days ago, before rx expired 2 days ago);
	// now r1 and rx.
	if p != (handshake.Purged{SignIns: 1, Audit: 2, Messages: 1, Requests: 2, Tasks: 1}) {
		t.Fatalf("purged %+v", p)
	}
	si, au, ms, rs, ks = remaining(t, s)
	wantIDs(t, "sign-ins", si, "h2")
	wantIDs(t, "audit", au, "s2")
	wantIDs(t, "messages", ms, "m2")
	wantIDs(t, "requests", rs, "r2", "rp")
	wantIDs(t, "tasks", ks, "k2", "ko")
}

// Service.Purge applies a Retention at now: with one of 2.5 days, the rows
// of 3 days ago go, those of 2 days ago stay; a zero field keeps its kind.
func testServicePurge(t *testing.T, s handshake.Store) {
	seedPurge(t, s)
	svc := &handshake.Service{Store: s}
	keep := 60 * time.Hour
	p, err := svc.Purge(t.Context(), handshake.Retention{SignIns: keep, Messages: keep, Requests: keep, Tasks: keep}, T0)
	must(t, err)
	if p != (handshake.Purged{SignIns: 1, Messages: 1, Requests: 1, Tasks: 1}) || p.Total() != 4 {
		t.Fatalf("purged %+v", p)
	}
	_, au, _, rs, _ := remaining(t, s)
	wantIDs(t, "audit", au, "s0", "s1", "s2")
	wantIDs(t, "requests", rs, "r1", "r2", "rp", "rx")
	if err := (&handshake.Retention{Audit: time.Hour}).Validate(); err == nil {
		t.Fatal("an hour's retention was accepted")
	}
	if err := (&handshake.DefaultRetention).Validate(); err != nil || handshake.DefaultRetention.Audit < 90*day {
		t.Fatalf("default retention %+v: %v", handshake.DefaultRetention, err)
	}
}
