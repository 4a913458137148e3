package bench_test

import (
	"encoding/json"
	"net/url"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/bench"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/store/storetest"
)

// TestScaleStorm is the scale-out run in small (BENCHMARKS.md "Scale out:
// three nodes"): three nodes of the venue built from this tree on the
// test Postgres (a schema of its own) and Redis (a prefix of its own), two
// load-generator processes, 100 negotiations (200 party sockets, each
// negotiation's parties on two different nodes); then every socket of node
// 1 cut at once (SIGKILL). Every cut socket must resume on another node
// with since= within 10 s, and every party socket must have seen every seq
// of its negotiation exactly once.
func TestScaleStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the venue and runs three nodes for about 40 s")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
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

	dir := t.TempDir()
	bin := filepath.Join(dir, "venue")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/venuehq/venue/cmd/venue").CombinedOutput(); err != nil {
		t.Fatalf("build the venue: %v: %s", err, out)
	}
	rep, err := bench.RunScale(t.Context(), bench.Scale{Binary: bin, DatabaseURL: u.String(), RedisURL: redisURL,
		RedisPrefix: bustest.KeyPrefix(t, redisURL), Dir: filepath.Join(dir, "run"),
		Nodes: 3, Procs: 2, Negotiations: 100, Rate: 100, Measure: 8 * time.Second})
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatalf("scale run: %v\n%s", err, b)
	}
	t.Logf("report:\n%s", b)
	if !rep.OK {
		t.Fatalf("a check failed:\n%s", b)
	}
	// Each node held a third of the sockets; the cut one's went to the
	// other two, and every seq was checked on both sockets.
	if len(rep.SocketsPerNode) != 3 || rep.SocketsPerNode[0] < 60 || rep.CutSockets != rep.SocketsPerNode[0] ||
		rep.Resumed != rep.CutSockets || rep.Entries < int64(rep.Sockets) || rep.Delivered == 0 {
		t.Fatalf("the run did not do what it should:\n%s", b)
	}
}
