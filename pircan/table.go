package pircan

import (
	"reflect"
	"slices"
	"strings"

	"github.com/venuehq/venue/store"
)

// access is who may call a verb (PIRCAN.md "Errors": not_identified,
// not_registered).
type access int

const (
	anyone     access = iota // any nick, identified or not
	identified               // a nick logged in to a NickServ account
	registered               // an account with an agent (HELLO first)
)

// verb is one entry of the verb table: everything the bridge knows of a
// verb lives here, and dispatch, HELP, the metrics' verb label and the
// verb lists are read from it.
type verb struct {
	name string
	// handle answers the request; a is the caller's agent when access is
	// registered, else the zero Agent.
	handle func(c *call, a store.Agent)
	access access
	// handshake: answered only by a bridge with a handshake service;
	// portal: with an owner portal too.
	handshake, portal bool
	// required are the arguments that must be present and non-empty,
	// checked after the arguments decode (invalid_argument "<name> is
	// required."); example, when set, is shown in that message.
	required []string
	example  string
	// section is the line of the plain-text help that shows the verb;
	// help is what follows its name there (its arguments, a hint).
	// helpAs names the verb it is shown with ("ACCEPT/DECLINE/CANCEL").
	section, help, helpAs string
}

// verbTable is every verb of PIRCAN.md, in the order HELP lists them (set
// by init: its handlers read it back, for HELP).
var verbTable []*verb

func init() {
	verbTable = []*verb{
		{name: "HELP", handle: func(c *call, _ store.Agent) { c.help() }, section: "Verbs"},
		{name: "HELLO", handle: func(c *call, _ store.Agent) { c.hello() }, access: identified, section: "Verbs",
			help: `{"name","description","capabilities","card_url"} to register`},
		{name: "WHOAMI", handle: (*call).whoami, access: registered, section: "Verbs"},
		{name: "FIND", handle: func(c *call, _ store.Agent) { c.find() }, access: registered, section: "Verbs", help: `{"q","capability"}`},
		{name: "CHANNELS", handle: (*call).channels, access: registered, section: "Verbs"},
		{name: "JOIN", handle: (*call).join, access: registered, required: []string{"channel"}, example: `{"channel":"#hazmat"}`,
			section: "Verbs", help: `{"channel"}`},
		{name: "ECHO", handle: func(c *call, _ store.Agent) { c.echo() }, section: "Verbs", help: `{"text"}`},

		{name: "CONTACT", handle: (*call).contact, access: registered, handshake: true, required: []string{"to"},
			section: "Agreements", help: `{"to","purpose","scopes"}`},
		{name: "CONTACTS", handle: (*call).contacts, access: registered, handshake: true, section: "Agreements"},
		{name: "ACCEPT", handle: (*call).accept, access: registered, handshake: true, required: []string{"request_id"},
			section: "Agreements", help: `{"request_id"}`},
		{name: "DECLINE", handle: (*call).declineOrCancel, access: registered, handshake: true, required: []string{"request_id"},
			section: "Agreements", helpAs: "ACCEPT"},
		{name: "CANCEL", handle: (*call).declineOrCancel, access: registered, handshake: true, required: []string{"request_id"},
			section: "Agreements", helpAs: "ACCEPT"},
		{name: "AGREEMENTS", handle: (*call).agreements, access: registered, handshake: true, section: "Agreements"},
		{name: "REVOKE", handle: (*call).revoke, access: registered, handshake: true, required: []string{"agreement_id"},
			section: "Agreements", help: `{"agreement_id"}`},
		{name: "POLICY", handle: (*call).policy, access: registered, handshake: true, section: "Agreements", help: `{"policy"}`},

		{name: "SEND", handle: (*call).send, access: registered, handshake: true, required: []string{"to"},
			section: "Messages", help: `{"to","text","reply_to"}`},
		{name: "INBOX", handle: (*call).inbox, access: registered, handshake: true, section: "Messages"},
		{name: "TASKS", handle: (*call).tasks, access: registered, handshake: true, section: "Messages"},
		{name: "COMPLETE", handle: (*call).complete, access: registered, handshake: true, required: []string{"task_id"},
			section: "Messages", help: `{"task_id","outcome","text"}`},
		{name: "RESOURCES", handle: (*call).resources, access: registered, handshake: true, section: "Messages"},
		{name: "READ", handle: (*call).read, access: registered, handshake: true, required: []string{"resource_id"},
			example: `{"resource_id":"res_…"}`, section: "Messages", help: `{"resource_id","offset"}`},
		{name: "REPORT", handle: (*call).report, access: registered, handshake: true, required: []string{"agent_id"}, section: "Messages"},

		{name: "OWNER", handle: (*call).owner, access: registered, handshake: true, section: "Owners",
			help: `{"account"}`},
		{name: "OWN", handle: func(c *call, _ store.Agent) { c.own() }, access: identified, handshake: true,
			required: []string{"agent_id"}, section: "Owners", helpAs: "OWNER"},
		{name: "DISOWN", handle: func(c *call, _ store.Agent) { c.own() }, access: identified, handshake: true,
			required: []string{"agent_id"}, section: "Owners", helpAs: "OWNER"},
		{name: "REBIND", handle: func(c *call, _ store.Agent) { c.rebind() }, access: identified, handshake: true,
			required: []string{"agent_id"}, section: "Owners", helpAs: "OWNER"},
		{name: "LOGIN", handle: func(c *call, _ store.Agent) { c.login() }, access: identified, handshake: true, portal: true,
			required: []string{"code"}, section: "Owners", help: `{"code"}`},
		{name: "LOGOUT", handle: func(c *call, _ store.Agent) { c.logout() }, access: identified, handshake: true, portal: true,
			section: "Owners"},
	}
	helpText = helpLines(false, false)
}

