package migrations_test

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/pressly/goose/v3"

	"github.com/venuehq/venue/migrations"
	"github.com/venuehq/venue/store/storetest"
)

// openSchema opens db on a fresh, existing schema.
func openSchema(t *testing.T) *sql.DB {
	t.Helper()
	base := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	return db
}

// Nodes starting together migrate once: the others wait and find nothing
// left to apply.
func TestApplyConcurrentOnce(t *testing.T) {
	t.Parallel()
	db := openSchema(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const nodes = 4
	results := make([][]migrations.Applied, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { results[i], errs[i] = migrations.Apply(ctx, db) })
	}
	wg.Wait()
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for i := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		applied += len(results[i])
		for _, a := range results[i] {
			if a.Name == "" || a.Version < 1 {
				t.Errorf("applied %+v", a)
			}
		}
	}
	// Versions may have gaps (numbers are handed out per branch): count files.
	files, err := migrations.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if applied != len(files) {
		t.Fatalf("%d migrations applied in all, want %d once each", applied, len(files))
	}
	v, err := migrations.Version(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if v != latest {
		t.Fatalf("version %d, want %d", v, latest)
	}
	// The tables are in the schema, the version table too.
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
		AND tablename IN ('agents', 'negotiations', 'transcript', 'grants', 'venue_keys', 'settlements', 'reputation_events', 'offers', $1)`,
		migrations.VersionTable).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 9 {
		t.Fatalf("%d of 9 tables in the schema", n)
	}
}

func TestApplyWithoutSchemaFails(t *testing.T) {
	t.Parallel()
	base := storetest.DatabaseURL(t)
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", "venue_test_no_such_schema")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Apply(t.Context(), db); err == nil {
		t.Fatal("applied with no schema selected")
	}
}

// TestApplyOutOfOrder: a database that has later migrations (other
// branches' numbers) gets an earlier one that landed after them.
func TestApplyOutOfOrder(t *testing.T) {
	t.Parallel()
	db := openSchema(t)
	ctx := t.Context()
	files, err := migrations.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	partial := fstest.MapFS{}
	var skipped string
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".sql") {
			continue
		}
		if skipped == "" && strings.HasPrefix(f.Name(), "00003_") {
			skipped = f.Name()
			continue
		}
		b, err := migrations.FS.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		partial[f.Name()] = &fstest.MapFile{Data: b}
	}
	if skipped == "" {
		t.Skip("no 00003 migration to leave out")
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, partial,
		goose.WithTableName(migrations.VersionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	applied, err := migrations.Apply(ctx, db)
	if err != nil {
		t.Fatalf("apply over later migrations: %v", err)
	}
	if len(applied) != 1 || applied[0].Name != skipped {
		t.Fatalf("applied %+v, want only %s", applied, skipped)
	}
}

// Schemas of a database nobody has migrated yet, migrated at once (test
// runs, or venues sharing a database): the first migration that creates an
// extension runs in each; IF NOT EXISTS alone lets two sessions both create
// it and one fails on pg_extension_name_index.
func TestApplySchemasOfFreshDatabase(t *testing.T) {
	t.Parallel()
	base := storetest.DatabaseURL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	name := "venue_fresh_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_") + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	const schemas = 4
	errs := make([]error, schemas)
	var wg sync.WaitGroup
	for i := range schemas {
		wg.Go(func() {
			v := *u
			q := v.Query()
			q.Set("search_path", "s"+strconv.Itoa(i))
			v.RawQuery = q.Encode()
			db, err := sql.Open("pgx", v.String())
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, `CREATE SCHEMA s`+strconv.Itoa(i)); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = migrations.Apply(ctx, db)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("schema s%d: %v", i, err)
		}
	}
}
