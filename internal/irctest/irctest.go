// Package irctest gives tests a real IRC network and raw IRC clients: the
// network of testdata/irc/network.sh (InspIRCd 3 + Anope 2.0 from Debian's
// packages, on loopback), started once per test process, or found already
// running through PIRCAN_TEST_IRC_DIR (a network.sh run directory); clients
// that register and identify with NickServ like real agents. Tests skip,
// saying so, only when the packages are not installed.
package irctest

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
)

// Network is one running test network.
type Network struct {
	Dir        string
	PlainPort  int
	TLSPort    int
	CAFile     string
	BridgePass string
	owned      bool // started by this process: stopped at the end
}

var (
	netOnce   sync.Once
	sharedNet *Network
	netErr    error
	netSkip   string
	ownedNets []*Network
	ownedMu   sync.Mutex
)

// script is testdata/irc/network.sh of the repository holding this file.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "irc", "network.sh")
}

func packagesMissing() string {
	for _, bin := range []string{"/usr/sbin/inspircd", "/usr/sbin/anope"} {
		if _, err := os.Stat(bin); err != nil {
			return "the IRC test network needs Debian's inspircd and anope packages (apt-get install --no-install-recommends inspircd anope openssl; .ci/run does it): " + bin + " missing"
		}
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		return "the IRC test network needs openssl"
	}
	return ""
}

// Shared returns the network the tests of a process share.
func Shared(t testing.TB) *Network {
	t.Helper()
	netOnce.Do(func() {
		if dir := os.Getenv("PIRCAN_TEST_IRC_DIR"); dir != "" {
			sharedNet, netErr = readNetwork(dir)
			return
		}
		if netSkip = packagesMissing(); netSkip != "" {
			return
		}
		sharedNet, netErr = startNetwork()
	})
	if netSkip != "" {
		t.Skip(netSkip)
	}
	if netErr != nil {
		t.Fatal(netErr)
	}
	return sharedNet
}

// Start starts a network for one test (which may restart its server),
// stopped when the test ends.
func Start(t testing.TB) *Network {
	t.Helper()
	if s := packagesMissing(); s != "" {
		t.Skip(s)
	}
	n, err := startNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

func startNetwork() (*Network, error) {
	dir, err := os.MkdirTemp("", "pircan-irc-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		base := freePorts()
		out, err := exec.Command(script(), "start", dir, strconv.Itoa(base)).CombinedOutput()
		if err != nil {
			lastErr = fmt.Errorf("network.sh start: %v: %s", err, out)
			_ = exec.Command(script(), "stop", dir).Run()
			continue
		}
		n, err := readNetwork(dir)
		if err != nil {
			return nil, err
		}
		n.owned = true
		ownedMu.Lock()
		ownedNets = append(ownedNets, n)
		ownedMu.Unlock()
		return n, nil
	}
	return nil, lastErr
}

// freePorts finds a base port whose next two ports are free too.
func freePorts() int {
	for {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		base := 20000 + int(b[0])<<6 + int(b[1])%64*3
		ok := true
		for p := base; p < base+3; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
}

func readNetwork(dir string) (*Network, error) {
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, fmt.Errorf("test network in %s: %w", dir, err)
	}
	n := &Network{Dir: dir}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, "=")
		switch k {
		case "IRC_PLAIN_PORT":
			n.PlainPort, _ = strconv.Atoi(v)
		case "IRC_TLS_PORT":
			n.TLSPort, _ = strconv.Atoi(v)
		case "IRC_CA_FILE":
			n.CAFile = v
		case "IRC_BRIDGE_PASS":
			n.BridgePass = v
		}
	}
	return n, nil
}

// Stop stops the network's daemons and removes its directory.
func (n *Network) Stop() {
	_ = exec.Command(script(), "stop", n.Dir).Run()
	_ = os.RemoveAll(n.Dir)
}

// Run runs a network.sh command on n: "stop-ircd", "start-ircd".
func (n *Network) Run(t testing.TB, cmd string) {
	t.Helper()
	if out, err := exec.Command(script(), cmd, n.Dir).CombinedOutput(); err != nil {
		t.Fatalf("network.sh %s: %v: %s", cmd, err, out)
	}
}

// Addr is the client port's address, TLS or plaintext.
func (n *Network) Addr(tlsPort bool) string {
	if tlsPort {
		return "127.0.0.1:" + strconv.Itoa(n.TLSPort)
	}
	return "127.0.0.1:" + strconv.Itoa(n.PlainPort)
}

// StopAll stops the networks this process started (call it from TestMain
// after m.Run).
func StopAll() {
	ownedMu.Lock()
	defer ownedMu.Unlock()
	for _, n := range ownedNets {
		n.Stop()
	}
}

// RandHex is n random bytes in hex: unique nicks and accounts.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Client is a raw IRC connection, as an agent would make.
type Client struct {
	t     testing.TB
	Nick  string
	conn  net.Conn
	lines chan ircmsg.Message
	mu    sync.Mutex
}

