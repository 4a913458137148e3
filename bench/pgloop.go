package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGLoop is the store's own limit on a Postgres: how many one-row-update
// transactions a second `workers` connections commit, each BEGIN; UPDATE
// one row; COMMIT, in a scratch schema dropped afterwards.
type PGLoop struct {
	Workers         int     `json:"workers"`
	Transactions    int64   `json:"transactions"`
	PerSecond       float64 `json:"per_second"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// RunPGLoop runs the bare update loop for d.
func RunPGLoop(ctx context.Context, databaseURL string, workers int, d time.Duration) (PGLoop, error) {
	res := PGLoop{Workers: workers}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return res, fmt.Errorf("bench: database url: %w", err)
	}
	cfg.MaxConns = int32(workers)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "venue_pgloop_" + hex.EncodeToString(b)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+schema+".counter (id int PRIMARY KEY, n bigint NOT NULL)"); err != nil {
		return res, fmt.Errorf("bench: create scratch schema: %w", err)
	}
	defer func() { _, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") }()
	if _, err := pool.Exec(ctx, "INSERT INTO "+schema+".counter SELECT g, 0 FROM generate_series(0, $1) g", workers); err != nil {
		return res, err
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	stop := start.Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, "UPDATE "+schema+".counter SET n = n + 1 WHERE id = $1", id)
					return err
				})
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		}(w)
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return res, err
	}
	res.Transactions = n.Load()
	res.DurationSeconds = time.Since(start).Seconds()
	res.PerSecond = float64(res.Transactions) / res.DurationSeconds
	return res, nil
}
