package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/internal/promreg"
	"github.com/venuehq/venue/pircan"
	pircanrun "github.com/venuehq/venue/pircan/run"
)

// pircanCmd is `venue pircan`: the bridge on its own, with /metrics and
// /readyz on --http, and the operators' channel commands.
func pircanCmd() *cobra.Command {
	o, envErr := pircanrun.FromEnv()
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
			if o.Addr == "" {
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
			links, err := pircanrun.Standalone(bk, log)
			if err != nil {
				return err
			}
			reg := promreg.NewRegistry()
			links.Metrics = reg
			b, wait, err := pircanrun.Start(ctx, o, bk, links, log)
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", httpAddr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", httpAddr, err)
			}
			srv := &http.Server{Handler: pircanrun.StatusHandler(b, reg), ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(l) }()
			log.Info("pircan: metrics and readiness", "url", "http://"+l.Addr().String()+"/readyz")
			wait()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	o.Flags(f)
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
				return pircanrun.ApplyChannels(ctx, st, []pircan.ChannelConfig{c}, time.Now())
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
