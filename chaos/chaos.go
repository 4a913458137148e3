// Package chaos is the venue's chaos run (RELIABILITY.md): it starts its
// own Postgres (initdb in a scratch folder, as a non-root user) and Redis
// on private ports, three venue nodes with a fault proxy (package
// faultproxy) between every node and each service, drives a workload of
// negotiations whose parties and observers sit on different nodes, injects
// every fault of RELIABILITY.md "Faults" while it runs, and then checks
// the invariants of RELIABILITY.md "What is checked", reporting counts per
// fault and per check. It never touches the shared Postgres or Redis.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// Config of one run.
type Config struct {
	// Binary is the venue executable the nodes run ("venue serve ...").
	Binary string
	// Dir is the scratch folder (Postgres's data, Redis, node logs);
	// "" makes a temporary one, removed after a run that passed.
	Dir string
	// Duration of the workload with faults (default 60 s).
	Duration time.Duration
	// Groups is how many brand groups run at once (each: one brand with a
	// budget for one deal, two negotiations racing for it); default 6.
	Groups int
	// Log gets progress lines (nil: none).
	Log io.Writer
}

// Report is the run's JSON report.
type Report struct {
	Duration string            `json:"duration"`
	Nodes    int               `json:"nodes"`
	Faults   map[string]int    `json:"faults"`
	Checks   map[string]*Check `json:"checks"`
	Workload map[string]int64  `json:"workload"`
	Answers  map[string]int    `json:"error_answers"`
	Dir      string            `json:"dir"`
	OK       bool              `json:"ok"`
	Missing  []string          `json:"faults_not_injected,omitempty"`
	// SetupErrors are the first failures to set a negotiation up.
	SetupErrors []string `json:"setup_errors,omitempty"`
}

// Faults are the faults a run injects, each at least once.
var Faults = []string{
	"kill9_restart_node", "sigstop_node_10s", "cut_node_postgres", "cut_node_redis",
	"latency_node_postgres_200ms", "latency_node_redis_200ms", "drop_commit_reply",
	"drop_commit_reply_then_cut", "kill_postgres_backends", "restart_postgres",
	"restart_redis_empty", "flush_redis", "clock_skew_node_5s", "clock_step_node",
}

