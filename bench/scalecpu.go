package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/chaos/faultproxy"
)

// ScalePhase is what one phase of a scale run cost (BENCHMARKS.md "Scale
// out: three nodes"): CPU seconds (user + system, the kernel's accounting
// of each process, so other work on the machine does not inflate them)
// of each venue node, of the load-generator processes together, of the
// run's Postgres backends (those whose application_name is the run's) and
// of the machine's redis-server (shared with whatever else uses it), over
// Seconds of wall time. Cores is their sum over Seconds: how much of the
// machine the run itself needed. MsPer1000Frames divides the sum by the
// frames delivered to the other party in the phase (0 in setup).
type ScalePhase struct {
	Phase           string    `json:"phase"`
	Seconds         float64   `json:"seconds"`
	Nodes           []float64 `json:"node_cpu_seconds"`
	Workers         float64   `json:"workers_cpu_seconds"`
	Postgres        float64   `json:"postgres_cpu_seconds"`
	Redis           float64   `json:"redis_cpu_seconds"`
	Cores           float64   `json:"cores"`
	Frames          int64     `json:"frames,omitempty"`
	MsPer1000Frames float64   `json:"cpu_ms_per_1000_frames,omitempty"`
	LoadStart       float64   `json:"load_average_start"`
	LoadEnd         float64   `json:"load_average_end"`
}

// cpuReading is one reading of every process a scale run counts.
type cpuReading struct {
	at       time.Time
	nodes    []float64
	workers  float64
	postgres float64
	redis    float64
	load     float64
}

// cpuMeter reads the CPU of a run's processes. Postgres backends that
// ended between two readings take their CPU with them; the pool keeps its
// connections, so few do.
type cpuMeter struct {
	nodes, workers []int
	databaseURL    string // with the run's application_name
	app            string
	pg             map[int]float64 // last CPU seen per backend
}

func (m *cpuMeter) read(ctx context.Context) cpuReading {
	r := cpuReading{at: time.Now(), load: loadAverage()}
	for _, pid := range m.nodes {
		r.nodes = append(r.nodes, max(procCPU(pid), 0))
	}
	for _, pid := range m.workers {
		r.workers += max(procCPU(pid), 0)
	}
	r.redis = commCPU("redis-server")
	r.postgres = m.backends(ctx)
	return r
}

// backends sums the CPU of the run's Postgres backends, counting a backend
// that has ended at the CPU it had when last seen.
func (m *cpuMeter) backends(ctx context.Context) float64 {
	if m.databaseURL == "" {
		return 0
	}
	if m.pg == nil {
		m.pg = map[int]float64{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, m.databaseURL)
	if err == nil {
		rows, qerr := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.app)
		if qerr == nil {
			for rows.Next() {
				var pid int
				if rows.Scan(&pid) == nil {
					if c := procCPU(pid); c >= 0 {
						m.pg[pid] = c
					}
				}
			}
			rows.Close()
		}
		_ = conn.Close(ctx)
	}
	var sum float64
	for _, c := range m.pg {
		sum += c
	}
	return sum
}

// commCPU sums the CPU of every process whose command name is comm.
func commCPU(comm string) float64 {
	paths, _ := filepath.Glob("/proc/[0-9]*/comm")
	var sum float64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		sum += max(procCPU(pid), 0)
	}
	return sum
}

// phase is what happened between a and b, with frames delivered in it.
func phase(name string, a, b cpuReading, frames int64) ScalePhase {
	p := ScalePhase{Phase: name, Seconds: b.at.Sub(a.at).Seconds(), Workers: b.workers - a.workers,
		Postgres: b.postgres - a.postgres, Redis: b.redis - a.redis, Frames: frames, LoadStart: a.load, LoadEnd: b.load}
	sum := p.Workers + p.Postgres + p.Redis
	for i := range b.nodes {
		if i < len(a.nodes) {
			p.Nodes = append(p.Nodes, b.nodes[i]-a.nodes[i])
			sum += b.nodes[i] - a.nodes[i]
		}
	}
	if p.Seconds > 0 {
		p.Cores = sum / p.Seconds
	}
	if frames > 0 {
		p.MsPer1000Frames = sum * 1e3 / float64(frames) * 1e3
	}
	return p
}

// withApp returns databaseURL with application_name app, so the run's
// backends can be found.
func withApp(databaseURL, app string) string {
	return withParam(databaseURL, "application_name", app)
}

// withParam returns databaseURL with parameter k set to v (a URL; a
// key=value DSN gets it appended).
func withParam(databaseURL, k, v string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return databaseURL + " " + k + "=" + v
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// freshSchema creates schema name on databaseURL and returns the URL with
// its search_path set to it (and a drop func).
func freshSchema(ctx context.Context, databaseURL, name string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return "", nil, fmt.Errorf("bench: connect to create schema %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("bench: create schema %s: %w", name, err)
	}
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("bench: --fresh-schema needs a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(ctx, databaseURL); err == nil {
			_, _ = c.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
			_ = c.Close(ctx)
		}
	}
	return u.String(), drop, nil
}

// slowPath starts a TCP proxy to databaseURL's host (latency set later)
// and returns the URL through it.
func slowPath(databaseURL string) (string, *faultproxy.Proxy, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || u.Host == "" {
		return "", nil, fmt.Errorf("bench: a database latency needs a postgres://host:port URL")
	}
	p, err := faultproxy.Listen("127.0.0.1:0", u.Host, faultproxy.TCP)
	if err != nil {
		return "", nil, err
	}
	u.Host = p.Addr()
	return u.String(), p, nil
}

// dropRedisPrefix deletes every key of redisURL under prefix + ":".
func dropRedisPrefix(redisURL, prefix string) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var keys []string
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		c.Del(ctx, keys[:n]...)
		keys = keys[n:]
	}
}
