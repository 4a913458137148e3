package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/bench"
)

type benchOptions struct {
	url          string
	metricsURL   string
	negotiations int
	observers    int
	rate         float64
	frames       int
	sweep        string
	ttlProbe     bool
	databaseURL  string
	redisURL     string
	jsonOut      bool
	noRelay      bool
	ceiling      bool
	profileDir   string
}

func benchCmd() *cobra.Command {
	var o benchOptions
	var sf scaleFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a venue against a bare WebSocket relay on the same machine",
		Long: `bench opens N concurrent negotiations (2N party sockets, plus observers),
drives M frames per negotiation at a set rate, and reports frames per second,
delivery latency (sender timestamp to receipt at the other party) p50/p95/p99,
proposal-expiry lateness, the server's heap per idle socket and dropped
connections. In the same run it drives the same load through a bare gorilla
relay (no venue logic) and prints venue/relay ratios, so the figures mean
something on a noisy machine.

Without --url it starts its own venue (this binary, "venue serve", with
load-test limits) and relay as child processes on loopback ports, so the
heap figures are the servers' own. With --database-url/--redis-url the child
venue runs on Postgres and Redis.

With --nodes 3 (and --database-url, --redis-url) it is the scale-out run:
three venue nodes, --procs load-generator processes, --negotiations whose two
parties sit on different nodes, --rate frames/s in all; after --measure one
node is killed and its clients resume on the others with since=; every party
socket checks it saw every seq once. See BENCHMARKS.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sf.nodes > 1 {
				return runScale(cmd.Context(), cmd, o, sf)
			}
			return runBench(cmd.Context(), cmd, o)
		},
	}
	sf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "a running venue to load (its limits must allow the run); default: start one")
	f.IntVar(&o.negotiations, "negotiations", 1000, "concurrent negotiations (two party sockets each)")
	f.IntVar(&o.observers, "observers", 0, "observer sockets, spread over the negotiations (default negotiations/10)")
	f.Float64Var(&o.rate, "rate", 5000, "frames per second, all negotiations together")
	f.IntVar(&o.frames, "frames", 60, "frames each negotiation sends per phase (at 5,000 frames/s over 1,000 negotiations, 60 lasts 12 s, past the 10 s ttl probe)")
	f.StringVar(&o.sweep, "sweep", "", "more rates to run after --rate on the same sockets, comma-separated (e.g. 10000,20000,30000,45000)")
	f.BoolVar(&o.ttlProbe, "ttl-probe", true, "open each negotiation with a 10 s proposal and measure proposal_expired lateness")
	f.StringVar(&o.metricsURL, "metrics-url", "", "with --url: the venue's admin listener (http://HOST:PORT), read for heap per socket (default --url)")
	f.StringVar(&o.databaseURL, "database-url", "", "run the child venue on this Postgres")
	f.StringVar(&o.redisURL, "redis-url", "", "run the child venue's timers and fan-out on this Redis")
	f.BoolVar(&o.jsonOut, "json", false, "print the results as JSON")
	f.BoolVar(&o.noRelay, "no-relay", false, "skip the relay baseline")
	f.BoolVar(&o.ceiling, "ceiling", true, "with --database-url: when every asked rate is below 1.25x the bare Postgres loop (which then runs first), one more phase at that rate, so the venue's best is not capped by the rates asked")
	f.StringVar(&o.profileDir, "profile", "", "start the child venue with --pprof and save, from the first phase, a CPU profile (5 s), an execution trace (2 s), block, mutex and allocation profiles (5 s) into this directory")
	return cmd
}

// benchRelayCmd is the hidden child process of the relay baseline.
func benchRelayCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use: "bench-relay", Hidden: true, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if _, err := bench.StartRelay(ctx, addr); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	return cmd
}

// runBench is the one-node run (bench.RunLocal) of the flags.
func runBench(ctx context.Context, cmd *cobra.Command, o benchOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	return bench.RunLocal(ctx, bench.Local{
		Binary: exe, ServeBinary: os.Getenv("VENUE_BENCH_SERVE_BIN"), URL: o.url, MetricsURL: o.metricsURL,
		Negotiations: o.negotiations, Observers: o.observers, Rate: o.rate, Frames: o.frames, Sweep: o.sweep, TTLProbe: o.ttlProbe,
		DatabaseURL: o.databaseURL, RedisURL: o.redisURL, PoolConns: backends.DefaultPoolConns, // the venue's pool, as serve sizes it
		JSON: o.jsonOut, NoRelay: o.noRelay, Ceiling: o.ceiling, ProfileDir: o.profileDir,
	}, cmd.OutOrStdout(), cmd.ErrOrStderr())
}
