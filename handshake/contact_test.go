package handshake_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

func TestContactInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		from string
		in   handshake.ContactInput
		want string
	}{
		{"ok default scopes", "a", handshake.ContactInput{To: "b", Purpose: "p"}, ""},
		{"self", "a", handshake.ContactInput{To: "a", Purpose: "p"}, handshake.CodeSelfContact},
		{"no purpose", "a", handshake.ContactInput{To: "b", Purpose: "  "}, handshake.CodeInvalidArgument},
		{"purpose too long", "a", handshake.ContactInput{To: "b", Purpose: strings.Repeat("é", 301)}, handshake.CodeInvalidArgument},
		{"purpose at the limit", "a", handshake.ContactInput{To: "b", Purpose: strings.Repeat("é", 300)}, ""},
		{"purpose with a bidi control", "a", handshake.ContactInput{To: "b", Purpose: "pay \u202egnp.exe"}, handshake.CodeInvalidArgument},
		{"purpose with a zero-width space", "a", handshake.ContactInput{To: "b", Purpose: "ass\u200bess"}, handshake.CodeInvalidArgument},
		{"purpose on two lines", "a", handshake.ContactInput{To: "b", Purpose: "assess\nthe sheet"}, ""},
		{"ttl 366", "a", handshake.ContactInput{To: "b", Purpose: "p", TTLDays: 366}, handshake.CodeInvalidArgument},
		{"ttl -1", "a", handshake.ContactInput{To: "b", Purpose: "p", TTLDays: -1}, handshake.CodeInvalidArgument},
		{"ttl 365", "a", handshake.ContactInput{To: "b", Purpose: "p", TTLDays: 365}, ""},
		{"ttl 1", "a", handshake.ContactInput{To: "b", Purpose: "p", TTLDays: 1}, ""},
		{"bad scope", "a", handshake.ContactInput{To: "b", Purpose: "p", Scopes: []string{"admin"}}, handshake.CodeInvalidScope},
		{"empty scopes", "a", handshake.ContactInput{To: "b", Purpose: "p", Scopes: []string{}}, handshake.CodeInvalidScope},
		{"task without skill", "a", handshake.ContactInput{To: "b", Purpose: "p", Scopes: []string{"task:"}}, handshake.CodeInvalidScope},
		{"task bad skill", "a", handshake.ContactInput{To: "b", Purpose: "p", Scopes: []string{"task:a b"}}, handshake.CodeInvalidScope},
		{"scope twice", "a", handshake.ContactInput{To: "b", Purpose: "p", Scopes: []string{"message", "message"}}, handshake.CodeInvalidScope},
		{"all scopes", "a", handshake.ContactInput{To: "b", Purpose: "p", Scopes: []string{"message", "task:assess", "resource:read"}}, ""},
		{"unknown target", "a", handshake.ContactInput{To: "zz", Purpose: "p"}, handshake.CodeUnknownAgent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			r, err := f.svc.Contact(f.ctx, tc.from, tc.in, t0)
			wantCode(t, err, tc.want)
			list, _, lerr := f.svc.Contacts(f.ctx, "b", handshake.ContactsQuery{Status: "any"}, t0)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tc.want != "" {
				if len(list) != 0 {
					t.Fatalf("a refused contact left %v", list)
				}
				return
			}
			if r.Status != handshake.RequestPending || !r.ExpiresAt.Equal(t0.Add(7*24*time.Hour)) {
				t.Fatalf("request %+v", r)
			}
			if len(list) != 1 || list[0].ID != r.ID {
				t.Fatalf("incoming %v, want %s", list, r.ID)
			}
			if got := f.pushes.types("b"); !slices.Equal(got, []string{handshake.FrameContactRequested}) {
				t.Fatalf("pushes to b %v", got)
			}
		})
	}
}

