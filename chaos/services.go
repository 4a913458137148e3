package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/internal/freeport"
)

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// Postgres is the run's own database cluster: initdb in a scratch folder,
// run as a non-root user, on a private port, never the shared one.
type Postgres struct {
	Dir  string
	Port int
	user string
	bin  string // folder of initdb and pg_ctl
}

// pgBin finds the folder of initdb: PATH, else Debian's
// /usr/lib/postgresql/N/bin.
func pgBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) > 0 {
		return filepath.Dir(m[len(m)-1]), nil
	}
	return "", errors.New("chaos: initdb not found (install PostgreSQL's server binaries)")
}

// runAs runs bin as the cluster's user (through runuser when root).
func (p *Postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	bin := filepath.Join(p.bin, name)
	if os.Geteuid() == 0 {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", p.user, "--", bin}, args...)...)
	}
	return exec.CommandContext(ctx, bin, args...)
}

// StartPostgres creates and starts a cluster under dir.
func StartPostgres(ctx context.Context, dir string) (*Postgres, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &Postgres{Dir: filepath.Join(dir, "pg"), Port: port, bin: bin}
	if os.Geteuid() == 0 {
		// initdb refuses root: run the cluster as the postgres user (or one
		// of the run's own).
		p.user = "postgres"
		if _, err := user.Lookup(p.user); err != nil {
			p.user = "venuechaos"
			if _, err := user.Lookup(p.user); err != nil {
				if out, err := exec.CommandContext(ctx, "useradd", "--system", "--no-create-home", p.user).CombinedOutput(); err != nil {
					return nil, fmt.Errorf("chaos: useradd %s: %v: %s", p.user, err, out)
				}
			}
		}
		u, err := user.Lookup(p.user)
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.MkdirAll(p.Dir, 0o700); err != nil {
			return nil, err
		}
		// The scratch folder's parents must let the user in.
		for d := p.Dir; d != "/" && d != "."; d = filepath.Dir(d) {
			if d == p.Dir {
				_ = os.Chown(d, uid, gid)
				continue
			}
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
				_ = os.Chmod(d, fi.Mode().Perm()|0o011)
			}
		}
	} else if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, err
	}
	if out, err := p.command(ctx, "initdb", "-D", p.Dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("chaos: initdb: %v: %s", err, out)
	}
	return p, p.Start(ctx)
}

// Start starts the cluster and waits until it takes connections.
func (p *Postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=300", p.Port, p.Dir)
	if out, err := p.command(ctx, "pg_ctl", "-D", p.Dir, "-l", filepath.Join(p.Dir, "server.log"), "-w", "-t", "60", "-o", opts, "start").CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: pg_ctl start: %v: %s", err, out)
	}
	return nil
}

// Restart stops the cluster (fast: every session ended) and starts it.
func (p *Postgres) Restart(ctx context.Context) error {
	if out, err := p.command(ctx, "pg_ctl", "-D", p.Dir, "-w", "-m", "fast", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: pg_ctl stop: %v: %s", err, out)
	}
	return p.Start(ctx)
}

// Stop stops the cluster at once.
func (p *Postgres) Stop() {
	_ = p.command(context.Background(), "pg_ctl", "-D", p.Dir, "-w", "-m", "immediate", "stop").Run()
}

// Addr is the cluster's host:port.
func (p *Postgres) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// URL is the URL of database postgres at addr (the cluster or a proxy).
func URL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}

// KillBackends ends every client session of the cluster
// (pg_terminate_backend), as a crash of those backends would.
func (p *Postgres) KillBackends(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, URL(p.Addr()))
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// Redis is the run's own Redis on a private port.
type Redis struct {
	Port int
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts redis-server (no persistence) under dir.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &Redis{Port: port, dir: dir}
	return r, r.start(ctx)
}

func (r *Redis) start(ctx context.Context) error {
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("chaos: redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	for i := 0; ; i++ {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		} else if i > 200 {
			return fmt.Errorf("chaos: redis-server not answering: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Addr is Redis's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// RestartEmpty kills Redis (-9) and starts it again, empty.
func (r *Redis) RestartEmpty(ctx context.Context) error {
	r.Stop()
	return r.start(ctx)
}

// Flush empties Redis (FLUSHALL: only the run's own Redis, never a shared one).
func (r *Redis) Flush(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	return c.FlushAll(ctx).Err()
}

// Stop kills Redis.
func (r *Redis) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
	}
}
