package negotiation

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

const terms3200 = `{"amount_usd":3200,"category":"primary_slot","sends":2}`

func TestDecodeFrameTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		typ     string
		binding bool
	}{
		{`{"type":"message","content":"hello"}`, TypeMessage, false},
		{`{"type":"research","content":"looking up audience numbers"}`, TypeResearch, false},
		{`{"type":"thinking"}`, TypeThinking, false},
		{`{"type":"propose_terms","content":"Two sends, $3,200.","terms":` + terms3200 + `,"ttl_seconds":120}`, TypeProposeTerms, true},
		{`{"type":"counter_terms","terms":` + terms3200 + `}`, TypeCounterTerms, true},
		{`{"type":"accept"}`, TypeAccept, true},
		{`{"type":"reject"}`, TypeReject, false},
		{`{"type":"withdraw"}`, TypeWithdraw, false},
		{`{"type":"escalate","content":"may I go to $3,500?"}`, TypeEscalate, false},
		{`{"type":"walk"}`, TypeWalk, false},
		{`{"type":"close"}`, TypeClose, false},
	}
	if len(cases) != 11 {
		t.Fatalf("%d types, the venue takes eleven", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			f, err := DecodeFrame([]byte(tc.in))
			if err != nil {
				t.Fatalf("DecodeFrame(%s) = %v", tc.in, err)
			}
			if f.Type != tc.typ {
				t.Fatalf("Type = %q, want %q", f.Type, tc.typ)
			}
			if f.Binding() != tc.binding {
				t.Fatalf("Binding() = %v, want %v", f.Binding(), tc.binding)
			}
		})
	}
}

