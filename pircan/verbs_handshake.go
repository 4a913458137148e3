package pircan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// The handshake verbs (PIRCAN.md "Handshake, messages and the owner
// portal"): each is a thin adapter over one call of handshake.Service or
// handshake.Portal. The rules, limits and error codes are the service's;
// this file decodes arguments, pages lists and fits replies in one line.

// Page sizes of the handshake's lists on IRC (paced output: a few lines
// at a time).
const (
	defaultListLimit = 5
	maxListLimit     = 10
)

// loginWarning is what LOGIN says with every sign-in (PIRCAN.md "The owner
// portal").
const loginWarning = "A browser now controls your agents for 12 hours. Not a page you opened at started_at? Send PIRCAN/1 LOGOUT now."

// failHandshake answers a handshake error with its own code (the codes of
// PIRCAN.md "Errors of the handshake"), anything else internal_error.
func (c *call) failHandshake(err error) {
	var we *wire.Error
	if errors.As(err, &we) {
		c.fail(we.Code, sentence(we.Message))
		return
	}
	c.internal(err)
}

// sentence capitalises a service message and ends it with a full stop,
// as the bridge's own messages are.
func sentence(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// keyOrder is the order of fields in the handshake's reply lines:
// identifiers first, texts last (so a cut falls on the text).
var keyOrder = []string{"type", "request_id", "agreement_id", "message_id", "task_id", "resource_id", "report_id",
	"agent_id", "name", "irc_accounts", "from", "to", "with", "role", "policy", "owner_set", "skill", "title", "tags",
	"access", "readable", "size", "by", "category", "scopes", "ttl_days", "status", "open", "conversation_id",
	"reply_to", "hop", "at", "created_at", "expires_at", "completed_at", "purpose", "result", "text"}

func rank(k string) int {
	if i := slices.Index(keyOrder, k); i >= 0 {
		return i
	}
	return len(keyOrder)
}

// objOf is a view of package handshake (a JSON object as a map) as a
// reply object in keyOrder, without the omitted keys.
func objOf(m map[string]any, omit ...string) line.Obj {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(omit, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b)) })
	o := make(line.Obj, 0, len(keys))
	for _, k := range keys {
		o = append(o, line.KV{Key: k, Value: lineValue(m[k])})
	}
	return o
}

func lineValue(v any) any {
	switch v := v.(type) {
	case nil, string, bool, int, int64, []string, line.Obj:
		return v
	case map[string]any:
		return objOf(v)
	}
	return fmt.Sprint(v)
}

// end is a list's -END line.
func (c *call) end(verb string, returned, total, offset int, extra ...line.KV) {
	c.reply(verb, append(line.Obj{{Key: "returned", Value: returned}, {Key: "total", Value: total}, {Key: "offset", Value: offset}}, extra...))
}

// ttlDays: false (and invalid_argument) when ttl_days is given and not
// 1-365; absent, the service's default applies (PIRCAN.md "The handshake
// verbs").
func (c *call) ttlDays(v *int) bool {
	if v != nil && (*v < 1 || *v > handshake.MaxTTLDays) {
		c.fail(line.CodeInvalidArgument, fmt.Sprintf("ttl_days must be from 1 to %d.", handshake.MaxTTLDays))
		return false
	}
	return true
}

