package postgres

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/pgutil"
)

// Every list query has the same shape: optional filters written as
// ($n = '' OR column = $n), rows in insertion order (ordinal), LIMIT and
// OFFSET, and a count(*) over the same filter for the total.

const requestCols = `id, from_agent, to_agent, purpose, scopes, ttl_days, status, created_at, expires_at, decided_at, decided_by, agreement_id`

func scanRequest(r pgx.CollectableRow) (handshake.Request, error) {
	var q handshake.Request
	var decided *time.Time
	err := r.Scan(&q.ID, &q.From, &q.To, &q.Purpose, &q.Scopes, &q.TTLDays, &q.Status, &q.CreatedAt, &q.ExpiresAt, &decided, &q.DecidedBy, &q.AgreementID)
	q.CreatedAt, q.ExpiresAt, q.DecidedAt = q.CreatedAt.UTC(), q.ExpiresAt.UTC(), pgutil.UTC(decided)
	return q, err
}

// CreateRequest implements handshake.Tx.
func (t *tx) CreateRequest(r handshake.Request) error {
	return t.exec("create request", `INSERT INTO contact_requests (`+requestCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
		r.ID, r.From, r.To, r.Purpose, r.Scopes, r.TTLDays, r.Status, r.CreatedAt, r.ExpiresAt, pgutil.NullTime(r.DecidedAt), r.DecidedBy, r.AgreementID)
}

// Request implements handshake.Tx.
func (t *tx) Request(id string) (handshake.Request, error) {
	return one(t, "request", id, `SELECT `+requestCols+` FROM contact_requests WHERE id = $1`, scanRequest)
}

// UpdateRequest implements handshake.Tx.
func (t *tx) UpdateRequest(r handshake.Request) error {
	return t.update("request", r.ID, `UPDATE contact_requests SET status = $2, decided_at = $3, decided_by = $4, agreement_id = $5 WHERE id = $1`,
		r.ID, r.Status, pgutil.NullTime(r.DecidedAt), r.DecidedBy, r.AgreementID)
}

// Requests implements handshake.Tx.
func (t *tx) Requests(q handshake.RequestQuery) ([]handshake.Request, int, error) {
	where := `($1 = '' OR from_agent = $1) AND ($2 = '' OR to_agent = $2) AND (cardinality($3::text[]) = 0 OR status = ANY($3))
		AND created_at > $4 AND ($5::timestamptz IS NULL OR decided_at > $5)`
	args := []any{q.From, q.To, nonNil(q.Statuses), since(q.CreatedSince), pgutil.NullTime(q.DecidedSince)}
	return list(t, "requests", requestCols, "contact_requests", where, args, q.Limit, q.Offset, scanRequest)
}

const agreementCols = `id, request_id, requester, target, scopes, status, created_at, expires_at, ended_at, ended_by`

func scanAgreement(r pgx.CollectableRow) (handshake.Agreement, error) {
	var a handshake.Agreement
	var ended *time.Time
	err := r.Scan(&a.ID, &a.RequestID, &a.Requester, &a.Target, &a.Scopes, &a.Status, &a.CreatedAt, &a.ExpiresAt, &ended, &a.EndedBy)
	a.CreatedAt, a.ExpiresAt, a.EndedAt = a.CreatedAt.UTC(), a.ExpiresAt.UTC(), pgutil.UTC(ended)
	return a, err
}

// CreateAgreement implements handshake.Tx.
func (t *tx) CreateAgreement(a handshake.Agreement) error {
	return t.exec("create agreement", `INSERT INTO agreements (`+agreementCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
		a.ID, a.RequestID, a.Requester, a.Target, a.Scopes, a.Status, a.CreatedAt, a.ExpiresAt, pgutil.NullTime(a.EndedAt), a.EndedBy)
}

// Agreement implements handshake.Tx.
func (t *tx) Agreement(id string) (handshake.Agreement, error) {
	return one(t, "agreement", id, `SELECT `+agreementCols+` FROM agreements WHERE id = $1`, scanAgreement)
}

// UpdateAgreement implements handshake.Tx.
func (t *tx) UpdateAgreement(a handshake.Agreement) error {
	return t.update("agreement", a.ID, `UPDATE agreements SET status = $2, ended_at = $3, ended_by = $4 WHERE id = $1`,
		a.ID, a.Status, pgutil.NullTime(a.EndedAt), a.EndedBy)
}

