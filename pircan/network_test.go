package pircan_test

// The test IRC network (testdata/irc/network.sh): InspIRCd 3 + Anope 2.0
// from Debian's packages on loopback, started once per test process, or
// found already running through PIRCAN_TEST_IRC_DIR (a network.sh run
// directory). Tests skip, saying so, only when the packages are missing.

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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
)

// network is one running test network.
type network struct {
	Dir        string
	PlainPort  int
	TLSPort    int
	CAFile     string
	BridgePass string
	owned      bool // started by this process: stopped at the end
}

var (
	netOnce   sync.Once
	sharedNet *network
	netErr    error
	netSkip   string
	ownedNets []*network
	ownedMu   sync.Mutex
)

func script() string {
	p, _ := filepath.Abs(filepath.Join("..", "testdata", "irc", "network.sh"))
	return p
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

// sharedNetwork returns the network the tests share.
func sharedNetwork(t *testing.T) *network {
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

// ownNetwork starts a network for one test (which may restart it).
func ownNetwork(t *testing.T) *network {
	t.Helper()
	if s := packagesMissing(); s != "" {
		t.Skip(s)
	}
	n, err := startNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.stop() })
	return n
}

func startNetwork() (*network, error) {
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

func readNetwork(dir string) (*network, error) {
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, fmt.Errorf("test network in %s: %w", dir, err)
	}
	n := &network{Dir: dir}
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

func (n *network) stop() {
	_ = exec.Command(script(), "stop", n.Dir).Run()
	_ = os.RemoveAll(n.Dir)
}

func (n *network) run(t *testing.T, cmd string) {
	t.Helper()
	if out, err := exec.Command(script(), cmd, n.Dir).CombinedOutput(); err != nil {
		t.Fatalf("network.sh %s: %v: %s", cmd, err, out)
	}
}

func (n *network) addr(tlsPort bool) string {
	if tlsPort {
		return "127.0.0.1:" + strconv.Itoa(n.TLSPort)
	}
	return "127.0.0.1:" + strconv.Itoa(n.PlainPort)
}

func stopOwnedNetworks() {
	ownedMu.Lock()
	defer ownedMu.Unlock()
	for _, n := range ownedNets {
		n.stop()
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// client is a raw IRC connection, as an agent would make.
type client struct {
	t     *testing.T
	nick  string
	conn  net.Conn
	lines chan ircmsg.Message
	mu    sync.Mutex
}

const waitFor = 20 * time.Second

// dial connects nick, asking for the caps agents ask for, and waits for
// the end of registration.
func dial(t *testing.T, n *network, nick string, useTLS bool) *client {
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
		conn, err = tls.Dial("tcp", n.addr(true), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	} else {
		conn, err = net.Dial("tcp", n.addr(false))
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, nick: nick, conn: conn, lines: make(chan ircmsg.Message, 1000)}
	t.Cleanup(func() { c.conn.Close() })
	go c.read()
	c.raw("CAP REQ :account-tag message-tags server-time")
	c.raw("NICK " + nick)
	c.raw("USER " + nick + " 0 * :test agent")
	c.raw("CAP END")
	c.waitCommand("001")
	return c
}

func (c *client) read() {
	sc := bufio.NewScanner(c.conn)
	sc.Buffer(make([]byte, 0, 16384), 16384)
	defer close(c.lines)
	for sc.Scan() {
		m, err := ircmsg.ParseLine(sc.Text())
		if err != nil {
			continue
		}
		if m.Command == "PING" {
			c.raw("PONG :" + m.Params[len(m.Params)-1])
			continue
		}
		c.lines <- m
	}
}

func (c *client) raw(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write([]byte(s + "\r\n")); err != nil {
		c.t.Errorf("%s: write: %v", c.nick, err)
	}
}

// next returns the next message that matches, failing after waitFor.
func (c *client) next(what string, match func(ircmsg.Message) bool) ircmsg.Message {
	c.t.Helper()
	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s: connection closed waiting for %s", c.nick, what)
			}
			if match(m) {
				return m
			}
		case <-timer.C:
			c.t.Fatalf("%s: no %s within %v", c.nick, what, waitFor)
		}
	}
}

func (c *client) waitCommand(cmd string) ircmsg.Message {
	c.t.Helper()
	return c.next(cmd, func(m ircmsg.Message) bool { return m.Command == cmd })
}

// register registers and identifies a NickServ account named after the
// nick (REGISTER logs in at once).
func (c *client) register(password string) {
	c.t.Helper()
	c.raw("PRIVMSG NickServ :REGISTER " + password + " " + c.nick + "@example.org")
	c.waitCommand("900")
}

// reply is one PIRCAN/1 reply.
type reply struct {
	Verb string
	Obj  map[string]any
	Raw  string
}

// expect returns the next NOTICE from the bridge, parsed.
func (c *client) expect(bridge string) reply {
	c.t.Helper()
	m := c.next("a NOTICE from "+bridge, func(m ircmsg.Message) bool {
		return m.Command == "NOTICE" && strings.EqualFold(m.Nick(), bridge)
	})
	text := m.Params[len(m.Params)-1]
	if strings.ContainsAny(text, "\r\n\x00") || len(text) > 350 {
		c.t.Fatalf("bad reply line %q", text)
	}
	rest, ok := strings.CutPrefix(text, "PIRCAN/1 ")
	if !ok {
		return reply{Verb: "TEXT", Raw: text}
	}
	verb, js, _ := strings.Cut(rest, " ")
	r := reply{Verb: verb, Raw: text}
	if err := json.Unmarshal([]byte(js), &r.Obj); err != nil {
		c.t.Fatalf("reply %q: %v", text, err)
	}
	return r
}

// ask sends a request and returns the next reply, which must be verb.
func (c *client) ask(bridge, text, verb string) map[string]any {
	c.t.Helper()
	c.raw("PRIVMSG " + bridge + " :" + text)
	r := c.expect(bridge)
	if r.Verb != verb {
		c.t.Fatalf("%s: %q answered %s, want %s", c.nick, text, r.Raw, verb)
	}
	return r.Obj
}

// askError sends a request whose reply must be an ERROR with code.
func (c *client) askError(bridge, text, code string) map[string]any {
	c.t.Helper()
	m := c.ask(bridge, text, "ERROR")
	if m["code"] != code {
		c.t.Fatalf("%s: %q answered %v, want %s", c.nick, text, m, code)
	}
	return m
}

// pending returns the bridge's NOTICEs already received, without waiting.
func (c *client) pending(bridge string) []string {
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
