package pircan

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
)

// The lobby is a known public channel (PIRCAN.md "The lobby"): CHANNELS
// lists it with its topic, JOIN answers it, its members are the agents the
// bridge sees there, and a nick joining it is welcomed once an hour.

// defaultLobbyTopic is the lobby's topic until the bridge reads the
// channel's own.
const defaultLobbyTopic = "The lobby of agents: /msg PIRCAN help"

// welcomeWindow: a nick is welcomed at most once per window.
const welcomeWindow = time.Hour

// maxRosterLookups bounds the accounts looked up to count the lobby's
// agents for one CHANNELS.
const maxRosterLookups = 200

// roster is who the bridge sees in the lobby: nick key to account key
// ("" when not identified).
type roster struct {
	mu    sync.Mutex
	nicks map[string]string
}

func newRoster() *roster { return &roster{nicks: map[string]string{}} }

func (r *roster) set(nickKey, accountKey string) {
	r.mu.Lock()
	r.nicks[nickKey] = accountKey
	r.mu.Unlock()
}

// account sets the account of a nick already there ("" logged out).
func (r *roster) account(nickKey, accountKey string) {
	r.mu.Lock()
	if _, ok := r.nicks[nickKey]; ok {
		r.nicks[nickKey] = accountKey
	}
	r.mu.Unlock()
}

func (r *roster) remove(nickKey string) {
	r.mu.Lock()
	delete(r.nicks, nickKey)
	r.mu.Unlock()
}

func (r *roster) rename(from, to string) {
	r.mu.Lock()
	if a, ok := r.nicks[from]; ok {
		delete(r.nicks, from)
		r.nicks[to] = a
	}
	r.mu.Unlock()
}

func (r *roster) reset() {
	r.mu.Lock()
	clear(r.nicks)
	r.mu.Unlock()
}

// accounts are the distinct accounts in the lobby, at most max.
func (r *roster) accounts(max int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range r.nicks {
		if a != "" && !seen[a] && len(out) < max {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// lobbyMembers counts the agents in the lobby: the accounts seen there
// that have an agent.
func (h *handler) lobbyMembers(ctx context.Context) int {
	n := 0
	for _, acct := range h.lobbyRoster.accounts(maxRosterLookups) {
		if _, err := h.dir.AgentByIRCAccount(ctx, acct); err == nil {
			n++
		}
	}
	return n
}

// ensureLobby lists the lobby among the channels (public, with topic)
// unless the operator's channels already have it.
func ensureLobby(ctx context.Context, st State, name, topic string, now time.Time) error {
	_, err := st.Channel(ctx, ChannelKey(name))
	if !errors.Is(err, ErrNoChannel) {
		return err
	}
	return st.PutChannel(ctx, Channel{Name: name, Topic: topic}, now)
}

// accountKey folds an account as the server sent it; "", "*" and "0" (none)
// are "".
func (b *Bridge) accountKey(account string) string {
	if account == "" || account == "*" || account == "0" {
		return ""
	}
	return b.fold(account)
}

func (b *Bridge) isMeNick(nick string) bool {
	b.mu.Lock()
	conn := b.conn
	b.mu.Unlock()
	return conn != nil && b.fold(nick) == b.fold(conn.CurrentNick())
}

// addLobbyCallbacks keeps the roster and the lobby's topic.
func (b *Bridge) addLobbyCallbacks(conn *ircevent.Connection) {
	isLobby := func(ch string) bool { return b.fold(ch) == b.fold(b.cfg.Lobby) }
	conn.AddCallback("PART", func(m ircmsg.Message) {
		if len(m.Params) > 0 && isLobby(m.Params[0]) {
			b.roster.remove(b.fold(m.Nick()))
		}
	})
	conn.AddCallback("KICK", func(m ircmsg.Message) {
		if len(m.Params) > 1 && isLobby(m.Params[0]) {
			b.roster.remove(b.fold(m.Params[1]))
		}
	})
	conn.AddCallback("QUIT", func(m ircmsg.Message) { b.roster.remove(b.fold(m.Nick())) })
	conn.AddCallback("NICK", func(m ircmsg.Message) {
		if len(m.Params) > 0 {
			b.roster.rename(b.fold(m.Nick()), b.fold(m.Params[0]))
		}
	})
	// The channel's topic, on joining (332) and when it changes.
	conn.AddCallback(ircevent.RPL_TOPIC, func(m ircmsg.Message) {
		if len(m.Params) > 2 && isLobby(m.Params[1]) {
			b.lobbyTopic(m.Params[2])
		}
	})
	conn.AddCallback("TOPIC", func(m ircmsg.Message) {
		if len(m.Params) > 1 && isLobby(m.Params[0]) {
			b.lobbyTopic(m.Params[1])
		}
	})
}

// lobbyTopic records the lobby's topic for CHANNELS (its privacy as the
// state has it).
func (b *Bridge) lobbyTopic(topic string) {
	// A topic is anyone's with the channel's operator rights: control and
	// format characters (IRC colours, bidi, zero-width) are taken out, as
	// every other text an agent reads is kept free of them.
	topic = strings.Map(func(r rune) rune {
		if hasHiddenControls(string(r)) {
			return -1
		}
		return r
	}, topic)
	if strings.TrimSpace(topic) == "" {
		return
	}
	ctx := context.Background()
	ch, err := b.st.Channel(ctx, ChannelKey(b.cfg.Lobby))
	if err != nil {
		ch = Channel{Name: b.cfg.Lobby}
	}
	ch.Topic = topic
	if err := b.st.PutChannel(ctx, ch, b.cfg.Clock.Now()); err != nil {
		b.log.Warn("pircan: record the lobby's topic", "err", err)
	}
}

// welcome sends a nick that joined the lobby one NOTICE pointing to HELP
// and HELLO, at most once an hour per nick (PIRCAN.md "Limits").
func (b *Bridge) welcome(nick string) {
	key := b.fold(nick)
	now := b.cfg.Clock.Now()
	n, err := b.st.Hit(context.Background(), "welcome:"+key, now.UTC().Truncate(welcomeWindow))
	if err != nil || n != 1 {
		return
	}
	b.mu.Lock()
	me := b.status.Nick
	b.mu.Unlock()
	text := "Welcome to " + b.cfg.Lobby + ". I am " + me + ", the directory of agents: /msg " + me +
		" help, then PIRCAN/1 HELLO to register (identify with NickServ first)."
	b.m.notify.WithLabelValues("welcome").Inc()
	if d := b.p.push("nick:"+key, notice(nick, text)); d > 0 {
		b.m.dropped.Add(float64(d))
	}
}
