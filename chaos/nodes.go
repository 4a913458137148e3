package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/venuehq/venue/chaos/faultproxy"
	"github.com/venuehq/venue/internal/freeport"
)

// Node is one venue process of the run, reaching Postgres and Redis
// through fault proxies of its own.
type Node struct {
	N           int
	Addr, Admin string
	PG, Redis   *faultproxy.Proxy
	bin         string
	args        []string
	logPath     string
	cmd         *exec.Cmd
	exited      chan struct{}
}

func startNode(ctx context.Context, n int, bin, dir string, pg *Postgres, rd *Redis, clockOffset time.Duration) (*Node, error) {
	pp, err := faultproxy.Listen("127.0.0.1:0", pg.Addr(), faultproxy.Postgres)
	if err != nil {
		return nil, err
	}
	rp, err := faultproxy.Listen("127.0.0.1:0", rd.Addr(), faultproxy.TCP)
	if err != nil {
		pp.Close()
		return nil, err
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	port, aport := ports[0], ports[1]
	nd := &Node{N: n, Addr: "127.0.0.1:" + strconv.Itoa(port), Admin: "127.0.0.1:" + strconv.Itoa(aport), PG: pp, Redis: rp, bin: bin,
		logPath: filepath.Join(dir, fmt.Sprintf("node%d.log", n))}
	nd.args = []string{"serve", "--addr", nd.Addr, "--admin-addr", nd.Admin,
		"--database-url", URL(pp.Addr()) + "&pool_max_conns=12", "--redis-url", "redis://" + rp.Addr(),
		"--redis-prefix", "chaos", "--no-house-agents", "--frames-per-second", "100", "--register-per-minute", "1000000",
		"--max-connections=-1", "--max-sockets-per-address=-1", "--max-observers=-1", "--log-format", "json"}
	if clockOffset != 0 {
		nd.args = append(nd.args, "--test-clock-offset", clockOffset.String())
	}
	return nd, nd.Start(ctx)
}

// URL is the node's base URL.
func (nd *Node) URL() string { return "http://" + nd.Addr }

// Start starts the process and waits for /readyz.
func (nd *Node) Start(ctx context.Context) error {
	logf, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	nd.cmd = exec.Command(nd.bin, nd.args...)
	nd.cmd.Stdout, nd.cmd.Stderr = logf, logf
	if err := nd.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	nd.exited = make(chan struct{})
	go func() { _ = nd.cmd.Wait(); logf.Close(); close(nd.exited) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if ok, _ := nd.ready(ctx); ok {
			return nil
		}
		select {
		case <-nd.exited:
			return fmt.Errorf("chaos: node %d exited on start (see %s)", nd.N, nd.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: node %d not ready in 90 s (see %s)", nd.N, nd.logPath)
		}
	}
}

// ready asks the admin /readyz; body is its JSON.
func (nd *Node) ready(ctx context.Context) (bool, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+nd.Admin+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode == http.StatusOK, body
}

// Kill9 kills the process (SIGKILL) and waits for it.
func (nd *Node) Kill9() {
	if nd.cmd != nil && nd.cmd.Process != nil {
		_ = nd.cmd.Process.Signal(syscall.SIGKILL)
		<-nd.exited
	}
}

// Signal sends sig to the process.
func (nd *Node) Signal(sig syscall.Signal) {
	if nd.cmd != nil && nd.cmd.Process != nil {
		_ = nd.cmd.Process.Signal(sig)
	}
}

// Stop ends the node (SIGTERM, then SIGKILL after 10 s) and its proxies.
func (nd *Node) Stop() {
	if nd.cmd != nil && nd.cmd.Process != nil {
		_ = nd.cmd.Process.Signal(syscall.SIGCONT)
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-nd.exited:
		case <-time.After(10 * time.Second):
			nd.Kill9()
		}
	}
	nd.PG.Close()
	nd.Redis.Close()
}
