package line

import (
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; what it accepts is well formed, and every
// reply made from what it read is a valid line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"PIRCAN/1 HELP", `pircan/1 hello {"name":"A","id":"r1"}`, `PIRCAN/1 FIND{"q":"é"}`,
		"PIRCAN/1 ECHO {\"text\":\"a\\r\\nQUIT\\u0000\"}", "PIRCAN/1", "help", "\x01VERSION\x01",
		`PIRCAN/1 FIND {"id":5}`, "PIRCAN/1 ECHO {\"text\":\"\xff\xfe\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		req, err := Parse(s)
		if err != nil {
			if !Valid(ErrorReply(err), MaxReplyBytes) {
				t.Fatalf("invalid error reply for %q", s)
			}
			return
		}
		if req.Verb == "" || !validVerb(req.Verb) || len(s) > MaxRequestBytes {
			t.Fatalf("accepted %q as %+v", s, req)
		}
		var args struct {
			Text string `json:"text"`
		}
		if derr := req.Decode(&args); derr != nil {
			if !Valid(ErrorReply(derr), MaxReplyBytes) {
				t.Fatalf("invalid error reply for %q", s)
			}
			return
		}
		got, ferr := Format("ECHO", Obj{{"text", args.Text}, {"account", s}, {"re", req.ID}})
		if ferr != nil || !Valid(got, MaxReplyBytes) {
			t.Fatalf("reply %q (%v) for %q", got, ferr, s)
		}
	})
}

// FuzzFit: whatever the strings, the line fits, is valid JSON, valid UTF-8,
// free of CR, LF and NUL.
func FuzzFit(f *testing.F) {
	f.Add("Hazmat Agent", "Chemical release assessment", "hazmat", 350)
	f.Add(strings.Repeat("é", 200), strings.Repeat("😀", 100), "\r\n\x00", 100)
	f.Add("\xff\xfe", "\u2028", `"\`, 60)
	f.Fuzz(func(t *testing.T, name, desc, capability string, limit int) {
		limit = 160 + abs(limit)%400
		o := Obj{{"agent_id", "agt_0123456789abcdef01234567"}, {"name", name}, {"nick", nil},
			{"capabilities", []string{capability, capability}}, {"description", desc}}
		got, err := Fit("FIND-RESULT", o, limit)
		if err != nil {
			t.Fatalf("Fit(%d): %v", limit, err)
		}
		if !Valid(got, limit) {
			t.Fatalf("invalid line %q", got)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}
