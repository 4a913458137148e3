// Package handshaketest is the contract of handshake.Store: one suite
// every implementation passes (handshake/memory, handshake/postgres), so
// the embedded default and production keep the same rules: what a query
// selects, that windows are open at their start, that a failed
// transaction leaves nothing, that Atomically serialises a count and the
// write it allows, and a whole handshake through the Service.
package handshaketest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// T0 is the suite's start time (microseconds: what Postgres keeps).
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Run runs the contract. newStore returns an empty store for one test,
// cleaned up by the test.
func Run(t *testing.T, newStore func(t *testing.T) handshake.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s handshake.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"RequestQueries", testRequestQueries},
		{"Expire", testExpire},
		{"AgreementQueries", testAgreementQueries},
		{"Messages", testMessages},
		{"Events", testEvents},
		{"Hits", testHits},
		{"UsageAndSearch", testUsageAndSearch},
		{"SignIns", testSignIns},
		{"Owners", testOwners},
		{"Rollback", testRollback},
		{"LockSerialisesLimits", testLock},
		{"Handshake", testHandshake},
		{"TwoNodesOneLimit", testTwoNodes},
		{"Purge", testPurge},
		{"ServicePurge", testServicePurge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// do runs fn in one transaction and fails the test on error.
func do(t *testing.T, s handshake.Store, fn func(tx handshake.Tx) error) {
	t.Helper()
	if err := s.Atomically(t.Context(), nil, fn); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testRoundTrip(t *testing.T, s handshake.Store) {
	r := handshake.Request{ID: "req_1", From: "a", To: "b", Purpose: "p ☃", Scopes: []string{"message", "task:x"}, TTLDays: 3,
		Status: handshake.RequestPending, CreatedAt: T0, ExpiresAt: T0.Add(7 * 24 * time.Hour)}
	ag := handshake.Agreement{ID: "agr_1", RequestID: "req_1", Requester: "a", Target: "b", Scopes: []string{"message"},
		Status: handshake.AgreementActive, CreatedAt: T0, ExpiresAt: T0.Add(time.Hour)}
	m := handshake.Message{ID: "msg_1", AgreementID: "agr_1", From: "a", To: "b", Text: "hi", ConversationID: "msg_1", At: T0}
	k := handshake.Task{ID: "tsk_1", AgreementID: "agr_1", From: "a", To: "b", Skill: "x", Text: "do", At: T0, Status: handshake.TaskOpen}
	rep := handshake.Report{ID: "rep_1", Reporter: "a", Reported: "b", Category: "spam", Details: "d", At: T0, Open: true}
	res := handshake.Resource{ID: "res_1", Owner: "b", Title: "T", Tags: []string{"x"}, Access: handshake.AccessPublic, Content: "c", At: T0}
	pol := handshake.PolicyRecord{AgentID: "b", Policy: handshake.PolicyOwnerDecides, OwnerSet: true, UpdatedAt: T0}
	do(t, s, func(tx handshake.Tx) error {
		for _, err := range []error{tx.CreateRequest(r), tx.CreateAgreement(ag), tx.CreateMessage(m), tx.CreateTask(k),
			tx.CreateReport(rep), tx.CreateResource(res), tx.SetPolicy(pol)} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	r.Status, r.DecidedAt, r.DecidedBy, r.AgreementID = handshake.RequestAccepted, T0.Add(time.Second), "agent:b", "agr_1"
	ag.Status, ag.EndedAt, ag.EndedBy = handshake.AgreementRevoked, T0.Add(2*time.Second), "agent:a"
	k.Status, k.Result, k.CompletedAt = handshake.TaskCompleted, "ok", T0.Add(3*time.Second)
	do(t, s, func(tx handshake.Tx) error {
		must(t, tx.UpdateRequest(r))
		must(t, tx.UpdateAgreement(ag))
		must(t, tx.UpdateTask(k))
		return tx.MarkRead([]string{"msg_1"}, T0.Add(4*time.Second))
	})
	m.ReadAt = T0.Add(4 * time.Second)
	do(t, s, func(tx handshake.Tx) error {
		check := func(what string, got, want any, err error) {
			t.Helper()
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %+v (%v), want %+v", what, got, err, want)
			}
		}
		gr, err := tx.Request("req_1")
		check("request", gr, r, err)
		ga, err := tx.Agreement("agr_1")
		check("agreement", ga, ag, err)
		gm, err := tx.Message("msg_1")
		check("message", gm, m, err)
		gk, err := tx.Task("tsk_1")
		check("task", gk, k, err)
		gs, err := tx.Resource("res_1")
		check("resource", gs, res, err)
		gp, err := tx.Policy("b")
		check("policy", gp, pol, err)
		reps, n, err := tx.Reports(handshake.ReportQuery{Reporter: "a", Limit: 10})
		check("reports", reps, []handshake.Report{rep}, err)
		if n != 1 {
			t.Errorf("reports total %d", n)
		}
		for what, err := range map[string]error{
			"request": second(tx.Request("x")), "agreement": second(tx.Agreement("x")), "message": second(tx.Message("x")),
			"task": second(tx.Task("x")), "resource": second(tx.Resource("x")), "policy": second(tx.Policy("x")),
			"sign-in": second(tx.SignInBySecret("x")), "code": second(tx.SignInByCode("x")),
			"update request": tx.UpdateRequest(handshake.Request{ID: "x"}),
		} {
			if !errors.Is(err, handshake.ErrNotFound) {
				t.Errorf("%s x: %v, want ErrNotFound", what, err)
			}
		}
		return nil
	})
}

func second[T any](_ T, err error) error { return err }

func testRequestQueries(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		for i := range 6 {
			r := handshake.Request{ID: fmt.Sprintf("req_%d", i), From: []string{"a", "b"}[i%2], To: "c", Purpose: "p",
				Scopes: []string{"message"}, TTLDays: 1, Status: handshake.RequestPending,
				CreatedAt: T0.Add(time.Duration(i) * time.Minute), ExpiresAt: T0.Add(time.Hour)}
			if i >= 4 {
				r.Status, r.DecidedAt = handshake.RequestDeclined, T0.Add(time.Duration(i)*time.Minute)
			}
			must(t, tx.CreateRequest(r))
		}
		ids := func(q handshake.RequestQuery) ([]string, int) {
			t.Helper()
			rs, n, err := tx.Requests(q)
			must(t, err)
			out := []string{}
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out, n
		}
		cases := []struct {
			q     handshake.RequestQuery
			want  []string
			total int
		}{
			{handshake.RequestQuery{To: "c", Limit: 10}, []string{"req_0", "req_1", "req_2", "req_3", "req_4", "req_5"}, 6},
			{handshake.RequestQuery{To: "c", Limit: 2, Offset: 1}, []string{"req_1", "req_2"}, 6},
			{handshake.RequestQuery{From: "a", Limit: 10}, []string{"req_0", "req_2", "req_4"}, 3},
			{handshake.RequestQuery{From: "a"}, []string{}, 3},
			{handshake.RequestQuery{Statuses: []string{"pending"}, Limit: 10}, []string{"req_0", "req_1", "req_2", "req_3"}, 4},
			{handshake.RequestQuery{Statuses: []string{"declined", "accepted"}, Limit: 10}, []string{"req_4", "req_5"}, 2},
			// windows are open at their start
			{handshake.RequestQuery{CreatedSince: T0.Add(2 * time.Minute), Limit: 10}, []string{"req_3", "req_4", "req_5"}, 3},
			{handshake.RequestQuery{DecidedSince: T0.Add(4 * time.Minute), Limit: 10}, []string{"req_5"}, 1},
			{handshake.RequestQuery{To: "nobody", Limit: 10}, []string{}, 0},
			{handshake.RequestQuery{To: "c", Limit: 10, Offset: 10}, []string{}, 6},
		}
		for _, c := range cases {
			got, n := ids(c.q)
			if !reflect.DeepEqual(got, c.want) || n != c.total {
				t.Errorf("%+v: got %v (%d), want %v (%d)", c.q, got, n, c.want, c.total)
			}
		}
		return nil
	})
}

func testExpire(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		must(t, tx.CreateRequest(handshake.Request{ID: "r1", From: "a", To: "b", Scopes: []string{"message"}, Status: handshake.RequestPending, CreatedAt: T0, ExpiresAt: T0.Add(time.Hour)}))
		must(t, tx.CreateRequest(handshake.Request{ID: "r2", From: "a", To: "c", Scopes: []string{"message"}, Status: handshake.RequestPending, CreatedAt: T0, ExpiresAt: T0.Add(2 * time.Hour)}))
		must(t, tx.CreateAgreement(handshake.Agreement{ID: "g1", Requester: "a", Target: "b", Scopes: []string{"message"}, Status: handshake.AgreementActive, CreatedAt: T0, ExpiresAt: T0.Add(time.Hour)}))
		must(t, tx.CreateAgreement(handshake.Agreement{ID: "g2", Requester: "a", Target: "c", Scopes: []string{"message"}, Status: handshake.AgreementRevoked, CreatedAt: T0, ExpiresAt: T0.Add(time.Hour), EndedAt: T0, EndedBy: "x"}))
		return tx.Expire(T0.Add(time.Hour))
	})
	do(t, s, func(tx handshake.Tx) error {
		r1, _ := tx.Request("r1")
		r2, _ := tx.Request("r2")
		g1, _ := tx.Agreement("g1")
		g2, _ := tx.Agreement("g2")
		if r1.Status != handshake.RequestExpired || !r1.DecidedAt.Equal(T0.Add(time.Hour)) || r2.Status != handshake.RequestPending {
			t.Errorf("requests %+v %+v", r1, r2)
		}
		if g1.Status != handshake.AgreementExpired || !g1.EndedAt.Equal(T0.Add(time.Hour)) || g2.Status != handshake.AgreementRevoked {
			t.Errorf("agreements %+v %+v", g1, g2)
		}
		return nil
	})
}

