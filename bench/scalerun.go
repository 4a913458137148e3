package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/venuehq/venue/internal/freeport"
)

// Scale is a scale-out run (BENCHMARKS.md "Scale out: three nodes"): Nodes
// venue nodes (Binary serve) on one Postgres and one Redis, Procs worker
// processes (Binary bench-scale-worker, see RunScaleWorker) sharing
// Negotiations, Rate frames a second in all; after Measure, one node is
// killed and the run goes on for Measure more.
type Scale struct {
	Binary      string
	DatabaseURL string
	RedisURL    string
	// RedisPrefix of the run's venue (default a fresh one, whose keys are
	// deleted at the end).
	RedisPrefix  string
	Dir          string // node and worker logs
	Nodes        int    // default 3
	Procs        int    // default 4
	Negotiations int    // default 10,000
	Rate         float64
	Measure      time.Duration // default 40 s
	// NoCut skips the reconnect storm.
	NoCut bool
	// FreshSchema runs the venue in a new Postgres schema of
	// DatabaseURL's database (venue_scale_<time>), dropped at the end, so
	// no negotiation or wake of an earlier run takes part.
	FreshSchema bool
	// PoolConns, if set, is each node's Postgres pool (pool_max_conns in
	// its URL; the venue's default is 16): a small pool shows what the
	// venue does when it runs out of connections.
	PoolConns int
	// DBLatency, if set, puts a fault proxy (chaos/faultproxy) between the
	// nodes and Postgres that, from "go" on (setup runs at full speed),
	// delays every chunk both ways by it: with a small pool, the nodes run
	// out of connections and answer frames unavailable, which must never
	// lose or reorder an acked frame.
	DBLatency time.Duration
	// ProfileDir, if set, starts the nodes with --pprof and saves 10 s CPU
	// profiles of node 2 into it: node2-setup.pprof (5 s after the workers start),
	// node2-load.pprof (the middle of the first Measure) and
	// node2-storm.pprof (from the cut). Profiling costs CPU: take figures
	// from a run without it.
	ProfileDir string
	// Log gets progress lines (nil: none).
	Log io.Writer
}

// ScaleReport is a scale run's figures and checks.
type ScaleReport struct {
	Nodes        int     `json:"nodes"`
	Procs        int     `json:"procs"`
	Negotiations int     `json:"negotiations"`
	SetupFailed  int     `json:"setup_failed"`
	Sockets      int     `json:"sockets"`
	SetupSeconds float64 `json:"setup_seconds"`
	// LiveAtGo is the negotiations live (set up, not ended) when the
	// measured phase began; OldestAgeAtStop the seconds from the start of
	// setup to the stop, more than any negotiation's age then (each ends
	// at its 480 s deadline).
	LiveAtGo        int     `json:"live_at_go"`
	OldestAgeAtStop float64 `json:"oldest_age_at_stop_seconds"`
	// SocketsPerNode is each node's party sockets (venue_connections) just
	// before the cut, and after it (the cut node's is 0).
	SocketsPerNode      []int   `json:"sockets_per_node"`
	SocketsPerNodeAfter []int   `json:"sockets_per_node_after_cut,omitempty"`
	RateTarget          float64 `json:"rate_target"`
	// FramesPerSecond is delivered to the other party before the cut;
	// AfterCut over the rest of the run (the storm included).
	FramesPerSecond         float64 `json:"frames_per_second"`
	FramesPerSecondAfterCut float64 `json:"frames_per_second_after_cut"`
	Sent                    int64   `json:"sent"`
	Delivered               int64   `json:"delivered"`
	Entries                 int64   `json:"entries_checked"`
	Gaps                    int64   `json:"gaps"`
	Duplicates              int64   `json:"duplicates"`
	// What the check against the stored transcripts found beside gaps and
	// duplicates (WorkerReport): gaps on sockets no node took back,
	// entries out of order, acked seqs the store does not hold with the
	// sender's id, seqs seen past the store's last, ids stored twice,
	// negotiations whose transcript could not be read, frames unanswered
	// for 15 s on a connection that stayed up.
	Unresumed     int64 `json:"gaps_on_unresumed_sockets"`
	Disorder      int64 `json:"out_of_order"`
	Lost          int64 `json:"lost_acked"`
	Phantom       int64 `json:"phantom"`
	DoubleCommits int64 `json:"double_commits"`
	Unchecked     int   `json:"unchecked"`
	Unanswered    int64 `json:"unanswered"`
	// Ack is the send-to-message_ack latency of every acked frame.
	Ack              AckLatency       `json:"ack"`
	GapSamples       []string         `json:"gap_samples,omitempty"`
	CutNode          int              `json:"cut_node,omitempty"`
	CutSockets       int              `json:"cut_sockets"`
	Resumed          int              `json:"resumed"`
	ResumedWithin10s int              `json:"resumed_within_10s"`
	Resume           Dist             `json:"resume"`
	DropsBeforeCut   int64            `json:"drops_before_cut"`
	DropReasons      map[string]int64 `json:"drop_reasons,omitempty"`
	EndedEarly       int64            `json:"ended_early"`
	Errors           map[string]int64 `json:"errors"`
	Load             [3]float64       `json:"load_average_start_cut_end"`
	// Phases is the CPU each part of the run used in setup, before the cut
	// and after it (ScalePhase).
	Phases []ScalePhase `json:"phases"`
	OK     bool         `json:"ok"`
}

