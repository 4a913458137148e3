package line

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		verb string
		args string
		id   string
		code string
	}{
		{in: "PIRCAN/1 HELP", verb: "HELP"},
		{in: "pircan/1 help", verb: "HELP"},
		{in: "  PIRCAN/1   find   {\"q\":\"x\"}  ", verb: "FIND", args: `{"q":"x"}`},
		{in: `PIRCAN/1 FIND{"q":"x","id":"r1"}`, verb: "FIND", args: `{"q":"x","id":"r1"}`, id: "r1"},
		{in: `PIRCAN/1 ECHO {"text":"hi","id":"é"}`, verb: "ECHO", args: `{"text":"hi","id":"é"}`, id: "é"},
		{in: "", code: CodeEmpty},
		{in: "   ", code: CodeEmpty},
		{in: "hello there", code: CodeNotPircan},
		{in: "PIRCAN/2 HELP", code: CodeNotPircan},
		{in: "PIRCAN/1", code: CodeMissingVerb},
		{in: "PIRCAN/1    ", code: CodeMissingVerb},
		{in: `PIRCAN/1 {"q":1}`, code: CodeMissingVerb},
		{in: "PIRCAN/1 F!ND", code: CodeUnknownVerb},
		{in: "PIRCAN/1 FIND [1]", code: CodeInvalidJSON},
		{in: "PIRCAN/1 FIND {", code: CodeInvalidJSON},
		{in: `PIRCAN/1 FIND {"a":1} x`, code: CodeInvalidJSON},
		{in: `PIRCAN/1 FIND "x"`, code: CodeInvalidJSON},
		{in: `PIRCAN/1 FIND {"id":5}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":""}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("é", 65) + `"}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("é", 64) + `"}`, verb: "FIND", args: `{"id":"` + strings.Repeat("é", 64) + `"}`, id: strings.Repeat("é", 64)},
		{in: "PIRCAN/1 ECHO " + strings.Repeat("x", 400), code: CodeTooLong},
	}
	for _, tc := range tests {
		req, err := Parse(tc.in)
		if tc.code != "" {
			if err == nil || err.Code != tc.code {
				t.Errorf("Parse(%q) = %+v, %v; want %s", tc.in, req, err, tc.code)
			}
			continue
		}
		if err != nil || req.Verb != tc.verb || string(req.Args) != tc.args || req.ID != tc.id {
			t.Errorf("Parse(%q) = %+v (args %s), %v; want %s %s %q", tc.in, req, req.Args, err, tc.verb, tc.args, tc.id)
		}
	}
}

func TestParseErrorCarriesVerbAndRe(t *testing.T) {
	t.Parallel()
	_, err := Parse(`PIRCAN/1 find {"id":7}`)
	if err == nil || err.Verb != "FIND" || err.Re != "" {
		t.Fatalf("got %+v", err)
	}
	req, perr := Parse(`PIRCAN/1 FIND {"id":"r9","limit":"x"}`)
	if perr != nil {
		t.Fatal(perr)
	}
	var args struct {
		Limit int `json:"limit"`
	}
	derr := req.Decode(&args)
	if derr == nil || derr.Code != CodeInvalidArgument || derr.Re != "r9" || derr.Verb != "FIND" {
		t.Fatalf("Decode = %+v", derr)
	}
	req, _ = Parse(`PIRCAN/1 FIND {"id":"r9","nope":1}`)
	if derr := req.Decode(&args); derr == nil || derr.Code != CodeInvalidArgument {
		t.Fatalf("unknown field: %+v", derr)
	}
	req, _ = Parse(`PIRCAN/1 FIND {"id":"r9","limit":3}`)
	if derr := req.Decode(&args); derr != nil || args.Limit != 3 {
		t.Fatalf("good args: %+v %+v", derr, args)
	}
}

func TestFitShortIsUnchanged(t *testing.T) {
	t.Parallel()
	got, err := Format("ECHO", Obj{{"text", "hi"}, {"identified", false}, {"account", nil}})
	if err != nil || got != `PIRCAN/1 ECHO {"text":"hi","identified":false,"account":null}` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestFitCutsOnRuneBoundaries(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"a", "é", "€", "😀", "\n", `"`, "<", "\x00"} {
		for _, limit := range []int{120, 200, 350} {
			o := Obj{{"agent_id", "agt_1"}, {"name", strings.Repeat(unit, 300)},
				{"capabilities", []string{strings.Repeat(unit, 64), "x"}}, {"re", "r1"}}
			got, err := Fit("FIND-RESULT", o, limit)
			if err != nil {
				t.Fatalf("%q/%d: %v", unit, limit, err)
			}
			if !Valid(got, limit) {
				t.Fatalf("%q/%d: invalid line %q", unit, limit, got)
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(got[len("PIRCAN/1 FIND-RESULT "):]), &m)
			if m["truncated"] != true || m["re"] != "r1" || m["agent_id"] != "agt_1" {
				t.Fatalf("%q/%d: fields %v", unit, limit, m)
			}
			name := m["name"].(string)
			if !utf8.ValidString(name) || strings.ContainsRune(name, utf8.RuneError) || !strings.HasPrefix(strings.Repeat(unit, 300), name) {
				t.Fatalf("%q/%d: name cut badly: %q", unit, limit, name)
			}
			if len(got) < limit-12 { // cut no more than needed (one rune's escape)
				t.Fatalf("%q/%d: over-cut to %d bytes: %q", unit, limit, len(got), got)
			}
		}
	}
	if o := (Obj{{"name", "x"}}); o[0].Value != "x" {
		t.Fatal("unreachable")
	}
}

func TestFitDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	caps := []string{strings.Repeat("c", 300)}
	o := Obj{{"capabilities", caps}, {"owner", Obj{{"name", strings.Repeat("n", 300)}}}}
	if _, err := Format("X", o); err != nil {
		t.Fatal(err)
	}
	if len(caps[0]) != 300 || len(o[1].Value.(Obj)[0].Value.(string)) != 300 {
		t.Fatal("Fit modified its input")
	}
}

func TestFitDropsListItemsWhenStringsAreEmpty(t *testing.T) {
	t.Parallel()
	many := make([]string, 200)
	got, err := Format("HELLO", Obj{{"capabilities", many}})
	if err != nil || !Valid(got, MaxReplyBytes) || !strings.Contains(got, `"truncated":true`) {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := Fit("X", Obj{{"re", strings.Repeat("r", 64)}}, 40); err != ErrCannotFit {
		t.Fatalf("want ErrCannotFit, got %v", err)
	}
}

func TestErrorReply(t *testing.T) {
	t.Parallel()
	got := ErrorReply(&Error{Code: CodeNotRegistered, Message: "Send PIRCAN/1 HELLO first.", Verb: "FIND", Re: "r1"})
	want := `PIRCAN/1 ERROR {"verb":"FIND","code":"not_registered","message":"Send PIRCAN/1 HELLO first.","re":"r1"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := ErrorReply(Errorf(CodeEmpty, "x")); got != `PIRCAN/1 ERROR {"code":"empty","message":"x"}` {
		t.Fatalf("got %s", got)
	}
}

// Identifiers (keys ending in "_id", at any depth) are never cut: the
// texts around them are, even when they are shorter than the identifiers.
func TestFitKeepsIdentifiers(t *testing.T) {
	t.Parallel()
	id := "msg_" + strings.Repeat("0", 60)
	o := Obj{{"message_id", id}, {"from", Obj{{"agent_id", "agt_" + strings.Repeat("1", 60)}, {"name", strings.Repeat("n", 50)}}},
		{"conversation_id", id}, {"text", strings.Repeat("t", 300)}}
	got, err := Fit("MESSAGE", o, 320)
	if err != nil || !Valid(got, 320) {
		t.Fatalf("%q %v", got, err)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(got[len("PIRCAN/1 MESSAGE "):]), &m)
	from, _ := m["from"].(map[string]any)
	if m["message_id"] != id || m["conversation_id"] != id || from["agent_id"] != "agt_"+strings.Repeat("1", 60) || m["truncated"] != true {
		t.Fatalf("identifiers cut: %s", got)
	}
}
