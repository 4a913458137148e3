package pircan

import (
	"strings"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
)

// regainCommands are the NickServ commands that take a nick back from
// whoever holds it, tried in this order until the services know one:
// Anope's RECOVER, Atheme's and Ergo's REGAIN, the older GHOST (PIRCAN.md
// "The bridge's own nick").
var regainCommands = []string{"RECOVER", "REGAIN", "GHOST"}

// addNickCallbacks keeps Status.Nick the nick the bridge holds, and takes
// its own nick back with NickServ once identified.
func (b *Bridge) addNickCallbacks(conn *ircevent.Connection) {
	conn.AddCallback("NICK", func(m ircmsg.Message) {
		// ircevent has updated CurrentNick already when this runs.
		if len(m.Params) > 0 && b.fold(m.Params[0]) == b.fold(conn.CurrentNick()) {
			b.setStatus(func(s *Status) {
				if s.Connected {
					s.Nick = conn.CurrentNick()
				}
			})
			b.log.Info("pircan: nick", "nick", conn.CurrentNick())
		}
	})
	conn.AddCallback("NOTICE", func(m ircmsg.Message) {
		if len(m.Params) > 1 && b.fold(m.Nick()) == b.fold("NickServ") {
			b.onNickServ(conn, m.Params[len(m.Params)-1])
		}
	})
}

// regain asks NickServ for the bridge's own nick when it runs under
// another (the nick was taken when it connected) and is identified.
func (b *Bridge) regain(conn *ircevent.Connection) {
	cur := conn.CurrentNick()
	if b.cfg.Account == "" || cur == "" || b.fold(cur) == b.fold(b.cfg.Nick) {
		return
	}
	b.mu.Lock()
	i := b.regainTry
	b.regaining = i < len(regainCommands)
	b.mu.Unlock()
	if i < len(regainCommands) {
		b.log.Info("pircan: taking the nick back", "nick", b.cfg.Nick, "with", regainCommands[i])
		_ = conn.Send("PRIVMSG", "NickServ", regainCommands[i]+" "+b.cfg.Nick)
	}
}

// onNickServ reads NickServ's answer to the regain command: an unknown
// command tries the next; any other answer is followed by NICK (GHOST
// frees the nick without giving it; RECOVER and REGAIN give it, and NICK
// is then no change).
func (b *Bridge) onNickServ(conn *ircevent.Connection, text string) {
	b.mu.Lock()
	if !b.regaining {
		b.mu.Unlock()
		return
	}
	low := strings.ToLower(text)
	unknown := strings.Contains(low, "unknown command") || strings.Contains(low, "invalid command")
	b.regaining = false
	if unknown {
		b.regainTry++
	}
	b.mu.Unlock()
	if unknown {
		b.regain(conn)
		return
	}
	if b.fold(conn.CurrentNick()) != b.fold(b.cfg.Nick) {
		_ = conn.Send("NICK", b.cfg.Nick)
	}
}
