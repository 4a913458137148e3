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
		{in: `PIRCAN/1 SEND {"to":"a","text":"FIRST","text":"SECOND"}`, code: CodeInvalidJSON},
		{in: `PIRCAN/1 SEND {"to":"a","text":"one","TEXT":"two"}`, code: CodeInvalidJSON},
		{in: `PIRCAN/1 FIND {"id":"d1","id":"d2"}`, code: CodeInvalidJSON},
		{in: `PIRCAN/1 FIND {"q":{"a":1,"a":2}}`, code: CodeInvalidJSON},
		{in: `PIRCAN/1 FIND {"id":5}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":""}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("é", 65) + `"}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("é", 32) + `"}`, verb: "FIND", args: `{"id":"` + strings.Repeat("é", 32) + `"}`, id: strings.Repeat("é", 32)},
		// 64 characters but over 64 bytes once escaped: no reply could
		// carry it (PIRCAN.md "Differences from the seed").
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("é", 33) + `"}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("\u2028", 64) + `"}`, code: CodeInvalidID},
		{in: `PIRCAN/1 FIND {"id":"` + strings.Repeat("\u007f", 11) + `"}`, code: CodeInvalidID},
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
	if derr == nil || derr.Code != CodeInvalidArgument || derr.Re != "r9" || derr.Verb != "FIND" || derr.Message != "Bad argument: limit must be a whole number." {
		t.Fatalf("Decode = %+v", derr)
	}
	req, _ = Parse(`PIRCAN/1 FIND {"id":"r9","nope":1}`)
	if derr := req.Decode(&args); derr == nil || derr.Code != CodeInvalidArgument || derr.Message != `Bad argument: unknown field "nope".` {
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

// ScanID finds the id of requests Parse refuses before reading it.
func TestScanID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`PIRCAN/1 SEND {"id":"r1","text":"` + strings.Repeat("x", 600) + `"}`, "r1"},
		{`PIRCAN/1 SEND {"text":"a","to":{"id":"inner"},"id":"r2"} junk`, "r2"},
		{`PIRCAN/1 F!ND {"id":"r3"}`, "r3"},
		{`PIRCAN/1 FIND {"q":"` + strings.Repeat("x", 1100) + `","id":"late"}`, ""},
		{`PIRCAN/1 FIND {"id":5}`, ""},
		{`PIRCAN/1 FIND {"id":"` + strings.Repeat("\u2028", 64) + `"}`, ""},
		{`PIRCAN/1 FIND`, ""},
		{`PIRCAN/1 FIND {"id"`, ""},
	} {
		if got := ScanID(tc.in); got != tc.want {
			t.Errorf("ScanID(%.60q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzScanID(f *testing.F) {
	f.Add(`PIRCAN/1 FIND {"id":"r1"}`)
	f.Add(`PIRCAN/1 FIND {"a":[{"id":"x"}],"id":"y"`)
	f.Fuzz(func(t *testing.T, s string) {
		id := ScanID(s)
		if id != "" && !validID(id) {
			t.Fatalf("ScanID(%q) = %q, not a valid id", s, id)
		}
		if req, err := Parse(s); err == nil && req.ID != "" && id != req.ID && len(s) <= maxScanBytes {
			t.Fatalf("Parse read id %q, ScanID %q", req.ID, id)
		}
	})
}

func TestScanIDLastWins(t *testing.T) {
	t.Parallel()
	if got := ScanID(`PIRCAN/1 FIND {"id":"a","id":"b"}`); got != "b" {
		t.Fatal(got)
	}
}

// Split: the text parts of a MESSAGE and its MESSAGE-MORE lines joined are
// the whole text, every line within the limit, valid, with "re".
func TestSplitKeepsTheWholeText(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"short", strings.Repeat("é", 200), strings.Repeat("a\u2028\"", 700), strings.Repeat("x", 60000)} {
		o := Obj{{"message_id", "msg_0123456789abcdef01234567"}, {"from", Obj{{"agent_id", "agt_1"}, {"name", strings.Repeat("N", 80)}}},
			{"hop", 1}, {"text", text}, {"re", "r1"}}
		lines, err := Split("MESSAGE", o, "message_id", "text", MaxReplyBytes)
		if err != nil {
			t.Fatal(err)
		}
		var joined strings.Builder
		for i, l := range lines {
			if !Valid(l, MaxReplyBytes) {
				t.Fatalf("line %d invalid: %q", i, l)
			}
			verb, js, _ := strings.Cut(strings.TrimPrefix(l, Prefix+" "), " ")
			var m map[string]any
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Fatal(err)
			}
			wantVerb := "MESSAGE"
			if i > 0 {
				wantVerb = "MESSAGE-MORE"
			}
			if verb != wantVerb || m["re"] != "r1" || m["message_id"] != "msg_0123456789abcdef01234567" || (m["more"] == true) != (i < len(lines)-1) {
				t.Fatalf("line %d: %s", i, l)
			}
			joined.WriteString(m["text"].(string))
		}
		if joined.String() != text {
			t.Fatalf("joined text differs (%d lines, %d bytes of %d)", len(lines), joined.Len(), len(text))
		}
		if text == "short" && len(lines) != 1 {
			t.Fatal(lines)
		}
	}
}