func deref(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

func (c *call) policy(a store.Agent) {
	var args struct {
		Policy *string `json:"policy"`
	}
	if !c.decode(&args) {
		return
	}
	var rec handshake.PolicyRecord
	var err error
	if args.Policy == nil {
		rec, err = c.h.hs.Policy(c.ctx, a.ID)
	} else {
		rec, err = c.h.hs.SetPolicy(c.ctx, handshake.AgentActor(a.ID), a.ID, *args.Policy, c.h.clock.Now())
	}
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("POLICY", line.Obj{{Key: "agent_id", Value: a.ID}, {Key: "policy", Value: rec.Policy}, {Key: "owner_set", Value: rec.OwnerSet}})
}

func (c *call) contact(a store.Agent) {
	var args struct {
		To      string   `json:"to"`
		Purpose string   `json:"purpose"`
		Scopes  []string `json:"scopes"`
		TTLDays *int     `json:"ttl_days"`
	}
	if !c.decode(&args) || !c.ttlDays(args.TTLDays) {
		return
	}
	r, err := c.h.hs.Contact(c.ctx, a.ID, handshake.ContactInput{To: args.To, Purpose: args.Purpose, Scopes: args.Scopes, TTLDays: deref(args.TTLDays)}, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	o := line.Obj{{Key: "request_id", Value: r.ID}, {Key: "to", Value: r.To}, {Key: "status", Value: r.Status}}
	if r.AgreementID != "" {
		o = append(o, line.KV{Key: "agreement_id", Value: r.AgreementID})
	}
	o = append(o, line.KV{Key: "expires_at", Value: wire.Time(r.ExpiresAt)})
	c.reply("CONTACT", o)
}

func (c *call) contacts(a store.Agent) {
	var args struct {
		Direction string `json:"direction"`
		Status    string `json:"status"`
		Limit     *int   `json:"limit"`
		Offset    *int   `json:"offset"`
	}
	if !c.decode(&args) {
		return
	}
	limit, offset, ok := c.page(args.Limit, args.Offset, defaultListLimit, maxListLimit)
	if !ok {
		return
	}
	rs, total, err := c.h.hs.Contacts(c.ctx, a.ID, handshake.ContactsQuery{Direction: args.Direction, Status: args.Status, Limit: limit, Offset: offset}, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	for _, r := range rs {
		c.reply("CONTACT-ITEM", objOf(handshake.RequestView(r), "created_at"))
	}
	c.end("CONTACTS-END", len(rs), total, offset)
}

func (c *call) accept(a store.Agent) {
	var args struct {
		RequestID string   `json:"request_id"`
		Scopes    []string `json:"scopes"`
		TTLDays   *int     `json:"ttl_days"`
	}
	if !c.decode(&args) || !c.ttlDays(args.TTLDays) {
		return
	}
	ag, err := c.h.hs.Accept(c.ctx, handshake.AgentActor(a.ID), args.RequestID, handshake.AcceptInput{Scopes: args.Scopes, TTLDays: deref(args.TTLDays)}, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("ACCEPT", append(line.Obj{{Key: "request_id", Value: args.RequestID}}, objOf(c.h.hs.AgreementView(c.ctx, ag, a.ID), "created_at")...))
}

func (c *call) declineOrCancel(a store.Agent) {
	var args struct {
		RequestID string `json:"request_id"`
	}
	if !c.decode(&args) {
		return
	}
	f := c.h.hs.Decline
	if c.req.Verb == "CANCEL" {
		f = c.h.hs.Cancel
	}
	r, err := f(c.ctx, handshake.AgentActor(a.ID), args.RequestID, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply(c.req.Verb, line.Obj{{Key: "request_id", Value: r.ID}, {Key: "status", Value: r.Status}})
}

func (c *call) agreements(a store.Agent) {
	var args struct {
		All    bool `json:"all"`
		Limit  *int `json:"limit"`
		Offset *int `json:"offset"`
	}
	if !c.decode(&args) {
		return
	}
	limit, offset, ok := c.page(args.Limit, args.Offset, defaultListLimit, maxListLimit)
	if !ok {
		return
	}
	ags, err := c.h.hs.Agreements(c.ctx, a.ID, args.All, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	page := ags[min(offset, len(ags)):min(offset+limit, len(ags))]
	for _, ag := range page {
		c.reply("AGREEMENT", objOf(c.h.hs.AgreementView(c.ctx, ag, a.ID), "created_at"))
	}
	c.end("AGREEMENTS-END", len(page), len(ags), offset)
}

func (c *call) revoke(a store.Agent) {
	var args struct {
		AgreementID string `json:"agreement_id"`
	}
	if !c.decode(&args) {
		return
	}
	ag, err := c.h.hs.Revoke(c.ctx, handshake.AgentActor(a.ID), args.AgreementID, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("REVOKE", line.Obj{{Key: "agreement_id", Value: ag.ID}, {Key: "status", Value: ag.Status}})
}

func (c *call) send(a store.Agent) {
	var args struct {
		To      string `json:"to"`
		Text    string `json:"text"`
		ReplyTo string `json:"reply_to"`
	}
	if !c.decode(&args) {
		return
	}
	m, err := c.h.hs.Send(c.ctx, a.ID, handshake.SendInput{To: args.To, Text: args.Text, ReplyTo: args.ReplyTo, IRC: true}, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("SEND", line.Obj{{Key: "message_id", Value: m.ID}, {Key: "to", Value: m.To}, {Key: "agreement_id", Value: m.AgreementID},
		{Key: "conversation_id", Value: m.ConversationID}, {Key: "hop", Value: m.Hop}, {Key: "at", Value: wire.Time(m.At)}})
}

func (c *call) inbox(a store.Agent) {
	var args struct {
		Limit *int `json:"limit"`
	}
	if !c.decode(&args) {
		return
	}
	limit, _, ok := c.page(args.Limit, nil, defaultListLimit, maxListLimit)
	if !ok {
		return
	}
	now := c.h.clock.Now()
	// The messages are marked read one by one as their last line is sent
	// (never when a line is dropped because the nick changed hands).
	ms, err := c.h.hs.Peek(c.ctx, a.ID, limit, now)
	if err != nil {
		c.failHandshake(err)
		return
	}
	unread, err := c.h.hs.Unread(c.ctx, a.ID, now)
	if err != nil {
		c.failHandshake(err)
		return
	}
	unread -= len(ms)
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.From
	}
	names := c.h.hs.Names(c.ctx, ids...)
	for _, m := range ms {
		c.replyWhole("MESSAGE", "message_id", objOf(handshake.MessageView(m, names[m.From]), "to"))
		if len(c.out) > 0 && strings.HasPrefix(c.out[len(c.out)-1].Params[1], "PIRCAN/1 MESSAGE") {
			c.out[len(c.out)-1].Sent = c.h.markRead(a.ID, m.ID)
		}
	}
	c.end("INBOX-END", len(ms), len(ms)+unread, 0, line.KV{Key: "unread", Value: unread})
}

func (c *call) tasks(a store.Agent) {
	var args struct {
		Limit *int `json:"limit"`
	}
	if !c.decode(&args) {
		return
	}
	limit, _, ok := c.page(args.Limit, nil, defaultListLimit, maxListLimit)
	if !ok {
		return
	}
	ts, total, err := c.h.hs.Tasks(c.ctx, a.ID, limit, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.From
	}
	names := c.h.hs.Names(c.ctx, ids...)
	for _, t := range ts {
		c.replyWhole("TASK", "task_id", objOf(handshake.TaskView(t, names[t.From]), "to"))
	}
	c.end("TASKS-END", len(ts), total, 0)
}

func (c *call) complete(a store.Agent) {
	var args struct {
		TaskID  string `json:"task_id"`
		Outcome string `json:"outcome"`
		Text    string `json:"text"`
	}
	if !c.decode(&args) {
		return
	}
	t, err := c.h.hs.Complete(c.ctx, a.ID, args.TaskID, args.Outcome, args.Text, true, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("COMPLETE", line.Obj{{Key: "task_id", Value: t.ID}, {Key: "status", Value: t.Status}})
}

func (c *call) resources(a store.Agent) {
	var args struct {
		Q      string `json:"q"`
		Tag    string `json:"tag"`
		Limit  *int   `json:"limit"`
		Offset *int   `json:"offset"`
	}
	if !c.decode(&args) {
		return
	}
	limit, offset, ok := c.page(args.Limit, args.Offset, defaultListLimit, maxListLimit)
	if !ok || c.tooLong("q", args.Q, maxQuery) || c.tooLong("tag", args.Tag, maxCapability) {
		return
	}
	ls, total, err := c.h.hs.Resources(c.ctx, a.ID, handshake.ResourceQuery{Q: strings.TrimSpace(args.Q), Tag: strings.TrimSpace(args.Tag), Limit: limit, Offset: offset}, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	for _, l := range ls {
		c.reply("RESOURCE", objOf(l.View()))
	}
	c.end("RESOURCES-END", len(ls), total, offset)
}

func (c *call) report(a store.Agent) {
	var args struct {
		AgentID  string `json:"agent_id"`
		Category string `json:"category"`
		Details  string `json:"details"`
	}
	if !c.decode(&args) {
		return
	}
	r, err := c.h.hs.Report(c.ctx, a.ID, handshake.ReportInput{AgentID: args.AgentID, Category: args.Category, Details: args.Details}, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("REPORT", line.Obj{{Key: "report_id", Value: r.ID}, {Key: "agent_id", Value: r.Reported},
		{Key: "category", Value: r.Category}, {Key: "open", Value: r.Open}})
}

// login signs in the browser showing the code as the caller's account
// (case-folded: the key the account bindings use). The reply never
// repeats what the browser chose (its user agent): an attacker's page
// could write a reassuring one beside the warning.
func (c *call) login() {
	var args struct {
		Code string `json:"code"`
	}
	if !c.decode(&args) {
		return
	}
	res, err := c.h.portal.Login(c.ctx, c.in.AccountKey, args.Code, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.h.log.Info("pircan: owner portal sign-in", "account", res.Account)
	c.reply("LOGIN", line.Obj{{Key: "signed_in", Value: true}, {Key: "account", Value: res.Account},
		{Key: "started_at", Value: res.StartedAt.UTC().Format("15:04 UTC")}, {Key: "expires_at", Value: wire.Time(res.ExpiresAt)},
		{Key: "warning", Value: loginWarning}})
}

func (c *call) logout() {
	var args struct{}
	if !c.decode(&args) {
		return
	}
	n, err := c.h.portal.Logout(c.ctx, c.in.AccountKey, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.reply("LOGOUT", line.Obj{{Key: "sessions_ended", Value: n}})
}
