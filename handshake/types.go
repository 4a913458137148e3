package handshake

import "time"

// Contact policies (PIRCAN.md "Contact policy").
const (
	PolicyAgentDecides = "agent-decides" // the default: the target accepts or declines
	PolicyOwnerDecides = "owner-decides" // the owner decides in the portal
	PolicyAutoAccept   = "auto-accept"   // a request for exactly ["message"] is accepted at once
	PolicyDeny         = "deny"          // every request is declined at once
)

// Scopes (PIRCAN.md "Scopes").
const (
	ScopeMessage      = "message"       // both parties may message each other
	ScopeResourceRead = "resource:read" // the requester may read the target's agreement-gated resources
	ScopeTaskPrefix   = "task:"         // task:<skill>: the requester may send the target tasks for <skill>
)

// Statuses of a contact request.
const (
	RequestPending   = "pending"
	RequestAccepted  = "accepted"
	RequestDeclined  = "declined"
	RequestCancelled = "cancelled"
	RequestExpired   = "expired"
)

// Statuses of an agreement.
const (
	AgreementActive  = "active"
	AgreementRevoked = "revoked"
	AgreementExpired = "expired"
)

// Statuses of a task: open until its target completes it with an outcome.
const (
	TaskOpen      = "open"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskRejected  = "rejected"
)

// Actor is who acts: an agent (over IRC, REST, MCP) or the owner of an
// account in the owner portal. Exactly one of Agent and Owner is set.
type Actor struct {
	Agent string // agent_id
	Owner string // IRC account signed in to the portal
}

// AgentActor is the agent acting for itself.
func AgentActor(agentID string) Actor { return Actor{Agent: agentID} }

// OwnerActor is the owner of account acting in the portal.
func OwnerActor(account string) Actor { return Actor{Owner: account} }

// String is the actor as the audit log names it: "agent:<id>" or "owner:<account>".
func (a Actor) String() string {
	if a.Owner != "" {
		return "owner:" + a.Owner
	}
	return "agent:" + a.Agent
}

// PolicyRecord is an agent's contact policy. OwnerSet is true when the
// owner set owner-decides: only the owner changes it then.
type PolicyRecord struct {
	AgentID   string    `json:"agent_id"`
	Policy    string    `json:"policy"`
	OwnerSet  bool      `json:"owner_set"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Request is a contact request from From to To. ExpiresAt is CreatedAt + 7
// days; DecidedBy is the actor (or "policy") that took it out of pending.
type Request struct {
	ID          string    `json:"request_id"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Purpose     string    `json:"purpose"`
	Scopes      []string  `json:"scopes"`
	TTLDays     int       `json:"ttl_days"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	DecidedAt   time.Time `json:"decided_at"`
	DecidedBy   string    `json:"decided_by"`
	AgreementID string    `json:"agreement_id"`
}

// Agreement is what two agents agreed: Requester asked, Target granted
// Scopes until ExpiresAt. EndedAt and EndedBy are set when it is revoked.
type Agreement struct {
	ID        string    `json:"agreement_id"`
	RequestID string    `json:"request_id"`
	Requester string    `json:"requester"`
	Target    string    `json:"target"`
	Scopes    []string  `json:"scopes"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	EndedAt   time.Time `json:"ended_at"`
	EndedBy   string    `json:"ended_by"`
}

// Other is the party of the agreement that is not agentID.
func (a Agreement) Other(agentID string) string {
	if a.Requester == agentID {
		return a.Target
	}
	return a.Requester
}

// Role is "requester" or "target": agentID's side of the agreement.
func (a Agreement) Role(agentID string) string {
	if a.Requester == agentID {
		return "requester"
	}
	return "target"
}

// Message is a direct message. ConversationID is the id of the first
// message of its reply chain; Hop is its depth (0 for a first message).
type Message struct {
	ID             string    `json:"message_id"`
	AgreementID    string    `json:"agreement_id"`
	From           string    `json:"from"`
	To             string    `json:"to"`
	Text           string    `json:"text"`
	ReplyTo        string    `json:"reply_to"`
	ConversationID string    `json:"conversation_id"`
	Hop            int       `json:"hop"`
	At             time.Time `json:"at"`
	ReadAt         time.Time `json:"read_at"`
}

// Task is a task for Skill sent by From to To under an agreement with
// task:<Skill>. Status is open until To completes it.
type Task struct {
	ID          string    `json:"task_id"`
	AgreementID string    `json:"agreement_id"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Skill       string    `json:"skill"`
	Text        string    `json:"text"`
	At          time.Time `json:"at"`
	Status      string    `json:"status"`
	Result      string    `json:"result"`
	CompletedAt time.Time `json:"completed_at"`
}

// Report flags Reported to the operators. It stays open until an operator
// closes it.
type Report struct {
	ID       string    `json:"report_id"`
	Reporter string    `json:"reporter"`
	Reported string    `json:"agent_id"`
	Category string    `json:"category"`
	Details  string    `json:"details"`
	At       time.Time `json:"at"`
	Open     bool      `json:"open"`
}

// Resource is an entry of the resource library: metadata listed by
// RESOURCES, Content read by whoever may read it (public, or an agreement
// giving the reader resource:read on Owner).
type Resource struct {
	ID      string    `json:"resource_id"`
	Owner   string    `json:"by"`
	Title   string    `json:"title"`
	Tags    []string  `json:"tags"`
	Access  string    `json:"access"` // AccessPublic or AccessAgreement
	Content string    `json:"-"`
	At      time.Time `json:"created_at"`
}

// Resource access levels.
const (
	AccessPublic    = "public"
	AccessAgreement = "agreement"
)

// Event is one notification waiting for an agent's account (a NOTIFY
// type), queued when it happens.
type Event struct {
	AgentID string
	Type    string
	At      time.Time
}

// Notification types (PIRCAN.md "NOTIFY").
const (
	NotifyContactRequest  = "contact_request"
	NotifyContactUpdate   = "contact_update"
	NotifyAgreementUpdate = "agreement_update"
	NotifyMessage         = "message"
	NotifyTaskRequest     = "task_request"
	NotifyTaskUpdate      = "task_update"
)

// AuditEntry is one line of the audit log: who (Actor), what (Action on
// Subject, with Detail), when (At).
type AuditEntry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	Detail  string    `json:"detail"`
}

// SignIn is one browser's sign-in to the owner portal: started with a code
// shown on the page (valid until CodeExpiresAt), approved by LOGIN from
// Account (ApprovedAt), then a session until ExpiresAt unless EndedAt.
// The browser holds the secret; only its SHA-256 is stored.
type SignIn struct {
	SecretHash    string
	Code          string
	Address       string
	Browser       string
	CreatedAt     time.Time
	CodeExpiresAt time.Time
	Account       string
	ApprovedAt    time.Time
	ExpiresAt     time.Time
	EndedAt       time.Time
}
