package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/directory"
	venueevents "github.com/venuehq/venue/events"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/promreg"
	"github.com/venuehq/venue/pircan"
)

// pircanOptions configure the PIRCAN bridge (PIRCAN.md "Running the
// bridge"). Every one has an environment variable; `venue serve` reads only
// the environment, `venue pircan` also takes flags.
type pircanOptions struct {
	addr       string // PIRCAN_IRC_ADDR: the bridge runs when it is set
	tls        bool   // PIRCAN_IRC_TLS (default true)
	caFile     string // PIRCAN_IRC_CA_FILE
	nick       string // PIRCAN_NICK
	account    string // PIRCAN_ACCOUNT
	password   string // PIRCAN_PASSWORD (environment only)
	serverPass string // PIRCAN_IRC_PASS (environment only)
	lobby      string // PIRCAN_LOBBY
	channels   string // PIRCAN_CHANNELS: a channels file applied at start
	docsURL    string // PIRCAN_DOCS_URL
}

// pircanFromEnv reads the PIRCAN_* environment.
func pircanFromEnv() (pircanOptions, error) {
	o := pircanOptions{
		addr: os.Getenv("PIRCAN_IRC_ADDR"), caFile: os.Getenv("PIRCAN_IRC_CA_FILE"),
		nick: envOr("PIRCAN_NICK", "PIRCAN"), account: os.Getenv("PIRCAN_ACCOUNT"), password: os.Getenv("PIRCAN_PASSWORD"),
		serverPass: os.Getenv("PIRCAN_IRC_PASS"), lobby: envOr("PIRCAN_LOBBY", "#agents"),
		channels: os.Getenv("PIRCAN_CHANNELS"), docsURL: os.Getenv("PIRCAN_DOCS_URL"), tls: true,
	}
	if v := os.Getenv("PIRCAN_IRC_TLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("PIRCAN_IRC_TLS=%q: want true or false", v)
		}
		o.tls = b
	}
	return o, nil
}

func (o *pircanOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.addr, "irc-addr", o.addr, "IRC server HOST:PORT (env PIRCAN_IRC_ADDR)")
	f.BoolVar(&o.tls, "irc-tls", o.tls, "connect with TLS, verifying the certificate; false for plaintext (env PIRCAN_IRC_TLS)")
	f.StringVar(&o.caFile, "irc-ca-file", o.caFile, "PEM file of the CA to trust for the IRC server instead of the system's (env PIRCAN_IRC_CA_FILE)")
	f.StringVar(&o.nick, "nick", o.nick, "the bridge's nick (env PIRCAN_NICK)")
	f.StringVar(&o.account, "account", o.account, "the bridge's NickServ account, registered beforehand; its password comes from PIRCAN_PASSWORD (env PIRCAN_ACCOUNT)")
	f.StringVar(&o.lobby, "lobby", o.lobby, "the lobby channel (env PIRCAN_LOBBY)")
	f.StringVar(&o.channels, "channels", o.channels, "a channels file (JSON array of {name, private, topic, invite}) applied at start (env PIRCAN_CHANNELS)")
	f.StringVar(&o.docsURL, "docs-url", o.docsURL, "where HELP points (env PIRCAN_DOCS_URL)")
}

func (o pircanOptions) config(log *slog.Logger) pircan.Config {
	return pircan.Config{Addr: o.addr, TLS: o.tls, CAFile: o.caFile, Nick: o.nick, Account: o.account, Password: o.password,
		ServerPassword: o.serverPass, Lobby: o.lobby, DocsURL: o.docsURL, Clock: clock.Real{}, Logger: log.With("component", "pircan")}
}

// pircanLinks are what the bridge's handshake verbs call: the node's
// handshake service and owner portal (venue.Server.Handshake in serve) and
// the bus that wakes it when an agent gets an event on any node.
type pircanLinks struct {
	hs      *handshake.Service
	portal  *handshake.Portal
	events  pircan.AgentEvents
	metrics prometheus.Registerer // the registry /metrics serves
}

