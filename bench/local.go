package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/internal/freeport"
	"github.com/venuehq/venue/internal/lockedio"
)

// CapFlags lift the connection caps for the child venue: the bench opens
// thousands of sockets from one address, which a public venue refuses.
var CapFlags = []string{"--max-connections=-1", "--max-sockets-per-address=-1", "--max-observers=-1"}

// Local is the one-node run of `venue bench` (BENCHMARKS.md "How to run"):
// first, when DatabaseURL is set, a bare Postgres loop; then the venue (a
// running one at URL, or a child process of Binary it starts) and, unless
// NoRelay, the bare relay baseline under the same load.
type Local struct {
	// Binary is the venue binary: the children run `Binary serve ...` and
	// `Binary bench-relay ...`. ServeBinary, if set, is the venue child
	// instead (env VENUE_BENCH_SERVE_BIN: an A/B of two builds under one
	// load generator, BENCHMARKS.md "How to reproduce (the quiet runs)").
	Binary, ServeBinary string
	// URL and MetricsURL name a running venue to load ("" starts one).
	URL, MetricsURL string
	Negotiations    int
	Observers       int
	Rate            float64
	Frames          int
	// Sweep is more rates to run after Rate on the same sockets,
	// comma-separated.
	Sweep    string
	TTLProbe bool
	// DatabaseURL and RedisURL run the child venue on Postgres and Redis.
	DatabaseURL, RedisURL string
	// PoolConns is the venue's Postgres pool size when DatabaseURL does
	// not set pool_max_conns: the bare loop's connections.
	PoolConns int
	JSON      bool
	NoRelay   bool
	// Ceiling, with DatabaseURL, adds one phase past the asked rates when
	// they all stay below CeilingOver times the bare loop's rate (see
	// ceilingRate), so the venue's best is not capped by the rates asked.
	Ceiling bool
	// ProfileDir, if set, starts the child with --pprof and keeps the
	// first phase's profiles there (SaveProfiles).
	ProfileDir string
}

// sweep parses l.Sweep.
func (l Local) sweep() ([]float64, error) {
	var rates []float64
	for _, r := range strings.Split(l.Sweep, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		v, err := strconv.ParseFloat(r, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--sweep %q: want positive rates separated by commas", l.Sweep)
		}
		rates = append(rates, v)
	}
	return rates, nil
}

// RunLocal runs l, reports on out (a table, or JSON) and its progress on
// errw, with the child processes' stderr. errw may be any writer: one
// that is not an *os.File (which the children write themselves) has the
// children's output copied into it while the run writes its progress, so
// RunLocal serializes its writes. It fails when a run fails, and when the
// venue dropped connections or answered error frames.
func RunLocal(ctx context.Context, l Local, out, errw io.Writer) error {
	if _, ok := errw.(*os.File); !ok {
		errw = &lockedio.Writer{W: errw}
	}
	cfg := Config{Negotiations: l.Negotiations, Observers: l.Observers, Rate: l.Rate, Frames: l.Frames, TTLProbe: l.TTLProbe, Progress: errw}
	var err error
	if cfg.Sweep, err = l.sweep(); err != nil {
		return err
	}
	host := startHost()
	// The bare loop runs first, before the venue starts: its rate decides
	// whether the ceiling phase runs.
	var loop *PGLoop
	var ceiling float64
	if l.DatabaseURL != "" {
		if loop, err = l.pgLoop(ctx, errw); err != nil {
			return err
		}
		if r, ok := ceilingRate(append([]float64{cfg.Rate}, cfg.Sweep...), loop.PerSecond); ok && l.Ceiling {
			ceiling = r
			cfg.Sweep = append(cfg.Sweep, r)
			fmt.Fprintf(errw, "bench: the asked rates stop below %.2fx the bare loop (%.0f tx/s): one more phase at %.0f frames/s finds the venue's best\n", CeilingOver, loop.PerSecond, r)
		}
	}
	backend, stopVenue, err := l.venue(ctx, &cfg, errw)
	if err != nil {
		return err
	}
	defer stopVenue()
	if l.ProfileDir != "" {
		if err := os.MkdirAll(l.ProfileDir, 0o755); err != nil {
			return err
		}
		cfg.Profile = func(ctx context.Context) { SaveProfiles(ctx, cfg.MetricsURL, l.ProfileDir, errw) }
	}
	fmt.Fprintf(errw, "bench: venue (%s): %d negotiations, %d frames each at %.0f frames/s\n", backend, cfg.Negotiations, cfg.Frames, cfg.Rate)
	v, err := RunVenue(ctx, cfg)
	if err != nil {
		return fmt.Errorf("venue run: %w", err)
	}
	var r *Result
	if !l.NoRelay {
		if r, err = l.relay(ctx, cfg, errw); err != nil {
			return err
		}
	}
	hs := host.end()
	var pb *PGBest
	if loop != nil {
		pb = bestOf(v, *loop, ceiling)
	}
	if l.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"backend": backend, "venue": v, "relay": r, "ratios": Compare(v, r), "postgres_loop": loop, "postgres_best": pb, "host": hs})
	}
	Report(out, backend, v, r)
	fmt.Fprintln(out, hs)
	if pb != nil {
		fmt.Fprintf(out, "postgres: bare one-row-update loop %.0f tx/s on %d connections; venue's best %.0f frames/s = %.2f of it (the venue groups many frames per commit)",
			loop.PerSecond, loop.Workers, pb.FramesPerSecond, pb.OfLoop)
		if pb.CeilingRate > 0 {
			fmt.Fprintf(out, "; the last phase, at %.0f/s, was added because the asked rates stopped below %.2fx the loop", pb.CeilingRate, CeilingOver)
		}
		fmt.Fprintln(out)
	}
	if v.Dropped > 0 || v.Errors > 0 {
		return fmt.Errorf("%d dropped connections, %d error frames during the run", v.Dropped, v.Errors)
	}
	return nil
}

