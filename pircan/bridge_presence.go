package pircan

import (
	"strconv"
	"strings"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
)

// addPresenceCallbacks keeps b.pres true: who holds which nick, as far as
// the bridge can see (PIRCAN.md "A line goes only to the account it
// answers").
func (b *Bridge) addPresenceCallbacks(conn *ircevent.Connection) {
	forget := func(nick string) { b.pres.forget(b.fold(nick)) }
	conn.AddCallback("QUIT", func(m ircmsg.Message) { forget(m.Nick()) })
	conn.AddCallback("PART", func(m ircmsg.Message) { forget(m.Nick()) })
	conn.AddCallback("KICK", func(m ircmsg.Message) {
		if len(m.Params) > 1 {
			forget(m.Params[1])
		}
	})
	conn.AddCallback("NICK", func(m ircmsg.Message) {
		forget(m.Nick())
		if len(m.Params) > 0 {
			forget(m.Params[0])
		}
	})
	conn.AddCallback(ircevent.ERR_NOSUCHNICK, func(m ircmsg.Message) {
		if len(m.Params) > 1 {
			forget(m.Params[1])
		}
	})
	conn.AddCallback("730", func(m ircmsg.Message) { b.eachMonitored(m, b.pres.online) })
	conn.AddCallback("731", func(m ircmsg.Message) { b.eachMonitored(m, b.pres.forget) })
	conn.AddCallback("315", func(m ircmsg.Message) {
		if len(m.Params) > 1 {
			b.pres.endOfWho(b.fold(m.Params[1]))
		}
	})
}

// eachMonitored calls f with each folded nick of a MONITOR 730/731 line
// ("nick!user@host,..." or "nick,...").
func (b *Bridge) eachMonitored(m ircmsg.Message, f func(nickKey string)) {
	if len(m.Params) < 2 {
		return
	}
	for _, target := range strings.Split(m.Params[len(m.Params)-1], ",") {
		nick, _, _ := strings.Cut(target, "!")
		if nick != "" {
			f(b.fold(nick))
		}
	}
}

// monitorLimit is the server's MONITOR limit from ISUPPORT: 0 without
// MONITOR; a MONITOR token without a value, 100.
func monitorLimit(isupport map[string]string) int {
	v, ok := isupport["MONITOR"]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 100
	}
	return n
}

// guard marks outs as answering accountKey (folded; "" none): each NOTICE
// goes only while its nick holds the account.
func (b *Bridge) guard(accountKey string, outs []Out) []Out {
	if accountKey == "" {
		return outs
	}
	for i := range outs {
		if outs[i].Command == "NOTICE" && len(outs[i].Params) > 0 {
			outs[i].Account, outs[i].NickKey = accountKey, b.fold(outs[i].Params[0])
		}
	}
	return outs
}