// standaloneHandshake is the handshake service of `venue pircan`, which
// runs no venue node: on the venue's handshake store (Postgres: the same
// tables the venue nodes use), with the IRC account bindings, pushing lobby
// frames on the bus (reaching venue nodes when it is Redis).
func standaloneHandshake(b *backends.Set, log *slog.Logger) (pircanLinks, error) {
	events := pircan.BusEvents{Bus: b.Bus}
	// Pushes also go into the agents' event logs (PROTOCOL.md "Without a socket").
	push := venueevents.Recording(events, b.Events, time.Now, log)
	svc, err := handshake.New(handshake.Service{Store: b.Handshake, Agents: &directory.Service{Store: b.Store, Now: time.Now},
		Accounts: directory.IRCAccounts{Store: b.Store}, Push: push, NewID: directory.NewID, Log: log})
	if err != nil {
		return pircanLinks{}, err
	}
	return pircanLinks{hs: svc, portal: &handshake.Portal{Service: svc}, events: events}, nil
}

// startPircan checks the options, applies the channels file and starts the
// bridge on the venue's backends with the handshake of links; wait blocks
// until it stopped (after ctx ends).
func startPircan(ctx context.Context, o pircanOptions, bk *backends.Set, links pircanLinks, log *slog.Logger) (b *pircan.Bridge, wait func(), err error) {
	cfg := o.config(log)
	cfg.Handshake, cfg.Portal, cfg.Events, cfg.Metrics = links.hs, links.portal, links.events, links.metrics
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	st := bk.Bridge
	if o.channels != "" {
		chans, err := pircan.ReadChannels(o.channels)
		if err != nil {
			return nil, nil, err
		}
		if err := applyChannels(ctx, st, chans); err != nil {
			return nil, nil, err
		}
	}
	b = pircan.New(cfg, &directory.Service{Store: bk.Store, Now: time.Now}, st)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.Run(ctx); err != nil {
			log.Error("pircan: stopped", "err", err)
		}
	}()
	log.Info("pircan: bridge starting", "irc", o.addr, "tls", o.tls, "nick", o.nick, "lobby", o.lobby)
	return b, func() { <-done }, nil
}