func testAgreementQueries(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		for i, p := range [][2]string{{"a", "b"}, {"b", "a"}, {"a", "c"}, {"c", "b"}} {
			st := handshake.AgreementActive
			if i == 3 {
				st = handshake.AgreementRevoked
			}
			must(t, tx.CreateAgreement(handshake.Agreement{ID: fmt.Sprint("g", i), Requester: p[0], Target: p[1], Scopes: []string{"message"}, Status: st, CreatedAt: T0, ExpiresAt: T0.Add(time.Hour)}))
		}
		cases := []struct {
			q    handshake.AgreementQuery
			want int
		}{
			{handshake.AgreementQuery{Agent: "a", Limit: 10}, 3},
			{handshake.AgreementQuery{Agent: "a", Other: "b", Limit: 10}, 2},
			{handshake.AgreementQuery{Agent: "b", Other: "a", Limit: 10}, 2},
			{handshake.AgreementQuery{Agent: "b", Limit: 10}, 3},
			{handshake.AgreementQuery{Agent: "b", Statuses: []string{"active"}, Limit: 10}, 2},
			{handshake.AgreementQuery{Agent: "z", Limit: 10}, 0},
		}
		for _, c := range cases {
			rows, n, err := tx.Agreements(c.q)
			must(t, err)
			if n != c.want || len(rows) != c.want {
				t.Errorf("%+v: %d rows, total %d, want %d", c.q, len(rows), n, c.want)
			}
		}
		return nil
	})
}