// CeilingOver is how far past the bare Postgres loop's rate the venue is
// offered load before its best counts as found: the ceiling phase runs at
// this multiple of the loop's rate.
const CeilingOver = 1.25

// ceilingRate returns the rate of the ceiling phase for the asked rates
// (frames/s) and the bare loop's rate (tx/s): CeilingOver times the loop,
// rounded up to a multiple of 500, and true when every asked rate is below
// that. A venue that keeps up with its highest asked rate delivers no more
// than it, so without this phase its best over the loop (BENCHMARKS.md,
// "Read, per run") would measure the rates asked on a fast disk, not the
// venue.
func ceilingRate(asked []float64, loop float64) (float64, bool) {
	r := math.Ceil(CeilingOver*loop/500) * 500
	if loop <= 0 || slices.Max(asked) >= r {
		return 0, false
	}
	return r, true
}

// PGBest is the venue's best delivered rate on Postgres against the bare
// loop's (the JSON report's "postgres_best").
type PGBest struct {
	// FramesPerSecond is the highest delivered rate of any phase.
	FramesPerSecond float64 `json:"frames_per_second"`
	// OfLoop is FramesPerSecond over the loop's transactions a second
	// (target >= 1.0, BENCHMARKS.md "Read, per run").
	OfLoop float64 `json:"of_loop"`
	// CeilingRate is the ceiling phase's rate, frames/s (0: none ran).
	CeilingRate float64 `json:"ceiling_rate,omitempty"`
}

// bestOf is v's best delivered rate against loop; ceiling is the rate of
// the ceiling phase (0: none).
func bestOf(v Result, loop PGLoop, ceiling float64) *PGBest {
	best := v.FramesPerSecond
	for _, p := range v.Sweep {
		best = max(best, p.FramesPerSecond)
	}
	pb := &PGBest{FramesPerSecond: best, CeilingRate: ceiling}
	if loop.PerSecond > 0 {
		pb.OfLoop = best / loop.PerSecond
	}
	return pb
}

// venue points cfg at l.URL, or starts the child venue with load-test
// limits and points cfg at it. It returns the backend's name and how to
// stop the child.
func (l Local) venue(ctx context.Context, cfg *Config, errw io.Writer) (string, func(), error) {
	if l.URL != "" {
		cfg.URL, cfg.MetricsURL = l.URL, l.MetricsURL
		cfg.Server = &Server{MetricsURL: cmp.Or(l.MetricsURL, l.URL)}
		return "external venue at " + l.URL, func() {}, nil
	}
	addrs, err := freeport.Addrs(2)
	if err != nil {
		return "", nil, err
	}
	addr, admin := addrs[0], addrs[1]
	backend := "embedded default"
	args := []string{"serve", "--addr", addr, "--admin-addr", admin, "--register-per-minute", "1000000",
		"--frames-per-second", "1000", "--log-level", "warn"}
	args = append(args, CapFlags...)
	if l.ProfileDir != "" {
		args = append(args, "--pprof")
	}
	if l.DatabaseURL != "" {
		args = append(args, "--database-url", l.DatabaseURL)
		backend = "postgres"
	}
	if l.RedisURL != "" {
		args = append(args, "--redis-url", l.RedisURL, "--redis-prefix", "venue-bench")
		backend += "+redis"
	}
	cfg.URL, cfg.MetricsURL = "http://"+addr, "http://"+admin
	pid, stop, err := Child(ctx, cmp.Or(l.ServeBinary, l.Binary), cfg.MetricsURL, errw, args...)
	if err != nil {
		return "", nil, err
	}
	cfg.Server = &Server{PID: pid, MetricsURL: cfg.MetricsURL}
	return backend, stop, nil
}

