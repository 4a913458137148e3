package negotiation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in    string
		cents int64
	}{
		{`3200`, 320000},
		{`3200.0`, 320000},
		{`3200.00`, 320000},
		{`3200.000000`, 320000},
		{`32.5`, 3250},
		{`0.01`, 1},
		{`0.10`, 10},
		{`123.45`, 12345},
		{`0`, 0},
		{`0.0`, 0},
		{`1e3`, 100000},
		{`1E3`, 100000},
		{`1e+3`, 100000},
		{`1.5e1`, 1500},
		{`5e-2`, 5},
		{`1.50e-1`, 15},
		{`0.5e1`, 500},
		{`32e2`, 320000},
		{`1e-2`, 1},
		{`10000000`, grants.MaxAmountCents},
		{`10000000.00`, grants.MaxAmountCents},
		{`1e7`, grants.MaxAmountCents},
		{`9999999.99`, grants.MaxAmountCents - 1},
		{` 42 `, 4200},
	}
	for _, tc := range ok {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAmount(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("ParseAmount(%s) = %v", tc.in, err)
			}
			if got != tc.cents {
				t.Fatalf("ParseAmount(%s) = %d cents, want %d", tc.in, got, tc.cents)
			}
		})
	}
	refused := []string{
		`"3200"`,      // a string holding a number is not a number
		`"3200.00"`,   //
		`""`,          //
		`null`,        // would read as 0
		`true`,        //
		`{}`,          //
		`[3200]`,      //
		`1.234`,       // 3 decimals
		`0.001`,       //
		`1e-3`,        //
		`5e-3`,        //
		`1.5e-2`,      // 0.015
		`-1`,          //
		`-0.01`,       //
		`1e400`,       // out of every range
		`1e21`,        //
		`10000000.01`, // over $10,000,000
		`10000001`,    //
		`1e8`,         //
		`99999999999999999999999999`,
		`0.0000000000000000000000001`,
		``,
		`abc`,
	}
	for _, in := range refused {
		t.Run("refused/"+in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAmount(json.RawMessage(in))
			if err == nil {
				t.Fatalf("ParseAmount(%s) = %d, want invalid_argument", in, got)
			}
			if err.Code != wire.CodeInvalidArgument {
				t.Fatalf("code %q, want invalid_argument", err.Code)
			}
		})
	}
}

func TestParseTerms(t *testing.T) {
	t.Parallel()
	// pad returns terms of exactly n bytes.
	pad := func(n int) string {
		const head, tail = `{"amount_usd":1,"x":"`, `"}`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	ok := []struct {
		name     string
		in       string
		cents    int64
		category string
		sends    int
	}{
		{"amount only", `{"amount_usd":3200}`, 320000, "", 0},
		{"all read fields", `{"amount_usd":3200,"category":"primary_slot","sends":2}`, 320000, "primary_slot", 2},
		{"opaque keys kept", `{"amount_usd":1,"notes":{"a":[1,2]},"deliver_by":"2026-12-01"}`, 100, "", 0},
		{"sends 1", `{"amount_usd":1,"sends":1}`, 100, "", 1},
		{"sends 1000", `{"amount_usd":1,"sends":1000}`, 100, "", 1000},
		{"category 64 chars", `{"amount_usd":1,"category":"` + strings.Repeat("é", 64) + `"}`, 100, strings.Repeat("é", 64), 0},
		{"empty category", `{"amount_usd":1,"category":""}`, 100, "", 0},
		{"nesting 4", `{"amount_usd":1,"a":{"b":{"c":{}}}}`, 100, "", 0},
		{"nesting 4 with arrays", `{"amount_usd":1,"a":[[[1]]]}`, 100, "", 0},
		{"4096 bytes", pad(MaxTermsBytes), 100, "", 0},
		{"brackets inside strings are not nesting", `{"amount_usd":1,"a":"{{{{{[[[[\"{{{"}`, 100, "", 0},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTerms(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("ParseTerms = %v", err)
			}
			if got.AmountCents != tc.cents || got.Category != tc.category || got.Sends != tc.sends {
				t.Fatalf("ParseTerms = {%d %q %d}, want {%d %q %d}", got.AmountCents, got.Category, got.Sends, tc.cents, tc.category, tc.sends)
			}
			if string(got.Raw) != tc.in {
				t.Fatalf("Raw = %s, want the terms as sent", got.Raw)
			}
		})
	}
	refused := []struct{ name, in string }{
		{"missing amount_usd", `{"category":"primary_slot","sends":2}`},
		{"empty object", `{}`},
		{"amount_usd a string", `{"amount_usd":"3200"}`},
		{"amount_usd null", `{"amount_usd":null}`},
		{"amount_usd 3 decimals", `{"amount_usd":1.234}`},
		{"amount_usd negative", `{"amount_usd":-1}`},
		{"amount_usd too large", `{"amount_usd":10000000.01}`},
		{"category too long", `{"amount_usd":1,"category":"` + strings.Repeat("x", MaxCategoryLen+1) + `"}`},
		{"category too long in runes", `{"amount_usd":1,"category":"` + strings.Repeat("é", MaxCategoryLen+1) + `"}`},
		{"category a number", `{"amount_usd":1,"category":5}`},
		{"category an array", `{"amount_usd":1,"category":["a"]}`},
		{"category null", `{"amount_usd":1,"category":null}`},
		{"sends 0", `{"amount_usd":1,"sends":0}`},
		{"sends 1001", `{"amount_usd":1,"sends":1001}`},
		{"sends 1.5", `{"amount_usd":1,"sends":1.5}`},
		{"sends -1", `{"amount_usd":1,"sends":-1}`},
		{"sends a string", `{"amount_usd":1,"sends":"2"}`},
		{"sends null", `{"amount_usd":1,"sends":null}`},
		{"sends huge", `{"amount_usd":1,"sends":1e400}`},
		{"over 4096 bytes", pad(MaxTermsBytes + 1)},
		{"nesting 5", `{"amount_usd":1,"a":{"b":{"c":{"d":{}}}}}`},
		{"nesting 5 with arrays", `{"amount_usd":1,"a":[[[[1]]]]}`},
		{"an array", `[{"amount_usd":1}]`},
		{"a string", `"{\"amount_usd\":1}"`},
		{"a number", `3200`},
		{"null", `null`},
		{"empty", ``},
		{"not JSON", `{amount_usd:1}`},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTerms(json.RawMessage(tc.in))
			if err == nil {
				t.Fatalf("ParseTerms(%.80s) = %+v, want invalid_argument", tc.in, got)
			}
			if err.Code != wire.CodeInvalidArgument {
				t.Fatalf("code %q, want invalid_argument", err.Code)
			}
		})
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mustOfferHash(t *testing.T, terms string) string {
	t.Helper()
	h, err := OfferHash(json.RawMessage(terms))
	if err != nil {
		t.Fatalf("OfferHash(%s): %v", terms, err)
	}
	return h
}

