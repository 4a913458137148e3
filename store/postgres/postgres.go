// Package postgres is the production store.Store on PostgreSQL (pgx/v5,
// pgxpool). It keeps the semantics of store/memory exactly (both pass
// store/storetest): a negotiation's steps are serialised across every node
// by a row lock (SELECT ... FOR UPDATE) and each step commits its state,
// transcript rows, grant spend and reputation changes in one transaction.
// The schema is in package migrations; Migrate applies it.
package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/negotiation"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/venuehq/venue/internal/pgutil"
	"github.com/venuehq/venue/migrations"
	"github.com/venuehq/venue/store"
)

// Store implements store.Store on a pgx connection pool. Safe for
// concurrent use; use New.
type Store struct {
	pool   *pgxpool.Pool
	cfg    *pgxpool.Config // what New connected with (Migrate copies it)
	schema string          // "" : the connection's default search_path
	// acquire bounds the wait for a pooled connection; bound is the whole
	// time one call may take (acquire + statement timeout).
	acquire, bound time.Duration
	resolveWindow  time.Duration // see WithResolveWindow
	batchLockWait  time.Duration // a batched step's wait for a row lock of its store.Tx (see BatchLockWait)
	w              *writer       // group commit; nil: off
	lockers        chan struct{} // steps run alone at once (they may wait on a row lock)
	eventsOf       EventsOf      // see SetEvents; nil: none
}

// EventsOf builds the event-log entries (PROTOCOL.md "Without a socket")
// of a changed step from the negotiation's state after it and its outcome.
// It runs inside the step's transaction, with the row locked: it must not
// wait or touch the store.
type EventsOf func(st *negotiation.State, out negotiation.Outcome) []events.Event

// SetEvents makes every changed step write its event-log entries (built by
// fn) in its own transaction, beside its transcript rows (events/eventspg's
// tables, eventspg.Queue): a committed frame's events are never lost to a
// crash between the commit and a later append, and cost no transaction of
// their own. Call it before the first Update.
func (s *Store) SetEvents(fn EventsOf) { s.eventsOf = fn }

// eventsFor is the events of a changed step, none without SetEvents.
func (s *Store) eventsFor(st *negotiation.State, out negotiation.Outcome) []events.Event {
	if s.eventsOf == nil {
		return nil
	}
	return s.eventsOf(st, out)
}

var _ store.Store = (*Store)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	schema    string
	maxConns  int32
	acquire   time.Duration
	lock      time.Duration
	statement time.Duration
	window    time.Duration
	batchMax  int
	batches   int
	resolve   time.Duration
}

// Default bounds of the store's waits (see WithTimeouts).
const (
	DefaultAcquireTimeout   = 2 * time.Second
	DefaultLockTimeout      = 2 * time.Second
	DefaultStatementTimeout = 10 * time.Second
)

// WithTimeouts bounds the store's waits: acquire for a pooled connection,
// lock for a row lock (Postgres lock_timeout), statement for any one
// statement (statement_timeout). A call that runs out of one of them
// returns an error wrapping store.ErrUnavailable, having changed nothing,
// and other negotiations are not held up by it. Zero keeps a default
// (DefaultAcquireTimeout, DefaultLockTimeout, DefaultStatementTimeout);
// lock_timeout or statement_timeout set in the URL's options win over
// these.
func WithTimeouts(acquire, lock, statement time.Duration) Option {
	return func(o *options) { o.acquire, o.lock, o.statement = acquire, lock, statement }
}

// WithSchema puts every table in schema name (the pool's search_path is set
// to it alone); Migrate creates the schema if it is missing. Tests give each
// test its own schema.
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithMaxConns caps the pool's connections (default: pgxpool's, or
// pool_max_conns in the URL).
func WithMaxConns(n int32) Option { return func(o *options) { o.maxConns = n } }

// New connects to databaseURL (a postgres:// URL or key=value DSN) and
// checks the connection with a ping. It does not migrate (see Migrate).
// Errors never contain the password: the URL is redacted.
func New(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	secret := cfg.ConnConfig.Password
	if o.schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.schema}.Sanitize()
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	o.acquire = cmp.Or(o.acquire, DefaultAcquireTimeout)
	o.lock = cmp.Or(o.lock, DefaultLockTimeout)
	o.statement = cmp.Or(o.statement, DefaultStatementTimeout)
	// Every connection carries the bounds, so no wait on a row or a
	// statement is open-ended; an explicit setting in the URL wins.
	for k, d := range map[string]time.Duration{"lock_timeout": o.lock, "statement_timeout": o.statement} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrub(fmt.Errorf("postgres: connect to %s: %w", RedactURL(databaseURL), err), secret)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, scrub(fmt.Errorf("postgres: connect to %s: %w", RedactURL(databaseURL), err), secret)
	}
	s := &Store{pool: pool, cfg: cfg, schema: o.schema, acquire: o.acquire, bound: o.acquire + o.statement + time.Second,
		resolveWindow: cmp.Or(o.resolve, DefaultResolveWindow), batchLockWait: min(BatchLockWait, o.lock)}
	s.startWriter(o)
	if s.w != nil {
		// Steps that run alone may each hold a connection while they wait
		// for a row lock: at most half the pool, so batches and reads always
		// find one.
		s.lockers = make(chan struct{}, max(1, cfg.MaxConns/2))
	}
	return s, nil
}