// Agreements implements handshake.Tx.
func (t *tx) Agreements(q handshake.AgreementQuery) ([]handshake.Agreement, int, error) {
	where := `((requester = $1 AND ($2 = '' OR target = $2)) OR (target = $1 AND ($2 = '' OR requester = $2)))
		AND (cardinality($3::text[]) = 0 OR status = ANY($3))`
	args := []any{q.Agent, q.Other, nonNil(q.Statuses)}
	return list(t, "agreements", agreementCols, "agreements", where, args, q.Limit, q.Offset, scanAgreement)
}

const messageCols = `id, agreement_id, from_agent, to_agent, body, reply_to, conversation_id, hop, at, read_at`

func scanMessage(r pgx.CollectableRow) (handshake.Message, error) {
	var m handshake.Message
	var read *time.Time
	err := r.Scan(&m.ID, &m.AgreementID, &m.From, &m.To, &m.Text, &m.ReplyTo, &m.ConversationID, &m.Hop, &m.At, &read)
	m.At, m.ReadAt = m.At.UTC(), pgutil.UTC(read)
	return m, err
}

// CreateMessage implements handshake.Tx.
func (t *tx) CreateMessage(m handshake.Message) error {
	return t.exec("create message", `INSERT INTO direct_messages (`+messageCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
		m.ID, m.AgreementID, m.From, m.To, m.Text, m.ReplyTo, m.ConversationID, m.Hop, m.At, pgutil.NullTime(m.ReadAt))
}

// Message implements handshake.Tx.
func (t *tx) Message(id string) (handshake.Message, error) {
	return one(t, "message", id, `SELECT `+messageCols+` FROM direct_messages WHERE id = $1`, scanMessage)
}

// Messages implements handshake.Tx.
func (t *tx) Messages(q handshake.MessageQuery) ([]handshake.Message, int, error) {
	where := `($1 = '' OR from_agent = $1) AND ($2 = '' OR to_agent = $2) AND ($3 = '' OR agreement_id = $3)
		AND ($4 = '' OR conversation_id = $4) AND (NOT $5 OR read_at IS NULL) AND at > $6`
	args := []any{q.From, q.To, q.AgreementID, q.ConversationID, q.UnreadOnly, since(q.Since)}
	return list(t, "messages", messageCols, "direct_messages", where, args, q.Limit, 0, scanMessage)
}

// MarkRead implements handshake.Tx.
func (t *tx) MarkRead(ids []string, at time.Time) error {
	return t.exec("mark read", `UPDATE direct_messages SET read_at = $2 WHERE id = ANY($1)`, ids, at)
}

const taskCols = `id, agreement_id, from_agent, to_agent, skill, body, at, status, result, completed_at`

func scanTask(r pgx.CollectableRow) (handshake.Task, error) {
	var k handshake.Task
	var done *time.Time
	err := r.Scan(&k.ID, &k.AgreementID, &k.From, &k.To, &k.Skill, &k.Text, &k.At, &k.Status, &k.Result, &done)
	k.At, k.CompletedAt = k.At.UTC(), pgutil.UTC(done)
	return k, err
}

// CreateTask implements handshake.Tx.
func (t *tx) CreateTask(k handshake.Task) error {
	return t.exec("create task", `INSERT INTO agent_tasks (`+taskCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
		k.ID, k.AgreementID, k.From, k.To, k.Skill, k.Text, k.At, k.Status, k.Result, pgutil.NullTime(k.CompletedAt))
}

// Task implements handshake.Tx.
func (t *tx) Task(id string) (handshake.Task, error) {
	return one(t, "task", id, `SELECT `+taskCols+` FROM agent_tasks WHERE id = $1`, scanTask)
}

// UpdateTask implements handshake.Tx.
func (t *tx) UpdateTask(k handshake.Task) error {
	return t.update("task", k.ID, `UPDATE agent_tasks SET status = $2, result = $3, completed_at = $4 WHERE id = $1`,
		k.ID, k.Status, k.Result, pgutil.NullTime(k.CompletedAt))
}

// Tasks implements handshake.Tx.
func (t *tx) Tasks(q handshake.TaskQuery) ([]handshake.Task, int, error) {
	where := `($1 = '' OR from_agent = $1) AND ($2 = '' OR to_agent = $2) AND ($3 = '' OR status = $3)`
	return list(t, "tasks", taskCols, "agent_tasks", where, []any{q.From, q.To, q.Status}, q.Limit, q.Offset, scanTask)
}