func TestOfferHash(t *testing.T) {
	t.Parallel()
	// The canonical form (RFC 8785) of both spellings of PROTOCOL.md "Transcript, offer hash and chain hash".
	want := sha(`{"amount_usd":3200,"sends":2}`)
	same := []string{
		`{"sends":2,"amount_usd":3200}`,
		`{"amount_usd":3200.0,"sends":2}`,
		`{"amount_usd":32e2,"sends":2.0}`,
		" {\n \"sends\" : 2 ,\t\"amount_usd\" : 3200.00 } ",
		`{"amount_\u0075sd":3200,"sends":2}`,
	}
	for _, s := range same {
		if got := mustOfferHash(t, s); got != want {
			t.Errorf("OfferHash(%s) = %s, want %s", s, got, want)
		}
	}
	differ := []string{
		`{"sends":2,"amount_usd":3200.01}`,
		`{"sends":3,"amount_usd":3200}`,
		`{"sends":2,"amount_usd":3200,"category":"x"}`,
		`{"sends":"2","amount_usd":3200}`,
		`{"Sends":2,"amount_usd":3200}`,
	}
	for _, s := range differ {
		if got := mustOfferHash(t, s); got == want {
			t.Errorf("OfferHash(%s) = the hash of different terms", s)
		}
	}
	// Key order of nested objects, by UTF-16 code units (RFC 8785 §3.2.3).
	if got, want := mustOfferHash(t, `{"b":{"z":1,"a":[true,null]},"a":"é"}`), sha(`{"a":"é","b":{"a":[true,null],"z":1}}`); got != want {
		t.Errorf("nested: %s, want %s", got, want)
	}
	if _, err := OfferHash(json.RawMessage(`{"amount_usd":`)); err == nil {
		t.Error("OfferHash of broken JSON: no error")
	}
	if _, err := OfferHash(json.RawMessage(`{"amount_usd":1,"x":1e400}`)); err == nil {
		t.Error("OfferHash of a number out of range: no error")
	}
}

func TestChainHash(t *testing.T) {
	t.Parallel()
	frame := json.RawMessage(`{"type":"negotiation_message","seq":1,"from":"a","content":"hi"}`)
	h1, err := ChainHash("", frame)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha(`{"content":"hi","from":"a","seq":1,"type":"negotiation_message"}`); h1 != want {
		t.Fatalf("first entry: %s, want %s", h1, want)
	}
	again, _ := ChainHash("", frame)
	if again != h1 {
		t.Fatal("ChainHash is not deterministic")
	}
	reordered, _ := ChainHash("", json.RawMessage(`{"seq":1.0,"content":"hi","type":"negotiation_message","from":"a"}`))
	if reordered != h1 {
		t.Fatal("ChainHash depends on key order or number spelling")
	}
	h2, _ := ChainHash(h1, frame)
	if want := sha(h1 + `{"content":"hi","from":"a","seq":1,"type":"negotiation_message"}`); h2 != want {
		t.Fatalf("second entry: %s, want %s", h2, want)
	}
	if h2 == h1 {
		t.Fatal("prev does not enter the hash")
	}
	// One byte of the frame.
	oneByte := []byte(string(frame))
	oneByte[len(oneByte)-3] = 'j' // "hi" -> "hj"
	h3, _ := ChainHash(h1, oneByte)
	if h3 == h2 {
		t.Fatal("a changed byte of the frame does not change the hash")
	}
	// One byte of prev.
	prev := []byte(h1)
	prev[len(prev)-1] ^= 1
	if h4, _ := ChainHash(string(prev), frame); h4 == h2 {
		t.Fatal("a changed byte of prev does not change the hash")
	}
	if _, err := ChainHash("", json.RawMessage(`{`)); err == nil {
		t.Fatal("ChainHash of broken JSON: no error")
	}
}
