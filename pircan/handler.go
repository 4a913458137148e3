package pircan

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
)

// Incoming is one PRIVMSG addressed to PIRCAN.
type Incoming struct {
	Nick    string // the sender's nick, as sent
	NickKey string // the nick case-folded (the server's casemapping)
	// Account is the value of the message's account tag, unescaped; ""
	// when the sender is not identified (no tag, an empty tag or "*").
	Account    string
	AccountKey string // Account case-folded
	// AccountID is the server's id of the account's registration
	// (accountIDTag), "" when the server sends none.
	AccountID string
	// Host is the host part of the message's source (nick!user@host), as
	// the server shows it (a cloak, an address); "" when absent.
	Host string
	Text string
}

// handler answers one request: Incoming in, lines out. It holds no
// connection, so tests drive it directly.
type handler struct {
	m       *metrics
	dir     Directory
	st      State
	lim     limiter
	clock   clock.Clock
	log     *slog.Logger
	docsURL string
	// registeredAt says when an account (folded) was registered, as the
	// services report it (false: they do not say); nil: never known.
	registeredAt func(ctx context.Context, account string) (time.Time, bool)
	// reg caches the registration an account was last found to be by its
	// registration time (sameRegistration without an account id); nil:
	// INFO is asked every time.
	reg *regCache
	// hs and portal serve the handshake verbs; nil: they are unknown.
	hs     *handshake.Service
	portal *handshake.Portal
	// lobbyKey is the lobby's channel key; lobbyRoster who is in it (nil:
	// the members JOIN recorded, as for other channels).
	lobbyKey    string
	lobbyRoster *roster
	// fold folds an account named in a request with the server's
	// casemapping (nil: rfc1459).
	fold func(string) string
}

// foldAccount folds an account named in a request as the bridge folds
// the account tag.
func (h *handler) foldAccount(s string) string {
	if h.fold != nil {
		return h.fold(s)
	}
	return Fold("rfc1459", s)
}

// handle answers in. Every reply is a NOTICE to in.Nick; JOIN of a private
// channel adds a MODE +I admitting the account. The verb is looked up in
// verbTable, which says who may call it. The reply's lines are charged to
// the requester (Limits.LinesPerRequest), so long lists cost more than
// short ones.
func (h *handler) handle(ctx context.Context, in Incoming) []Out {
	outs := h.answer(ctx, in)
	if err := h.lim.charge(ctx, in.AccountKey, in.NickKey, len(outs), h.clock.Now()); err != nil {
		h.log.Warn("pircan: charge reply lines", "nick", in.Nick, "err", err)
	}
	return outs
}

// answer is handle without the charge for the reply's lines.
func (h *handler) answer(ctx context.Context, in Incoming) []Out {
	// The id is read first (a bounded scan), so that every reply to a
	// request with an id carries "re", the refusals before parsing too.
	id := line.ScanID(in.Text)
	if outs, ok := h.admit(ctx, in, id); !ok {
		return outs
	}
	if strings.EqualFold(strings.TrimSpace(in.Text), "help") {
		h.m.requests.WithLabelValues("help").Inc()
		lines := helpLines(h.hs != nil, h.portal != nil)
		outs := make([]Out, len(lines))
		for i, t := range lines {
			outs[i] = notice(in.Nick, t)
		}
		return outs
	}
	req, perr := line.Parse(in.Text)
	if perr != nil {
		if perr.Re == "" && perr.Code != line.CodeInvalidID {
			perr.Re = id
		}
		h.m.requests.WithLabelValues(metricVerb(perr.Verb)).Inc()
		return h.fail(in, perr)
	}
	h.m.requests.WithLabelValues(metricVerb(req.Verb)).Inc()
	c := &call{h: h, ctx: ctx, in: in, req: req, verb: lookupVerb(req.Verb)}
	if c.verb == nil || !c.verb.answers(h.hs != nil, h.portal != nil) {
		c.fail(line.CodeUnknownVerb, "Unknown verb; send PIRCAN/1 HELP.")
		return c.out
	}
	var agent store.Agent
	switch c.verb.access {
	case identified:
		if !c.identified() {
			return c.out
		}
	case registered:
		var ok bool
		if agent, ok = c.registered(); !ok {
			return c.out
		}
	}
	c.verb.handle(c, agent)
	return c.out
}

