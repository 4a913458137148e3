package handshake

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is what a Store returns (wrapped) for a missing row.
//
// Windows are open at their start: "since t" means strictly after t, so
// a thing done at t has left an hour's window at t + 1h.
var ErrNotFound = errors.New("handshake: not found")

// Store is the handshake's persistence. Everything happens inside
// Atomically, so a rule's reads, its limit counts and its writes are one
// transaction.
type Store interface {
	// Atomically runs fn in one transaction holding an exclusive lock on
	// each of keys (taken in sorted order) until it ends, on every node
	// sharing the store. fn's error rolls everything back and is returned
	// as is. fn may run more than once (a transaction that lost a deadlock
	// is run again), so it must start from scratch each time.
	Atomically(ctx context.Context, keys []string, fn func(tx Tx) error) error
}

// RequestQuery selects contact requests. Empty fields do not filter.
// Limit 0 returns no rows, only the total; rows are oldest first.
type RequestQuery struct {
	From, To     string
	Statuses     []string
	CreatedSince time.Time // created_at > CreatedSince
	DecidedSince time.Time // decided_at > DecidedSince
	Limit        int
	Offset       int
}

// AgreementQuery selects agreements of Agent (either party), with Other as
// the other party when set. Rows are oldest first.
type AgreementQuery struct {
	Agent    string
	Other    string
	Statuses []string
	Limit    int
	Offset   int
}

// MessageQuery selects messages. Rows are oldest first.
type MessageQuery struct {
	From, To       string
	AgreementID    string
	ConversationID string
	UnreadOnly     bool
	Since          time.Time // at > Since
	Limit          int
}

// TaskQuery selects tasks. Rows are oldest first.
type TaskQuery struct {
	From, To string
	Status   string
	Limit    int
	Offset   int
}

// ReportQuery selects reports. Rows are oldest first.
type ReportQuery struct {
	Reporter, Reported string
	OpenOnly           bool
	Since              time.Time // at > Since
	Limit              int
}

// Usage kinds (Tx.Usage).
const (
	UsageResources = "resources"
	UsageOpenTasks = "open_tasks"
)

// ResourceQuery selects resources: Q a case-insensitive substring of the
// title, Tag one of its tags (exact, case-insensitive). Rows are oldest first.
type ResourceQuery struct {
	Q, Tag string
	Limit  int
	Offset int
}

// Tx is what a rule may do inside Atomically. Lists return their rows
// (at most Limit) and the total number of matches. Missing rows are
// ErrNotFound, wrapped.
type Tx interface {
	// Expire marks pending requests whose ExpiresAt is not after now
	// expired, and active agreements whose ExpiresAt is not after now
	// expired.
	Expire(now time.Time) error

	Policy(agentID string) (PolicyRecord, error) // ErrNotFound: the default policy applies
	SetPolicy(p PolicyRecord) error

	// Owner is the owner agentID named (ErrNotFound: none); SetOwner
	// creates or replaces it; DeleteOwner removes it (none is no error);
	// OwnedBy lists the agents whose confirmed owner is account, sorted.
	Owner(agentID string) (Owner, error)
	SetOwner(o Owner) error
	DeleteOwner(agentID string) error
	OwnedBy(account string) ([]string, error)

	CreateRequest(r Request) error
	Request(id string) (Request, error)
	UpdateRequest(r Request) error
	Requests(q RequestQuery) ([]Request, int, error)

	CreateAgreement(a Agreement) error
	Agreement(id string) (Agreement, error)
	UpdateAgreement(a Agreement) error
	Agreements(q AgreementQuery) ([]Agreement, int, error)

	CreateMessage(m Message) error
	Message(id string) (Message, error)
	Messages(q MessageQuery) ([]Message, int, error)
	MarkRead(ids []string, at time.Time) error

	CreateTask(t Task) error
	Task(id string) (Task, error)
	UpdateTask(t Task) error
	Tasks(q TaskQuery) ([]Task, int, error)

	CreateReport(r Report) error
	Reports(q ReportQuery) ([]Report, int, error)

	CreateResource(r Resource) error
	Resource(id string) (Resource, error)
	Resources(q ResourceQuery) ([]Resource, int, error)
	// Usage counts what agentID holds of kind (UsageResources: the
	// resources it owns; UsageOpenTasks: the open tasks it sent) and their
	// bytes (content, task text).
	Usage(kind, agentID string) (count, bytes int, err error)

	// AddEvent queues a notification; events before e.At minus 24 hours
	// may be dropped on the way.
	AddEvent(e Event) error
	// TakeEvents removes every event queued for agentID and returns those
	// after since, oldest first.
	TakeEvents(agentID string, since time.Time) ([]Event, error)

	// Audit appends to the audit log (ID is assigned).
	Audit(e AuditEntry) error
	// AuditLog returns entries after since, oldest first, at most limit.
	AuditLog(since time.Time, limit int) ([]AuditEntry, error)

	// Hit counts one use of a limited thing (kind, key) at `at`; Hits
	// counts those after since. Hits older than an hour before at
	// may be dropped.
	Hit(kind, key string, at time.Time) error
	Hits(kind, key string, since time.Time) (int, error)

	CreateSignIn(s SignIn) error
	SignInByCode(code string) (SignIn, error) // the newest not yet approved
	SignInBySecret(secretHash string) (SignIn, error)
	UpdateSignIn(s SignIn) error
	// EndSessions ends every approved, unexpired, unended sign-in of
	// account at `at` and returns how many.
	EndSessions(account string, at time.Time) (int, error)
	// Purge deletes at most limit rows of each kind older than before
	// says (a zero time: none of that kind): sign-ins created before
	// SignIns; audit entries at before Audit; messages sent before
	// Messages; requests not pending whose decision (or expiry, when never
	// decided) is before Requests; tasks answered (not open) before
	// Tasks. It returns how many of each it deleted.
	Purge(before PurgeBefore, limit int) (Purged, error)
}
