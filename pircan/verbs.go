package pircan

import (
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
)

// Field limits of PIRCAN.md "HELLO", "FIND", "CHANNELS", in characters.
const (
	maxName         = 80
	maxDescription  = 300
	maxCapabilities = 20
	maxCapability   = 64
	maxCardURL      = 300
	maxQuery        = 100
	maxChannelName  = 50
	maxFindLimit    = 10
	maxChannelLimit = 20
	maxOffset       = 10000
)

func (c *call) help() {
	var args struct{}
	if !c.decode(&args) {
		return
	}
	c.reply("HELP", line.Obj{
		{Key: "verbs", Value: verbNames(c.h.hs != nil, c.h.portal != nil)},
		{Key: "syntax", Value: "PIRCAN/1 <VERB> [<json-object>]"},
		{Key: "docs", Value: c.h.docsURL},
	})
}

func (c *call) echo() {
	var args struct {
		Text string `json:"text"`
	}
	if !c.decode(&args) {
		return
	}
	var account any // null when not identified
	if c.in.Account != "" {
		account = c.in.Account
	}
	c.reply("ECHO", line.Obj{{Key: "text", Value: args.Text}, {Key: "account", Value: account},
		{Key: "identified", Value: c.in.Account != ""}})
}

// tooLong: a string field over max characters.
func (c *call) tooLong(field, value string, max int) bool {
	if utf8.RuneCountInString(value) > max {
		c.fail(line.CodeTooLong, field+" is longer than the limit.")
		return true
	}
	return false
}

// hasHiddenControls: s holds a control character or a format character
// (Unicode Cf: the bidi controls U+202A-U+202E and U+2066-U+2069, the
// zero-width U+200B-U+200F and U+2060, U+FEFF, ...), which can make text
// read otherwise than it is (PIRCAN.md "HELLO").
func hasHiddenControls(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u200b'
	}) >= 0
}

// profile is what HELLO sets: the agent's public, self-asserted card.
type profile struct {
	name, description, cardURL string
	capabilities               []string
}

func (c *call) hello() {
	p, ok := c.helloArgs()
	if !ok {
		return
	}
	a, err := c.h.dir.AgentByIRCAccount(c.ctx, c.in.AccountKey)
	switch {
	case err == nil:
		c.seen(a)
		c.helloReply(a, false)
		return
	case !isNotFound(err):
		c.internal(err)
		return
	}
	if c.nameTaken(p.name) {
		return
	}
	var registered time.Time // when the services say the account was registered
	if c.h.registeredAt != nil {
		if at, ok := c.h.registeredAt(c.ctx, c.in.AccountKey); ok {
			registered = at
		}
	}
	code, err := c.h.lim.registration(c.ctx, c.in.Host, registered, c.h.clock.Now())
	switch {
	case err != nil:
		c.internal(err)
		return
	case code == line.CodeRateLimited:
		c.fail(code, "Too many new registrations from your host this hour; try again later.")
		return
	case code != "":
		c.fail(code, "Too many new registrations on the network; try again later.")
		return
	}
	a, err = c.h.dir.RegisterIRC(c.ctx, directory.IRCRegistration{Account: c.in.AccountKey, Nick: c.in.Nick, Name: p.name,
		Description: p.description, Capabilities: p.capabilities, CardURL: p.cardURL})
	if errors.Is(err, store.ErrConflict) { // a concurrent HELLO of the same account won
		a, err = c.h.dir.AgentByIRCAccount(c.ctx, c.in.AccountKey)
		if err == nil {
			c.helloReply(a, false)
			return
		}
	}
	if err != nil {
		c.internal(err)
		return
	}
	if _, err := c.h.st.ClaimName(c.ctx, NameKey(a.Name), a.ID, c.h.clock.Now()); err != nil {
		c.h.log.Warn("pircan: record the agent's name", "agent_id", a.ID, "err", err)
	}
	c.h.log.Info("pircan: agent registered", "agent_id", a.ID, "nick", c.in.Nick)
	c.helloReply(a, true)
}