// Migrate creates the store's schema if WithSchema named one and it is
// missing, then applies every pending migration (migrations.Apply) and
// returns those it applied. The pool needs at least two connections.
func (s *Store) Migrate(ctx context.Context) ([]migrations.Applied, error) {
	if n := s.pool.Config().MaxConns; n < 2 {
		return nil, fmt.Errorf("postgres: migrate needs a pool of at least 2 connections (one holds the migration lock), have %d", n)
	}
	// Migrations (and the advisory lock nodes take turns on) may wait and
	// run long: a pool of their own without the store's timeouts.
	cfg := s.cfg.Copy()
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "0"
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "0"
	cfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	defer pool.Close()
	if s.schema != "" {
		if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("postgres: create schema %s: %w", s.schema, err)
		}
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	applied, err := migrations.Apply(ctx, db)
	if err != nil {
		return applied, fmt.Errorf("postgres: %w", err)
	}
	return applied, nil
}

// SchemaVersion returns the version of the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	v, err := migrations.Version(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	return v, nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// Close implements store.Store: it stops the group-commit writer (steps
// still queued get an error, batches committing finish) and closes the
// pool, waiting for connections in use to be released.
func (s *Store) Close() {
	s.stopWriter()
	s.pool.Close()
}

// Pool returns the underlying pool (tests and tools inspect the tables).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// SQLSTATE codes the store branches on.
const (
	codeUniqueViolation    = "23505"
	codeLockNotAvailable   = "55P03" // lock_timeout
	codeQueryCanceled      = "57014" // statement_timeout
	codeAdminShutdown      = "57P01" // pg_terminate_backend, a shutdown
	codeCrashShutdown      = "57P02"
	codeCannotConnectNow   = "57P03"
	codeTooManyConnections = "53300"
)

// bounded returns ctx with the store's bound on one call, for calls that
// take a pooled connection.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.bound)
}

// unavailable reports whether err, from a call made on parent (or on a
// context bounded from it), means the store could not do it in time or
// could not reach the database, with nothing changed: the bounds of
// WithTimeouts ran out, a connection could not be had, or the server ended
// the session or the statement before it took effect. A caller that went
// away (parent done) is not unavailability.
func unavailable(parent context.Context, err error) bool {
	var cu *commitUnknownError
	if err == nil || parent.Err() != nil || errors.As(err, &cu) {
		return false
	}
	switch pgCode(err) {
	case codeLockNotAvailable, codeQueryCanceled, codeAdminShutdown, codeCrashShutdown,
		codeCannotConnectNow, codeTooManyConnections:
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || pgconn.SafeToRetry(err)
}

// commitUnknownError is a failure after a step's COMMIT was sent and
// before its answer came: the step may or may not be stored.
type commitUnknownError struct{ err error }

func (e *commitUnknownError) Error() string { return e.err.Error() }
func (e *commitUnknownError) Unwrap() error { return e.err }

// settle wraps *err with store.ErrUnavailable when it is unavailability
// (see unavailable); deferred by calls with a named error result.
func settle(parent context.Context, err *error) {
	if unavailable(parent, *err) && !errors.Is(*err, store.ErrUnavailable) {
		*err = &withMessage{msg: (*err).Error(), errs: []error{store.ErrUnavailable, *err}}
	}
}

func pgCode(err error) string { return pgutil.Code(err) }

// notFound is store.ErrNotFound for one kind of row.
func notFound(kind, id string) error {
	return fmt.Errorf("postgres: %s %s: %w", kind, id, store.ErrNotFound)
}

// conflict is store.ErrConflict for what was being done; it also unwraps to
// the Postgres error (the constraint), which its message leaves out.
func conflict(cause error, format string, args ...any) error {
	msg := "postgres: " + fmt.Sprintf(format, args...) + ": " + store.ErrConflict.Error()
	return &withMessage{msg: msg, errs: []error{store.ErrConflict, cause}}
}

func isUnique(err error) bool { return pgCode(err) == codeUniqueViolation }

// retryable reports whether a transaction lost to another and may simply be
// run again.
func retryable(err error) bool { return pgutil.Retryable(err) }

// hasNUL reports whether any s holds a NUL byte: Postgres text cannot, so no
// stored row can match such a value.
func hasNUL(ss ...string) bool {
	for _, s := range ss {
		if strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
	return false
}

// ceilMicro rounds t up to Postgres's microsecond precision, so a stored
// deadline is never earlier than the real one (a timer armed from it never
// wakes the room before its clock has run out).
func ceilMicro(t time.Time) time.Time {
	r := t.Truncate(time.Microsecond)
	if r.Before(t) {
		r = r.Add(time.Microsecond)
	}
	return r
}

var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactURL returns databaseURL with its password replaced by "xxxxx", for
// logs and errors (URL forms: user:password@ and ?password=; key=value DSNs:
// password=...).
func RedactURL(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || u.Scheme == "" {
		return dsnPassword.ReplaceAllString(databaseURL, "${1}xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// withMessage is an error with its own message that unwraps to its causes.
type withMessage struct {
	msg  string
	errs []error
}

func (e *withMessage) Error() string   { return e.msg }
func (e *withMessage) Unwrap() []error { return e.errs }

// scrub blanks secret out of err's message (belt and braces over pgx's own
// redaction). Secrets under 3 bytes are left: blanking them would garble
// the message and hides nothing.
func scrub(err error, secret string) error {
	if err == nil || len(secret) < 3 || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &withMessage{msg: strings.ReplaceAll(err.Error(), secret, "xxxxx"), errs: []error{err}}
}