const reportCols = `id, reporter, reported, category, details, at, open`

func scanReport(r pgx.CollectableRow) (handshake.Report, error) {
	var p handshake.Report
	err := r.Scan(&p.ID, &p.Reporter, &p.Reported, &p.Category, &p.Details, &p.At, &p.Open)
	p.At = p.At.UTC()
	return p, err
}

// CreateReport implements handshake.Tx.
func (t *tx) CreateReport(r handshake.Report) error {
	return t.exec("create report", `INSERT INTO agent_reports (`+reportCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7)`,
		r.ID, r.Reporter, r.Reported, r.Category, r.Details, r.At, r.Open)
}

// Reports implements handshake.Tx.
func (t *tx) Reports(q handshake.ReportQuery) ([]handshake.Report, int, error) {
	where := `($1 = '' OR reporter = $1) AND ($2 = '' OR reported = $2) AND (NOT $3 OR open) AND at > $4`
	return list(t, "reports", reportCols, "agent_reports", where, []any{q.Reporter, q.Reported, q.OpenOnly, since(q.Since)}, q.Limit, 0, scanReport)
}

const resourceCols = `id, owner, title, tags, access, content, created_at`

func scanResource(r pgx.CollectableRow) (handshake.Resource, error) {
	var s handshake.Resource
	err := r.Scan(&s.ID, &s.Owner, &s.Title, &s.Tags, &s.Access, &s.Content, &s.At)
	s.At = s.At.UTC()
	return s, err
}

// CreateResource implements handshake.Tx.
func (t *tx) CreateResource(r handshake.Resource) error {
	return t.exec("create resource", `INSERT INTO agent_resources (`+resourceCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7)`,
		r.ID, r.Owner, r.Title, nonNil(r.Tags), r.Access, r.Content, r.At)
}

// Resource implements handshake.Tx.
func (t *tx) Resource(id string) (handshake.Resource, error) {
	return one(t, "resource", id, `SELECT `+resourceCols+` FROM agent_resources WHERE id = $1`, scanResource)
}