func applyChannels(ctx context.Context, st pircan.State, chans []pircan.ChannelConfig) error {
	now := time.Now()
	for _, c := range chans {
		if err := st.PutChannel(ctx, pircan.Channel{Name: c.Name, Private: c.Private, Topic: c.Topic}, now); err != nil {
			return err
		}
		for _, id := range c.Invite {
			if err := st.Invite(ctx, pircan.ChannelKey(c.Name), id, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// pircanCmd is `venue pircan`: the bridge on its own, with /metrics and
// /readyz on --http, and the operators' channel commands.
func pircanCmd() *cobra.Command {
	o, envErr := pircanFromEnv()
	var httpAddr, database, redisURL, redisPrefix, logLevel string
	cmd := &cobra.Command{
		Use:   "pircan",
		Short: "Run the PIRCAN IRC bridge on its own (venue serve runs it too when PIRCAN_IRC_ADDR is set)",
		Long: `Run the PIRCAN bridge: a service agent that connects to an IRC network, identifies
its NickServ account, joins the lobby channel and answers PIRCAN/1 requests (HELP,
HELLO, WHOAMI, FIND, CHANNELS, JOIN, ECHO; the handshake: CONTACT, ACCEPT, SEND, INBOX,
LOGIN, ...) with NOTICEs. It shares the venue's agent directory and handshake tables
through DATABASE_URL: IRC agents and venue agents find, contact and message each
other. With REDIS_URL (the venue's), it pushes handshake events to venue agents'
lobby sockets and hears of events made on the venue's nodes at once.

The passwords come from the environment only: PIRCAN_PASSWORD (the NickServ account's)
and PIRCAN_IRC_PASS (the server connection password). See PIRCAN.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return envErr
			}
			if o.addr == "" {
				return errors.New("set PIRCAN_IRC_ADDR or --irc-addr")
			}
			log, err := newLogger(logLevel, "text")
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			bk, err := backends.Open(ctx, backends.Config{DatabaseURL: database, RedisURL: redisURL, RedisPrefix: redisPrefix, Logger: log})
			if err != nil {
				return err
			}
			defer closeBackends(bk, log)
			links, err := standaloneHandshake(bk, log)
			if err != nil {
				return err
			}
			reg := promreg.NewRegistry()
			links.metrics = reg
			b, wait, err := startPircan(ctx, o, bk, links, log)
			if err != nil {
				return err
			}
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
				st := b.Status()
				w.Header().Set("Content-Type", "application/json")
				if !st.Connected {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
				fmt.Fprintf(w, `{"ready":%t,"pircan":{"connected":%t,"identified":%t,"joined":%t}}`+"\n",
					st.Connected, st.Connected, st.Identified, st.Joined)
			})
			l, err := net.Listen("tcp", httpAddr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", httpAddr, err)
			}
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(l) }()
			log.Info("pircan: metrics and readiness", "url", "http://"+l.Addr().String()+"/readyz")
			wait()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	o.flags(f)
	f.StringVar(&httpAddr, "http", envOr("PIRCAN_HTTP_ADDR", "127.0.0.1:8081"), "HOST:PORT of /metrics and /readyz (env PIRCAN_HTTP_ADDR)")
	f.StringVar(&database, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL of the venue's store (env DATABASE_URL; default: in memory, shared with nothing)")
	f.StringVar(&redisURL, "redis-url", os.Getenv("REDIS_URL"), "Redis URL of the venue's bus: handshake pushes to and from venue nodes (env REDIS_URL; default: in process)")
	f.StringVar(&redisPrefix, "redis-prefix", envOr("VENUE_REDIS_PREFIX", backends.DefaultRedisPrefix), "the venue's Redis prefix (env VENUE_REDIS_PREFIX)")
	f.StringVar(&logLevel, "log-level", envOr("VENUE_LOG_LEVEL", "info"), "debug, info, warn or error (env VENUE_LOG_LEVEL)")
	cmd.AddCommand(channelCmd())
	return cmd
}

// closeBackends closes b after its users stopped, logging what failed.
func closeBackends(b *backends.Set, log *slog.Logger) {
	if err := b.Close(); err != nil {
		log.Warn("close backends", "err", err)
	}
}

// channelCmd is `venue pircan channel ...`: operators create, list, invite
// to and remove the channels PIRCAN lists, in the venue's Postgres store.
func channelCmd() *cobra.Command {
	var database, topic string
	var private bool
	cmd := &cobra.Command{
		Use:   "channel",
		Short: "Manage the channels PIRCAN lists (in the store of DATABASE_URL)",
	}
	cmd.PersistentFlags().StringVar(&database, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL of the venue's store (env DATABASE_URL; required)")
	withState := func(cmd *cobra.Command, f func(ctx context.Context, st pircan.State) error) error {
		if database == "" {
			return errors.New("set DATABASE_URL or --database-url: channels live in the venue's Postgres store")
		}
		log, _ := newLogger("warn", "text")
		b, err := backends.Open(cmd.Context(), backends.Config{DatabaseURL: database, Logger: log})
		if err != nil {
			return err
		}
		defer closeBackends(b, log)
		return f(cmd.Context(), b.Bridge)
	}
	put := &cobra.Command{
		Use: "put NAME", Short: "Create a channel or change its privacy and topic", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := pircan.ChannelConfig{Name: args[0], Private: private, Topic: topic}
			if err := c.Check(); err != nil {
				return err
			}
			return withState(cmd, func(ctx context.Context, st pircan.State) error {
				return applyChannels(ctx, st, []pircan.ChannelConfig{c})
			})
		},
	}
	put.Flags().BoolVar(&private, "private", false, "listed only to members and invited agents; admitted by account (+I R:<account>)")
	put.Flags().StringVar(&topic, "topic", "", "the topic CHANNELS shows")
	invite := &cobra.Command{
		Use: "invite NAME AGENT_ID...", Short: "Let agents join a private channel", Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withState(cmd, func(ctx context.Context, st pircan.State) error {
				for _, id := range args[1:] {
					if err := st.Invite(ctx, pircan.ChannelKey(args[0]), id, time.Now()); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Remove a channel with its members and invitations", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withState(cmd, func(ctx context.Context, st pircan.State) error {
				return st.DeleteChannel(ctx, pircan.ChannelKey(args[0]))
			})
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List every channel, private ones included", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withState(cmd, func(ctx context.Context, st pircan.State) error {
				chans, _, err := st.Channels(ctx, pircan.ChannelQuery{All: true, Limit: 10000})
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tPRIVATE\tMEMBERS\tTOPIC")
				for _, c := range chans {
					fmt.Fprintf(w, "%s\t%t\t%d\t%s\n", c.Name, c.Private, c.Members, c.Topic)
				}
				return w.Flush()
			})
		},
	}
	cmd.AddCommand(put, invite, rm, list)
	return cmd
}

// servePircan starts the bridge inside `venue serve` (o.addr is set) on
// the node's handshake: it returns the bridge and a stop that cancels it
// and waits for it.
func servePircan(ctx context.Context, o pircanOptions, bk *backends.Set, links pircanLinks, log *slog.Logger) (*pircan.Bridge, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	b, wait, err := startPircan(ctx, o, bk, links, log)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return b, func() { cancel(); wait() }, nil
}
