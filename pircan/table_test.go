package pircan

import (
	"slices"
	"strings"
	"testing"
)

// The plain-text help, the HELP verb list and the metrics' verb label are
// read from the verb table, and say what the hand-written help said.
func TestVerbTableDerivesHelpAndLists(t *testing.T) {
	t.Parallel()
	want := []string{
		"PIRCAN is this network's directory of agents. Send requests as PRIVMSG, one per line: PIRCAN/1 <VERB> [<json-object>]",
		"Identify with NickServ first: PIRCAN knows you only by your account. Replies are NOTICEs; PIRCAN never answers NOTICEs.",
		`Verbs: HELP, HELLO {"name","description","capabilities","card_url"} to register, WHOAMI, FIND {"q","capability"}, CHANNELS, JOIN {"channel"}, ECHO {"text"}.`,
		`Agreements: CONTACT {"to","purpose","scopes"}, CONTACTS, ACCEPT/DECLINE/CANCEL {"request_id"}, AGREEMENTS, REVOKE {"agreement_id"}, POLICY {"policy"}.`,
		`Messages: SEND {"to","text","reply_to"}, INBOX, TASKS, COMPLETE {"task_id","outcome","text"}, RESOURCES, READ {"resource_id","offset"}, REPORT.`,
		`Owners: OWNER/OWN/DISOWN/REBIND {"account"}, LOGIN {"code"}, LOGOUT. Name an owner (OWNER {"account"}; that account confirms with OWN {"agent_id"}): without one, a LOGIN your account is talked into sending hands your agent to whoever showed the code.`,
	}
	if got := helpLines(true, true); !slices.Equal(got, want) {
		t.Fatalf("help with the handshake:\n%s", strings.Join(got, "\n"))
	}
	if got := helpLines(false, false); !slices.Equal(got, want[:3]) {
		t.Fatalf("help without:\n%s", strings.Join(got, "\n"))
	}
	if got := strings.Join(verbNames(false, false), " "); got != "HELP HELLO WHOAMI FIND CHANNELS JOIN ECHO" {
		t.Fatal(got)
	}
	all := verbNames(true, true)
	if len(all) != 28 || !slices.Contains(all, "LOGIN") || !slices.Contains(all, "POLICY") {
		t.Fatal(all)
	}
	// Without a portal, LOGIN and LOGOUT are neither listed nor answered.
	if slices.Contains(verbNames(true, false), "LOGIN") || lookupVerb("LOGIN").answers(true, false) {
		t.Fatal("LOGIN without a portal")
	}
	for _, v := range all {
		if metricVerb(v) != v {
			t.Fatalf("metric label of %s", v)
		}
	}
	if metricVerb("NOPE") != "other" || metricVerb("") != "other" || lookupVerb("help") != nil {
		t.Fatal("unknown verbs")
	}
	seen := map[string]bool{}
	for _, v := range verbTable {
		if seen[v.name] || v.handle == nil || v.section == "" {
			t.Fatalf("entry %s: duplicate, no handler or no help section", v.name)
		}
		seen[v.name] = true
	}
}

func TestMissingRequiredArgument(t *testing.T) {
	t.Parallel()
	args := struct {
		To   string `json:"to"`
		Text string `json:"text,omitempty"`
	}{Text: "x"}
	if got := missing(&args, []string{"text", "to"}); got != "to" {
		t.Fatal(got)
	}
	args.To = "a"
	if got := missing(&args, []string{"text", "to"}); got != "" {
		t.Fatal(got)
	}
}

func TestChannelTopicRefusesHiddenControls(t *testing.T) {
	t.Parallel()
	for _, topic := range []string{"a\u202eb", "a\u200bb", "a\u2066b", "a\ufeffb"} {
		if err := (ChannelConfig{Name: "#c", Topic: topic}).Check(); err == nil {
			t.Errorf("topic %q accepted", topic)
		}
	}
	if err := (ChannelConfig{Name: "#c", Topic: "Chemistry — safe"}).Check(); err != nil {
		t.Fatal(err)
	}
}
