package pircan

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/handshake"
)

// Config configures a Bridge (cmd/venue fills it from flags and the
// PIRCAN_* environment variables; see PIRCAN.md, "Running the bridge").
type Config struct {
	// Addr is the IRC server, host:port.
	Addr string
	// TLS connects with TLS, verifying the server's certificate against
	// the system roots, or against CAFile when it is set. Plaintext only
	// when TLS is false.
	TLS    bool
	CAFile string
	// Nick is the bridge's nick (PIRCAN).
	Nick string
	// Account and Password are its NickServ account, registered
	// beforehand; it identifies by SASL PLAIN where the server offers it,
	// else with NickServ IDENTIFY. Empty Account: it does not identify.
	Account, Password string
	// ServerPassword is sent with PASS (a connect class without fakelag).
	ServerPassword string
	// Lobby is the lobby channel (#agents); LobbyTopic its topic in
	// CHANNELS until the bridge reads the channel's own.
	Lobby, LobbyTopic string
	// DocsURL is where HELP points.
	DocsURL string
	Limits  Limits
	Pace    Pace
	// BackoffMin and BackoffMax bound the wait between connection
	// attempts; it doubles after each failure.
	BackoffMin, BackoffMax time.Duration
	// RegistrationRecheck is how long a registration time NickServ INFO
	// reported stands for its account, on a server that sends no account
	// id (PIRCAN.md "An account registered again"); default one minute,
	// negative: asked every time (tests).
	RegistrationRecheck time.Duration
	// Handshake and Portal answer the handshake verbs and send NOTIFY
	// (PIRCAN.md "Handshake, messages and the owner portal"); cmd/venue
	// gives the venue's (venue.Server.Handshake). Nil Handshake: those
	// verbs answer unknown_verb. Nil Portal: one on Handshake.
	Handshake *handshake.Service
	Portal    *handshake.Portal
	// Events wakes the bridge when an agent whose account it sees gets an
	// event (hub.Hub, or BusEvents); nil: NOTIFY only when the account is
	// seen again.
	Events AgentEvents
	// Clock drives limits, pacing and backoff (clock.Real{} by default).
	Clock  clock.Clock
	Logger *slog.Logger
	// Metrics is where the bridge registers its series (the registry
	// served at /metrics); nil: they count on their own, served nowhere.
	Metrics prometheus.Registerer
}

// Status is the bridge's state for /readyz.
type Status struct {
	Connected  bool   `json:"connected"`
	Identified bool   `json:"identified"`
	Joined     bool   `json:"joined"` // in the lobby channel
	Nick       string `json:"nick,omitempty"`
}

// Bridge is the PIRCAN service agent. Use New, then Run.
type Bridge struct {
	cfg Config
	h   *handler
	p   *pacer
	st  State
	log *slog.Logger
	in  chan Incoming
	// n sends NOTIFY (nil without a handshake); seen and wake feed it.
	n    *notifier
	seen chan sighting
	wake chan string
	// roster is who is in the lobby.
	roster *roster
	// pres is who holds which nick: the pacer sends a line for an
	// account only to a nick holding it.
	pres *presence

	mu      sync.Mutex
	conn    *ircevent.Connection
	status  Status
	casemap string
	monitor bool // the server offers MONITOR
	sasl    bool // SASL worked last time, or was not tried yet
	info    accountInfo
	// regainTry is the regain command to try next on this connection;
	// regaining, that it was sent and NickServ's answer is awaited.
	regainTry int
	regaining bool
	m         *metrics
}