// WaitFor bounds every wait for the network.
const WaitFor = 20 * time.Second

// Dial connects nick, asking for the caps agents ask for, and waits for
// the server's welcome.
func Dial(t testing.TB, n *Network, nick string, useTLS bool) *Client {
	t.Helper()
	var conn net.Conn
	var err error
	if useTLS {
		pem, rerr := os.ReadFile(n.CAFile)
		if rerr != nil {
			t.Fatal(rerr)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		conn, err = tls.Dial("tcp", n.Addr(true), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	} else {
		conn, err = net.Dial("tcp", n.Addr(false))
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{t: t, Nick: nick, conn: conn, lines: make(chan ircmsg.Message, 1000)}
	t.Cleanup(func() { c.conn.Close() })
	go c.read()
	c.Raw("CAP REQ :account-tag message-tags server-time")
	c.Raw("NICK " + nick)
	c.Raw("USER " + nick + " 0 * :test agent")
	c.Raw("CAP END")
	c.WaitCommand("001")
	return c
}

func (c *Client) read() {
	sc := bufio.NewScanner(c.conn)
	sc.Buffer(make([]byte, 0, 16384), 16384)
	defer close(c.lines)
	for sc.Scan() {
		m, err := ircmsg.ParseLine(sc.Text())
		if err != nil {
			continue
		}
		if m.Command == "PING" {
			c.Raw("PONG :" + m.Params[len(m.Params)-1])
			continue
		}
		c.lines <- m
	}
}

// Raw sends one line (CR LF added).
func (c *Client) Raw(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write([]byte(s + "\r\n")); err != nil {
		c.t.Errorf("%s: write: %v", c.Nick, err)
	}
}

// Next returns the next message that matches, failing after WaitFor.
func (c *Client) Next(what string, match func(ircmsg.Message) bool) ircmsg.Message {
	c.t.Helper()
	timer := time.NewTimer(WaitFor)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s: connection closed waiting for %s", c.Nick, what)
			}
			if match(m) {
				return m
			}
		case <-timer.C:
			c.t.Fatalf("%s: no %s within %v", c.Nick, what, WaitFor)
		}
	}
}

// WaitCommand returns the next message with command cmd.
func (c *Client) WaitCommand(cmd string) ircmsg.Message {
	c.t.Helper()
	return c.Next(cmd, func(m ircmsg.Message) bool { return m.Command == cmd })
}

// Register registers and identifies a NickServ account named after the
// nick (REGISTER logs in at once).
func (c *Client) Register(password string) {
	c.t.Helper()
	c.Raw("PRIVMSG NickServ :REGISTER " + password + " " + c.Nick + "@example.org")
	c.WaitCommand("900")
}

// Reply is one PIRCAN/1 reply (Verb "TEXT" for plain text).
type Reply struct {
	Verb string
	Obj  map[string]any
	Raw  string
}

// Expect returns the next NOTICE from the bridge, parsed.
func (c *Client) Expect(bridge string) Reply {
	c.t.Helper()
	m := c.Next("a NOTICE from "+bridge, func(m ircmsg.Message) bool {
		return m.Command == "NOTICE" && strings.EqualFold(m.Nick(), bridge)
	})
	text := m.Params[len(m.Params)-1]
	if strings.ContainsAny(text, "\r\n\x00") || len(text) > 350 {
		c.t.Fatalf("bad reply line %q", text)
	}
	rest, ok := strings.CutPrefix(text, "PIRCAN/1 ")
	if !ok {
		return Reply{Verb: "TEXT", Raw: text}
	}
	verb, js, _ := strings.Cut(rest, " ")
	r := Reply{Verb: verb, Raw: text}
	if err := json.Unmarshal([]byte(js), &r.Obj); err != nil {
		c.t.Fatalf("reply %q: %v", text, err)
	}
	return r
}

// Ask sends a request and returns the next reply, which must be verb.
func (c *Client) Ask(bridge, text, verb string) map[string]any {
	c.t.Helper()
	c.Raw("PRIVMSG " + bridge + " :" + text)
	r := c.Expect(bridge)
	if r.Verb != verb {
		c.t.Fatalf("%s: %q answered %s, want %s", c.Nick, text, r.Raw, verb)
	}
	return r.Obj
}

// AskError sends a request whose reply must be an ERROR with code.
func (c *Client) AskError(bridge, text, code string) map[string]any {
	c.t.Helper()
	m := c.Ask(bridge, text, "ERROR")
	if m["code"] != code {
		c.t.Fatalf("%s: %q answered %v, want %s", c.Nick, text, m, code)
	}
	return m
}

// Pending returns the bridge's NOTICEs already received, without waiting.
func (c *Client) Pending(bridge string) []string {
	var out []string
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				return out
			}
			if m.Command == "NOTICE" && strings.EqualFold(m.Nick(), bridge) {
				out = append(out, m.Params[len(m.Params)-1])
			}
		default:
			return out
		}
	}
}
