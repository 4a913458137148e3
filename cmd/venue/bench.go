package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/bench"
)

// benchCapFlags lift the connection caps for the child venue: the bench opens
// thousands of sockets from one address, which a public venue refuses.
var benchCapFlags = []string{"--max-connections=-1", "--max-sockets-per-address=-1", "--max-observers=-1"}

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

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// child starts this binary with args and waits until base/metrics answers;
// it returns the child's pid and how to stop it.
// With env VENUE_BENCH_SERVE_BIN set, the venue child ("serve") is that
// binary instead: an A/B of two builds under one load generator
// (BENCHMARKS.md "How to reproduce").
func child(ctx context.Context, base string, stderr io.Writer, args ...string) (int, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, err
	}
	if bin := os.Getenv("VENUE_BENCH_SERVE_BIN"); bin != "" && len(args) > 0 && args[0] == "serve" {
		exe = bin
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = stderr
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(2))
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/metrics"); err == nil {
			resp.Body.Close()
			return cmd.Process.Pid, stop, nil
		}
	}
	stop()
	return 0, nil, fmt.Errorf("%s %s did not come up", exe, strings.Join(args, " "))
}

// saveProfiles saves the venue's profiles of the first phase into dir
// (BENCHMARKS.md "How to reproduce"): it waits 2 s for the phase to reach
// its rate, then takes them together.
func saveProfiles(ctx context.Context, admin, dir string, errw io.Writer) {
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return
	}
	profiles := []struct{ path, file string }{
		{"profile?seconds=5", "cpu.pprof"},
		{"trace?seconds=2", "trace.out"},
		{"block?seconds=5", "block.pprof"},
		{"mutex?seconds=5", "mutex.pprof"},
		{"allocs?seconds=5", "allocs.pprof"},
	}
	var wg sync.WaitGroup
	for _, p := range profiles {
		wg.Go(func() {
			if err := fetchTo(ctx, admin+"/debug/pprof/"+p.path, filepath.Join(dir, p.file)); err != nil {
				fmt.Fprintf(errw, "bench: profile %s: %v\n", p.file, err)
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(errw, "bench: profiles of the first phase in %s\n", dir)
}

func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func runBench(ctx context.Context, cmd *cobra.Command, o benchOptions) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	cfg := bench.Config{Negotiations: o.negotiations, Observers: o.observers, Rate: o.rate, Frames: o.frames, TTLProbe: o.ttlProbe, Progress: errw}
	for _, r := range strings.Split(o.sweep, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		v, err := strconv.ParseFloat(r, 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("--sweep %q: want positive rates separated by commas", o.sweep)
		}
		cfg.Sweep = append(cfg.Sweep, v)
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	backend := "embedded default"
	if o.url != "" {
		cfg.URL, cfg.MetricsURL = o.url, o.metricsURL
		backend = "external venue at " + o.url
		cfg.Server = &bench.Server{MetricsURL: cmp.Or(o.metricsURL, o.url)}
	} else {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		admin, err := freeAddr()
		if err != nil {
			return err
		}
		args := []string{"serve", "--addr", addr, "--admin-addr", admin, "--register-per-minute", "1000000",
			"--frames-per-second", "1000", "--log-level", "warn"}
		args = append(args, benchCapFlags...)
		if o.profileDir != "" {
			args = append(args, "--pprof")
		}
		if o.databaseURL != "" {
			args = append(args, "--database-url", o.databaseURL)
			backend = "postgres"
		}
		if o.redisURL != "" {
			args = append(args, "--redis-url", o.redisURL, "--redis-prefix", "venue-bench")
			backend += "+redis"
		}
		cfg.URL, cfg.MetricsURL = "http://"+addr, "http://"+admin
		pid, stopVenue, err := child(ctx, cfg.MetricsURL, errw, args...)
		if err != nil {
			return err
		}
		defer stopVenue()
		cfg.Server = &bench.Server{PID: pid, MetricsURL: cfg.MetricsURL}
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
		cfg.Profile = func(ctx context.Context) { saveProfiles(ctx, cfg.MetricsURL, o.profileDir, errw) }
	}
	fmt.Fprintf(errw, "bench: venue (%s): %d negotiations, %d frames each at %.0f frames/s\n", backend, cfg.Negotiations, cfg.Frames, cfg.Rate)
	v, err := bench.RunVenue(ctx, cfg)
	if err != nil {
		return fmt.Errorf("venue run: %w", err)
	}
	var r *bench.Result
	if !o.noRelay {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		pid, stopRelay, err := child(ctx, "http://"+addr, errw, "bench-relay", "--addr", addr)
		if err != nil {
			return err
		}
		rcfg := cfg
		rcfg.URL, rcfg.MetricsURL, rcfg.Profile = "http://"+addr, "", nil
		rcfg.Server = &bench.Server{PID: pid, MetricsURL: rcfg.URL}
		fmt.Fprintf(errw, "bench: relay baseline, same load\n")
		rr, err := bench.RunRelay(ctx, rcfg)
		stopRelay()
		if err != nil {
			return fmt.Errorf("relay run: %w", err)
		}
		r = &rr
	}
	var loop *bench.PGLoop
	if o.databaseURL != "" {
		workers := backends.DefaultPoolConns // the venue's pool, as serve sizes it
		if pc, err := pgxpool.ParseConfig(o.databaseURL); err == nil && strings.Contains(o.databaseURL, "pool_max_conns") {
			workers = int(pc.MaxConns)
		}
		fmt.Fprintf(errw, "bench: bare loop of one-row-update transactions on the same Postgres, %d connections (the venue's pool size)\n", workers)
		l, err := bench.RunPGLoop(ctx, o.databaseURL, workers, 5*time.Second)
		if err != nil {
			return fmt.Errorf("postgres loop: %w", err)
		}
		loop = &l
	}
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"backend": backend, "venue": v, "relay": r, "ratios": bench.Compare(v, r), "postgres_loop": loop})
	}
	bench.Report(out, backend, v, r)
	if loop != nil {
		best := v.FramesPerSecond
		for _, p := range v.Sweep {
			best = max(best, p.FramesPerSecond)
		}
		fmt.Fprintf(out, "postgres: bare one-row-update loop %.0f tx/s on %d connections; venue's best %.0f frames/s = %.2f of it (the venue groups many frames per commit)\n",
			loop.PerSecond, loop.Workers, best, best/loop.PerSecond)
	}
	if v.Dropped > 0 || v.Errors > 0 {
		return fmt.Errorf("%d dropped connections, %d error frames during the run", v.Dropped, v.Errors)
	}
	return nil
}