func TestContactLimits(t *testing.T) {
	t.Parallel()
	t.Run("duplicate pending", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.contact(t, "a", "b", t0)
		_, err := f.svc.Contact(f.ctx, "a", handshake.ContactInput{To: "b", Purpose: "again"}, t0.Add(time.Minute))
		wantCode(t, err, handshake.CodeDuplicateRequest)
		// The other direction is a request of its own.
		f.contact(t, "b", "a", t0)
	})
	t.Run("already agreed, wider is a new request", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.agree(t, "a", "b", t0, "message")
		_, err := f.svc.Contact(f.ctx, "a", handshake.ContactInput{To: "b", Purpose: "p"}, t0)
		wantCode(t, err, handshake.CodeAlreadyAgreed)
		// message holds both ways
		_, err = f.svc.Contact(f.ctx, "b", handshake.ContactInput{To: "a", Purpose: "p"}, t0)
		wantCode(t, err, handshake.CodeAlreadyAgreed)
		f.contact(t, "a", "b", t0, "message", "task:x")
	})
	t.Run("cooldown 24h after a decline", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.contact(t, "a", "b", t0)
		if _, err := f.svc.Decline(f.ctx, handshake.AgentActor("b"), r.ID, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Contact(f.ctx, "a", handshake.ContactInput{To: "b", Purpose: "p"}, t0.Add(25*time.Hour-time.Second))
		wantCode(t, err, handshake.CodeCooldown)
		f.contact(t, "a", "b", t0.Add(25*time.Hour))
	})
	t.Run("10 per hour", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for i := range 10 {
			f.contact(t, "a", fmt.Sprintf("m%02d", i), t0.Add(time.Duration(i)*time.Minute))
		}
		_, err := f.svc.Contact(f.ctx, "a", handshake.ContactInput{To: "m10", Purpose: "p"}, t0.Add(59*time.Minute))
		wantCode(t, err, handshake.CodeRateLimited)
		f.contact(t, "a", "m10", t0.Add(time.Hour)) // the first has left the window
	})
	t.Run("20 pending", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for i := range 20 {
			f.contact(t, "a", fmt.Sprintf("m%02d", i), t0.Add(time.Duration(i/10)*time.Hour))
		}
		now := t0.Add(3 * time.Hour)
		_, err := f.svc.Contact(f.ctx, "a", handshake.ContactInput{To: "m20", Purpose: "p"}, now)
		wantCode(t, err, handshake.CodeTooManyPending)
		// Cancelling one makes room.
		out, _, _ := f.svc.Contacts(f.ctx, "a", handshake.ContactsQuery{Direction: "outgoing", Limit: 1}, now)
		if _, err := f.svc.Cancel(f.ctx, handshake.AgentActor("a"), out[0].ID, now); err != nil {
			t.Fatal(err)
		}
		f.contact(t, "a", "m20", now)
	})
	t.Run("expiry after 7 days", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.contact(t, "a", "b", t0)
		_, err := f.svc.Accept(f.ctx, handshake.AgentActor("b"), r.ID, handshake.AcceptInput{}, t0.Add(7*24*time.Hour))
		wantCode(t, err, handshake.CodeNotPending)
		got, _, _ := f.svc.Contacts(f.ctx, "b", handshake.ContactsQuery{Status: "expired"}, t0.Add(7*24*time.Hour))
		if len(got) != 1 || got[0].Status != handshake.RequestExpired {
			t.Fatalf("expired list %v", got)
		}
		// An expired request is no longer pending: a new one may go.
		f.contact(t, "a", "b", t0.Add(7*24*time.Hour))
	})
	t.Run("just before expiry", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.contact(t, "a", "b", t0)
		if _, err := f.svc.Accept(f.ctx, handshake.AgentActor("b"), r.ID, handshake.AcceptInput{}, t0.Add(7*24*time.Hour-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy     string
		scopes     []string
		wantStatus string
	}{
		{handshake.PolicyAgentDecides, []string{"message"}, handshake.RequestPending},
		{handshake.PolicyOwnerDecides, []string{"message"}, handshake.RequestPending},
		{handshake.PolicyAutoAccept, []string{"message"}, handshake.RequestAccepted},
		{handshake.PolicyAutoAccept, []string{"message", "task:x"}, handshake.RequestPending},
		{handshake.PolicyAutoAccept, []string{"resource:read"}, handshake.RequestPending},
		{handshake.PolicyDeny, []string{"message"}, handshake.RequestDeclined},
	}
	for _, tc := range tests {
		t.Run(tc.policy+"/"+strings.Join(tc.scopes, ","), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			if _, err := f.svc.SetPolicy(f.ctx, handshake.AgentActor("b"), "b", tc.policy, t0); err != nil {
				t.Fatal(err)
			}
			r := f.contact(t, "a", "b", t0, tc.scopes...)
			if r.Status != tc.wantStatus {
				t.Fatalf("status %s, want %s", r.Status, tc.wantStatus)
			}
			ags, _ := f.svc.Agreements(f.ctx, "a", false, t0)
			if (tc.wantStatus == handshake.RequestAccepted) != (len(ags) == 1) {
				t.Fatalf("agreements %v for status %s", ags, r.Status)
			}
			if len(ags) == 1 && !slices.Equal(ags[0].Scopes, []string{"message"}) {
				t.Fatalf("auto-accept granted %v", ags[0].Scopes)
			}
			if tc.policy == handshake.PolicyDeny {
				_, err := f.svc.Contact(f.ctx, "a", handshake.ContactInput{To: "b", Purpose: "p"}, t0.Add(time.Hour))
				wantCode(t, err, handshake.CodeCooldown)
			}
		})
	}
}

