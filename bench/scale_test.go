package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/bench"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/store/storetest"
)

// binDir holds the venue built for the scale tests; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// venueBinary builds the venue from this tree once for the package's scale
// tests.
var venueBinary = sync.OnceValues(func() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if binDir, err = os.MkdirTemp("", "venue-scale-test-"); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "venue")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/venuehq/venue/cmd/venue").CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "build the venue: " + e.err.Error() + ": " + e.out }

// scaleSetup is what a scale test runs on: the venue binary, a Postgres
// URL whose search_path is a schema of the test's own, and Redis with a
// key prefix of its own.
func scaleSetup(t *testing.T) bench.Scale {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the venue and runs it on Postgres for 10-40 s")
	}
	bin, err := venueBinary()
	if err != nil {
		if _, ok := err.(*buildError); ok {
			t.Fatal(err)
		}
		t.Skip("no go toolchain to build the venue")
	}
	dbURL, redisURL := storetest.DatabaseURL(t), bustest.RedisURL(t)
	schema := storetest.Schema(t, dbURL)
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(t.Context())
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return bench.Scale{Binary: bin, DatabaseURL: u.String(), RedisURL: redisURL,
		RedisPrefix: bustest.KeyPrefix(t, redisURL), Dir: filepath.Join(t.TempDir(), "run"), Nodes: 3, Procs: 2}
}

// TestScaleStorm is the scale-out run in small (BENCHMARKS.md "Scale out:
// three nodes"): three nodes of the venue built from this tree on the
// test Postgres (a schema of its own) and Redis (a prefix of its own), two
// load-generator processes, 100 negotiations (200 party sockets, each
// negotiation's parties on two different nodes); then every socket of node
// 1 cut at once (SIGKILL). Every cut socket must resume on another node
// with since= within 10 s, and every party socket must have seen every
// stored seq of its negotiation exactly once and in order.
//
// No socket may drop before the cut (the report's ok). Under the whole
// suite's load, .ci/run once saw 1 and once 9 such drops: sockets of the
// killed node whose worker had not yet read "cut"; workers now arm before
// the kill (bench.RunScaleWorker).
func TestScaleStorm(t *testing.T) {
	s := scaleSetup(t)
	s.Negotiations, s.Rate, s.Measure = 100, 100, 8*time.Second
	rep, err := bench.RunScale(t.Context(), s)
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatalf("scale run: %v\n%s", err, b)
	}
	t.Logf("report:\n%s", b)
	if !rep.OK {
		t.Fatalf("a check failed:\n%s\n%s", b, nodeLogs(s.Dir))
	}
	// Each node held a third of the sockets; the cut one's went to the
	// other two, and every seq was checked on both sockets.
	if len(rep.SocketsPerNode) != 3 || rep.SocketsPerNode[0] < 60 || rep.CutSockets != rep.SocketsPerNode[0] ||
		rep.Resumed != rep.CutSockets || rep.Entries < int64(rep.Sockets) || rep.Delivered == 0 || rep.Ack.N == 0 {
		t.Fatalf("the run did not do what it should:\n%s", b)
	}
}

// nodeLogs is the last lines of each node's log in dir (the nodes log at
// warn: what they closed and why), for a failure's message.
func nodeLogs(dir string) string {
	var b strings.Builder
	names, _ := filepath.Glob(filepath.Join(dir, "node*.log"))
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (last %d of %d lines)\n%s\n", filepath.Base(name), min(len(lines), 40), len(lines),
			strings.Join(lines[max(len(lines)-40, 0):], "\n"))
	}
	return b.String()
}

// TestScaleStarvedPool runs the venue out of Postgres connections
// (BENCHMARKS.md "When the pool runs dry"): two
// connections a node, 100 ms added to every chunk both ways from the
// measured phase on, 60 negotiations at 120 frames a second and the
// storm. The nodes must refuse what they cannot take (unavailable, which
// the load generator resends with the same id) and lose, reorder or
// duplicate nothing they acknowledged: every acked seq is stored with its
// sender's id, and every socket that came back saw every stored seq once,
// in order. Resumes are slow here (each waits for a connection), so the
// 10 s resume check is not asked of this run.
func TestScaleStarvedPool(t *testing.T) {
	s := scaleSetup(t)
	s.Negotiations, s.Rate, s.Measure = 60, 120, 6*time.Second
	s.PoolConns, s.DBLatency = 2, 100*time.Millisecond
	rep, err := bench.RunScale(t.Context(), s)
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatalf("scale run: %v\n%s", err, b)
	}
	t.Logf("report:\n%s", b)
	if rep.Errors["unavailable"] == 0 {
		t.Fatalf("the pool never ran dry (no unavailable answer): the test tests nothing\n%s", b)
	}
	// Sockets dropped before the cut are not counted against the venue
	// here: with the pool dry on purpose, a subscription that cannot read
	// the store to fill a gap closes its socket with 1013 "store
	// unavailable: reconnect with ?since=" (PROTOCOL.md "Limits and close
	// codes"), and the client resumes. (In .ci/run on a quiet machine 3 of
	// 120 sockets were, once in several runs.) What must hold is the rest.
	if !rep.LossFree() || rep.Unanswered != 0 {
		t.Fatalf("a frame was lost, reordered, duplicated or left unanswered:\n%s", b)
	}
	t.Logf("%d sockets dropped by the venue before the cut (store unavailable) and resumed", rep.DropsBeforeCut)
	if rep.Delivered == 0 || rep.CutSockets == 0 || rep.Resumed != rep.CutSockets || rep.Entries < int64(rep.Sockets) {
		t.Fatalf("the run did not do what it should:\n%s", b)
	}
}

// TestLocalCeilingPhase is the one-node run on Postgres with rates that
// stop far below the bare loop: the loop runs first, and one more phase at
// 1.25x its rate (rounded up to 500) finds the venue's best, which the
// report holds against the loop.
func TestLocalCeilingPhase(t *testing.T) {
	s := scaleSetup(t)
	var out, errw bytes.Buffer
	err := bench.RunLocal(t.Context(), bench.Local{
		Binary: s.Binary, DatabaseURL: s.DatabaseURL, PoolConns: 4,
		Negotiations: 10, Rate: 50, Frames: 4, Sweep: "100", NoRelay: true, Ceiling: true, JSON: true,
	}, &out, &errw)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errw.String())
	}
	var rep struct {
		Venue bench.Result `json:"venue"`
		Loop  bench.PGLoop `json:"postgres_loop"`
		Best  bench.PGBest `json:"postgres_best"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	want := math.Ceil(bench.CeilingOver*rep.Loop.PerSecond/500) * 500
	if rep.Loop.PerSecond <= 100/bench.CeilingOver || rep.Best.CeilingRate != want {
		t.Fatalf("loop %.0f tx/s, ceiling phase at %.0f/s; want it at %.0f/s\n%s", rep.Loop.PerSecond, rep.Best.CeilingRate, want, out.String())
	}
	sw := rep.Venue.Sweep
	if len(sw) != 2 || sw[0].RateTarget != 100 || sw[1].RateTarget != want || sw[1].Delivered != sw[1].Sent || sw[1].Sent != 40 {
		t.Fatalf("phases after the first: %+v", sw)
	}
	best := max(rep.Venue.FramesPerSecond, sw[0].FramesPerSecond, sw[1].FramesPerSecond)
	if rep.Best.FramesPerSecond != best || math.Abs(rep.Best.OfLoop-best/rep.Loop.PerSecond) > 1e-9 {
		t.Fatalf("best %+v; the phases' best is %.0f over the loop's %.0f", rep.Best, best, rep.Loop.PerSecond)
	}
}