// Resources implements handshake.Tx. The title match is a substring of
// the lower-cased title: LIKE with %, _ and \ in q escaped, so that the
// trigram index on lower(title) serves it (and the GIN index on tags).
func (t *tx) Resources(q handshake.ResourceQuery) ([]handshake.Resource, int, error) {
	where := `lower(title) LIKE $1 AND ($2 = '' OR tags @> ARRAY[$2]::text[])`
	pattern := "%" + likeEscaper.Replace(strings.ToLower(q.Q)) + "%"
	return list(t, "resources", resourceCols, "agent_resources", where, []any{pattern, strings.ToLower(q.Tag)}, q.Limit, q.Offset, scanResource)
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Usage implements handshake.Tx.
func (t *tx) Usage(kind, agentID string) (int, int, error) {
	var q string
	switch kind {
	case handshake.UsageResources:
		q = `SELECT count(*), coalesce(sum(octet_length(content)), 0) FROM agent_resources WHERE owner = $1`
	case handshake.UsageOpenTasks:
		q = `SELECT count(*), coalesce(sum(octet_length(body)), 0) FROM agent_tasks WHERE from_agent = $1 AND status = 'open'`
	default:
		return 0, 0, fmt.Errorf("postgres: usage of %q", kind)
	}
	var n, b int64
	if err := t.tx.QueryRow(t.ctx, q, agentID).Scan(&n, &b); err != nil {
		return 0, 0, fmt.Errorf("postgres: usage: %w", err)
	}
	return int(n), int(b), nil
}

const signInCols = `secret_hash, code, address, browser, created_at, code_expires_at, account, approved_at, expires_at, ended_at`

func scanSignIn(r pgx.CollectableRow) (handshake.SignIn, error) {
	var s handshake.SignIn
	var approved, expires, ended *time.Time
	err := r.Scan(&s.SecretHash, &s.Code, &s.Address, &s.Browser, &s.CreatedAt, &s.CodeExpiresAt, &s.Account, &approved, &expires, &ended)
	s.CreatedAt, s.CodeExpiresAt = s.CreatedAt.UTC(), s.CodeExpiresAt.UTC()
	s.ApprovedAt, s.ExpiresAt, s.EndedAt = pgutil.UTC(approved), pgutil.UTC(expires), pgutil.UTC(ended)
	return s, err
}

// CreateSignIn implements handshake.Tx.
func (t *tx) CreateSignIn(s handshake.SignIn) error {
	return t.exec("create sign-in", `INSERT INTO owner_sign_ins (`+signInCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
		s.SecretHash, s.Code, s.Address, s.Browser, s.CreatedAt, s.CodeExpiresAt, s.Account, pgutil.NullTime(s.ApprovedAt), pgutil.NullTime(s.ExpiresAt), pgutil.NullTime(s.EndedAt))
}

// SignInByCode implements handshake.Tx.
func (t *tx) SignInByCode(code string) (handshake.SignIn, error) {
	return one(t, "sign-in code", code, `SELECT `+signInCols+` FROM owner_sign_ins WHERE code = $1 AND account = '' ORDER BY ordinal DESC LIMIT 1`, scanSignIn)
}

// SignInBySecret implements handshake.Tx.
func (t *tx) SignInBySecret(secretHash string) (handshake.SignIn, error) {
	return one(t, "sign-in", secretHash, `SELECT `+signInCols+` FROM owner_sign_ins WHERE secret_hash = $1`, scanSignIn)
}

// UpdateSignIn implements handshake.Tx.
func (t *tx) UpdateSignIn(s handshake.SignIn) error {
	return t.update("sign-in", s.SecretHash, `UPDATE owner_sign_ins SET account = $2, approved_at = $3, expires_at = $4, ended_at = $5 WHERE secret_hash = $1`,
		s.SecretHash, s.Account, pgutil.NullTime(s.ApprovedAt), pgutil.NullTime(s.ExpiresAt), pgutil.NullTime(s.EndedAt))
}

// EndSessions implements handshake.Tx.
func (t *tx) EndSessions(account string, at time.Time) (int, error) {
	tag, err := t.tx.Exec(t.ctx, `UPDATE owner_sign_ins SET ended_at = $2 WHERE account = $1 AND ended_at IS NULL AND expires_at > $2`, account, at)
	if err != nil {
		return 0, fmt.Errorf("postgres: end sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// one reads the row of id; ErrNotFound when there is none.
func one[T any](t *tx, kind, id, sql string, scan pgx.RowToFunc[T]) (T, error) {
	rows, err := t.tx.Query(t.ctx, sql, id)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("postgres: %s %s: %w", kind, id, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, notFound(kind, id)
	}
	if err != nil {
		return v, fmt.Errorf("postgres: %s %s: %w", kind, id, err)
	}
	return v, nil
}

// list runs a filtered list query: the count alone for limit 0, else
// the rows with the total alongside (count(*) OVER ()), one round trip;
// a second only when the page is past the last row.
func list[T any](t *tx, what, cols, table, where string, args []any, limit, offset int, scan pgx.RowToFunc[T]) ([]T, int, error) {
	if limit <= 0 {
		total, err := t.count(what, `SELECT count(*) FROM `+table+` WHERE `+where, args...)
		return []T{}, total, err
	}
	n := len(args)
	// The window is computed over every matching row, before LIMIT.
	rows, err := t.tx.Query(t.ctx, `SELECT `+cols+`, count(*) OVER () FROM `+table+` WHERE `+where+
		fmt.Sprintf(` ORDER BY ordinal LIMIT $%d OFFSET $%d`, n+1, n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: %s: %w", what, err)
	}
	total := 0
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) {
		return scan(totalRow{r, &total})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: %s: %w", what, err)
	}
	if len(out) == 0 && offset > 0 {
		total, err = t.count(what, `SELECT count(*) FROM `+table+` WHERE `+where, args...)
		return out, total, err
	}
	return out, total, nil
}

// totalRow scans a row whose last column is the window's total into the
// scan function's columns and *total.
type totalRow struct {
	pgx.CollectableRow
	total *int
}

// Scan implements pgx.CollectableRow.
func (r totalRow) Scan(dest ...any) error { return r.CollectableRow.Scan(append(dest, r.total)...) }

// update runs an UPDATE of one row; ErrNotFound when it touched none.
func (t *tx) update(kind, id, sql string, args ...any) error {
	tag, err := t.tx.Exec(t.ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("postgres: update %s %s: %w", kind, id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(kind, id)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