type scaleNode struct {
	url, admin string
	cmd        *exec.Cmd
}

type scaleProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// scaleRunner is one RunScale: its processes, CPU readings and what must
// be undone at the end (in reverse order).
type scaleRunner struct {
	s     Scale
	rep   ScaleReport
	meter *cpuMeter
	nodes []*scaleNode
	procs []*scaleProc
	urls  []string
	slow  func() // turns the database latency on
	undo  []func()
	// readings at the start of setup, at "go", at the cut and at "stop"
	atStart, atGo, atCut, atStop cpuReading

	profiles  sync.WaitGroup
	profiling sync.Mutex // one CPU profile at a time
	profCtx   context.Context
}

func (r *scaleRunner) logf(format string, args ...any) {
	if r.s.Log != nil {
		fmt.Fprintf(r.s.Log, "scale: "+format+"\n", args...)
	}
}

// RunScale runs s and reports; the report's OK is false when a socket saw
// a gap, a duplicate or an entry out of order, an acked frame is not in
// the store at its seq (or a socket saw a seq the store does not have, or
// a frame was stored twice), a transcript could not be checked, a cut
// socket did not resume within 10 s, or a socket dropped before the cut.
func RunScale(ctx context.Context, s Scale) (ScaleReport, error) {
	s.Nodes, s.Procs = cmpOr(s.Nodes, 3), cmpOr(s.Procs, 4)
	s.Negotiations = cmpOr(s.Negotiations, 10000)
	if s.Rate <= 0 {
		s.Rate = 2500
	}
	if s.Measure <= 0 {
		s.Measure = 40 * time.Second
	}
	r := &scaleRunner{s: s, slow: func() {}, rep: ScaleReport{Nodes: s.Nodes, Procs: s.Procs, Negotiations: s.Negotiations,
		Sockets: 2 * s.Negotiations, RateTarget: s.Rate, Errors: map[string]int64{}}}
	r.rep.Load[0] = loadAverage()
	defer func() {
		for i := len(r.undo) - 1; i >= 0; i-- {
			r.undo[i]()
		}
	}()
	for _, step := range []func(context.Context) error{r.prepare, r.startNodes, r.startWorkers, r.drive, r.collect} {
		if err := step(ctx); err != nil {
			return r.rep, err
		}
	}
	return r.rep, nil
}

