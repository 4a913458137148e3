// Package run assembles and runs the PIRCAN bridge of a process (PIRCAN.md
// "Running the bridge"): its options from the PIRCAN_* environment and
// flags, the handshake it calls (a node's, or its own on the venue's
// backends when it runs alone), the channels file applied at start, the
// bridge's goroutine, and the standalone bridge's /metrics and /readyz
// (PIRCAN.md "Status and metrics"). `venue serve` and `venue pircan` are its
// shell.
package run

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/directory"
	venueevents "github.com/venuehq/venue/events"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/pircan"
)

// Options configure the bridge (PIRCAN.md "Configuration"). Every one has
// an environment variable; `venue serve` reads only the environment,
// `venue pircan` also takes flags.
type Options struct {
	Addr       string // PIRCAN_IRC_ADDR: the bridge runs when it is set
	TLS        bool   // PIRCAN_IRC_TLS (default true)
	CAFile     string // PIRCAN_IRC_CA_FILE
	Nick       string // PIRCAN_NICK
	Account    string // PIRCAN_ACCOUNT
	Password   string // PIRCAN_PASSWORD (environment only)
	ServerPass string // PIRCAN_IRC_PASS (environment only)
	Lobby      string // PIRCAN_LOBBY
	Channels   string // PIRCAN_CHANNELS: a channels file applied at start
	DocsURL    string // PIRCAN_DOCS_URL
}

// FromEnv reads the PIRCAN_* environment. Errors: PIRCAN_IRC_TLS neither
// true nor false.
func FromEnv() (Options, error) {
	o := Options{
		Addr: os.Getenv("PIRCAN_IRC_ADDR"), CAFile: os.Getenv("PIRCAN_IRC_CA_FILE"),
		Nick: envOr("PIRCAN_NICK", "PIRCAN"), Account: os.Getenv("PIRCAN_ACCOUNT"), Password: os.Getenv("PIRCAN_PASSWORD"),
		ServerPass: os.Getenv("PIRCAN_IRC_PASS"), Lobby: envOr("PIRCAN_LOBBY", "#agents"),
		Channels: os.Getenv("PIRCAN_CHANNELS"), DocsURL: os.Getenv("PIRCAN_DOCS_URL"), TLS: true,
	}
	if v := os.Getenv("PIRCAN_IRC_TLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("PIRCAN_IRC_TLS=%q: want true or false", v)
		}
		o.TLS = b
	}
	return o, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Flags adds the options' flags to f, defaulting to what they hold (the
// environment's, from FromEnv).
func (o *Options) Flags(f *pflag.FlagSet) {
	f.StringVar(&o.Addr, "irc-addr", o.Addr, "IRC server HOST:PORT (env PIRCAN_IRC_ADDR)")
	f.BoolVar(&o.TLS, "irc-tls", o.TLS, "connect with TLS, verifying the certificate; false for plaintext (env PIRCAN_IRC_TLS)")
	f.StringVar(&o.CAFile, "irc-ca-file", o.CAFile, "PEM file of the CA to trust for the IRC server instead of the system's (env PIRCAN_IRC_CA_FILE)")
	f.StringVar(&o.Nick, "nick", o.Nick, "the bridge's nick (env PIRCAN_NICK)")
	f.StringVar(&o.Account, "account", o.Account, "the bridge's NickServ account, registered beforehand; its password comes from PIRCAN_PASSWORD (env PIRCAN_ACCOUNT)")
	f.StringVar(&o.Lobby, "lobby", o.Lobby, "the lobby channel (env PIRCAN_LOBBY)")
	f.StringVar(&o.Channels, "channels", o.Channels, "a channels file (JSON array of {name, private, topic, invite}) applied at start (env PIRCAN_CHANNELS)")
	f.StringVar(&o.DocsURL, "docs-url", o.DocsURL, "where HELP points (env PIRCAN_DOCS_URL)")
}

// config is the bridge's pircan.Config of the options.
func (o Options) config(log *slog.Logger) pircan.Config {
	return pircan.Config{Addr: o.Addr, TLS: o.TLS, CAFile: o.CAFile, Nick: o.Nick, Account: o.Account, Password: o.Password,
		ServerPassword: o.ServerPass, Lobby: o.Lobby, DocsURL: o.DocsURL, Clock: clock.Real{}, Logger: log.With("component", "pircan")}
}

// Links are what the bridge's handshake verbs call: the node's handshake
// service and owner portal (venue.Server.Handshake in serve) and the bus
// that wakes it when an agent gets an event on any node, and where its
// series go.
type Links struct {
	Handshake *handshake.Service
	Portal    *handshake.Portal
	Events    pircan.AgentEvents
	Metrics   prometheus.Registerer // the registry /metrics serves
}

// Standalone is the handshake of `venue pircan`, which runs no venue node:
// on the venue's handshake store (Postgres: the same tables the venue
// nodes use), with the IRC account bindings, pushing lobby frames on the
// bus (reaching venue nodes when it is Redis) and into the agents' event
// logs (PROTOCOL.md "Without a socket").
func Standalone(b *backends.Set, log *slog.Logger) (Links, error) {
	events := pircan.BusEvents{Bus: b.Bus}
	push := venueevents.Recording(events, b.Events, time.Now, log)
	svc, err := handshake.New(handshake.Service{Store: b.Handshake, Agents: &directory.Service{Store: b.Store, Now: time.Now},
		Accounts: directory.IRCAccounts{Store: b.Store}, Push: push, NewID: directory.NewID, Log: log})
	if err != nil {
		return Links{}, err
	}
	return Links{Handshake: svc, Portal: &handshake.Portal{Service: svc}, Events: events}, nil
}

// Start checks the options, applies the channels file and starts the
// bridge on the venue's backends with the handshake of links; wait blocks
// until it stopped (after ctx ends).
func Start(ctx context.Context, o Options, bk *backends.Set, links Links, log *slog.Logger) (b *pircan.Bridge, wait func(), err error) {
	cfg := o.config(log)
	cfg.Handshake, cfg.Portal, cfg.Events, cfg.Metrics = links.Handshake, links.Portal, links.Events, links.Metrics
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	st := bk.Bridge
	if o.Channels != "" {
		chans, err := pircan.ReadChannels(o.Channels)
		if err != nil {
			return nil, nil, err
		}
		if err := ApplyChannels(ctx, st, chans, time.Now()); err != nil {
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
	log.Info("pircan: bridge starting", "irc", o.Addr, "tls", o.TLS, "nick", o.Nick, "lobby", o.Lobby)
	return b, func() { <-done }, nil
}

// Serve starts the bridge inside `venue serve` (o.Addr is set) on the
// node's handshake: it returns the bridge and a stop that cancels it and
// waits for it.
func Serve(ctx context.Context, o Options, bk *backends.Set, links Links, log *slog.Logger) (*pircan.Bridge, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	b, wait, err := Start(ctx, o, bk, links, log)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return b, func() { cancel(); wait() }, nil
}

// ApplyChannels creates or changes each channel of chans in st and invites
// its agents (PIRCAN.md "Channels"), at now.
func ApplyChannels(ctx context.Context, st pircan.State, chans []pircan.ChannelConfig, now time.Time) error {
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

// StatusHandler serves the standalone bridge's /metrics (reg) and /readyz
// (PIRCAN.md "Status and metrics"): 200 once b is connected, 503 before,
// with {"ready","pircan":{"connected","identified","joined"}}.
func StatusHandler(b *pircan.Bridge, reg prometheus.Gatherer) http.Handler {
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
	return mux
}