func testMessages(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		for i := range 5 {
			must(t, tx.CreateMessage(handshake.Message{ID: fmt.Sprint("m", i), AgreementID: "g", From: "a", To: "b", Text: "x",
				ConversationID: []string{"m0", "m1"}[i%2], Hop: i / 2, At: T0.Add(time.Duration(i) * time.Minute)}))
		}
		return tx.MarkRead([]string{"m0", "m1"}, T0)
	})
	do(t, s, func(tx handshake.Tx) error {
		cases := []struct {
			q     handshake.MessageQuery
			first string
			total int
		}{
			{handshake.MessageQuery{To: "b", UnreadOnly: true, Limit: 1}, "m2", 3},
			{handshake.MessageQuery{ConversationID: "m0", Limit: 5}, "m0", 3},
			{handshake.MessageQuery{ConversationID: "m0", Since: T0, Limit: 5}, "m2", 2},
			{handshake.MessageQuery{From: "a", AgreementID: "g", Since: T0.Add(3 * time.Minute), Limit: 5}, "m4", 1},
			{handshake.MessageQuery{From: "b", Limit: 5}, "", 0},
		}
		for _, c := range cases {
			rows, n, err := tx.Messages(c.q)
			must(t, err)
			first := ""
			if len(rows) > 0 {
				first = rows[0].ID
			}
			if first != c.first || n != c.total {
				t.Errorf("%+v: first %q total %d, want %q %d", c.q, first, n, c.first, c.total)
			}
		}
		return nil
	})
}

