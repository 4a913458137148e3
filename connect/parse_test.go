package connect

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseConnectorLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line    string
		typ     string // "" with err "": skipped
		terms   string
		content string
		err     string
	}{
		{line: "", typ: ""},
		{line: "   \t ", typ: ""},
		{line: "Hello there.", typ: "message", content: "Hello there."},
		{line: "  padded  \r", typ: "message", content: "padded"},
		{line: `[TERMS]{"amount_usd":3200,"category":"primary_slot","sends":2}`, typ: "propose_terms", terms: `{"amount_usd":3200,"category":"primary_slot","sends":2}`},
		{line: `[TERMS] { "amount_usd": 3200.5, "note": {"a": [1, 2]} } `, typ: "propose_terms", terms: `{"amount_usd":3200.5,"note":{"a":[1,2]}}`},
		{line: `[COUNTER]{"amount_usd":2900}`, typ: "counter_terms", terms: `{"amount_usd":2900}`},
		{line: "[ACCEPT]", typ: "accept"},
		{line: "  [ACCEPT]  ", typ: "accept"},
		{line: "[WALK]", typ: "walk"},
		{line: "[REJECT]", typ: "reject"},
		{line: "[WITHDRAW]", typ: "withdraw"},
		{line: "[ESCALATE] may I go to $3,900?", typ: "escalate", content: "may I go to $3,900?"},
		{line: "[ESCALATE]", err: "needs what you ask your principal"},
		{line: "[WITHDRAW] now", err: "takes nothing after it"},
		// Known prefixes with a bad payload: refused, nothing sent.
		{line: "[TERMS]", err: "terms are missing"},
		{line: "[TERMS]{amount_usd:3200}", err: "not valid JSON"},
		{line: `[TERMS]{"amount_usd":3200`, err: "not valid JSON"},
		{line: `[TERMS][3200]`, err: "must be a JSON object, got an array"},
		{line: `[TERMS]"3200"`, err: "must be a JSON object, got a string"},
		{line: `[TERMS]null`, err: "must be a JSON object, got null"},
		{line: `[TERMS]{"amount_usd":3200} and more`, err: "one JSON object with nothing after it"},
		{line: `[TERMS]{"amount_usd":1}{"amount_usd":2}`, err: "one JSON object with nothing after it"},
		{line: `[COUNTER]{"category":"primary_slot"}`, err: "need amount_usd"},
		{line: `[COUNTER]{"amount_usd":"3200"}`, err: "amount_usd must be a number, got a string"},
		{line: "[ACCEPT]extra", err: `[ACCEPT] takes nothing after it, got "extra"`},
		{line: "[ACCEPT] deal!", err: "takes nothing after it"},
		{line: "[WALK] bye", err: "takes nothing after it"},
		{line: "[REJECT]{}", err: "takes nothing after it"},
		{line: "[accept]", err: "prefixes are written in capitals, [ACCEPT]"},
		{line: `[Terms]{"amount_usd":1}`, err: "[TERMS]"},
		{line: strings.Repeat("x", 4001), err: "at most 4000 characters"},
		// Unknown bracketed words and stray brackets are talk.
		{line: "[FOO] bar", typ: "message", content: "[FOO] bar"},
		{line: "[] empty", typ: "message", content: "[] empty"},
		{line: "[no closing bracket", typ: "message", content: "[no closing bracket"},
		{line: "I [ACCEPT] later", typ: "message", content: "I [ACCEPT] later"},
		{line: strings.Repeat("é", 4000), typ: "message", content: strings.Repeat("é", 4000)},
	} {
		f, err := parseConnectorLine(tc.line)
		name := tc.line
		if len(name) > 40 {
			name = name[:40]
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || f != nil {
				t.Errorf("%q: got %+v, %v; want an error with %q", name, f, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", name, err)
		case tc.typ == "":
			if f != nil {
				t.Errorf("%q: want it skipped, got %+v", name, f)
			}
		case f == nil || f.Type != tc.typ || f.Content != tc.content:
			t.Errorf("%q: got %+v, want %s %q", name, f, tc.typ, tc.content)
		case tc.terms != "":
			raw, ok := f.Terms.(json.RawMessage)
			if !ok || string(raw) != tc.terms {
				t.Errorf("%q: terms %v, want %s", name, f.Terms, tc.terms)
			}
		case f.Terms != nil:
			t.Errorf("%q: unexpected terms %v", name, f.Terms)
		}
	}
}

func TestFormatUSD(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{0: "$0.00", 500: "$5.00", 3200_00: "$3,200.00", 3200_50: "$3,200.50",
		1234567_89: "$1,234,567.89", 100000_00: "$100,000.00", -12_30: "-$12.30"} {
		if got := FormatUSD(in); got != want {
			t.Errorf("FormatUSD(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestParseLobbyLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		role string        // "": a role connect does not know, which may use every verb
		want *lobbyCommand // nil with err "": skipped
		err  string
	}{
		{line: "   ", want: nil},
		{line: "browse", want: &lobbyCommand{verb: "browse"}},
		{line: "browse  letters  weekly ", want: &lobbyCommand{verb: "browse", query: "letters weekly"}},
		{line: "BROWSE x", want: &lobbyCommand{verb: "browse", query: "x"}},
		{line: "profile agt_1", want: &lobbyCommand{verb: "profile", agentID: "agt_1"}},
		{line: "profile", err: "profile AGENT_ID"},
		{line: "profile a b", err: "profile AGENT_ID"},
		{line: "offer agt_2 3200 Spring launch", want: &lobbyCommand{verb: "offer", agentID: "agt_2", cents: 3200_00, title: "Spring launch"}},
		{line: "offer agt_2 $3,200.50 Spring", want: &lobbyCommand{verb: "offer", agentID: "agt_2", cents: 3200_50, title: "Spring"}},
		{line: "offer agt_2 3200", err: "offer BOUNCER_ID AMOUNT TITLE"},
		{line: "offer agt_2 32.001 Spring", err: "more than 2 decimals"},
		{line: "offer agt_2 -5 Spring", err: "negative"},
		{line: "offer agt_2 lots Spring", err: "not a JSON number"},
		{line: "offer agt_2 3200 " + strings.Repeat("t", 201), err: "at most 200 characters"},
		{line: "requests", want: &lobbyCommand{verb: "requests"}},
		{line: "requests all", err: "takes nothing after it"},
		{line: "accept", want: &lobbyCommand{verb: "accept"}},
		{line: "accept neg_1", want: &lobbyCommand{verb: "accept", negotiation: "neg_1"}},
		{line: "accept neg_1 neg_2", err: "accept [NEGOTIATION_ID]"},
		{line: "decline neg_1", want: &lobbyCommand{verb: "decline", negotiation: "neg_1"}},
		{line: "decline neg_1 not my audience", want: &lobbyCommand{verb: "decline", negotiation: "neg_1", reason: "not my audience"}},
		{line: "decline", err: "decline NEGOTIATION_ID"},
		{line: "decline neg_1 " + strings.Repeat("r", 501), err: "at most 500 characters"},
		{line: "quit", want: &lobbyCommand{verb: "quit"}},
		{line: "exit", want: &lobbyCommand{verb: "quit"}},
		{line: "help", want: &lobbyCommand{verb: "help"}},
		{line: "[TERMS]{}", err: "unknown command"},
		{line: "hello", err: "unknown command"},
		// Each role's own verbs; the other role's are refused here.
		{line: "offer agt_2 3200 Spring", role: "brand", want: &lobbyCommand{verb: "offer", agentID: "agt_2", cents: 3200_00, title: "Spring"}},
		{line: "arena on", role: "brand", want: &lobbyCommand{verb: "arena", mode: "on"}},
		{line: "accept neg_1", role: "brand", err: "accept is for bouncers; you are a brand"},
		{line: "decline neg_1", role: "brand", err: "decline is for bouncers; you are a brand"},
		{line: "requests", role: "brand", err: "requests is for bouncers; you are a brand"},
		{line: "hello", role: "brand", err: "unknown command \"hello\": browse, profile, offer, arena, help, quit"},
		{line: "accept neg_1", role: "bouncer", want: &lobbyCommand{verb: "accept", negotiation: "neg_1"}},
		{line: "browse", role: "bouncer", want: &lobbyCommand{verb: "browse"}},
		{line: "offer agt_2 3200 Spring", role: "bouncer", err: "offer is for brands; you are a bouncer"},
		{line: "arena on", role: "bouncer", err: "arena is for brands; you are a bouncer"},
		{line: "hello", role: "bouncer", err: "unknown command \"hello\": browse, profile, requests, accept, decline, help, quit"},
	} {
		got, err := parseLobbyLine(tc.line, tc.role)
		name := tc.line
		if len(name) > 40 {
			name = name[:40]
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || got != nil {
				t.Errorf("%q: got %+v, %v; want an error with %q", name, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", name, err)
		case tc.want == nil && got != nil:
			t.Errorf("%q: want it skipped, got %+v", name, got)
		case tc.want != nil && (got == nil || *got != *tc.want):
			t.Errorf("%q: got %+v, want %+v", name, got, tc.want)
		}
	}
}
