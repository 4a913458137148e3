// Package migrations holds the venue's SQL migrations, embedded in the
// binary, and applies them with goose's Provider API (no goose globals are
// touched). Migrations apply to the connection's current schema (the first
// entry of its search_path); the goose version table lives in that schema
// too, so each schema migrates on its own. `venue migrate` and the Postgres
// store's Migrate both come here.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/pressly/goose/v3"
)

// FS holds the migration files, NNNNN_name.sql at its root.
//
//go:embed *.sql
var FS embed.FS

// VersionTable is the goose version table, created in the current schema.
const VersionTable = "goose_db_version"

// Applied is one migration applied by Apply.
type Applied struct {
	Version  int64
	Name     string // file name, e.g. "00001_init.sql"
	Duration time.Duration
}

// Up applies every pending migration to db's current schema. See Apply.
func Up(ctx context.Context, db *sql.DB) error {
	_, err := Apply(ctx, db)
	return err
}

// Apply applies every pending migration to db's current schema and returns
// those it applied, in order (none when the schema was up to date). Nodes
// that start together take turns: a Postgres advisory lock keyed by the
// schema name is held on one connection of db while the migrations run on
// another, so db must allow at least two open connections. Errors name the
// failing migration.
func Apply(ctx context.Context, db *sql.DB) ([]Applied, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: connect: %w", err)
	}
	defer conn.Close()
	var schema sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("migrations: current schema: %w", err)
	}
	if !schema.Valid {
		return nil, errors.New("migrations: no schema selected: the search_path names no existing schema")
	}
	const lockKey = `hashtextextended('venue migrations ' || current_schema(), 0)`
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`); err != nil {
		return nil, fmt.Errorf("migrations: lock schema %s: %w", schema.String, err)
	}
	defer func() {
		// A fresh context: the lock must go even when ctx was cancelled
		// (closing the connection would release it too).
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(uctx, `SELECT pg_advisory_unlock(`+lockKey+`)`)
	}()

	p, err := provider(db)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	applied := make([]Applied, 0, len(results))
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, Applied{Version: r.Source.Version, Name: path.Base(r.Source.Path), Duration: r.Duration})
		}
	}
	if err != nil {
		return applied, fmt.Errorf("migrations: apply to schema %s: %w", schema.String, err)
	}
	return applied, nil
}

// Version returns the version of the last migration applied to db's current
// schema (0 when none is).
func Version(ctx context.Context, db *sql.DB) (int64, error) {
	p, err := provider(db)
	if err != nil {
		return 0, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: read version: %w", err)
	}
	return v, nil
}

// Latest returns the version of the newest embedded migration.
func Latest() (int64, error) {
	files, err := FS.ReadDir(".")
	if err != nil {
		return 0, fmt.Errorf("migrations: list: %w", err)
	}
	var latest int64
	for _, f := range files {
		v, err := goose.NumericComponent(f.Name())
		if err != nil {
			return 0, fmt.Errorf("migrations: %s: %w", f.Name(), err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

func provider(db *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS,
		goose.WithTableName(VersionTable), goose.WithDisableGlobalRegistry(true),
		// Numbers are handed out per branch: a database that has a later
		// migration gets an earlier one that landed after it.
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