// relay runs the relay baseline in a child process under cfg's load.
func (l Local) relay(ctx context.Context, cfg Config, errw io.Writer) (*Result, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	pid, stopRelay, err := Child(ctx, l.Binary, "http://"+addr, errw, "bench-relay", "--addr", addr)
	if err != nil {
		return nil, err
	}
	defer stopRelay()
	cfg.URL, cfg.MetricsURL, cfg.Profile = "http://"+addr, "", nil
	cfg.Server = &Server{PID: pid, MetricsURL: cfg.URL}
	fmt.Fprintf(errw, "bench: relay baseline, same load\n")
	rr, err := RunRelay(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("relay run: %w", err)
	}
	return &rr, nil
}

// pgLoop runs the bare Postgres loop on as many connections as the
// venue's pool.
func (l Local) pgLoop(ctx context.Context, errw io.Writer) (*PGLoop, error) {
	workers := l.PoolConns
	if pc, err := pgxpool.ParseConfig(l.DatabaseURL); err == nil && strings.Contains(l.DatabaseURL, "pool_max_conns") {
		workers = int(pc.MaxConns)
	}
	fmt.Fprintf(errw, "bench: bare loop of one-row-update transactions on the same Postgres, %d connections (the venue's pool size)\n", workers)
	loop, err := RunPGLoop(ctx, l.DatabaseURL, workers, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("postgres loop: %w", err)
	}
	return &loop, nil
}

// FreeAddr is a loopback HOST:PORT free a moment ago (freeport.Addrs).
func FreeAddr() (string, error) {
	addrs, err := freeport.Addrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// Child starts exe with args (GOMAXPROCS=2, its stderr on stderr) and
// waits up to 30 s until base/metrics answers; it returns the child's pid
// and how to stop it (SIGTERM, then a kill after 10 s).
func Child(ctx context.Context, exe, base string, stderr io.Writer, args ...string) (int, func(), error) {
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

// SaveProfiles saves the venue's profiles of the first phase into dir
// (BENCHMARKS.md "How to reproduce (the quiet runs)"): it waits 2 s for
// the phase to reach its rate, then takes them together from the admin
// listener's /debug/pprof.
func SaveProfiles(ctx context.Context, admin, dir string, errw io.Writer) {
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return
	}
	// The allocation profile is taken as two cumulative snapshots, not a
	// 5 s delta: the runtime publishes allocations at the end of a GC
	// cycle, and a phase often completes none in 5 s (the delta was then
	// empty). Read them with go tool pprof -base allocs-start.pprof.
	if err := fetchTo(ctx, admin+"/debug/pprof/allocs?gc=1", filepath.Join(dir, "allocs-start.pprof")); err != nil {
		fmt.Fprintf(errw, "bench: profile allocs-start.pprof: %v\n", err)
	}
	profiles := []struct{ path, file string }{
		{"profile?seconds=5", "cpu.pprof"},
		{"trace?seconds=2", "trace.out"},
		{"block?seconds=5", "block.pprof"},
		{"mutex?seconds=5", "mutex.pprof"},
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
	// What stays live 7 s into the phase (after a collection): the heap a
	// GC cycle must mark, which sets how long its mark phase runs; the
	// same snapshot's allocation counts end the allocation profile.
	if err := fetchTo(ctx, admin+"/debug/pprof/heap?gc=1", filepath.Join(dir, "heap.pprof")); err != nil {
		fmt.Fprintf(errw, "bench: profile heap.pprof: %v\n", err)
	}
	if err := fetchTo(ctx, admin+"/debug/pprof/allocs", filepath.Join(dir, "allocs.pprof")); err != nil {
		fmt.Fprintf(errw, "bench: profile allocs.pprof: %v\n", err)
	}
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
