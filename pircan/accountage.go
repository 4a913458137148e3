package pircan

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
)

// infoWait is how long the bridge waits for NickServ's INFO answer; after
// one goes unanswered it asks no more for infoRetry (services that do not
// report the time, or are down, cost HELLO nothing).
const (
	infoWait  = 2 * time.Second
	infoRetry = 10 * time.Minute
)

// accountInfo asks NickServ when an account was registered (INFO, whose
// answer Anope gives as "Registered: Dec 03 11:44:58 2026 UTC (1 second
// ago)" after "<account> is <realname>"), for the limit on young
// accounts' registrations (Limits.YoungRegistrations). One question at a
// time.
type accountInfo struct {
	ask sync.Mutex // one INFO at a time

	mu      sync.Mutex
	account string         // folded account asked about; "" none
	match   bool           // NickServ's answer is about account
	answer  chan time.Time // the registration time, once
	failed  time.Time      // when an INFO went unanswered
}

// registeredAt returns when account (folded) was registered, as NickServ
// says; false when it does not say within infoWait (or said nothing
// recently), or there is no connection.
func (b *Bridge) registeredAt(ctx context.Context, account string) (time.Time, bool) {
	i := &b.info
	i.ask.Lock()
	defer i.ask.Unlock()
	now := b.cfg.Clock.Now()
	i.mu.Lock()
	if !i.failed.IsZero() && now.Sub(i.failed) < infoRetry {
		i.mu.Unlock()
		return time.Time{}, false
	}
	answer := make(chan time.Time, 1)
	i.account, i.match, i.answer = account, false, answer
	i.mu.Unlock()
	defer func() {
		i.mu.Lock()
		i.account, i.answer = "", nil
		i.mu.Unlock()
	}()
	if !b.send(Out{Command: "PRIVMSG", Params: []string{"NickServ", "INFO " + account}}) {
		return time.Time{}, false
	}
	t := b.cfg.Clock.NewTimer(infoWait)
	defer t.Stop()
	select {
	case at := <-answer:
		return at, true
	case <-t.C():
		i.mu.Lock()
		i.failed = b.cfg.Clock.Now()
		i.mu.Unlock()
	case <-ctx.Done():
	}
	return time.Time{}, false
}

// onServicesNotice reads NickServ's NOTICEs for the pending INFO.
func (b *Bridge) onServicesNotice(conn *ircevent.Connection, m ircmsg.Message) {
	if len(m.Params) < 2 || b.fold(m.Nick()) != "nickserv" || !b.isMe(conn, m.Params[0]) {
		return
	}
	text := strings.TrimSpace(m.Params[1])
	i := &b.info
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.answer == nil {
		return
	}
	if who, _, ok := strings.Cut(text, " is "); ok && !strings.Contains(who, ":") {
		i.match = b.fold(who) == i.account
		return
	}
	if !i.match {
		return
	}
	if at, ok := parseRegistered(text); ok {
		select {
		case i.answer <- at:
		default:
		}
	}
}

// parseRegistered reads Anope's "Registered: Jan 02 15:04:05 2006 MST (…
// ago)" (also "Time registered:").
func parseRegistered(text string) (time.Time, bool) {
	_, rest, ok := strings.Cut(text, "egistered: ")
	if !ok {
		return time.Time{}, false
	}
	rest, _, _ = strings.Cut(rest, " (")
	at, err := time.Parse("Jan 02 15:04:05 2006 MST", strings.TrimSpace(rest))
	return at, err == nil
}
