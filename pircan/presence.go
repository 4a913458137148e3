package pircan

import (
	"sync"
	"time"
)

// presence knows which account holds which nick, so that a line queued
// for an account goes only to a nick that still holds it (PIRCAN.md "A
// line goes only to the account it answers"). A nick holds an account for
// sure ("confirmed") when the bridge can see it change hands from then on:
// it shares a channel with the bridge (its QUIT, NICK, PART, KICK and
// account-notify arrive), or the bridge MONITORs it (731 when it goes
// offline or is renamed away) and a WHOX after the MONITOR said it holds
// the account. A PRIVMSG's account tag proves the account held the nick
// when it was sent; where the bridge cannot see the nick change hands
// after that, it asks (MONITOR, then WHO <nick> %tna) before the first
// line goes, and holds the lines until the answer. Without MONITOR every
// line to such a nick waits for a WHOX of its own.
//
// Every method may run on any goroutine.
type presence struct {
	now     func() time.Time
	ask     func(o Out) bool // sends MONITOR and WHO to the server at once (not paced); false: not connected
	kick    func()           // wakes the pacer: an answer came
	mu      sync.Mutex
	nicks   map[string]*holder
	monitor int             // the server's MONITOR limit; 0: none
	watched map[string]bool // nicks on the bridge's MONITOR list
}

// holder is what the bridge knows of one nick (case-folded).
type holder struct {
	nick    string // as last seen
	account string // the folded account holding it; "" none
	// confirmed: account holds the nick now, and a change would be seen
	// (channel or monitored), or was just checked (WHOX) on a server
	// without MONITOR, for one line.
	confirmed bool
	channel   bool // seen in a channel the bridge shares with it
	monitored bool // confirmed under MONITOR
	askedAt   time.Time
	answered  bool // a 354 came for the pending WHO
}

// lineVerdict is what the pacer does with a line.
type lineVerdict int

const (
	sendLine lineVerdict = iota
	dropLine             // its nick holds another account, or none
	waitLine             // asked who holds the nick; wait for the answer
)

// askAgain is how long an unanswered WHO waits before it is asked again.
const askAgain = 10 * time.Second

// whoxGateToken marks the WHO replies that tell the gate who holds a nick.
const whoxGateToken = "748"

func newPresence(now func() time.Time, ask func(Out) bool, kick func()) *presence {
	return &presence{now: now, ask: ask, kick: kick, nicks: map[string]*holder{}, watched: map[string]bool{}}
}

// setMonitor records the server's MONITOR limit (0: no MONITOR) at
// connection; everything known is forgotten.
func (p *presence) setMonitor(limit int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.monitor = limit
	clear(p.nicks)
	clear(p.watched)
}

// claim: a PRIVMSG from nick carried account (folded; "" none). Where the
// bridge sees the nick (a shared channel, or monitored and confirmed), the
// tag confirms it; else it is checked before a line goes.
func (p *presence) claim(nickKey, nick, account string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.nicks[nickKey]
	if h != nil && h.confirmed && (h.channel || h.monitored) {
		h.account, h.nick = account, nick
		return
	}
	if h != nil && h.account == account {
		return // keep its pending question
	}
	p.nicks[nickKey] = &holder{nick: nick, account: account}
}

// inChannel: the nick was seen with account in a channel the bridge is in
// (JOIN with extended-join, the WHOX of a channel, account-notify).
func (p *presence) inChannel(nickKey, nick, account string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.nicks[nickKey]
	if h == nil {
		h = &holder{}
		p.nicks[nickKey] = h
	}
	h.nick, h.account, h.confirmed, h.channel = nick, account, true, true
	p.kick()
}

// forget: the nick quit, left a shared channel, was renamed, went offline
// (MONITOR 731) or does not exist (401). Who holds it next is asked.
func (p *presence) forget(nickKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.nicks, nickKey)
}

// online: MONITOR 730, someone is on the nick now (the answer to MONITOR +
// too). Who it is, WHOX tells.
func (p *presence) online(nickKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.nicks[nickKey]; h != nil && !h.channel {
		h.confirmed, h.monitored = false, false
	}
}

// answer is a 354 for whoxGateToken: nick holds account (folded; "":
// none).
func (p *presence) answer(nickKey, nick, account string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.nicks[nickKey]
	if h == nil {
		h = &holder{nick: nick}
		p.nicks[nickKey] = h
	}
	h.account, h.confirmed, h.answered = account, true, true
	h.monitored = p.watched[nickKey]
	h.askedAt = time.Time{}
	p.kick()
}

// endOfWho is a 315 for a WHO of nick: with no 354 before it, nobody holds
// the nick.
func (p *presence) endOfWho(nickKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.nicks[nickKey]
	if h == nil || h.askedAt.IsZero() {
		return
	}
	if !h.answered {
		h.account, h.confirmed = "", true
		h.monitored = p.watched[nickKey]
	}
	h.askedAt = time.Time{}
	p.kick()
}

// taken: the pacer took o to send it. A nick the bridge cannot see
// (no shared channel, no MONITOR) was confirmed for this one line only.
func (p *presence) taken(o Out) {
	if o.Account == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.nicks[o.NickKey]; h != nil && h.confirmed && !h.channel && !h.monitored {
		h.confirmed = false
	}
}

// check says whether o may go now. A line without an account (replies to
// the unidentified, WHO, MONITOR) always may.
func (p *presence) check(o Out) lineVerdict {
	if o.Account == "" {
		return sendLine
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.nicks[o.NickKey]
	if h != nil && h.confirmed {
		if h.account != o.Account {
			return dropLine
		}
		return sendLine
	}
	if h == nil {
		h = &holder{nick: o.Params[0], account: o.Account}
		p.nicks[o.NickKey] = h
	}
	now := p.now()
	if !h.askedAt.IsZero() && now.Sub(h.askedAt) < askAgain {
		return waitLine
	}
	h.answered = false
	if p.monitor > 0 && !p.watched[o.NickKey] {
		if len(p.watched) >= p.monitor {
			// The list is full: start it again; who was confirmed by
			// MONITOR alone is asked again.
			p.ask(Out{Command: "MONITOR", Params: []string{"C"}})
			clear(p.watched)
			for _, x := range p.nicks {
				if x.monitored && !x.channel {
					x.confirmed, x.monitored = false, false
				}
			}
		}
		if !p.ask(Out{Command: "MONITOR", Params: []string{"+", h.nick}}) {
			return waitLine // not connected: asked again when the pacer is kicked
		}
		p.watched[o.NickKey] = true
	}
	if p.ask(Out{Command: "WHO", Params: []string{h.nick, "%tna," + whoxGateToken}}) {
		h.askedAt = now
	}
	return waitLine
}