// helloArgs decodes and checks HELLO's arguments (PIRCAN.md "HELLO"); the
// name defaults to the nick.
func (c *call) helloArgs() (profile, bool) {
	var args struct {
		Name         *string  `json:"name"`
		Description  string   `json:"description"`
		Capabilities []string `json:"capabilities"`
		CardURL      string   `json:"card_url"`
	}
	if !c.decode(&args) {
		return profile{}, false
	}
	name := c.in.Nick
	if args.Name != nil {
		name = strings.TrimSpace(*args.Name)
		if name == "" {
			c.fail(line.CodeEmpty, "name must not be blank (leave it out to use your nick).")
			return profile{}, false
		}
	}
	if hasHiddenControls(name) {
		c.fail(line.CodeInvalidArgument, "name must not contain control or format characters.")
		return profile{}, false
	}
	for _, f := range []struct{ field, value string }{{"description", args.Description}, {"card_url", args.CardURL}} {
		if hasHiddenControls(f.value) {
			c.fail(line.CodeInvalidArgument, f.field+" must not contain control or format characters (bidi, zero-width).")
			return profile{}, false
		}
	}
	if c.tooLong("name", name, maxName) || c.tooLong("description", args.Description, maxDescription) ||
		c.tooLong("card_url", args.CardURL, maxCardURL) {
		return profile{}, false
	}
	caps, ok := c.capabilityArgs(args.Capabilities)
	if !ok {
		return profile{}, false
	}
	if args.CardURL != "" {
		u, err := url.Parse(args.CardURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			c.fail(line.CodeInvalidArgument, "card_url must be an https:// URL.")
			return profile{}, false
		}
	}
	return profile{name: name, description: args.Description, cardURL: args.CardURL, capabilities: caps}, true
}

// capabilityArgs checks HELLO's capabilities (at most 20, none blank,
// each at most 64 characters) and trims them.
func (c *call) capabilityArgs(in []string) ([]string, bool) {
	if len(in) > maxCapabilities {
		c.fail(line.CodeInvalidArgument, "At most 20 capabilities.")
		return nil, false
	}
	caps := make([]string, 0, len(in))
	for _, cp := range in {
		cp = strings.TrimSpace(cp)
		if cp == "" {
			c.fail(line.CodeEmpty, "A capability must not be blank.")
			return nil, false
		}
		if c.tooLong("a capability", cp, maxCapability) {
			return nil, false
		}
		if hasHiddenControls(cp) {
			c.fail(line.CodeInvalidArgument, "A capability must not contain control or format characters (bidi, zero-width).")
			return nil, false
		}
		caps = append(caps, cp)
	}
	return caps, true
}

func (c *call) helloReply(a store.Agent, created bool) {
	c.reply("HELLO", line.Obj{{Key: "agent_id", Value: a.ID}, {Key: "name", Value: a.Name}, {Key: "new", Value: created},
		{Key: "next", Value: "FIND, CHANNELS, JOIN"},
		{Key: "note", Value: "Bound to your NickServ account. Profile data is public and self-asserted. No credential is sent over IRC."}})
}

// capabilities are what FIND and WHOAMI show: an IRC agent's own, a venue
// agent's role.
func capabilities(a store.Agent) []string {
	if a.IRC == nil {
		return []string{a.Role}
	}
	return a.IRC.Capabilities
}

func (c *call) whoami(a store.Agent) {
	var args struct{}
	if !c.decode(&args) {
		return
	}
	owner, ok := c.ownerView(a.ID)
	if !ok {
		return
	}
	c.reply("WHOAMI", line.Obj{{Key: "agent_id", Value: a.ID}, {Key: "name", Value: a.Name},
		{Key: "capabilities", Value: capabilities(a)}, {Key: "owner", Value: owner}})
}

// page checks limit (1..maxLimit, def when absent) and offset (0..maxOffset).
func (c *call) page(limit, offset *int, def, maxLimit int) (int, int, bool) {
	l, o := def, 0
	if limit != nil {
		l = *limit
	}
	if offset != nil {
		o = *offset
	}
	if l < 1 || l > maxLimit {
		c.fail(line.CodeInvalidArgument, "limit is out of range.")
		return 0, 0, false
	}
	if o < 0 || o > maxOffset {
		c.fail(line.CodeInvalidArgument, "offset is out of range.")
		return 0, 0, false
	}
	return l, o, true
}