func TestPolicyOwnership(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.svc.SetPolicy(f.ctx, handshake.AgentActor("b"), "b", "sometimes", t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	_, err = f.svc.SetPolicy(f.ctx, handshake.AgentActor("a"), "b", handshake.PolicyDeny, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	_, err = f.svc.SetPolicy(f.ctx, handshake.OwnerActor("carol"), "b", handshake.PolicyDeny, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	// The agent may set owner-decides itself and leave it again.
	for _, p := range []string{handshake.PolicyOwnerDecides, handshake.PolicyAgentDecides} {
		if _, err := f.svc.SetPolicy(f.ctx, handshake.AgentActor("b"), "b", p, t0); err != nil {
			t.Fatal(err)
		}
	}
	// Once the owner sets it, only the owner changes it.
	if _, err := f.svc.SetPolicy(f.ctx, handshake.OwnerActor("alice"), "b", handshake.PolicyOwnerDecides, t0); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.SetPolicy(f.ctx, handshake.AgentActor("b"), "b", handshake.PolicyAutoAccept, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	if p, _ := f.svc.Policy(f.ctx, "b"); p.Policy != handshake.PolicyOwnerDecides || !p.OwnerSet {
		t.Fatalf("policy %+v", p)
	}
	if _, err := f.svc.SetPolicy(f.ctx, handshake.OwnerActor("alice"), "b", handshake.PolicyAutoAccept, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetPolicy(f.ctx, handshake.AgentActor("b"), "b", handshake.PolicyAgentDecides, t0); err != nil {
		t.Fatal(err)
	}
}

func TestOwnerDecides(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.svc.SetPolicy(f.ctx, handshake.OwnerActor("alice"), "b", handshake.PolicyOwnerDecides, t0); err != nil {
		t.Fatal(err)
	}
	r := f.contact(t, "a", "b", t0, "message", "task:x")
	_, err := f.svc.Accept(f.ctx, handshake.AgentActor("b"), r.ID, handshake.AcceptInput{}, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	_, err = f.svc.Decline(f.ctx, handshake.AgentActor("b"), r.ID, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	_, err = f.svc.Accept(f.ctx, handshake.OwnerActor("carol"), r.ID, handshake.AcceptInput{}, t0)
	wantCode(t, err, handshake.CodeNotFound)
	pending, err := f.svc.Pending(f.ctx, "alice", t0)
	if err != nil || len(pending) != 1 || pending[0].ID != r.ID {
		t.Fatalf("pending %v %v", pending, err)
	}
	ag, err := f.svc.Accept(f.ctx, handshake.OwnerActor("alice"), r.ID, handshake.AcceptInput{Scopes: []string{"message"}, TTLDays: 3}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ag.Scopes, []string{"message"}) || !ag.ExpiresAt.Equal(t0.AddDate(0, 0, 3)) {
		t.Fatalf("agreement %+v", ag)
	}
	if pending, _ := f.svc.Pending(f.ctx, "alice", t0); len(pending) != 0 {
		t.Fatalf("still pending %v", pending)
	}
}

func TestDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		actor handshake.Actor
		act   string // accept, decline, cancel
		in    handshake.AcceptInput
		want  string
	}{
		{"target accepts", handshake.AgentActor("b"), "accept", handshake.AcceptInput{}, ""},
		{"target narrows scopes", handshake.AgentActor("b"), "accept", handshake.AcceptInput{Scopes: []string{"message"}}, ""},
		{"target shortens ttl", handshake.AgentActor("b"), "accept", handshake.AcceptInput{TTLDays: 1}, ""},
		{"target widens scopes", handshake.AgentActor("b"), "accept", handshake.AcceptInput{Scopes: []string{"message", "resource:read"}}, handshake.CodeInvalidScope},
		{"target lengthens ttl", handshake.AgentActor("b"), "accept", handshake.AcceptInput{TTLDays: 31}, handshake.CodeInvalidArgument},
		{"target grants nothing", handshake.AgentActor("b"), "accept", handshake.AcceptInput{Scopes: []string{}}, handshake.CodeInvalidScope},
		{"requester accepts", handshake.AgentActor("a"), "accept", handshake.AcceptInput{}, handshake.CodeNotFound},
		{"stranger declines", handshake.AgentActor("c"), "decline", handshake.AcceptInput{}, handshake.CodeNotFound},
		{"target declines", handshake.AgentActor("b"), "decline", handshake.AcceptInput{}, ""},
		{"owner of target accepts", handshake.OwnerActor("alice"), "accept", handshake.AcceptInput{}, ""},
		{"requester cancels", handshake.AgentActor("a"), "cancel", handshake.AcceptInput{}, ""},
		{"target cancels", handshake.AgentActor("b"), "cancel", handshake.AcceptInput{}, handshake.CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			r := f.contact(t, "a", "b", t0, "message", "task:x")
			now := t0.Add(time.Minute)
			var err error
			switch tc.act {
			case "accept":
				var ag handshake.Agreement
				ag, err = f.svc.Accept(f.ctx, tc.actor, r.ID, tc.in, now)
				if err == nil {
					wantScopes := r.Scopes
					if tc.in.Scopes != nil {
						wantScopes = tc.in.Scopes
					}
					ttl := 30
					if tc.in.TTLDays != 0 {
						ttl = tc.in.TTLDays
					}
					if !slices.Equal(ag.Scopes, wantScopes) || !ag.ExpiresAt.Equal(now.AddDate(0, 0, ttl)) || ag.Requester != "a" || ag.Target != "b" {
						t.Fatalf("agreement %+v", ag)
					}
				}
			case "decline":
				_, err = f.svc.Decline(f.ctx, tc.actor, r.ID, now)
			case "cancel":
				_, err = f.svc.Cancel(f.ctx, tc.actor, r.ID, now)
			}
			wantCode(t, err, tc.want)
			got, _, _ := f.svc.Contacts(f.ctx, "b", handshake.ContactsQuery{Status: "any"}, now)
			want := map[string]string{"accept": handshake.RequestAccepted, "decline": handshake.RequestDeclined, "cancel": handshake.RequestCancelled}[tc.act]
			if tc.want != "" {
				want = handshake.RequestPending
			}
			if got[0].Status != want {
				t.Fatalf("status %s, want %s", got[0].Status, want)
			}
			if tc.want == "" {
				// A decided request is decided for good.
				_, err := f.svc.Cancel(f.ctx, handshake.AgentActor("a"), r.ID, now)
				wantCode(t, err, handshake.CodeNotPending)
				_, err = f.svc.Accept(f.ctx, handshake.AgentActor("b"), r.ID, handshake.AcceptInput{}, now)
				wantCode(t, err, handshake.CodeNotPending)
			}
		})
	}
}

func TestContactsListing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := range 12 {
		f.contact(t, fmt.Sprintf("m%02d", i), "a", t0.Add(time.Duration(i)*time.Second))
	}
	page1, total, err := f.svc.Contacts(f.ctx, "a", handshake.ContactsQuery{}, t0.Add(time.Minute))
	if err != nil || total != 12 || len(page1) != 10 || page1[0].From != "m00" {
		t.Fatalf("page 1: %d of %d, %v", len(page1), total, err)
	}
	page2, _, _ := f.svc.Contacts(f.ctx, "a", handshake.ContactsQuery{Offset: 10}, t0.Add(time.Minute))
	if len(page2) != 2 || page2[1].From != "m11" {
		t.Fatalf("page 2: %v", page2)
	}
	out, total, _ := f.svc.Contacts(f.ctx, "m03", handshake.ContactsQuery{Direction: "outgoing"}, t0.Add(time.Minute))
	if total != 1 || out[0].To != "a" {
		t.Fatalf("outgoing %v", out)
	}
	for _, q := range []handshake.ContactsQuery{{Direction: "sideways"}, {Status: "maybe"}, {Limit: 11}, {Offset: -1}} {
		_, _, err := f.svc.Contacts(f.ctx, "a", q, t0)
		wantCode(t, err, handshake.CodeInvalidArgument)
	}
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	for _, who := range []handshake.Actor{handshake.AgentActor("a"), handshake.AgentActor("b"), handshake.OwnerActor("alice")} {
		t.Run(who.String(), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ag := f.agree(t, "a", "b", t0, "message")
			if _, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "hi"}, t0); err != nil {
				t.Fatal(err)
			}
			if _, err := f.svc.Revoke(f.ctx, who, ag.ID, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			_, err := f.svc.Send(f.ctx, "b", handshake.SendInput{To: "a", Text: "hi"}, t0.Add(time.Minute))
			wantCode(t, err, handshake.CodeNotAuthorized)
			_, err = f.svc.Revoke(f.ctx, who, ag.ID, t0.Add(time.Minute))
			wantCode(t, err, handshake.CodeNotActive)
			all, _ := f.svc.Agreements(f.ctx, "a", true, t0.Add(time.Minute))
			active, _ := f.svc.Agreements(f.ctx, "a", false, t0.Add(time.Minute))
			if len(all) != 1 || all[0].Status != handshake.AgreementRevoked || len(active) != 0 {
				t.Fatalf("all %v active %v", all, active)
			}
		})
	}
	t.Run("stranger", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		ag := f.agree(t, "a", "b", t0, "message")
		_, err := f.svc.Revoke(f.ctx, handshake.AgentActor("c"), ag.ID, t0)
		wantCode(t, err, handshake.CodeNotFound)
		_, err = f.svc.Revoke(f.ctx, handshake.AgentActor("a"), "agr_nope", t0)
		wantCode(t, err, handshake.CodeNotFound)
	})
	t.Run("expiry", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.contact(t, "a", "b", t0)
		ag, _ := f.svc.Accept(f.ctx, handshake.AgentActor("b"), r.ID, handshake.AcceptInput{TTLDays: 2}, t0)
		end := t0.AddDate(0, 0, 2)
		if _, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, end.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Send(f.ctx, "a", handshake.SendInput{To: "b", Text: "x"}, end)
		wantCode(t, err, handshake.CodeNotAuthorized)
		_, err = f.svc.Revoke(f.ctx, handshake.AgentActor("a"), ag.ID, end)
		wantCode(t, err, handshake.CodeNotActive)
	})
}