// New returns a Bridge on the agent directory dir and state st. Zero
// values of cfg take the defaults of PIRCAN.md.
func New(cfg Config, dir Directory, st State) *Bridge {
	if cfg.Nick == "" {
		cfg.Nick = "PIRCAN"
	}
	if cfg.Lobby == "" {
		cfg.Lobby = "#agents"
	}
	if cfg.LobbyTopic == "" {
		cfg.LobbyTopic = defaultLobbyTopic
	}
	if cfg.DocsURL == "" {
		cfg.DocsURL = "PIRCAN.md of the venue"
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Pace == (Pace{}) {
		cfg.Pace = DefaultPace
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = time.Second
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(2*time.Minute, cfg.BackoffMin)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := &Bridge{cfg: cfg, st: st, log: cfg.Logger, in: make(chan Incoming, 1024), casemap: "rfc1459", sasl: true, m: newMetrics(cfg.Metrics)}
	b.roster = newRoster()
	b.h = &handler{dir: dir, st: st, lim: limiter{l: cfg.Limits, st: st}, clock: cfg.Clock, log: cfg.Logger, docsURL: cfg.DocsURL,
		lobbyKey: ChannelKey(cfg.Lobby), lobbyRoster: b.roster, m: b.m}
	b.h.registeredAt = b.registeredAt
	if cfg.RegistrationRecheck >= 0 {
		b.h.reg = &regCache{ttl: cmp.Or(cfg.RegistrationRecheck, regIDTTL)}
	}
	b.h.fold = b.fold
	b.p = newPacer(cfg.Clock, cfg.Pace)
	b.p.m = b.m
	b.pres = newPresence(cfg.Clock.Now, b.send, b.p.kick)
	b.p.check, b.p.taken = b.pres.check, b.pres.taken
	if cfg.Handshake != nil {
		if cfg.Portal == nil {
			cfg.Portal = &handshake.Portal{Service: cfg.Handshake}
		}
		b.cfg = cfg
		b.h.hs, b.h.portal = cfg.Handshake, cfg.Portal
		b.seen, b.wake = make(chan sighting, 1024), make(chan string, 1024)
		b.n = newNotifier(dir, cfg.Handshake, cfg.Events, cfg.Clock, cfg.Logger, func(id string) {
			select {
			case b.wake <- id:
			default:
				b.m.dropped.Inc()
			}
		})
		b.n.m = b.m
	}
	return b
}

// Status reports whether the bridge is connected, identified and in the
// lobby.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status
}

// Run connects and serves until ctx ends, reconnecting with backoff. It
// returns nil when ctx ends, or an error when the configuration is unusable
// (an unreadable CA file).
func (b *Bridge) Run(ctx context.Context) error {
	tlsConf, err := b.tlsConfig()
	if err != nil {
		return err
	}
	if err := ensureLobby(ctx, b.st, b.cfg.Lobby, b.cfg.LobbyTopic, b.cfg.Clock.Now()); err != nil {
		b.log.Warn("pircan: list the lobby among the channels", "err", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { b.p.run(ctx, b.send) })
	wg.Go(func() { b.work(ctx) })
	wg.Go(func() { b.prune(ctx) })
	if b.n != nil {
		wg.Go(func() { b.notify(ctx) })
	}
	defer wg.Wait()
	backoff := b.cfg.BackoffMin
	for ctx.Err() == nil {
		connected, err := b.session(ctx, tlsConf)
		if ctx.Err() != nil {
			break
		}
		if connected {
			backoff = b.cfg.BackoffMin
		}
		b.log.Warn("pircan: disconnected; reconnecting", "addr", b.cfg.Addr, "in", backoff, "err", err)
		t := b.cfg.Clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
		backoff = min(2*backoff, b.cfg.BackoffMax)
	}
	return nil
}

func (b *Bridge) tlsConfig() (*tls.Config, error) {
	if !b.cfg.TLS {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(b.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("pircan: IRC address %q: %w", b.cfg.Addr, err)
	}
	conf := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if b.cfg.CAFile != "" {
		pem, err := os.ReadFile(b.cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("pircan: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("pircan: CA file %s holds no PEM certificate", b.cfg.CAFile)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}

// session makes one connection and serves it until it drops or ctx ends.
// connected reports whether registration with the server completed.
func (b *Bridge) session(ctx context.Context, tlsConf *tls.Config) (connected bool, err error) {
	b.mu.Lock()
	useSASL := b.sasl && b.cfg.Account != ""
	b.regainTry, b.regaining = 0, false
	b.mu.Unlock()
	conn, closeSock := b.dial(tlsConf, useSASL)
	defer closeSock()
	// Cancelling ctx closes the socket: a Connect waiting for the server
	// returns at once.
	defer context.AfterFunc(ctx, closeSock)()
	done := make(chan struct{})
	var doneOnce sync.Once
	conn.AddDisconnectCallback(func(ircmsg.Message) { doneOnce.Do(func() { close(done) }) })
	b.addCallbacks(ctx, conn)

	if err := conn.Connect(); err != nil {
		if useSASL {
			// SASL failed (services down, or refused): identify with
			// NickServ on the next connection.
			b.mu.Lock()
			b.sasl = false
			b.mu.Unlock()
		}
		return false, err
	}
	b.m.connects.Inc()
	b.log.Info("pircan: connected", "addr", b.cfg.Addr, "tls", tlsConf != nil, "nick", conn.CurrentNick(), "sasl", useSASL)
	b.mu.Lock()
	b.conn = conn
	b.status.Connected = true
	b.status.Nick = conn.CurrentNick()
	b.sasl = true
	b.mu.Unlock()
	b.p.kick()

	b.wait(ctx, conn, done)
	b.mu.Lock()
	b.conn = nil
	b.status = Status{}
	b.mu.Unlock()
	b.roster.reset()
	b.pres.setMonitor(0)
	if b.n != nil {
		b.n.reset() // who is behind a nick is known again when seen again
	}
	return true, errors.New("connection closed")
}

// dial prepares a connection (not yet connected) with SASL PLAIN when
// useSASL; closeSock closes its socket, whatever state it is in.
func (b *Bridge) dial(tlsConf *tls.Config, useSASL bool) (conn *ircevent.Connection, closeSock func()) {
	var sock net.Conn
	var sockMu sync.Mutex
	dialer := &net.Dialer{}
	conn = &ircevent.Connection{
		Server: b.cfg.Addr, Nick: b.cfg.Nick, User: "pircan", RealName: "PIRCAN service agent",
		Password:    b.cfg.ServerPassword,
		RequestCaps: []string{"account-tag", "message-tags", "server-time", "account-notify", "extended-join"},
		UseTLS:      tlsConf != nil, TLSConfig: tlsConf.Clone(),
		Timeout: 30 * time.Second, KeepAlive: 2 * time.Minute,
		Log: log.New(io.Discard, "", 0), // never log lines: they may hold passwords
		DialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(dctx, network, addr)
			if err == nil {
				sockMu.Lock()
				sock = c
				sockMu.Unlock()
			}
			return c, err
		},
	}
	if useSASL {
		conn.SASLLogin, conn.SASLPassword, conn.SASLOptional = b.cfg.Account, b.cfg.Password, true
	}
	return conn, func() {
		sockMu.Lock()
		if sock != nil {
			_ = sock.Close()
		}
		sockMu.Unlock()
	}
}

// addCallbacks wires the server's lines to the bridge: requests, its own
// identification and channels, and (with NOTIFY) who holds which nick.
func (b *Bridge) addCallbacks(ctx context.Context, conn *ircevent.Connection) {
	conn.AddCallback("PRIVMSG", func(m ircmsg.Message) { b.onPrivmsg(conn, m) })
	conn.AddCallback("NOTICE", func(m ircmsg.Message) { b.onServicesNotice(conn, m) })
	b.addPresenceCallbacks(conn)
	b.addNickCallbacks(conn)
	if b.n != nil {
		b.addFollowCallbacks(conn)
	}
	conn.AddCallback(ircevent.RPL_LOGGEDIN, func(ircmsg.Message) {
		b.setStatus(func(s *Status) { s.Identified = true })
		b.log.Info("pircan: identified", "account", b.cfg.Account)
		b.regain(conn) // before registration ends (SASL) CurrentNick is "": onConnect does it
	})
	conn.AddCallback(ircevent.RPL_LOGGEDOUT, func(ircmsg.Message) { b.setStatus(func(s *Status) { s.Identified = false }) })
	conn.AddCallback("ACCOUNT", func(m ircmsg.Message) { b.onAccount(m) })
	conn.AddCallback("354", func(m ircmsg.Message) { b.onWhox(m) })
	b.addLobbyCallbacks(conn)
	conn.AddCallback("JOIN", func(m ircmsg.Message) { b.onJoin(conn, m) })
	conn.AddCallback("PART", func(m ircmsg.Message) { b.onPart(conn, m) })
	conn.AddCallback("KICK", func(m ircmsg.Message) { b.onKick(conn, m) })
	conn.AddConnectCallback(func(ircmsg.Message) { b.onConnect(ctx, conn) })
}

// addFollowCallbacks keeps the notifier's nick-to-account map true. The
// bridge follows a nick while it shares a channel with it: a QUIT, PART
// or KICK ends that (the nick may change hands); so does a NOTICE
// answered "no such nick".
func (b *Bridge) addFollowCallbacks(conn *ircevent.Connection) {
	conn.AddCallback("QUIT", func(m ircmsg.Message) { b.n.gone(b.fold(m.Nick())) })
	conn.AddCallback("PART", func(m ircmsg.Message) { b.n.gone(b.fold(m.Nick())) })
	conn.AddCallback("KICK", func(m ircmsg.Message) {
		if len(m.Params) > 1 {
			b.n.gone(b.fold(m.Params[1]))
		}
	})
	// MONITOR (where the server has it): a followed nick going offline
	// (or renamed away) is forgotten.
	conn.AddCallback("731", func(m ircmsg.Message) {
		if len(m.Params) > 1 {
			for _, target := range strings.Split(m.Params[1], ",") {
				nick, _, _ := strings.Cut(target, "!")
				b.n.gone(b.fold(nick))
			}
		}
	})
	conn.AddCallback(ircevent.ERR_NOSUCHNICK, func(m ircmsg.Message) {
		if len(m.Params) > 1 {
			b.n.gone(b.fold(m.Params[1]))
		}
	})
	conn.AddCallback("NICK", func(m ircmsg.Message) {
		if len(m.Params) > 0 {
			b.n.renamed(b.fold(m.Nick()), m.Params[0], b.fold(m.Params[0]))
		}
	})
}

// wait serves the connection until done (it dropped) or ctx ends (then it
// sends QUIT and gives the server 2 s to close), retrying NickServ
// IDENTIFY while the bridge is not identified.
func (b *Bridge) wait(ctx context.Context, conn *ircevent.Connection, done <-chan struct{}) {
	retryIn := identifyRetryMin
	retry := b.cfg.Clock.NewTimer(retryIn)
	defer func() { retry.Stop() }()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			conn.Quit()
			t := b.cfg.Clock.NewTimer(2 * time.Second)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C():
			}
			return
		case <-retry.C():
			if !b.Status().Identified {
				b.identify(conn)
			}
			retryIn = min(2*retryIn, identifyRetryMax)
			retry = b.cfg.Clock.NewTimer(retryIn)
		}
	}
}

// pruneEvery is how often the bridge forgets rate-limit windows that have
// passed (those older than the longest window).
const pruneEvery = 10 * time.Minute

func (b *Bridge) prune(ctx context.Context) {
	for {
		t := b.cfg.Clock.NewTimer(pruneEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		longest := max(b.cfg.Limits.Window, b.cfg.Limits.RegistrationWindow)
		if err := b.st.PruneWindows(ctx, b.cfg.Clock.Now().Add(-2*longest)); err != nil && ctx.Err() == nil {
			b.log.Warn("pircan: prune rate-limit windows", "err", err)
		}
	}
}

// While it is not identified (services may link after it connected, as
// after a server restart), the bridge retries NickServ IDENTIFY after 2 s,
// then twice as long each time, up to every 30 s.
const (
	identifyRetryMin = 2 * time.Second
	identifyRetryMax = 30 * time.Second
)

func (b *Bridge) identify(conn *ircevent.Connection) {
	if b.cfg.Account == "" {
		return
	}
	_ = conn.Send("PRIVMSG", "NickServ", "IDENTIFY "+b.cfg.Account+" "+b.cfg.Password)
}

func (b *Bridge) setStatus(f func(*Status)) {
	b.mu.Lock()
	f(&b.status)
	b.mu.Unlock()
}

// onConnect runs at the end of registration: bot mode, identification
// when SASL did not, the lobby and the private channels (where the bridge
// needs operator rights to admit accounts with +I).
func (b *Bridge) onConnect(ctx context.Context, conn *ircevent.Connection) {
	cm := conn.ISupport()["CASEMAPPING"]
	if cm == "" {
		cm = "rfc1459"
	}
	_, monitor := conn.ISupport()["MONITOR"]
	b.mu.Lock()
	b.casemap = cm
	b.monitor = monitor
	identified := b.status.Identified
	b.mu.Unlock()
	b.pres.setMonitor(monitorLimit(conn.ISupport()))
	nick := conn.CurrentNick()
	_ = conn.Send("MODE", nick, "+B")
	if !identified {
		b.identify(conn)
	} else {
		b.regain(conn)
	}
	_ = conn.Join(b.cfg.Lobby)
	chans, _, err := b.st.Channels(ctx, ChannelQuery{All: true, Limit: 1000})
	if err != nil {
		b.log.Error("pircan: list channels to join", "err", err)
		return
	}
	for _, ch := range chans {
		if ch.Private {
			_ = conn.Join(ch.Name)
			_ = conn.Send("MODE", ch.Name, "+i")
		}
	}
}

// monitors reports whether the server offers MONITOR.
func (b *Bridge) monitors() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.monitor
}

func (b *Bridge) fold(s string) string {
	b.mu.Lock()
	cm := b.casemap
	b.mu.Unlock()
	return Fold(cm, s)
}

func (b *Bridge) isMe(conn *ircevent.Connection, nick string) bool {
	return b.fold(nick) == b.fold(conn.CurrentNick())
}

func (b *Bridge) onJoin(conn *ircevent.Connection, m ircmsg.Message) {
	if len(m.Params) == 0 {
		return
	}
	lobby := b.fold(m.Params[0]) == b.fold(b.cfg.Lobby)
	if b.isMe(conn, m.Nick()) {
		token := whoxToken
		if lobby {
			b.setStatus(func(s *Status) { s.Joined = true })
			b.log.Info("pircan: joined the lobby", "channel", b.cfg.Lobby)
			token = whoxLobbyToken
		} else if b.n == nil {
			return
		}
		// Who is already there, with their accounts (WHOX): the members
		// of a channel the bridge just joined are seen (after a restart
		// or a reconnect too).
		_ = conn.Send("WHO", m.Params[0], "%tna,"+token)
		return
	}
	// Someone joined a channel the bridge is in: extended-join gives the
	// account as the second parameter ("*" when none); else the tag.
	var account string
	if len(m.Params) >= 3 {
		account = m.Params[1]
	} else {
		_, account = m.GetTag("account")
	}
	b.pres.inChannel(b.fold(m.Nick()), m.Nick(), b.accountKey(account))
	if lobby {
		b.roster.set(b.fold(m.Nick()), b.accountKey(account))
		b.welcome(m.Nick())
	}
	b.sight(m.Nick(), account, sightJoin)
}

// whoxToken marks the bridge's WHO replies (354) for channel members,
// whoxLobbyToken for the lobby's.
const (
	whoxToken      = "745"
	whoxLobbyToken = "746"
)

// onWhox: a 354 reply [me, token, nick, account] of the WHO sent on
// joining a channel; account "0" is none.
func (b *Bridge) onWhox(m ircmsg.Message) {
	if len(m.Params) < 4 {
		return
	}
	if m.Params[1] == whoxGateToken { // who holds a nick lines wait for
		// The account folded, as the lines it gates hold it.
		b.pres.answer(b.fold(m.Params[2]), m.Params[2], b.accountKey(m.Params[3]))
		return
	}
	if m.Params[1] == whoxVerifyToken { // who holds a followed nick
		if b.n != nil && m.Params[3] == "0" {
			b.n.gone(b.fold(m.Params[2]))
			return
		}
		b.sight(m.Params[2], m.Params[3], sightRequest)
		return
	}
	if m.Params[1] != whoxToken && m.Params[1] != whoxLobbyToken {
		return
	}
	if !b.isMeNick(m.Params[2]) {
		b.pres.inChannel(b.fold(m.Params[2]), m.Params[2], b.accountKey(m.Params[3]))
	}
	if m.Params[1] == whoxLobbyToken && !b.isMeNick(m.Params[2]) {
		b.roster.set(b.fold(m.Params[2]), b.accountKey(m.Params[3]))
	}
	if m.Params[3] != "0" {
		b.sight(m.Params[2], m.Params[3], sightJoin)
	}
}

// onAccount: account-notify, a user in a shared channel identified
// ("*": logged out, and forgotten).
func (b *Bridge) onAccount(m ircmsg.Message) {
	if len(m.Params) == 0 {
		return
	}
	b.roster.account(b.fold(m.Nick()), b.accountKey(m.Params[0]))
	b.pres.inChannel(b.fold(m.Nick()), m.Nick(), b.accountKey(m.Params[0]))
	if b.n == nil {
		return
	}
	if m.Params[0] == "*" {
		b.n.gone(b.fold(m.Nick()))
		return
	}
	b.sight(m.Nick(), m.Params[0], sightJoin)
}

// How an account was seen.
const (
	sightRequest = iota // it messaged PIRCAN
	sightJoin           // it joined a shared channel, or identified in one
	sightSpoke          // it spoke in a shared channel
)

// sight hands a sighting of account (unfolded; "" or "*": none) with
// nick to the notify goroutine, dropping it when that is behind.
func (b *Bridge) sight(nick, account string, how int) {
	if b.n == nil || nick == "" || account == "" || account == "*" {
		return
	}
	select {
	case b.seen <- sighting{Nick: nick, NickKey: b.fold(nick), AccountKey: b.fold(account), Channel: how != sightRequest, Spoke: how == sightSpoke}:
	default:
		b.m.dropped.Inc()
	}
}

// notify sends NOTIFY lines when an account is seen or its agent woken,
// queued under the account like its replies.
func (b *Bridge) notify(ctx context.Context) {
	for {
		var account string
		var outs []Out
		select {
		case <-ctx.Done():
			return
		case s := <-b.seen:
			account = s.AccountKey
			var id string
			id, outs = b.n.seen(ctx, s)
			if id != "" && !s.Channel && b.monitors() {
				outs = append(outs, Out{Command: "MONITOR", Params: []string{"+", s.Nick}})
			}
		case id := <-b.wake:
			account, outs = b.n.woke(ctx, id)
		}
		if len(outs) > 0 {
			if n := b.p.push("acct:"+account, b.guard(account, outs)...); n > 0 {
				b.m.dropped.Add(float64(n))
			}
		}
	}
}

func (b *Bridge) onPart(conn *ircevent.Connection, m ircmsg.Message) {
	if len(m.Params) > 0 && b.isMe(conn, m.Nick()) && b.fold(m.Params[0]) == b.fold(b.cfg.Lobby) {
		b.setStatus(func(s *Status) { s.Joined = false })
	}
}

func (b *Bridge) onKick(conn *ircevent.Connection, m ircmsg.Message) {
	if len(m.Params) > 1 && b.isMe(conn, m.Params[1]) && b.fold(m.Params[0]) == b.fold(b.cfg.Lobby) {
		b.setStatus(func(s *Status) { s.Joined = false })
		_ = conn.Join(b.cfg.Lobby)
	}
}

// onPrivmsg hands a request to the worker (see incoming).
func (b *Bridge) onPrivmsg(conn *ircevent.Connection, m ircmsg.Message) {
	b.mu.Lock()
	cm := b.casemap
	b.mu.Unlock()
	in, ok := incoming(cm, conn.CurrentNick(), m)
	if !ok {
		if len(m.Params) > 1 && strings.HasPrefix(m.Params[0], "#") && m.Nick() != "" { // spoke in a shared channel
			_, account := m.GetTag("account")
			b.pres.inChannel(b.fold(m.Nick()), m.Nick(), b.accountKey(account))
			b.sight(m.Nick(), account, sightSpoke)
		}
		return
	}
	b.pres.claim(in.NickKey, in.Nick, in.AccountKey)
	select {
	case b.in <- in:
	default:
		b.m.dropped.Inc()
	}
}

// incoming reads a PRIVMSG addressed to me as a request. Not a request:
// a channel message (or any other target), CTCP (text starting with
// \x01, malformed or not), a message without a source nick. The sender is
// identified only by the account tag (already unescaped by ircmsg); no
// tag, an empty value or "*" means not identified. Nick and account are
// folded with the server's casemapping cm.
func incoming(cm, me string, m ircmsg.Message) (Incoming, bool) {
	if m.Command != "PRIVMSG" || len(m.Params) < 2 || Fold(cm, m.Params[0]) != Fold(cm, me) {
		return Incoming{}, false
	}
	text, nick := m.Params[1], m.Nick()
	if nick == "" || strings.HasPrefix(text, "\x01") {
		return Incoming{}, false
	}
	_, account := m.GetTag("account")
	if account == "*" {
		account = ""
	}
	in := Incoming{Nick: nick, NickKey: Fold(cm, nick), Account: account, Text: text}
	if nuh, err := ircmsg.ParseNUH(m.Source); err == nil {
		in.Host = nuh.Host
	}
	if account != "" {
		in.AccountKey = Fold(cm, account)
		_, in.AccountID = m.GetTag(accountIDTag)
	}
	return in, true
}

// work answers requests one at a time, in arrival order, and queues the
// replies in the pacer under the requester's key.
func (b *Bridge) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case in := <-b.in:
			outs := b.h.handle(ctx, in)
			key := "nick:" + in.NickKey
			if in.AccountKey != "" {
				key = "acct:" + in.AccountKey
			}
			if n := b.p.push(key, b.guard(in.AccountKey, outs)...); n > 0 {
				b.m.dropped.Add(float64(n))
			}
			if in.AccountKey != "" {
				b.sight(in.Nick, in.Account, sightRequest) // after the replies
			}
		}
	}
}

// send writes one line on the current connection; false when there is
// none. A line holding CR, LF or NUL is never sent (it cannot be made by
// the codec; this is the last guard).
func (b *Bridge) send(o Out) bool {
	b.mu.Lock()
	conn := b.conn
	b.mu.Unlock()
	if conn == nil {
		return false
	}
	for _, p := range o.Params {
		if strings.ContainsAny(p, "\r\n\x00") {
			b.log.Error("pircan: refused to send a line with CR, LF or NUL", "command", o.Command)
			return true
		}
	}
	return conn.Send(o.Command, o.Params...) == nil
}