func testEvents(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		must(t, tx.AddEvent(handshake.Event{AgentID: "a", Type: "message", At: T0}))
		must(t, tx.AddEvent(handshake.Event{AgentID: "a", Type: "contact_request", At: T0.Add(time.Hour)}))
		must(t, tx.AddEvent(handshake.Event{AgentID: "b", Type: "message", At: T0.Add(time.Hour)}))
		return nil
	})
	do(t, s, func(tx handshake.Tx) error {
		evs, err := tx.TakeEvents("a", T0)
		must(t, err)
		if len(evs) != 1 || evs[0].Type != "contact_request" || !evs[0].At.Equal(T0.Add(time.Hour)) {
			t.Errorf("taken %+v", evs)
		}
		again, _ := tx.TakeEvents("a", time.Time{})
		other, _ := tx.TakeEvents("b", time.Time{})
		if len(again) != 0 || len(other) != 1 {
			t.Errorf("again %v, b %v", again, other)
		}
		return nil
	})
}

func testHits(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		for i := range 3 {
			must(t, tx.Hit("login", "alice", T0.Add(time.Duration(i)*time.Minute)))
		}
		must(t, tx.Hit("login", "bob", T0))
		must(t, tx.Hit("start", "alice", T0))
		for _, c := range []struct {
			kind, key string
			since     time.Time
			want      int
		}{
			{"login", "alice", T0.Add(-time.Second), 3},
			{"login", "alice", T0, 2},
			{"login", "bob", time.Time{}, 1},
			{"start", "alice", time.Time{}, 1},
			{"start", "bob", time.Time{}, 0},
		} {
			if n, err := tx.Hits(c.kind, c.key, c.since); err != nil || n != c.want {
				t.Errorf("hits %s %s since %v: %d %v, want %d", c.kind, c.key, c.since, n, err, c.want)
			}
		}
		return nil
	})
}