// helpSections are the sections of the plain-text help in order; a
// section that does not start a line follows the previous one on its
// line.
var helpSections = []struct {
	title   string
	newLine bool
	note    string // said after the section's verbs
}{{"Verbs", true, ""}, {"Agreements", true, ""}, {"Messages", true, ""}, {"Owners", true, ownersNote}}

// ownersNote is what HELP says of owners (PIRCAN.md "Owners").
const ownersNote = `Name an owner (OWNER {"account"}; that account confirms with OWN {"agent_id"}): without one, a LOGIN your account is talked into sending hands your agent to whoever showed the code.`

// helpBanner opens the plain-text help.
var helpBanner = []string{
	"PIRCAN is this network's directory of agents. Send requests as PRIVMSG, one per line: PIRCAN/1 <VERB> [<json-object>]",
	"Identify with NickServ first: PIRCAN knows you only by your account. Replies are NOTICEs; PIRCAN never answers NOTICEs.",
}

// lookupVerb is the table's entry for name (upper case); nil when unknown.
func lookupVerb(name string) *verb {
	i := slices.IndexFunc(verbTable, func(v *verb) bool { return v.name == name })
	if i < 0 {
		return nil
	}
	return verbTable[i]
}

// answers reports whether a bridge with (or without) a handshake service
// and owner portal answers v.
func (v *verb) answers(hs, portal bool) bool {
	return (!v.handshake || hs) && (!v.portal || portal)
}

// verbNames are the verbs a bridge answers, for HELP.
func verbNames(hs, portal bool) []string {
	var names []string
	for _, v := range verbTable {
		if v.answers(hs, portal) {
			names = append(names, v.name)
		}
	}
	return names
}

// helpLines are the plain-text help of a bridge (the reply to "help").
func helpLines(hs, portal bool) []string {
	lines := slices.Clone(helpBanner)
	for _, s := range helpSections {
		var frags []string
		for _, v := range verbTable {
			if v.section != s.title || v.helpAs != "" || !v.answers(hs, portal) {
				continue
			}
			names := []string{v.name}
			for _, w := range verbTable {
				if w.helpAs == v.name && w.answers(hs, portal) {
					names = append(names, w.name)
				}
			}
			frags = append(frags, strings.TrimSpace(strings.Join(names, "/")+" "+v.help))
		}
		if len(frags) == 0 {
			continue
		}
		text := s.title + ": " + strings.Join(frags, ", ") + "."
		if s.note != "" {
			text += " " + s.note
		}
		if s.newLine {
			lines = append(lines, text)
		} else {
			lines[len(lines)-1] += " " + text
		}
	}
	return lines
}

// helpText is the plain-text help of a bridge without the handshake (set
// by init).
var helpText []string

// metricVerb keeps the verb label's values few: a verb of the table, or
// "other".
func metricVerb(name string) string {
	if lookupVerb(name) != nil {
		return name
	}
	return "other"
}

// missing is the first of names whose field of args (a pointer to a
// struct, matched by json tag) is empty; "" when none is.
func missing(args any, names []string) string {
	rv := reflect.ValueOf(args)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return ""
	}
	sv := rv.Elem()
	for _, name := range names {
		for i := range sv.NumField() {
			tag, _, _ := strings.Cut(sv.Type().Field(i).Tag.Get("json"), ",")
			if tag == name && sv.Field(i).IsZero() {
				return name
			}
		}
	}
	return ""
}
