package pircan

import (
	"testing"

	"github.com/ergochat/irc-go/ircmsg"
)

// Identity is the account tag only, unescaped; channel messages and CTCP
// are not requests.
func TestIncoming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line    string
		ok      bool
		account string
		key     string
		nickKey string
	}{
		{`@account=Alice[1] :Bob!u@h PRIVMSG PIRCAN :PIRCAN/1 HELP`, true, "Alice[1]", "alice{1}", "bob"},
		{`@account=we\sird\:name :n!u@h PRIVMSG pircan :x`, true, "we ird;name", "we ird;name", "n"}, // escaped tag value, target any case
		{`@account=* :n!u@h PRIVMSG PIRCAN :x`, true, "", "", "n"},
		{`@account= :n!u@h PRIVMSG PIRCAN :x`, true, "", "", "n"},
		{`:n!u@h PRIVMSG PIRCAN :x`, true, "", "", "n"},
		{`@time=2026-11-30T09:00:00Z;msgid=1;account=acc :n!u@h PRIVMSG PIRCAN :x`, true, "acc", "acc", "n"},
		{`@account=acc :n!u@h PRIVMSG #agents :PIRCAN/1 HELP`, false, "", "", ""},
		{"@account=acc :n!u@h PRIVMSG PIRCAN :\x01VERSION\x01", false, "", "", ""},
		{"@account=acc :n!u@h PRIVMSG PIRCAN :\x01PING", false, "", "", ""},
		{`@account=acc :n!u@h NOTICE PIRCAN :PIRCAN/1 HELP`, false, "", "", ""},
		{`PRIVMSG PIRCAN :x`, false, "", "", ""},
	}
	for _, c := range cases {
		m, err := ircmsg.ParseLine(c.line)
		if err != nil {
			t.Fatal(err)
		}
		in, ok := incoming("rfc1459", "PIRCAN", m)
		if ok != c.ok || ok && (in.Account != c.account || in.AccountKey != c.key || in.NickKey != c.nickKey) {
			t.Errorf("%q: got %+v %v", c.line, in, ok)
		}
	}
}
