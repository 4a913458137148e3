package grants

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestScopeUnmarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		want    Scope
		wantErr bool
	}{
		{
			name: "DELEGATION.md example",
			raw: `{"role":"brand","amount_usd":{"max":3500},"categories":["primary_slot"],
			 "max_sends":2,"budget_usd":10000,"counterparties":null,"arena_only":false,
			 "negotiation_id":null}`,
			want: Scope{Role: "brand", Amount: &AmountLimit{MaxCents: ptr[int64](350000)},
				Categories: []string{"primary_slot"}, MaxSends: ptr(2), BudgetCents: ptr[int64](1_000_000)},
		},
		{name: "empty object restricts nothing", raw: `{}`, want: Scope{}},
		{name: "all null restricts nothing", raw: `{"role":null,"amount_usd":null,"categories":null,"max_sends":null,"budget_usd":null,"counterparties":null,"arena_only":null,"negotiation_id":null}`, want: Scope{}},
		{name: "min and max with cents", raw: `{"role":"bouncer","amount_usd":{"min":1200.5,"max":3500.25}}`,
			want: Scope{Role: "bouncer", Amount: &AmountLimit{MinCents: ptr[int64](120050), MaxCents: ptr[int64](350025)}}},
		{name: "min null", raw: `{"amount_usd":{"min":null,"max":1}}`, want: Scope{Amount: &AmountLimit{MaxCents: ptr[int64](100)}}},
		{name: "empty categories allow nothing", raw: `{"categories":[]}`, want: Scope{Categories: []string{}}},
		{name: "counterparties, arena, negotiation", raw: `{"counterparties":["a1","a2"],"arena_only":true,"negotiation_id":"n1"}`,
			want: Scope{Counterparties: []string{"a1", "a2"}, ArenaOnly: true, NegotiationID: "n1"}},
		{name: "max_sends 2.0", raw: `{"max_sends":2.0}`, want: Scope{MaxSends: ptr(2)}},
		{name: "budget above amount cap", raw: `{"budget_usd":50000000}`, want: Scope{BudgetCents: ptr[int64](5_000_000_000)}},

		{name: "three decimals", raw: `{"amount_usd":{"max":3500.001}}`, wantErr: true},
		{name: "negative max", raw: `{"amount_usd":{"max":-1}}`, wantErr: true},
		{name: "over 10M", raw: `{"amount_usd":{"max":10000000.01}}`, wantErr: true},
		{name: "amount as string", raw: `{"amount_usd":{"max":"3500"}}`, wantErr: true},
		{name: "amount not object", raw: `{"amount_usd":3500}`, wantErr: true},
		{name: "amount unknown key", raw: `{"amount_usd":{"maximum":3500}}`, wantErr: true},
		{name: "min above max", raw: `{"amount_usd":{"min":5000,"max":3500}}`, wantErr: true},
		{name: "budget three decimals", raw: `{"budget_usd":1.005}`, wantErr: true},
		{name: "budget negative", raw: `{"budget_usd":-5}`, wantErr: true},
		{name: "max_sends fraction", raw: `{"max_sends":1.5}`, wantErr: true},
		{name: "max_sends too big", raw: `{"max_sends":1001}`, wantErr: true},
		{name: "max_sends negative", raw: `{"max_sends":-1}`, wantErr: true},
		{name: "unknown key", raw: `{"max_duration":10}`, wantErr: true},
		{name: "key case differs", raw: `{"Max_Sends":1}`, wantErr: true},
		{name: "role unknown", raw: `{"role":"admin"}`, wantErr: true},
		{name: "categories not list", raw: `{"categories":"primary_slot"}`, wantErr: true},
		{name: "category empty string", raw: `{"categories":[""]}`, wantErr: true},
		{name: "category too long", raw: `{"categories":["` + string(make65()) + `"]}`, wantErr: true},
		{name: "counterparty empty", raw: `{"counterparties":[""]}`, wantErr: true},
		{name: "arena_only string", raw: `{"arena_only":"yes"}`, wantErr: true},
		{name: "negotiation_id empty", raw: `{"negotiation_id":""}`, wantErr: true},
		{name: "negotiation_id number", raw: `{"negotiation_id":5}`, wantErr: true},
		{name: "not an object", raw: `[1]`, wantErr: true},
		{name: "null", raw: `null`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Scope
			err := s.UnmarshalJSON([]byte(tt.raw))
			if tt.wantErr {
				if !errors.Is(err, ErrBadScope) {
					t.Fatalf("err = %v, want ErrBadScope", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, tt.want) {
				t.Fatalf("got %+v, want %+v", s, tt.want)
			}
			// Round trip through MarshalJSON keeps the meaning, [] included.
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var back Scope
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, s) {
				t.Fatalf("round trip %s = %+v, %v", b, back, err)
			}
		})
	}
}

func make65() []byte {
	b := make([]byte, 65)
	for i := range b {
		b[i] = 'c'
	}
	return b
}

func TestScopeMarshal(t *testing.T) {
	t.Parallel()
	s := Scope{Role: "brand", Amount: &AmountLimit{MaxCents: ptr[int64](350050)}, Categories: []string{},
		MaxSends: ptr(0), BudgetCents: ptr[int64](1_000_000), ArenaOnly: true, NegotiationID: "n1"}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"brand","amount_usd":{"max":3500.5},"categories":[],"max_sends":0,"budget_usd":10000,"arena_only":true,"negotiation_id":"n1"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(Scope{}); string(b) != `{}` {
		t.Fatalf("empty scope = %s", b)
	}
}

func TestScopeValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    Scope
		ok   bool
	}{
		{"zero", Scope{}, true},
		{"negative min", Scope{Amount: &AmountLimit{MinCents: ptr[int64](-1)}}, false},
		{"max over cap", Scope{Amount: &AmountLimit{MaxCents: ptr(MaxAmountCents + 1)}}, false},
		{"max at cap", Scope{Amount: &AmountLimit{MaxCents: ptr(MaxAmountCents)}}, true},
		{"budget over cap", Scope{BudgetCents: ptr(MaxBudgetCents + 1)}, false},
		{"sends negative", Scope{MaxSends: ptr(-1)}, false},
		{"role", Scope{Role: "Brand"}, false},
		{"counterparty empty", Scope{Counterparties: []string{"a", ""}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.s.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadScope)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