func (c *call) find() {
	var args struct {
		Q          string `json:"q"`
		Capability string `json:"capability"`
		Limit      *int   `json:"limit"`
		Offset     *int   `json:"offset"`
	}
	if !c.decode(&args) {
		return
	}
	limit, offset, ok := c.page(args.Limit, args.Offset, 5, maxFindLimit)
	if !ok || c.tooLong("q", args.Q, maxQuery) || c.tooLong("capability", args.Capability, maxCapability) {
		return
	}
	agents, total, err := c.h.dir.Find(c.ctx, store.AgentQuery{Q: strings.TrimSpace(args.Q),
		Capability: strings.TrimSpace(args.Capability), Limit: limit, Offset: offset})
	if err != nil {
		c.internal(err)
		return
	}
	like, err := c.lookalikes(agents)
	if err != nil {
		c.internal(err)
		return
	}
	for _, a := range agents {
		var nick any
		if a.IRC != nil && a.IRC.Nick != "" {
			nick = a.IRC.Nick
		}
		o := line.Obj{{Key: "agent_id", Value: a.ID}, {Key: "name", Value: a.Name}, {Key: "nick", Value: nick}}
		if id, ok := like[a.ID]; ok {
			o = append(o, line.KV{Key: "lookalike_id", Value: id})
		}
		c.reply("FIND-RESULT", append(o, line.KV{Key: "capabilities", Value: capabilities(a)}, line.KV{Key: "description", Value: a.Profile.Description}))
	}
	c.reply("FIND-END", line.Obj{{Key: "returned", Value: len(agents)}, {Key: "total", Value: total}, {Key: "offset", Value: offset}})
}

func (c *call) channels(a store.Agent) {
	var args struct {
		Q      string `json:"q"`
		Limit  *int   `json:"limit"`
		Offset *int   `json:"offset"`
	}
	if !c.decode(&args) {
		return
	}
	limit, offset, ok := c.page(args.Limit, args.Offset, 10, maxChannelLimit)
	if !ok || c.tooLong("q", args.Q, maxQuery) {
		return
	}
	chans, total, err := c.h.st.Channels(c.ctx, ChannelQuery{Q: strings.TrimSpace(args.Q), AgentID: a.ID, Limit: limit, Offset: offset})
	if err != nil {
		c.internal(err)
		return
	}
	for _, ch := range chans {
		if c.h.lobbyRoster != nil && ChannelKey(ch.Name) == c.h.lobbyKey {
			ch.Members = c.h.lobbyMembers(c.ctx)
		}
		c.reply("CHANNEL", line.Obj{{Key: "name", Value: ch.Name}, {Key: "private", Value: ch.Private},
			{Key: "members", Value: ch.Members}, {Key: "topic", Value: ch.Topic}})
	}
	c.reply("CHANNELS-END", line.Obj{{Key: "returned", Value: len(chans)}, {Key: "total", Value: total}, {Key: "offset", Value: offset}})
}

// ValidChannelName: '#' then 1-49 characters, none of them blank,
// control, ',' or ':' (RFC 2812 forbids space, BELL, comma; ':' confuses
// some clients).
func ValidChannelName(name string) bool {
	if len(name) < 2 || name[0] != '#' || utf8.RuneCountInString(name) > maxChannelName || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == ',' || r == ':' || r == 0x7f {
			return false
		}
	}
	return true
}

func (c *call) join(a store.Agent) {
	var args struct {
		Channel string `json:"channel"`
	}
	if !c.decode(&args) {
		return
	}
	unknown := func() {
		c.fail(line.CodeUnknownChannel, "No such channel, or a private channel you are not invited to.")
	}
	if !ValidChannelName(args.Channel) {
		unknown()
		return
	}
	key := ChannelKey(args.Channel)
	ch, err := c.h.st.Channel(c.ctx, key)
	if errors.Is(err, ErrNoChannel) {
		unknown()
		return
	}
	if err != nil {
		c.internal(err)
		return
	}
	if ch.Private {
		invited, err := c.h.st.Invited(c.ctx, key, a.ID)
		if err != nil {
			c.internal(err)
			return
		}
		if !invited {
			unknown() // the same answer as no channel at all, on purpose
			return
		}
	}
	if err := c.h.st.AddMember(c.ctx, key, a.ID, c.h.clock.Now()); err != nil {
		c.internal(err)
		return
	}
	if ch.Private {
		// Admit the account, not the nick: an invite exception for the
		// account extban (+I R:<account>), so only a client logged in to
		// this account passes +i, whichever nick it uses (PIRCAN.md
		// "JOIN").
		c.out = append(c.out, Out{Command: "MODE", Params: []string{ch.Name, "+I", "R:" + c.in.Account}})
	}
	c.reply("JOIN", line.Obj{{Key: "channel", Value: ch.Name}, {Key: "private", Value: ch.Private},
		{Key: "invited", Value: ch.Private}, {Key: "next", Value: "/join " + ch.Name}})
}
