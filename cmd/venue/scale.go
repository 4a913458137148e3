package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/bench"
)

// scaleFlags are bench's scale-out flags (BENCHMARKS.md "Scale out: three
// nodes"): --nodes above 1 runs bench.RunScale instead of the one-node run.
type scaleFlags struct {
	nodes, procs int
	poolConns    int
	measure      time.Duration
	dbLatency    time.Duration
	noCut, fresh bool
	dir          string
}

func (s *scaleFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&s.nodes, "nodes", 1, "venue nodes on --database-url and --redis-url (both required above 1): a scale-out run with a reconnect storm, --negotiations and --rate in all")
	f.IntVar(&s.procs, "procs", 4, "with --nodes: load-generator processes sharing the negotiations (each holds its sockets' file descriptors)")
	f.DurationVar(&s.measure, "measure", 40*time.Second, "with --nodes: how long the load runs before one node is killed, and again after")
	f.BoolVar(&s.noCut, "no-cut", false, "with --nodes: no reconnect storm (no node killed)")
	f.BoolVar(&s.fresh, "fresh-schema", true, "with --nodes: run the venue in a new schema of --database-url's database (venue_scale_<time>), dropped at the end; false: the URL's own search_path")
	f.IntVar(&s.poolConns, "pool-conns", 0, "with --nodes: each node's Postgres pool (pool_max_conns; 0: the venue's default, 16)")
	f.DurationVar(&s.dbLatency, "db-latency", 0, "with --nodes: a proxy between the nodes and Postgres delays every chunk both ways by this (with a small --pool-conns, the pool runs dry)")
	f.StringVar(&s.dir, "dir", "", "with --nodes: folder for the nodes' and workers' logs (default a temporary one)")
}

// runScale is bench with --nodes > 1: a JSON report on out, exit 1 when a
// check failed.
func runScale(ctx context.Context, cmd *cobra.Command, o benchOptions, s scaleFlags) error {
	if o.databaseURL == "" || o.redisURL == "" {
		return fmt.Errorf("--nodes %d needs --database-url and --redis-url: the nodes share them", s.nodes)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "venue-scale-"); err != nil {
			return err
		}
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	rep, err := bench.RunScale(ctx, bench.Scale{Binary: exe, DatabaseURL: o.databaseURL, RedisURL: o.redisURL, Dir: s.dir,
		Nodes: s.nodes, Procs: s.procs, Negotiations: o.negotiations, Rate: o.rate, Measure: s.measure, NoCut: s.noCut, FreshSchema: s.fresh, PoolConns: s.poolConns, DBLatency: s.dbLatency, ProfileDir: o.profileDir, Log: cmd.ErrOrStderr()})
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
	if err != nil {
		return fmt.Errorf("scale run (logs in %s): %w", s.dir, err)
	}
	if !rep.OK {
		return fmt.Errorf("scale run failed a check (logs in %s)", s.dir)
	}
	return nil
}

// benchScaleWorkerCmd is the hidden load-generator process of a scale run.
func benchScaleWorkerCmd() *cobra.Command {
	var w bench.ScaleWorker
	var nodes string
	cmd := &cobra.Command{
		Use: "bench-scale-worker", Hidden: true, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w.Nodes = strings.Split(nodes, ",")
			return bench.RunScaleWorker(cmd.Context(), w, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodes, "nodes", "", "the nodes' base URLs, comma-separated")
	f.IntVar(&w.Offset, "offset", 0, "the first negotiation's index in the run")
	f.IntVar(&w.Count, "count", 0, "negotiations of this process")
	f.DurationVar(&w.Interval, "interval", 4*time.Second, "between two moves of one negotiation")
	return cmd
}