// Run runs the chaos run and returns its report; err is a failure to run
// it at all (a service that cannot start), not a violated check.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 60 * time.Second
	}
	if cfg.Groups <= 0 {
		cfg.Groups = 6
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "chaos: "+format+"\n", a...)
		}
	}
	dir := cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "venue-chaos-"); err != nil {
			return nil, err
		}
	}
	pg, err := StartPostgres(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer pg.Stop()
	rd, err := StartRedis(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer rd.Stop()
	logf("own Postgres on %s, Redis on %s, scratch %s", pg.Addr(), rd.Addr(), dir)

	var nodes []*Node
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	for i := range 3 {
		var skew time.Duration
		if i == 2 {
			skew = 5 * time.Second // the skewed node: 5 s fast all run long
		}
		n, err := startNode(ctx, i+1, cfg.Binary, dir, pg, rd, skew)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	logf("three nodes up: %s %s %s", nodes[0].Addr, nodes[1].Addr, nodes[2].Addr)
	rep := &Report{Nodes: 3, Faults: map[string]int{}, Dir: dir}
	rep.Faults["clock_skew_node_5s"] = 1
	if ok, body := nodes[2].ready(ctx); ok {
		if c, _ := body["clock"].(map[string]any); c == nil || c["skewed"] != true {
			return nil, errors.New("chaos: the 5 s fast node's /readyz does not say it is skewed")
		}
	}

	var info struct {
		Audience string `json:"aud"`
	}
	if err := call(ctx, "GET", nodes[0].URL()+"/v1/info", "", nil, &info); err != nil {
		return nil, err
	}
	w := &workload{nodes: nodes, aud: info.Audience, l: newLedger()}
	start := time.Now()
	// The workload runs for the duration and until every fault has been
	// injected once.
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var wg sync.WaitGroup
	for g := range cfg.Groups {
		wg.Go(func() {
			for k := 0; wctx.Err() == nil; k++ {
				if err := w.group(wctx, g*3+k); err != nil && wctx.Err() == nil {
					w.l.code("setup_failed")
					w.l.mu.Lock()
					if len(w.l.setupErrs) < 3 {
						w.l.setupErrs = append(w.l.setupErrs, err.Error())
					}
					w.l.mu.Unlock()
					sleep(wctx, time.Second)
				}
			}
		})
	}
	// Faults, one after another, each healed before the next.
	slot := cfg.Duration / time.Duration(len(Faults)+1)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		sleep(wctx, slot/2)
		for round := 0; round < 3 && wctx.Err() == nil; round++ {
			for i, f := range Faults {
				if wctx.Err() != nil {
					return
				}
				if rep.Faults[f] > 0 && round > 0 || f == "clock_skew_node_5s" {
					continue
				}
				n := nodes[(i+round)%3]
				if f == "clock_step_node" {
					n = nodes[2]
				}
				logf("fault %s on node %d", f, n.N)
				if err := inject(wctx, f, n, pg, rd, slot); err != nil {
					logf("fault %s: %v", f, err)
					continue
				}
				rep.Faults[f]++
				sleep(wctx, slot/3)
			}
		}
	}()
	select {
	case <-ctx.Done():
	case <-time.After(cfg.Duration):
	}
	<-faultsDone
	stopWork()
	// Heal everything, let the parties and the reconciliation finish.
	for _, n := range nodes {
		n.PG.Cut(false)
		n.Redis.Cut(false)
		n.PG.SetLatency(0)
		n.Redis.SetLatency(0)
		n.PG.DropCommitReply(0, "", false)
		n.Signal(syscall.SIGCONT)
	}
	wg.Wait()
	sleep(ctx, 12*time.Second) // two reconciliations and sweeps
	dropped := int64(0)
	for _, n := range nodes {
		dropped += n.PG.Dropped()
	}
	rep.Duration = time.Since(start).Round(time.Second).String()
	checks, err := check(ctx, pg, nodes[0].URL(), w.l)
	if err != nil {
		return nil, err
	}
	rep.Checks = checks
	w.l.mu.Lock()
	rep.Answers = w.l.codes
	rep.SetupErrors = w.l.setupErrs
	rep.Workload = map[string]int64{
		"negotiations": int64(len(w.l.negotiations)), "frames_sent": w.l.sent.Load(), "reconnects": w.l.reconnects.Load(),
		"outcome_unknown_answers": w.l.unknown.Load(), "resends_resolved": w.l.resolved.Load(),
		"commit_replies_dropped": dropped, "observer_frames": w.l.obsFrames.Load(),
	}
	for _, m := range w.l.acked {
		rep.Workload["acked_frames"] += int64(len(m))
	}
	w.l.mu.Unlock()
	rep.OK = rep.Workload["acked_frames"] > 0
	for _, c := range checks {
		if c.Violations > 0 {
			rep.OK = false
		}
	}
	for _, f := range Faults {
		if rep.Faults[f] == 0 {
			rep.Missing = append(rep.Missing, f)
			rep.OK = false
		}
	}
	if rep.OK && cfg.Dir == "" {
		defer os.RemoveAll(dir)
	}
	return rep, nil
}

// inject runs one fault on node n and heals it within about slot.
func inject(ctx context.Context, f string, n *Node, pg *Postgres, rd *Redis, slot time.Duration) error {
	hold := min(max(slot/2, 2*time.Second), 5*time.Second)
	switch f {
	case "kill9_restart_node":
		n.Kill9()
		return n.Start(context.WithoutCancel(ctx))
	case "sigstop_node_10s":
		n.Signal(syscall.SIGSTOP)
		sleep(ctx, min(10*time.Second, max(slot, 3*time.Second)))
		n.Signal(syscall.SIGCONT)
	case "cut_node_postgres":
		n.PG.Cut(true)
		sleep(ctx, hold)
		n.PG.Cut(false)
	case "cut_node_redis":
		n.Redis.Cut(true)
		sleep(ctx, hold)
		n.Redis.Cut(false)
	case "latency_node_postgres_200ms":
		n.PG.SetLatency(200 * time.Millisecond)
		sleep(ctx, hold)
		n.PG.SetLatency(0)
	case "latency_node_redis_200ms":
		n.Redis.SetLatency(200 * time.Millisecond)
		sleep(ctx, hold)
		n.Redis.SetLatency(0)
	case "drop_commit_reply", "drop_commit_reply_then_cut":
		before := n.PG.Dropped()
		cut := f == "drop_commit_reply_then_cut"
		n.PG.DropCommitReply(1, "INSERT INTO transcript", cut)
		dropped := waitDrop(ctx, n, before, 4*hold)
		if cut && dropped {
			sleep(ctx, 6*time.Second) // past the store's resolve window: outcome_unknown
		}
		n.PG.DropCommitReply(0, "", false)
		n.PG.Cut(false)
		if !dropped {
			return errors.New("no COMMIT of a room step went through the node's proxy in time")
		}
	case "kill_postgres_backends":
		_, err := pg.KillBackends(ctx)
		return err
	case "restart_postgres":
		return pg.Restart(context.WithoutCancel(ctx))
	case "restart_redis_empty":
		return rd.RestartEmpty(context.WithoutCancel(ctx))
	case "flush_redis":
		return rd.Flush(ctx)
	case "clock_step_node":
		n.Signal(syscall.SIGUSR1) // +10 minutes
		sleep(ctx, hold)
		n.Signal(syscall.SIGUSR2) // -10 minutes: back where it was
	default:
		return fmt.Errorf("unknown fault %s", f)
	}
	return nil
}

// waitDrop waits until n's Postgres proxy dropped a COMMIT answer after
// before, or d.
func waitDrop(ctx context.Context, n *Node, before int64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for n.PG.Dropped() == before && time.Now().Before(deadline) && ctx.Err() == nil {
		sleep(ctx, 20*time.Millisecond)
	}
	return n.PG.Dropped() > before
}
