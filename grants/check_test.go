package grants

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var checkNow = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// brandGrant is the DELEGATION.md "The checks" example grant, in force at checkNow.
func brandGrant() *Grant {
	return &Grant{JTI: "g1", Subject: "ag_brand", IssuedAt: checkNow.Add(-time.Hour), ExpiresAt: checkNow.Add(time.Hour),
		Scope: Scope{Role: "brand", Amount: &AmountLimit{MaxCents: ptr[int64](350000)}, Categories: []string{"primary_slot"},
			MaxSends: ptr(2), BudgetCents: ptr[int64](1_000_000)}}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	withScope := func(mod func(s *Scope)) *Grant { g := brandGrant(); mod(&g.Scope); return g }
	okInput := func() CheckInput {
		return CheckInput{Grant: brandGrant(), FrameType: "propose_terms", AmountCents: 320000, HasAmount: true,
			Category: "primary_slot", Sends: 2, Counterparty: "ag_bouncer", Now: checkNow}
	}
	tests := []struct {
		name string
		mod  func(in *CheckInput)
		want []Failure // only Check, Limit, Got are compared
	}{
		{name: "within the grant", mod: func(in *CheckInput) {}},
		{name: "amount at the max", mod: func(in *CheckInput) { in.AmountCents = 350000 }},
		{name: "amount over the max", mod: func(in *CheckInput) { in.AmountCents = 350001 },
			want: []Failure{{Check: "amount_usd", Limit: "3500.00", Got: "3500.01"}}},
		{name: "amount under the min", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.Amount = &AmountLimit{MinCents: ptr[int64](100000)} })
			in.AmountCents = 99999
		}, want: []Failure{{Check: "amount_usd", Limit: "1000.00", Got: "999.99"}}},
		{name: "amount absent", mod: func(in *CheckInput) { in.HasAmount = false; in.AmountCents = 0 },
			want: []Failure{{Check: "amount_usd", Limit: "<= 3500.00", Got: "none"}, {Check: "budget", Limit: "10000.00", Got: "none"}}},
		{name: "category outside", mod: func(in *CheckInput) { in.Category = "story" },
			want: []Failure{{Check: "category", Limit: "[primary_slot]", Got: "story"}}},
		{name: "category absent", mod: func(in *CheckInput) { in.Category = "" },
			want: []Failure{{Check: "category", Limit: "[primary_slot]", Got: "none"}}},
		{name: "empty categories allow nothing", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.Categories = []string{} })
		}, want: []Failure{{Check: "category", Limit: "[]", Got: "primary_slot"}}},
		{name: "sends over", mod: func(in *CheckInput) { in.Sends = 3 },
			want: []Failure{{Check: "sends", Limit: "2", Got: "3"}}},
		{name: "sends absent", mod: func(in *CheckInput) { in.Sends = 0 },
			want: []Failure{{Check: "sends", Limit: "2", Got: "none"}}},
		{name: "counterparty outside", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.Counterparties = []string{"ag_x", "ag_y"} })
		}, want: []Failure{{Check: "counterparty", Limit: "[ag_x, ag_y]", Got: "ag_bouncer"}}},
		{name: "counterparty inside", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.Counterparties = []string{"ag_bouncer"} })
		}},
		{name: "arena_only in a live negotiation", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.ArenaOnly = true })
		}, want: []Failure{{Check: "arena_only", Limit: "arena", Got: "live"}}},
		{name: "arena_only in the arena", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.ArenaOnly = true })
			in.Arena = true
		}},
		{name: "budget exactly used up", mod: func(in *CheckInput) { in.BudgetUsedCents = 680000 }},
		{name: "budget exceeded", mod: func(in *CheckInput) { in.BudgetUsedCents = 680001 },
			want: []Failure{{Check: "budget", Limit: "10000.00", Got: "10000.01"}}},
		{name: "budget checked in the arena too", mod: func(in *CheckInput) { in.BudgetUsedCents = 5_000_000; in.Arena = true },
			want: []Failure{{Check: "budget", Limit: "10000.00", Got: "53200.00"}}},
		{name: "budget binds counters too", mod: func(in *CheckInput) { in.FrameType = "counter_terms"; in.BudgetUsedCents = 999_999 },
			want: []Failure{{Check: "budget", Limit: "10000.00", Got: "13199.99"}}},
		{name: "no grant", mod: func(in *CheckInput) { in.Grant = nil; in.AmountCents = 99_999_999 },
			want: []Failure{{Check: "grant", Got: "none"}}},
		{name: "revoked", mod: func(in *CheckInput) { in.GrantErr = ErrRevoked; in.Category = "x" },
			want: []Failure{{Check: "grant", Got: "revoked"}}},
		{name: "token error", mod: func(in *CheckInput) { in.Grant = nil; in.GrantErr = tokenErr(CodeWrongAudience, "aud") },
			want: []Failure{{Check: "grant", Got: "wrong_audience"}}},
		{name: "other error", mod: func(in *CheckInput) { in.Grant = nil; in.GrantErr = errors.New("lost") },
			want: []Failure{{Check: "grant", Got: "invalid"}}},
		{name: "expired at now", mod: func(in *CheckInput) { in.Now = in.Grant.ExpiresAt; in.Sends = 9 },
			want: []Failure{{Check: "grant", Limit: "2026-11-30T09:00:00.000Z", Got: "expired"}}},
		{name: "not yet valid", mod: func(in *CheckInput) { in.Grant.NotBefore = checkNow.Add(time.Second) },
			want: []Failure{{Check: "grant", Limit: "2026-11-30T08:00:01.000Z", Got: "not_yet_valid"}}},
		{name: "offer hash mismatch on accept", mod: func(in *CheckInput) {
			in.FrameType, in.OfferHashMismatch, in.ExpectedOfferHash, in.GotOfferHash = "accept", true, "sha256:aa", "sha256:bb"
		}, want: []Failure{{Check: "offer_hash", Limit: "sha256:aa", Got: "sha256:bb"}}},
		{name: "offer hash ignored on propose", mod: func(in *CheckInput) { in.OfferHashMismatch = true }},
		{name: "offer hash checked without grant", mod: func(in *CheckInput) {
			in.Grant = nil
			in.FrameType, in.OfferHashMismatch, in.ExpectedOfferHash = "accept", true, "sha256:aa"
		}, want: []Failure{{Check: "grant", Got: "none"}, {Check: "offer_hash", Limit: "sha256:aa"}}},
		{name: "every failure in order", mod: func(in *CheckInput) {
			in.Grant = withScope(func(s *Scope) { s.Counterparties = []string{}; s.ArenaOnly = true })
			in.FrameType, in.AmountCents, in.Category, in.Sends, in.BudgetUsedCents = "accept", 400000, "story", 5, 700000
			in.OfferHashMismatch, in.ExpectedOfferHash, in.GotOfferHash = true, "sha256:aa", "sha256:bb"
		}, want: []Failure{
			{Check: "amount_usd", Limit: "3500.00", Got: "4000.00"},
			{Check: "category", Limit: "[primary_slot]", Got: "story"},
			{Check: "sends", Limit: "2", Got: "5"},
			{Check: "counterparty", Limit: "[]", Got: "ag_bouncer"},
			{Check: "arena_only", Limit: "arena", Got: "live"},
			{Check: "budget", Limit: "10000.00", Got: "11000.00"},
			{Check: "offer_hash", Limit: "sha256:aa", Got: "sha256:bb"},
		}},
		{name: "no limits restrict nothing", mod: func(in *CheckInput) {
			in.Grant.Scope = Scope{}
			in.HasAmount, in.AmountCents, in.Category, in.Sends = false, 0, "", 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := okInput()
			tt.mod(&in)
			got := Check(in)
			for i := range got {
				if got[i].Message == "" {
					t.Errorf("failure %d has no message", i)
				}
				got[i].Message = ""
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Check =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}