func testSignIns(t *testing.T, s handshake.Store) {
	mk := func(hash, code string) handshake.SignIn {
		return handshake.SignIn{SecretHash: hash, Code: code, Address: "10.0.0.1", Browser: "b", CreatedAt: T0, CodeExpiresAt: T0.Add(10 * time.Minute)}
	}
	do(t, s, func(tx handshake.Tx) error {
		must(t, tx.CreateSignIn(mk("h1", "BCDF-GHJK")))
		must(t, tx.CreateSignIn(mk("h2", "BCDF-GHJK"))) // a collision: the newest wins
		must(t, tx.CreateSignIn(mk("h3", "LMNP-QRST")))
		got, err := tx.SignInByCode("BCDF-GHJK")
		if err != nil || got.SecretHash != "h2" {
			t.Errorf("by code: %+v %v", got, err)
		}
		for _, h := range []string{"h2", "h3"} {
			si, _ := tx.SignInBySecret(h)
			si.Account, si.ApprovedAt, si.ExpiresAt = "alice", T0, T0.Add(12*time.Hour)
			must(t, tx.UpdateSignIn(si))
		}
		got, err = tx.SignInByCode("BCDF-GHJK")
		if err != nil || got.SecretHash != "h1" {
			t.Errorf("approved codes are not found by code: %+v %v", got, err)
		}
		if _, err := tx.SignInByCode("LMNP-QRST"); !errors.Is(err, handshake.ErrNotFound) {
			t.Errorf("approved code found: %v", err)
		}
		n, err := tx.EndSessions("alice", T0.Add(time.Hour))
		if err != nil || n != 2 {
			t.Errorf("end sessions %d %v", n, err)
		}
		if n, _ := tx.EndSessions("alice", T0.Add(time.Hour)); n != 0 {
			t.Errorf("ended twice: %d", n)
		}
		si, _ := tx.SignInBySecret("h3")
		if !si.EndedAt.Equal(T0.Add(time.Hour)) || si.Account != "alice" || !si.ExpiresAt.Equal(T0.Add(12*time.Hour)) {
			t.Errorf("ended sign-in %+v", si)
		}
		return nil
	})
}

