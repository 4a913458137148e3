package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	// RedisPrefix of the run's venue (default a fresh one).
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
	// nodes and Postgres that delays every chunk both ways by it: with a
	// small pool, the nodes run out of connections and answer frames
	// unavailable, which must never lose or reorder an acked frame.
	DBLatency time.Duration
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
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	if s.RedisPrefix == "" {
		s.RedisPrefix = "venue-scale-" + run
	}
	logf := func(format string, args ...any) {
		if s.Log != nil {
			fmt.Fprintf(s.Log, "scale: "+format+"\n", args...)
		}
	}
	rep := ScaleReport{Nodes: s.Nodes, Procs: s.Procs, Negotiations: s.Negotiations, Sockets: 2 * s.Negotiations, RateTarget: s.Rate, Errors: map[string]int64{}}
	rep.Load[0] = loadAverage()
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return rep, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.FreshSchema {
		u, drop, err := freshSchema(ctx, s.DatabaseURL, "venue_scale_"+run)
		if err != nil {
			return rep, err
		}
		defer drop()
		s.DatabaseURL = u
		logf("schema venue_scale_%s (dropped at the end)", run)
	}
	meter := &cpuMeter{databaseURL: s.DatabaseURL, app: "venue-scale-" + run}
	s.DatabaseURL = withApp(s.DatabaseURL, meter.app)
	if s.PoolConns > 0 {
		s.DatabaseURL = withParam(s.DatabaseURL, "pool_max_conns", strconv.Itoa(s.PoolConns))
	}
	nodeDB := s.DatabaseURL
	if s.DBLatency > 0 {
		u, closeProxy, err := slowPath(s.DatabaseURL, s.DBLatency)
		if err != nil {
			return rep, err
		}
		defer closeProxy()
		nodeDB = u
		logf("Postgres reached through a proxy adding %v each way", s.DBLatency)
	}
	var nodes []*scaleNode
	defer func() {
		for _, n := range nodes {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, n := range nodes {
			done := make(chan struct{})
			go func() { _ = n.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = n.cmd.Process.Kill()
			}
		}
	}()
	for i := range s.Nodes {
		n, err := startScaleNode(ctx, s, nodeDB, i)
		if err != nil {
			return rep, err
		}
		nodes = append(nodes, n)
		meter.nodes = append(meter.nodes, n.cmd.Process.Pid)
	}
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.url)
	}
	logf("%d nodes up: %s", len(nodes), strings.Join(urls, " "))
	interval := time.Duration(float64(s.Negotiations) / s.Rate * float64(time.Second))
	var procs []*scaleProc
	defer func() {
		for _, p := range procs {
			_ = p.in.Close()
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	}()
	start := time.Now()
	atStart := meter.read(ctx)
	for i := range s.Procs {
		off, count := i*s.Negotiations/s.Procs, (i+1)*s.Negotiations/s.Procs-i*s.Negotiations/s.Procs
		p, err := startScaleProc(ctx, s, i, urls, off, count, interval)
		if err != nil {
			return rep, err
		}
		procs = append(procs, p)
		meter.workers = append(meter.workers, p.cmd.Process.Pid)
	}
	for i, p := range procs {
		line, err := p.next(ctx, 15*time.Minute)
		if err != nil || !strings.HasPrefix(line, "ready") {
			return rep, fmt.Errorf("worker %d did not get ready (%q, %v): see %s", i+1, line, err, filepath.Join(s.Dir, fmt.Sprintf("worker%d.log", i+1)))
		}
	}
	rep.SetupSeconds = time.Since(start).Seconds()
	logf("%d negotiations set up, %d sockets open in %.0f s; driving %.0f frames/s", s.Negotiations, 2*s.Negotiations, rep.SetupSeconds, s.Rate)
	tell := func(line string) {
		for _, p := range procs {
			_, _ = io.WriteString(p.in, line+"\n")
		}
	}
	tell("go")
	atGo := meter.read(ctx)
	goAt := atGo.at
	sleepCtx(ctx, s.Measure)
	atCutCPU := meter.read(ctx)
	for _, n := range nodes {
		rep.SocketsPerNode = append(rep.SocketsPerNode, partySockets(ctx, n.admin))
	}
	cutAt := time.Now()
	if !s.NoCut {
		rep.CutNode = 1
		_ = nodes[0].cmd.Process.Kill() // SIGKILL: every socket of node 1 cut at once
		tell("cut " + strconv.FormatInt(cutAt.UnixNano(), 10))
		logf("node 1 killed; its clients resume on the others")
		rep.Load[1] = loadAverage()
	}
	sleepCtx(ctx, s.Measure)
	if !s.NoCut {
		rep.SocketsPerNodeAfter = append(rep.SocketsPerNodeAfter, 0)
		for _, n := range nodes[1:] {
			rep.SocketsPerNodeAfter = append(rep.SocketsPerNodeAfter, partySockets(ctx, n.admin))
		}
	}
	atStop := meter.read(ctx)
	tell("stop")
	stopAt := atStop.at
	var resumes samples
	var atCut int64
	ackCounts := make([]int64, len(ackBounds)+1)
	for i, p := range procs {
		line, err := p.next(ctx, 5*time.Minute) // the worker checks against the store first
		var w WorkerReport
		if err == nil {
			err = json.Unmarshal([]byte(line), &w)
		}
		if err != nil {
			return rep, fmt.Errorf("worker %d report: %v (%q)", i+1, err, line)
		}
		rep.SetupFailed += w.SetupFailed
		rep.Sockets -= 2 * w.SetupFailed
		rep.Sent += w.Sent
		rep.Delivered += w.Delivered
		atCut += w.DeliveredAtCut
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
			if i < len(ackCounts) {
				ackCounts[i] += c
			}
		}
		rep.CutSockets += w.Cut
		rep.Resumed += w.Resumed
		rep.DropsBeforeCut += w.DropsBeforeCut
		rep.EndedEarly += w.Ended
		for k, v := range w.Errors {
			rep.Errors[k] += v
		}
		for _, sec := range w.ResumeSeconds {
			resumes.add(time.Duration(sec * float64(time.Second)))
			if sec <= 10 {
				rep.ResumedWithin10s++
			}
		}
	}
	if s.NoCut { // one phase, go to stop
		atCut, cutAt, atCutCPU = rep.Delivered, stopAt, atStop
	} else {
		rep.FramesPerSecondAfterCut = float64(rep.Delivered-atCut) / stopAt.Sub(cutAt).Seconds()
	}
	rep.FramesPerSecond = float64(atCut) / cutAt.Sub(goAt).Seconds()
	rep.Resume = resumes.dist()
	rep.Ack = ackLatency(ackCounts)
	rep.Phases = []ScalePhase{phase("setup", atStart, atGo, 0), phase("before cut", atGo, atCutCPU, atCut)}
	if !s.NoCut {
		rep.Phases = append(rep.Phases, phase("after cut", atCutCPU, atStop, rep.Delivered-atCut))
	}
	rep.Load[2] = loadAverage()
	rep.OK = rep.Gaps == 0 && rep.Duplicates == 0 && rep.DropsBeforeCut == 0 && rep.Delivered > 0 &&
		rep.Disorder == 0 && rep.Lost == 0 && rep.Phantom == 0 && rep.DoubleCommits == 0 && rep.Unchecked == 0 &&
		(s.NoCut || (rep.CutSockets > 0 && rep.ResumedWithin10s == rep.CutSockets))
	return rep, nil
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

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startScaleNode starts node i (venue serve) with load-test limits and
// waits until its admin listener answers.
func startScaleNode(ctx context.Context, s Scale, databaseURL string, i int) (*scaleNode, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(s.Dir, fmt.Sprintf("node%d.log", i+1)))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, s.Binary, "serve", "--addr", addr, "--admin-addr", admin,
		"--database-url", databaseURL, "--redis-url", s.RedisURL, "--redis-prefix", s.RedisPrefix,
		"--register-per-minute", "1000000", "--frames-per-second", "1000", "--no-house-agents", "--log-level", "warn",
		"--max-connections=-1", "--max-sockets-per-address=-1", "--max-observers=-1")
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