// admit counts the request against the rate limits (PIRCAN.md "Limits");
// false with the reply (rate_limited once a window, then nothing) when it
// is over them. id is the request's, for "re".
func (h *handler) admit(ctx context.Context, in Incoming, id string) ([]Out, bool) {
	v, err := h.lim.request(ctx, in.AccountKey, in.NickKey, in.Host, h.clock.Now())
	if err != nil {
		return h.internal(in, "", id, err), false
	}
	switch v {
	case refuseOnce:
		h.m.rateLimited.WithLabelValues("answered").Inc()
		return h.fail(in, &line.Error{Code: line.CodeRateLimited, Message: "Too many requests; wait for the next minute.", Re: id}), false
	case refuseQuiet:
		h.m.rateLimited.WithLabelValues("silent").Inc()
		return nil, false
	}
	return nil, true
}

func notice(nick, text string) Out { return Out{Command: "NOTICE", Params: []string{nick, text}} }

func (h *handler) fail(in Incoming, e *line.Error) []Out {
	h.m.errors.WithLabelValues(e.Code).Inc()
	return []Out{notice(in.Nick, line.ErrorReply(e))}
}

// internal logs err under a fresh reference and answers internal_error
// naming it.
func (h *handler) internal(in Incoming, verb, re string, err error) []Out {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	ref := "pircan-" + hex.EncodeToString(b)
	h.log.Error("pircan: request failed", "ref", ref, "verb", verb, "nick", in.Nick, "err", err)
	return h.fail(in, &line.Error{Code: line.CodeInternal, Message: "Server-side failure; reference " + ref + ".", Verb: verb, Re: re})
}

// call is one request being answered.
type call struct {
	h    *handler
	ctx  context.Context
	in   Incoming
	req  line.Request
	verb *verb // the table's entry for req.Verb
	out  []Out
}

func (c *call) fail(code, message string) {
	c.out = append(c.out, c.h.fail(c.in, &line.Error{Code: code, Message: message, Verb: c.req.Verb, Re: c.req.ID})...)
}

func (c *call) failErr(e *line.Error) {
	c.out = append(c.out, c.h.fail(c.in, e)...)
}

func (c *call) internal(err error) {
	c.out = append(c.out, c.h.internal(c.in, c.req.Verb, c.req.ID, err)...)
}

// reply appends one reply line, with "re" when the request had an id.
func (c *call) reply(verb string, o line.Obj) {
	if c.req.ID != "" {
		o = append(o, line.KV{Key: "re", Value: c.req.ID})
	}
	s, err := line.Format(verb, o)
	if err != nil {
		c.internal(err)
		return
	}
	c.out = append(c.out, notice(c.in.Nick, s))
}

// replyWhole is reply for an item whose "text" must reach the caller
// whole (MESSAGE, TASK): continuation lines <verb>-MORE follow when one
// line cannot hold it (line.Split; PIRCAN.md "Whole texts on IRC").
func (c *call) replyWhole(verb, idKey string, o line.Obj) {
	if c.req.ID != "" {
		o = append(o, line.KV{Key: "re", Value: c.req.ID})
	}
	lines, err := line.Split(verb, o, idKey, "text", line.MaxReplyBytes)
	if err != nil {
		c.internal(err)
		return
	}
	for _, s := range lines {
		c.out = append(c.out, notice(c.in.Nick, s))
	}
}

// decode reads the arguments into v (a pointer to a struct) and checks
// the verb's required arguments; false (and an error reply) when bad.
func (c *call) decode(v any) bool {
	if e := c.req.Decode(v); e != nil {
		c.failErr(e)
		return false
	}
	if c.verb == nil {
		return true
	}
	if name := missing(v, c.verb.required); name != "" {
		msg := name + " is required."
		if c.verb.example != "" {
			msg = name + " is required, e.g. " + c.verb.example + "."
		}
		c.fail(line.CodeInvalidArgument, msg)
		return false
	}
	return true
}