func testRollback(t *testing.T, s handshake.Store) {
	boom := errors.New("boom")
	err := s.Atomically(t.Context(), []string{"k"}, func(tx handshake.Tx) error {
		must(t, tx.CreateRequest(handshake.Request{ID: "r1", From: "a", To: "b", Scopes: []string{"message"}, Status: "pending", CreatedAt: T0, ExpiresAt: T0}))
		must(t, tx.SetPolicy(handshake.PolicyRecord{AgentID: "b", Policy: "deny", UpdatedAt: T0}))
		must(t, tx.Hit("x", "y", T0))
		must(t, tx.AddEvent(handshake.Event{AgentID: "b", Type: "message", At: T0}))
		must(t, tx.Audit(handshake.AuditEntry{At: T0, Actor: "a", Action: "x"}))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Atomically returned %v, want fn's error", err)
	}
	do(t, s, func(tx handshake.Tx) error {
		if _, err := tx.Request("r1"); !errors.Is(err, handshake.ErrNotFound) {
			t.Errorf("request survived: %v", err)
		}
		if _, err := tx.Policy("b"); !errors.Is(err, handshake.ErrNotFound) {
			t.Errorf("policy survived: %v", err)
		}
		if n, _ := tx.Hits("x", "y", time.Time{}); n != 0 {
			t.Errorf("hit survived")
		}
		if evs, _ := tx.TakeEvents("b", time.Time{}); len(evs) != 0 {
			t.Errorf("event survived")
		}
		if log, _ := tx.AuditLog(time.Time{}, 10); len(log) != 0 {
			t.Errorf("audit survived")
		}
		return nil
	})
}

// testLock: 16 transactions each count the hits of one key and add one
// while under 5; exactly 5 are added.
func testLock(t *testing.T, s handshake.Store) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			errs <- s.Atomically(t.Context(), []string{"agent:a", "agent:b"}, func(tx handshake.Tx) error {
				n, err := tx.Hits("send", "a", time.Time{})
				if err != nil || n >= 5 {
					return err
				}
				return tx.Hit("send", "a", T0)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	do(t, s, func(tx handshake.Tx) error {
		if n, _ := tx.Hits("send", "a", time.Time{}); n != 5 {
			t.Errorf("%d hits under a limit of 5", n)
		}
		return nil
	})
}

// agents is a fixed directory.
type agents map[string]store.Agent

func (a agents) Agent(_ context.Context, id string) (store.Agent, error) {
	ag, ok := a[id]
	if !ok {
		return ag, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	return ag, nil
}

// testHandshake runs a whole handshake through the Service on the store.
func testHandshake(t *testing.T, s handshake.Store) {
	ctx := t.Context()
	var n int
	var mu sync.Mutex
	svc := &handshake.Service{
		Store: s, Agents: agents{"a": {ID: "a", Name: "A"}, "b": {ID: "b", Name: "B"}},
		Accounts: handshake.StaticAccounts{"alice": {"b"}},
		NewID: func(p string) string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s_%d", p, n)
		},
	}
	code := func(err error) string {
		var we *wire.Error
		if errors.As(err, &we) {
			return we.Code
		}
		return fmt.Sprint(err)
	}
	_, err := svc.SetPolicy(ctx, handshake.OwnerActor("alice"), "b", handshake.PolicyOwnerDecides, T0)
	must(t, err)
	r, err := svc.Contact(ctx, "a", handshake.ContactInput{To: "b", Purpose: "data", Scopes: []string{"message", "task:x"}}, T0)
	must(t, err)
	if _, err := svc.Accept(ctx, handshake.AgentActor("b"), r.ID, handshake.AcceptInput{}, T0); code(err) != handshake.CodeNotAuthorized {
		t.Fatalf("agent accepts under owner-decides: %v", err)
	}
	ag, err := svc.Accept(ctx, handshake.OwnerActor("alice"), r.ID, handshake.AcceptInput{Scopes: []string{"message"}, TTLDays: 7}, T0)
	must(t, err)
	if !reflect.DeepEqual(ag.Scopes, []string{"message"}) {
		t.Fatalf("narrowed to %v", ag.Scopes)
	}
	prev, err := svc.Send(ctx, "a", handshake.SendInput{To: "b", Text: "hop 0", IRC: true}, T0)
	must(t, err)
	from, to := "b", "a"
	for hop := 1; hop <= 9; hop++ {
		m, err := svc.Send(ctx, from, handshake.SendInput{To: to, Text: "re", ReplyTo: prev.ID}, T0.Add(time.Duration(hop)*time.Second))
		if hop == 9 {
			if code(err) != handshake.CodeLoopLimit {
				t.Fatalf("hop 9: %v", err)
			}
			break
		}
		must(t, err)
		prev, from, to = m, to, from
	}
	inbox, err := svc.Inbox(ctx, "b", 10, T0.Add(time.Minute))
	must(t, err)
	if len(inbox) != 5 || inbox[0].Text != "hop 0" {
		t.Fatalf("inbox %+v", inbox)
	}
	notes, err := svc.TakeNotifications(ctx, "a", T0.Add(time.Minute))
	must(t, err)
	if len(notes) != 2 || notes[0].Type != handshake.NotifyContactUpdate || notes[1].Fields()["unread"] != 4 {
		t.Fatalf("notifications %+v", notes)
	}
	_, err = svc.Revoke(ctx, handshake.AgentActor("a"), ag.ID, T0.Add(time.Minute))
	must(t, err)
	if _, err := svc.Send(ctx, "b", handshake.SendInput{To: "a", Text: "x"}, T0.Add(time.Minute)); code(err) != handshake.CodeNotAuthorized {
		t.Fatalf("send after revoke: %v", err)
	}
	p := &handshake.Portal{Service: svc}
	st, err := p.Start(ctx, "10.0.0.1", "test", T0)
	must(t, err)
	_, err = p.Login(ctx, "alice", st.Code, T0.Add(time.Minute))
	must(t, err)
	if acc, err := p.Owner(ctx, st.Secret, T0.Add(time.Hour)); err != nil || acc != "alice" {
		t.Fatalf("owner %q %v", acc, err)
	}
	if n, err := p.Logout(ctx, "alice", T0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("logout %d %v", n, err)
	}
	log, err := svc.AuditLog(ctx, time.Time{}, 100)
	must(t, err)
	if len(log) < 10 {
		t.Fatalf("audit log has %d entries", len(log))
	}
}

// testTwoNodes: two services (two nodes) on one store, 16 concurrent
// CONTACTs from one agent to 16 others: exactly 10 pass the hourly limit,
// whichever node they reach.
func testTwoNodes(t *testing.T, s handshake.Store) {
	ctx := t.Context()
	dir := agents{"a": {ID: "a", Name: "A"}}
	for i := range 16 {
		id := fmt.Sprintf("t%02d", i)
		dir[id] = store.Agent{ID: id, Name: id}
	}
	var mu sync.Mutex
	n := 0
	newID := func(p string) string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%s_%d", p, n)
	}
	nodes := []*handshake.Service{
		{Store: s, Agents: dir, NewID: newID},
		{Store: s, Agents: dir, NewID: newID},
	}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range 16 {
		wg.Go(func() {
			_, errs[i] = nodes[i%2].Contact(ctx, "a", handshake.ContactInput{To: fmt.Sprintf("t%02d", i), Purpose: "p"}, T0)
		})
	}
	wg.Wait()
	ok, limited := 0, 0
	for _, err := range errs {
		var we *wire.Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &we) && we.Code == handshake.CodeRateLimited:
			limited++
		default:
			t.Fatalf("contact: %v", err)
		}
	}
	if ok != handshake.ContactsPerHour || limited != 16-handshake.ContactsPerHour {
		t.Fatalf("%d contacts passed and %d were limited, want %d and %d", ok, limited, handshake.ContactsPerHour, 16-handshake.ContactsPerHour)
	}
}