// prepare makes the run's folders, its fresh schema and the proxy to
// Postgres when asked, and the CPU meter.
func (r *scaleRunner) prepare(ctx context.Context) error {
	s := &r.s
	for _, d := range []string{s.Dir, s.ProfileDir} {
		if err := os.MkdirAll(cmp.Or(d, s.Dir), 0o755); err != nil {
			return err
		}
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	if s.RedisPrefix == "" {
		s.RedisPrefix = "venue-scale-" + run
		r.undo = append(r.undo, func() { dropRedisPrefix(s.RedisURL, s.RedisPrefix) })
	}
	if s.FreshSchema {
		u, drop, err := freshSchema(ctx, s.DatabaseURL, "venue_scale_"+run)
		if err != nil {
			return err
		}
		r.undo = append(r.undo, drop)
		s.DatabaseURL = u
		r.logf("schema venue_scale_%s (dropped at the end)", run)
	}
	r.meter = &cpuMeter{databaseURL: s.DatabaseURL, app: "venue-scale-" + run}
	s.DatabaseURL = withApp(s.DatabaseURL, r.meter.app)
	if s.PoolConns > 0 {
		s.DatabaseURL = withParam(s.DatabaseURL, "pool_max_conns", strconv.Itoa(s.PoolConns))
	}
	if s.DBLatency > 0 {
		u, proxy, err := slowPath(s.DatabaseURL)
		if err != nil {
			return err
		}
		r.undo = append(r.undo, proxy.Close)
		s.DatabaseURL = u // the nodes' way; the meter keeps the direct one
		r.slow = func() {
			proxy.SetLatency(s.DBLatency)
			r.logf("Postgres reached through a proxy adding %v each way from now on", s.DBLatency)
		}
	}
	pctx, cancel := context.WithCancel(ctx)
	r.profCtx = pctx
	r.undo = append(r.undo, func() { cancel(); r.profiles.Wait() })
	return nil
}

// startNodes starts the venue nodes; at the end each gets SIGTERM (then
// SIGKILL after 10 s).
func (r *scaleRunner) startNodes(ctx context.Context) error {
	r.undo = append(r.undo, func() {
		for _, n := range r.nodes {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, n := range r.nodes {
			done := make(chan struct{})
			go func() { _ = n.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = n.cmd.Process.Kill()
			}
		}
	})
	for i := range r.s.Nodes {
		n, err := startScaleNode(ctx, r.s, i)
		if err != nil {
			return err
		}
		r.nodes = append(r.nodes, n)
		r.urls = append(r.urls, n.url)
		r.meter.nodes = append(r.meter.nodes, n.cmd.Process.Pid)
	}
	r.logf("%d nodes up: %s", len(r.nodes), strings.Join(r.urls, " "))
	return nil
}

// startWorkers starts the load-generator processes and waits until each
// has set up its negotiations.
func (r *scaleRunner) startWorkers(ctx context.Context) error {
	s := r.s
	r.undo = append(r.undo, func() {
		for _, p := range r.procs {
			_ = p.in.Close()
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	interval := time.Duration(float64(s.Negotiations) / s.Rate * float64(time.Second))
	r.atStart = r.meter.read(ctx)
	for i := range s.Procs {
		off, count := i*s.Negotiations/s.Procs, (i+1)*s.Negotiations/s.Procs-i*s.Negotiations/s.Procs
		p, err := startScaleProc(ctx, s, i, r.urls, off, count, interval)
		if err != nil {
			return err
		}
		r.procs = append(r.procs, p)
		r.meter.workers = append(r.meter.workers, p.cmd.Process.Pid)
	}
	r.profile(5*time.Second, "node2-setup.pprof")
	for i, p := range r.procs {
		line, err := p.next(ctx, 15*time.Minute)
		if err != nil || !strings.HasPrefix(line, "ready") {
			return fmt.Errorf("worker %d did not get ready (%q, %v): see %s", i+1, line, err, filepath.Join(s.Dir, fmt.Sprintf("worker%d.log", i+1)))
		}
	}
	r.rep.SetupSeconds = time.Since(r.atStart.at).Seconds()
	r.logf("%d negotiations set up, %d sockets open in %.0f s; driving %.0f frames/s", s.Negotiations, 2*s.Negotiations, r.rep.SetupSeconds, s.Rate)
	return nil
}

// profile saves a 10 s CPU profile of node 2 as name, after a wait, when
// the run profiles.
func (r *scaleRunner) profile(after time.Duration, name string) {
	if r.s.ProfileDir == "" {
		return
	}
	r.profiles.Go(func() {
		sleepCtx(r.profCtx, after)
		r.profiling.Lock()
		defer r.profiling.Unlock()
		if r.profCtx.Err() != nil {
			return
		}
		if err := saveProfile(r.profCtx, r.nodes[1].admin+"/debug/pprof/profile?seconds=10", filepath.Join(r.s.ProfileDir, name)); err != nil {
			r.logf("profile %s: %v", name, err)
		}
	})
}

// tell writes a line to every worker.
func (r *scaleRunner) tell(line string) {
	for _, p := range r.procs {
		_, _ = io.WriteString(p.in, line+"\n")
	}
}

// drive runs the measured phases: Measure of load, the cut (node 1
// killed), Measure more, then "stop".
func (r *scaleRunner) drive(ctx context.Context) error {
	s := r.s
	r.slow()
	r.tell("go")
	r.atGo = r.meter.read(ctx)
	r.profile(max(s.Measure/2-5*time.Second, 0), "node2-load.pprof")
	sleepCtx(ctx, s.Measure)
	r.atCut = r.meter.read(ctx)
	for _, n := range r.nodes {
		r.rep.SocketsPerNode = append(r.rep.SocketsPerNode, partySockets(ctx, n.admin))
	}
	if !s.NoCut {
		r.rep.CutNode = 1
		// Every worker counts a drop as the cut's before the kill.
		r.tell("arm")
		for i, p := range r.procs {
			if line, err := p.next(ctx, time.Minute); err != nil || line != "armed" {
				return fmt.Errorf("worker %d did not arm for the cut (%q, %v)", i+1, line, err)
			}
		}
		_ = r.nodes[0].cmd.Process.Kill() // SIGKILL: every socket of node 1 cut at once
		r.tell("cut " + strconv.FormatInt(time.Now().UnixNano(), 10))
		r.logf("node 1 killed; its clients resume on the others")
		r.profile(0, "node2-storm.pprof")
		r.rep.Load[1] = loadAverage()
	}
	sleepCtx(ctx, s.Measure)
	if !s.NoCut {
		r.rep.SocketsPerNodeAfter = append(r.rep.SocketsPerNodeAfter, 0)
		for _, n := range r.nodes[1:] {
			r.rep.SocketsPerNodeAfter = append(r.rep.SocketsPerNodeAfter, partySockets(ctx, n.admin))
		}
	}
	r.atStop = r.meter.read(ctx)
	r.tell("stop")
	return ctx.Err()
}

// collect reads every worker's report and sums them up.
func (r *scaleRunner) collect(ctx context.Context) error {
	var sum workerSum
	sum.acks = make([]int64, len(ackBounds)+1)
	for i, p := range r.procs {
		line, err := p.next(ctx, 5*time.Minute) // the worker checks against the store first
		var w WorkerReport
		if err == nil {
			err = json.Unmarshal([]byte(line), &w)
		}
		if err != nil {
			return fmt.Errorf("worker %d report: %v (%q)", i+1, err, line)
		}
		sum.add(&r.rep, w)
	}
	rep, s := &r.rep, r.s
	atCut, cutAt, atCutCPU := sum.atCut, r.atCut.at, r.atCut
	if s.NoCut { // one phase, go to stop
		atCut, cutAt, atCutCPU = rep.Delivered, r.atStop.at, r.atStop
	} else {
		rep.FramesPerSecondAfterCut = float64(rep.Delivered-atCut) / r.atStop.at.Sub(cutAt).Seconds()
	}
	rep.FramesPerSecond = float64(atCut) / cutAt.Sub(r.atGo.at).Seconds()
	rep.Resume = sum.resumes.dist()
	rep.Ack = ackLatency(sum.acks)
	rep.Phases = []ScalePhase{phase("setup", r.atStart, r.atGo, 0), phase("before cut", r.atGo, atCutCPU, atCut)}
	if !s.NoCut {
		rep.Phases = append(rep.Phases, phase("after cut", atCutCPU, r.atStop, rep.Delivered-atCut))
	}
	rep.Load[2] = loadAverage()
	rep.OldestAgeAtStop = r.atStop.at.Sub(r.atStart.at).Seconds()
	rep.OK = rep.LossFree() && rep.DropsBeforeCut == 0 && (s.NoCut || (rep.CutSockets > 0 && rep.ResumedWithin10s == rep.CutSockets))
	return nil
}

// LossFree reports whether the run delivered frames and the check against
// the stored transcripts found nothing lost, reordered, doubled or
// unchecked: no gap, duplicate, disorder, lost ack, phantom seq or double
// commit. OK asks this and more (no drop before the cut, every cut socket
// back within 10 s).
func (rep *ScaleReport) LossFree() bool {
	return rep.Delivered > 0 && rep.Gaps == 0 && rep.Duplicates == 0 && rep.Disorder == 0 && rep.Lost == 0 &&
		rep.Phantom == 0 && rep.DoubleCommits == 0 && rep.Unchecked == 0
}

// workerSum is what the workers' reports add up to beside the report's
// own counts.
type workerSum struct {
	resumes samples
	atCut   int64
	acks    []int64
}

// add counts w into rep and sum.
func (sum *workerSum) add(rep *ScaleReport, w WorkerReport) {
	rep.SetupFailed += w.SetupFailed
	rep.Sockets -= 2 * w.SetupFailed
	rep.Sent += w.Sent
	rep.LiveAtGo += w.LiveAtGo
	rep.Delivered += w.Delivered
	sum.atCut += w.DeliveredAtCut
	rep.Entries += w.Entries
	rep.Gaps += w.Gaps
	rep.GapSamples = append(rep.GapSamples, w.GapSamples...)
	rep.Duplicates += w.Duplicates
	rep.Unresumed += w.Unresumed
	rep.Disorder += w.Disorder
	rep.Lost += w.Lost
	rep.Phantom += w.Phantom
	rep.DoubleCommits += w.DoubleCommits
	rep.Unchecked += w.Unchecked
	rep.Unanswered += w.Unanswered
	for i, c := range w.AckCounts {
		if i < len(sum.acks) {
			sum.acks[i] += c
		}
	}
	rep.CutSockets += w.Cut
	rep.Resumed += w.Resumed
	rep.DropsBeforeCut += w.DropsBeforeCut
	rep.EndedEarly += w.Ended
	for k, v := range w.Errors {
		rep.Errors[k] += v
	}
	for k, v := range w.DropReasons {
		if rep.DropReasons == nil {
			rep.DropReasons = map[string]int64{}
		}
		rep.DropReasons[k] += v
	}
	for _, sec := range w.ResumeSeconds {
		sum.resumes.add(time.Duration(sec * float64(time.Second)))
		if sec <= 10 {
			rep.ResumedWithin10s++
		}
	}
}

func cmpOr(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// startScaleNode starts node i (venue serve) with load-test limits and
// waits until its admin listener answers.
func startScaleNode(ctx context.Context, s Scale, i int) (*scaleNode, error) {
	addrs, err := freeport.Addrs(2)
	if err != nil {
		return nil, err
	}
	addr, admin := addrs[0], addrs[1]
	logf, err := os.Create(filepath.Join(s.Dir, fmt.Sprintf("node%d.log", i+1)))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, s.Binary, "serve", "--addr", addr, "--admin-addr", admin,
		"--database-url", s.DatabaseURL, "--redis-url", s.RedisURL, "--redis-prefix", s.RedisPrefix,
		"--register-per-minute", "1000000", "--frames-per-second", "1000", "--no-house-agents", "--log-level", "warn",
		"--max-connections=-1", "--max-sockets-per-address=-1", "--max-observers=-1")
	if s.ProfileDir != "" {
		cmd.Args = append(cmd.Args, "--pprof")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &scaleNode{url: "http://" + addr, admin: "http://" + admin, cmd: cmd}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(n.admin + "/metrics"); err == nil {
			resp.Body.Close()
			return n, nil
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("node %d did not come up: see %s", i+1, logf.Name())
}

// startScaleProc starts worker i on negotiations off..off+count-1.
func startScaleProc(ctx context.Context, s Scale, i int, urls []string, off, count int, interval time.Duration) (*scaleProc, error) {
	logf, err := os.Create(filepath.Join(s.Dir, fmt.Sprintf("worker%d.log", i+1)))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, s.Binary, "bench-scale-worker", "--nodes", strings.Join(urls, ","),
		"--offset", strconv.Itoa(off), "--count", strconv.Itoa(count), "--interval", interval.String())
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &scaleProc{cmd: cmd, in: in, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p, nil
}

// next is the worker's next line of output.
func (p *scaleProc) next(ctx context.Context, d time.Duration) (string, error) {
	select {
	case l, ok := <-p.lines:
		if !ok {
			return "", errors.New("the worker ended")
		}
		return l, nil
	case <-time.After(d):
		return "", errors.New("timed out")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// saveProfile saves what url answers into file.
func saveProfile(ctx context.Context, url, file string) error {
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
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// partySockets reads venue_connections{kind="party"} from a node's admin
// /metrics; -1 when it cannot.
func partySockets(ctx context.Context, admin string) int {
	req, _ := http.NewRequestWithContext(ctx, "GET", admin+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `venue_connections{kind="party"} `); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}