func TestDecodeFrameFields(t *testing.T) {
	t.Parallel()
	f, err := DecodeFrame([]byte(`{"type":"propose_terms","id":"c-1","content":"Two sends, $3,200.",` +
		`"terms":{"sends":2,"amount_usd":3200.5,"category":"primary_slot","note":"x"},"ttl_seconds":120,` +
		`"offer_hash":"sha256:00","proposal_id":"p1","unknown_field":{"ignored":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != "c-1" || f.Content != "Two sends, $3,200." || !f.HasContent || f.TTLSeconds != 120 ||
		f.OfferHash != "sha256:00" || f.ProposalID != "p1" {
		t.Fatalf("envelope = %+v", f)
	}
	if f.Terms == nil || f.Terms.AmountCents != 320050 || f.Terms.Sends != 2 || f.Terms.Category != "primary_slot" {
		t.Fatalf("terms = %+v", f.Terms)
	}
	if got := string(f.Terms.Raw); got != `{"sends":2,"amount_usd":3200.5,"category":"primary_slot","note":"x"}` {
		t.Fatalf("raw terms = %s, want them as sent", got)
	}

	// null is absent.
	f, err = DecodeFrame([]byte(`{"type":"accept","id":null,"content":null,"terms":null,"ttl_seconds":null,"offer_hash":null,"proposal_id":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != "" || f.HasContent || f.Terms != nil || f.TTLSeconds != 0 || f.OfferHash != "" || f.ProposalID != "" {
		t.Fatalf("nulls: %+v", f)
	}
	// An empty content is still content (thinking may carry one).
	f, err = DecodeFrame([]byte(`{"type":"thinking","content":""}`))
	if err != nil || !f.HasContent {
		t.Fatalf("thinking with empty content: %+v %v", f, err)
	}
}

func TestDecodeFrameTTL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ttl  string
		want int
	}{
		{`5`, MinTTLSeconds},
		{`0`, MinTTLSeconds},
		{`-30`, MinTTLSeconds},
		{`10`, 10},
		{`60`, 60},
		{`60.9`, 60},
		{`6e1`, 60},
		{`300`, 300},
		{`301`, MaxTTLSeconds},
		{`1000`, MaxTTLSeconds},
		{`1e9`, MaxTTLSeconds},
	}
	for _, tc := range cases {
		t.Run(tc.ttl, func(t *testing.T) {
			t.Parallel()
			f, err := DecodeFrame([]byte(`{"type":"propose_terms","terms":{"amount_usd":1},"ttl_seconds":` + tc.ttl + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if f.TTLSeconds != tc.want {
				t.Fatalf("ttl_seconds %s -> %d, want %d", tc.ttl, f.TTLSeconds, tc.want)
			}
		})
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("é", n) }
	cases := []struct {
		name, in, code string
	}{
		{"unknown type", `{"type":"bribe"}`, wire.CodeUnknownType},
		{"type in another case", `{"type":"Accept"}`, wire.CodeUnknownType},
		{"a venue frame type", `{"type":"negotiation_ended"}`, wire.CodeUnknownType},
		{"a lobby frame type", `{"type":"submit_offer"}`, wire.CodeUnknownType},
		{"empty type", `{"type":""}`, wire.CodeUnknownType},
		{"missing type", `{"content":"hi"}`, wire.CodeInvalidArgument},
		{"null type", `{"type":null}`, wire.CodeInvalidArgument},
		{"type not a string", `{"type":7}`, wire.CodeInvalidArgument},
		{"amount_usd a string", `{"type":"propose_terms","terms":{"amount_usd":"3200"}}`, wire.CodeInvalidArgument},
		{"amount_usd 3 decimals", `{"type":"propose_terms","terms":{"amount_usd":3200.001}}`, wire.CodeInvalidArgument},
		{"amount_usd missing", `{"type":"counter_terms","terms":{"sends":2}}`, wire.CodeInvalidArgument},
		{"accept names bad terms", `{"type":"accept","terms":{"amount_usd":1.234}}`, wire.CodeInvalidArgument},
		{"ttl_seconds a string", `{"type":"propose_terms","terms":{"amount_usd":1},"ttl_seconds":"60"}`, wire.CodeInvalidArgument},
		{"ttl_seconds a bool", `{"type":"propose_terms","terms":{"amount_usd":1},"ttl_seconds":true}`, wire.CodeInvalidArgument},
		{"content over 4000", `{"type":"message","content":"` + long(MaxContentLen+1) + `"}`, wire.CodeInvalidArgument},
		{"content not a string", `{"type":"message","content":42}`, wire.CodeInvalidArgument},
		{"id over 64", `{"type":"message","content":"hi","id":"` + long(MaxIDLen+1) + `"}`, wire.CodeInvalidArgument},
		{"id not a string", `{"type":"message","content":"hi","id":42}`, wire.CodeInvalidArgument},
		{"offer_hash not a string", `{"type":"accept","offer_hash":1}`, wire.CodeInvalidArgument},
		{"proposal_id not a string", `{"type":"accept","proposal_id":[]}`, wire.CodeInvalidArgument},
		{"message without content", `{"type":"message"}`, wire.CodeInvalidArgument},
		{"message with empty content", `{"type":"message","content":""}`, wire.CodeInvalidArgument},
		{"message with null content", `{"type":"message","content":null}`, wire.CodeInvalidArgument},
		{"research without content", `{"type":"research"}`, wire.CodeInvalidArgument},
		{"escalate without content", `{"type":"escalate","terms":{"amount_usd":1}}`, wire.CodeInvalidArgument},
		{"propose without terms", `{"type":"propose_terms","content":"hi"}`, wire.CodeInvalidArgument},
		{"propose with null terms", `{"type":"propose_terms","terms":null}`, wire.CodeInvalidArgument},
		{"propose with array terms", `{"type":"propose_terms","terms":[]}`, wire.CodeInvalidArgument},
		{"counter without terms", `{"type":"counter_terms"}`, wire.CodeInvalidArgument},
		{"terms nest 5", `{"type":"propose_terms","terms":{"amount_usd":1,"a":{"b":{"c":{"d":{}}}}}}`, wire.CodeInvalidArgument},
		{"terms nest 6 is too deep for the frame", `{"type":"propose_terms","terms":{"amount_usd":1,"a":{"b":{"c":{"d":{"e":{}}}}}}}`, wire.CodeInvalidJSON},
		{"terms over 4096 bytes", `{"type":"propose_terms","terms":{"amount_usd":1,"x":"` + strings.Repeat("a", MaxTermsBytes) + `"}}`, wire.CodeInvalidArgument},
		{"not JSON", `type=accept`, wire.CodeInvalidJSON},
		{"not an object", `["accept"]`, wire.CodeInvalidJSON},
		{"duplicate type", `{"type":"message","content":"hi","type":"accept"}`, wire.CodeInvalidJSON},
		{"duplicate in case", `{"type":"message","content":"hi","TYPE":"accept"}`, wire.CodeInvalidJSON},
		{"duplicate in terms", `{"type":"propose_terms","terms":{"amount_usd":1,"amount_usd":9000000}}`, wire.CodeInvalidJSON},
		{"NaN", `{"type":"propose_terms","terms":{"amount_usd":NaN}}`, wire.CodeInvalidJSON},
		{"Infinity ttl", `{"type":"propose_terms","terms":{"amount_usd":1},"ttl_seconds":Infinity}`, wire.CodeInvalidJSON},
		{"trailing data", `{"type":"accept"}{"type":"walk"}`, wire.CodeInvalidJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := DecodeFrame([]byte(tc.in))
			if err == nil {
				t.Fatalf("DecodeFrame(%.80s) = %+v, want %s", tc.in, f, tc.code)
			}
			if err.Code != tc.code {
				t.Fatalf("code %q (%s), want %q", err.Code, err.Message, tc.code)
			}
		})
	}
}

func TestDecodeFrameLimitsAreInclusive(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("é", MaxContentLen) // 4000 characters, 8000 bytes
	id := strings.Repeat("i", MaxIDLen)
	f, err := DecodeFrame([]byte(`{"type":"message","id":"` + id + `","content":"` + content + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != id || f.Content != content {
		t.Fatal("id or content changed")
	}
}

func TestClientID(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"type":"bribe","id":"c1"}`:                       "c1",
		`{"id":"c2","terms":{"amount_usd":"x"}}`:           "c2",
		`{"id":42}`:                                        "",
		`{"id":"` + strings.Repeat("x", MaxIDLen+1) + `"}`: "",
		`not json`:          "",
		`[]`:                "",
		`{"type":"accept"}`: "",
	}
	for in, want := range cases {
		if got := ClientID([]byte(in)); got != want {
			t.Errorf("ClientID(%.40s) = %q, want %q", in, got, want)
		}
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","content":"hello","id":"c1"}`,
		`{"type":"thinking"}`,
		`{"type":"propose_terms","terms":{"amount_usd":3200,"category":"primary_slot","sends":2},"ttl_seconds":120}`,
		`{"type":"counter_terms","terms":{"amount_usd":3200.5},"ttl_seconds":"60"}`,
		`{"type":"accept","offer_hash":"sha256:00","proposal_id":"n.p1"}`,
		`{"type":"accept","terms":{"sends":2,"amount_usd":3200}}`,
		`{"type":"escalate","content":"more?","terms":{"amount_usd":1e3}}`,
		`{"type":"walk"}`, `{"type":"close"}`, `{"type":"reject"}`, `{"type":"withdraw"}`,
		`{"type":"research","content":"x"}`, `{"type":"x"}`, `{}`, `[]`, `{"type":"accept","Type":"walk"}`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{
		TypeMessage: true, TypeResearch: true, TypeThinking: true, TypeProposeTerms: true, TypeCounterTerms: true,
		TypeAccept: true, TypeReject: true, TypeWithdraw: true, TypeEscalate: true, TypeWalk: true, TypeClose: true,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = ClientID(data)
		fr, err := DecodeFrame(data)
		if err != nil {
			switch err.Code {
			case wire.CodeInvalidJSON, wire.CodeInvalidArgument, wire.CodeUnknownType:
			default:
				t.Fatalf("code %q", err.Code)
			}
			return
		}
		if !known[fr.Type] {
			t.Fatalf("accepted type %q", fr.Type)
		}
		if utf8.RuneCountInString(fr.ID) > MaxIDLen || utf8.RuneCountInString(fr.Content) > MaxContentLen {
			t.Fatal("id or content over the limit")
		}
		if fr.TTLSeconds != 0 && (fr.TTLSeconds < MinTTLSeconds || fr.TTLSeconds > MaxTTLSeconds) {
			t.Fatalf("ttl %d not clamped", fr.TTLSeconds)
		}
		if (fr.Type == TypeProposeTerms || fr.Type == TypeCounterTerms) && fr.Terms == nil {
			t.Fatal("terms frame without terms")
		}
		if (fr.Type == TypeMessage || fr.Type == TypeResearch || fr.Type == TypeEscalate) && fr.Content == "" {
			t.Fatal("content frame without content")
		}
		if fr.Terms != nil {
			tm := fr.Terms
			if tm.AmountCents < 0 || tm.AmountCents > grants.MaxAmountCents || tm.Sends < 0 || tm.Sends > MaxSends ||
				utf8.RuneCountInString(tm.Category) > MaxCategoryLen || len(tm.Raw) > MaxTermsBytes {
				t.Fatalf("terms out of bounds: %+v", tm)
			}
		}
	})
}
