package irctest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
)

// Scripted is a scripted IRC server on loopback for what the test network
// cannot send: an ISUPPORT token of the test's choosing (CASEMAPPING=
// rfc8265, for one) and PRIVMSGs with any account tag. It speaks just
// enough for one client (the bridge): CAP LS/REQ/END (it offers
// account-tag, message-tags and server-time, never sasl), 001, 005 with
// ISupport, 422, 900 on a NickServ IDENTIFY, JOIN echoed, PING answered,
// WHO <nick> %tna,<token> (WHOX) answered with the account Privmsg last
// tagged the nick with, NickServ INFO answered as Anope does for the
// accounts SetRegistered names. It never sends an account id tag.
// Every NOTICE the client sends is handed to Notices.
type Scripted struct {
	Addr string
	// Notices receives each NOTICE the client sent: [target, text].
	Notices chan [2]string

	t        testing.TB
	ln       net.Listener
	isupport string
	mu       sync.Mutex
	conn     net.Conn
	nick     string
	ready    chan struct{}
	// accounts is the account each nick was last tagged with (WHOX answers).
	accounts map[string]string
	// registered is when each account was registered (NickServ INFO).
	registered map[string]time.Time
}

// SetRegistered makes NickServ INFO on account answer as Anope does, with
// a "Registered:" line of at (a zero at: the account is unknown, no
// answer).
func (s *Scripted) SetRegistered(account string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registered[strings.ToLower(account)] = at
}

// Script starts a scripted server advertising isupport (tokens as in a
// 005 line, e.g. "CASEMAPPING=rfc8265") and stops it when t ends.
func Script(t testing.TB, isupport string) *Scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Scripted{Addr: ln.Addr().String(), Notices: make(chan [2]string, 1000), t: t, ln: ln, isupport: isupport, ready: make(chan struct{}), accounts: map[string]string{}, registered: map[string]time.Time{}}
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Unlock()
	})
	go s.accept()
	return s
}

func (s *Scripted) accept() {
	conn, err := s.ln.Accept()
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		m, err := ircmsg.ParseLine(sc.Text())
		if err != nil {
			continue
		}
		s.serve(m)
	}
}

// serve answers one line of the client.
func (s *Scripted) serve(m ircmsg.Message) {
	param := func(i int) string {
		if i < len(m.Params) {
			return m.Params[i]
		}
		return ""
	}
	switch m.Command {
	case "CAP":
		switch param(0) {
		case "LS":
			s.send(":scripted CAP * LS :account-tag message-tags server-time")
		case "REQ":
			s.send(":scripted CAP * ACK :" + param(1))
		}
	case "NICK":
		s.mu.Lock()
		s.nick = param(0)
		s.mu.Unlock()
	case "USER":
		nick := s.me()
		s.send(":scripted 001 " + nick + " :Welcome")
		s.send(":scripted 005 " + nick + " " + s.isupport + " :are supported by this server")
		s.send(":scripted 422 " + nick + " :No MOTD")
	case "PRIVMSG":
		if strings.EqualFold(param(0), "NickServ") && strings.HasPrefix(strings.ToUpper(param(1)), "IDENTIFY") {
			s.send(":scripted 900 " + s.me() + " " + s.me() + "!u@h " + s.me() + " :You are now logged in")
		}
		if account, ok := strings.CutPrefix(param(1), "INFO "); ok && strings.EqualFold(param(0), "NickServ") {
			s.mu.Lock()
			at := s.registered[strings.ToLower(account)]
			s.mu.Unlock()
			if !at.IsZero() {
				ns := ":NickServ!services@services.scripted NOTICE " + s.me() + " :"
				s.send(ns + account + " is " + account)
				s.send(ns + "   Registered: " + at.UTC().Format("Jan 02 15:04:05 2006 MST") + " (1 day ago)")
			}
		}
	case "JOIN":
		s.send(":" + s.me() + "!u@h JOIN " + param(0))
		select {
		case <-s.ready:
		default:
			close(s.ready)
		}
	case "WHO": // WHOX "%tna,<token>": [me, token, nick, account]; "0" none
		_, token, _ := strings.Cut(param(1), ",")
		s.mu.Lock()
		account, ok := s.accounts[param(0)]
		s.mu.Unlock()
		if ok {
			if account == "" {
				account = "0"
			}
			s.send(":scripted 354 " + s.me() + " " + token + " " + param(0) + " " + account)
		}
		s.send(":scripted 315 " + s.me() + " " + param(0) + " :End of /WHO list")
	case "PING":
		s.send(":scripted PONG scripted :" + param(0))
	case "NOTICE":
		s.Notices <- [2]string{param(0), param(1)}
	}
}

func (s *Scripted) me() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nick
}

// Ready is closed once the client joined a channel (it is registered).
func (s *Scripted) Ready() <-chan struct{} { return s.ready }

func (s *Scripted) send(line string) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		_, _ = conn.Write([]byte(line + "\r\n"))
	}
}

// Privmsg sends the client a PRIVMSG to it from nick, tagged with
// account ("" : no tag), from host h.
func (s *Scripted) Privmsg(nick, account, text string) {
	s.mu.Lock()
	s.accounts[nick] = account
	s.mu.Unlock()
	tag := ""
	if account != "" {
		tag = "@account=" + escapeTag(account) + " "
	}
	s.send(tag + ":" + nick + "!u@h." + strings.ToLower(nick) + " PRIVMSG " + s.me() + " :" + text)
}

// escapeTag escapes a message tag value (IRCv3 message-tags).
func escapeTag(v string) string {
	return strings.NewReplacer("\\", `\\`, ";", `\:`, " ", `\s`, "\r", `\r`, "\n", `\n`).Replace(v)
}
