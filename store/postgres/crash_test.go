package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

// crashNodeEnv makes the test binary a store node (crashNode) instead of
// running tests: TestCrashKeepsEveryAck starts it and kills it with SIGKILL.
const crashNodeEnv = "VENUE_TEST_CRASH_NODE"

func TestMain(m *testing.M) {
	if os.Getenv(crashNodeEnv) != "" {
		crashNode()
		return
	}
	os.Exit(m.Run())
}

// crashNode steps the negotiations named in its environment with group
// commit on, both parties of each at once, as fast as it can, and prints
// "ack ID CONTENT" for every Update that returned success, until killed.
func crashNode() {
	ctx := context.Background()
	s, err := postgres.New(ctx, os.Getenv("VENUE_TEST_CRASH_URL"), postgres.WithSchema(os.Getenv("VENUE_TEST_CRASH_SCHEMA")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, spec := range strings.Split(os.Getenv(crashNodeEnv), ",") {
		f := strings.Split(spec, ":") // negotiation id, brand, bouncer
		for _, from := range f[1:] {
			wg.Go(func() {
				for j := 0; ; j++ {
					content := fmt.Sprintf("c-%s-%d", from, j)
					fr, werr := negotiation.DecodeFrame([]byte(`{"type":"message","content":"` + content + `"}`))
					if werr != nil {
						panic(werr)
					}
					if _, _, err := s.Update(ctx, f[0], func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
						return st.Apply(from, fr, storetest.T0.Add(time.Second), nil)
					}); err != nil {
						continue
					}
					mu.Lock()
					fmt.Fprintf(out, "ack %s %s\n", f[0], content)
					_ = out.Flush()
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
}

// A node killed with SIGKILL under load, its group commits in flight:
// every step it acknowledged is in the transcript exactly once, every
// chain verifies, and a node started afterwards steps the same
// negotiations (no lock or half-written batch left behind).
func TestCrashKeepsEveryAck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	var schema string
	if err := s.Pool().QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	const negs = 12
	ns := make([]negotiation.State, negs)
	specs := make([]string, negs)
	for i := range ns {
		ns[i] = liveNegotiation(t, s)
		specs[i] = ns[i].ID + ":" + ns[i].Brand.AgentID + ":" + ns[i].Bouncer.AgentID
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashNodeEnv+"="+strings.Join(specs, ","),
		"VENUE_TEST_CRASH_URL="+storetest.DatabaseURL(t), "VENUE_TEST_CRASH_SCHEMA="+schema)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string][]string{} // negotiation id -> contents
	sc := bufio.NewScanner(stdout)
	n, killed := 0, false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			t.Fatalf("node said %q", sc.Text())
		}
		acked[f[1]] = append(acked[f[1]], f[2])
		if n++; n == 600 && !killed {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown at all
				t.Fatal(err)
			}
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("the node stopped by itself after %d acks", n)
	}

	after := newStoreOn(t, schema)
	for _, neg := range ns {
		entries, err := after.Transcript(ctx, neg.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		storetest.VerifyChain(t, entries)
		count := map[string]int{}
		for _, e := range entries {
			for _, c := range acked[neg.ID] {
				if strings.Contains(string(e.Frame), `"`+c+`"`) {
					count[c]++
				}
			}
		}
		for _, c := range acked[neg.ID] {
			if count[c] != 1 {
				t.Fatalf("%s: acknowledged %s is in the transcript %d times", neg.ID, c, count[c])
			}
		}
		st, err := after.Negotiation(ctx, neg.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.LastSeq != int64(len(entries)) {
			t.Fatalf("%s: state at seq %d, transcript has %d", neg.ID, st.LastSeq, len(entries))
		}
		// The restarted node steps it: nothing was left locked.
		if _, _, err := after.Update(ctx, neg.ID, applyFrame(t, neg.Brand.AgentID, `{"type":"message","content":"after the crash"}`, storetest.T0.Add(time.Second))); err != nil {
			t.Fatalf("%s after the crash: %v", neg.ID, err)
		}
	}
	t.Logf("%d acks before and while the node was killed", n)
}

// newStoreOn opens another store (a node) on an existing schema.
func newStoreOn(t *testing.T, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.New(t.Context(), storetest.DatabaseURL(t), postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
