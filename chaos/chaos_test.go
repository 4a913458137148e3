package chaos

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChaos60s is the suite's chaos run (RELIABILITY.md): its own
// Postgres and Redis, three nodes of the venue built from this tree, every
// fault injected at least once, every invariant checked.
func TestChaos60s(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes about 90 s")
	}
	if _, err := pgBin(); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "venue")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain to build the venue")
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/venuehq/venue/cmd/venue").CombinedOutput(); err != nil {
		t.Fatalf("build the venue: %v: %s", err, out)
	}
	var logs bytes.Buffer
	rep, err := Run(t.Context(), Config{Binary: bin, Dir: filepath.Join(dir, "run"), Duration: 60 * time.Second, Groups: 8, Log: &logs})
	if err != nil {
		t.Fatalf("chaos run: %v\n%s", err, logs.String())
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("report:\n%s", b)
	if !rep.OK {
		for _, f := range []string{"node1.log", "node2.log", "node3.log"} {
			if raw, err := os.ReadFile(filepath.Join(dir, "run", f)); err == nil && len(raw) > 4000 {
				t.Logf("%s (tail):\n%s", f, raw[len(raw)-4000:])
			}
		}
		t.Fatalf("chaos run failed:\n%s\n%s", b, logs.String())
	}
	if rep.Workload["commit_replies_dropped"] < 2 || rep.Workload["acked_frames"] < 50 {
		t.Fatalf("the run did too little to show anything: %v", rep.Workload)
	}
}