// identified: false (and not_identified) when the sender has no account.
func (c *call) identified() bool {
	if c.in.AccountKey == "" {
		c.fail(line.CodeNotIdentified, "Identify with NickServ first: PIRCAN knows you only by your account.")
		return false
	}
	return c.sameRegistration()
}

// accountIDTag is the message tag carrying the account's id (InspIRCd's
// services_account, where the services send one): a dropped account name
// registered again gets a new id.
const accountIDTag = "inspircd.org/account-id"

// CodeAccountChanged: the account name was registered again since PIRCAN
// first saw it (a new account id); what it had is suspended until the
// agent's owner confirms (PIRCAN.md "An account registered again").
const CodeAccountChanged = "account_changed"

// sameRegistration: false (and account_changed) when the caller's account
// is a new registration of a name PIRCAN knew under another id. The id is
// the server's account id, or where it sends none the registration time
// NickServ INFO reports ("registered:<RFC 3339 time>"); when neither is
// known nothing is checked.
func (c *call) sameRegistration() bool {
	id := c.in.AccountID
	if id == "" {
		id = c.h.registrationID(c.ctx, c.in.AccountKey)
	}
	if id == "" {
		return true
	}
	ok, err := c.h.st.CheckAccount(c.ctx, c.in.AccountKey, id, c.h.clock.Now())
	if err != nil {
		c.internal(err)
		return false
	}
	if !ok {
		c.fail(CodeAccountChanged, "This account name was registered again since PIRCAN bound it: its agent is suspended until the agent's owner confirms with PIRCAN/1 REBIND.")
	}
	return ok
}

// regIDTTL is how long a registration time NickServ reported stands for its
// account before INFO is asked again, by default (Config.RegistrationRecheck):
// a name dropped and registered again within it is caught at the next ask.
const regIDTTL = time.Minute

// regID is an account's registration id as found at a time.
type regID struct {
	id string
	at time.Time
}

// regCache is the accounts' registration ids by registration time.
type regCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]regID
}

// registrationID is the id of account's registration by its registration
// time, as NickServ INFO reports it (asked at most once per regIDTTL per
// account); "" when the services do not say.
func (h *handler) registrationID(ctx context.Context, account string) string {
	if h.registeredAt == nil {
		return ""
	}
	now := h.clock.Now()
	if c := h.reg; c != nil {
		c.mu.Lock()
		r, ok := c.m[account]
		c.mu.Unlock()
		if ok && now.Sub(r.at) < c.ttl {
			return r.id
		}
	}
	at, known := h.registeredAt(ctx, account)
	id := ""
	if known {
		id = "registered:" + at.UTC().Format(time.RFC3339)
	}
	if c := h.reg; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m == nil || len(c.m) > 10_000 { // bounded: the entries are only a cache
			c.m = map[string]regID{}
		}
		c.m[account] = regID{id: id, at: now}
	}
	return id
}

// registered returns the caller's agent, recording the nick it was seen
// with; false (and not_identified or not_registered) when there is none.
func (c *call) registered() (store.Agent, bool) {
	if !c.identified() {
		return store.Agent{}, false
	}
	a, err := c.h.dir.AgentByIRCAccount(c.ctx, c.in.AccountKey)
	if isNotFound(err) {
		c.fail(line.CodeNotRegistered, "Send PIRCAN/1 HELLO first.")
		return store.Agent{}, false
	}
	if err != nil {
		c.internal(err)
		return store.Agent{}, false
	}
	c.seen(a)
	return a, true
}

// seen records the nick an agent's account was last seen with.
func (c *call) seen(a store.Agent) {
	if a.IRC != nil && a.IRC.Nick != c.in.Nick {
		if err := c.h.dir.SetIRCNick(c.ctx, a.ID, c.in.Nick); err != nil {
			c.h.log.Warn("pircan: record nick", "agent_id", a.ID, "err", err)
		}
	}
}

// markRead is the Sent hook of a message's last INBOX line: the message
// counts as read once that line went out.
func (h *handler) markRead(agentID, messageID string) func() {
	return func() {
		if err := h.hs.MarkRead(context.Background(), agentID, []string{messageID}, h.clock.Now()); err != nil {
			h.log.Warn("pircan: mark a message read", "agent_id", agentID, "message_id", messageID, "err", err)
		}
	}
}