// testUsageAndSearch: Usage counts an owner's resources and a sender's
// open tasks with their bytes; the title search matches substrings
// case-insensitively, with % and _ matching themselves.
func testUsageAndSearch(t *testing.T, s handshake.Store) {
	do(t, s, func(tx handshake.Tx) error {
		for i, title := range []string{"Ammonia 50% Safety", "ammonia_sheet", "Other"} {
			must(t, tx.CreateResource(handshake.Resource{ID: fmt.Sprintf("res_%d", i), Owner: "o", Title: title, Tags: []string{"t"},
				Access: handshake.AccessPublic, Content: strings.Repeat("é", i+1), At: T0}))
		}
		must(t, tx.CreateResource(handshake.Resource{ID: "res_x", Owner: "p", Title: "x", Tags: []string{}, Access: handshake.AccessPublic, Content: "abc", At: T0}))
		for i, status := range []string{handshake.TaskOpen, handshake.TaskOpen, handshake.TaskCompleted} {
			must(t, tx.CreateTask(handshake.Task{ID: fmt.Sprintf("tsk_%d", i), AgreementID: "agr", From: "o", To: "q", Skill: "s",
				Text: strings.Repeat("x", 10*(i+1)), At: T0, Status: status}))
		}
		for _, c := range []struct {
			kind, id string
			n, b     int
		}{
			{handshake.UsageResources, "o", 3, 12}, {handshake.UsageResources, "p", 1, 3}, {handshake.UsageResources, "z", 0, 0},
			{handshake.UsageOpenTasks, "o", 2, 30}, {handshake.UsageOpenTasks, "q", 0, 0},
		} {
			if n, b, err := tx.Usage(c.kind, c.id); err != nil || n != c.n || b != c.b {
				t.Errorf("usage %s %s: %d %d %v, want %d %d", c.kind, c.id, n, b, err, c.n, c.b)
			}
		}
		if _, _, err := tx.Usage("nope", "o"); err == nil {
			t.Error("usage of an unknown kind")
		}
		for q, want := range map[string]int{"AMMONIA": 2, "50%": 1, "a_s": 1, "%": 1, "_": 1, "": 4, "zzz": 0} {
			if _, n, err := tx.Resources(handshake.ResourceQuery{Q: q, Limit: 10}); err != nil || n != want {
				t.Errorf("resources q=%q: %d %v, want %d", q, n, err, want)
			}
		}
		return nil
	})
}
