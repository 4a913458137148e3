package handshake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Agents is what the handshake needs of the directory
// (directory.Directory has it): one agent by id, an error wrapping
// store.ErrNotFound or a *wire.Error not_found when there is none.
type Agents interface {
	Agent(ctx context.Context, id string) (store.Agent, error)
}

// Accounts tells which IRC accounts own which agents: the bindings HELLO
// makes (PIRCAN.md "Handshake, messages and the owner portal"). A venue
// agent has no account. The PIRCAN bridge's store implements it; tests use
// StaticAccounts.
type Accounts interface {
	// AgentsOf returns the agent ids bound to account, in a stable order.
	AgentsOf(ctx context.Context, account string) ([]string, error)
	// AccountsOf returns the accounts bound to agentID (irc_accounts).
	AccountsOf(ctx context.Context, agentID string) ([]string, error)
}

// Pusher sends a frame to every lobby socket of an agent on any node
// (hub.Hub has it).
type Pusher interface {
	Push(ctx context.Context, agentID string, frame json.RawMessage)
}

// Service is the handshake's rules over a Store. Agents is required;
// Accounts (no owners when nil), Push (no lobby pushes when nil) and
// OnEvent are optional. NewID returns prefix + "_" + a random id
// (directory.NewID).
type Service struct {
	Store    Store
	Agents   Agents
	Accounts Accounts
	Push     Pusher
	NewID    func(prefix string) string
	Log      *slog.Logger
	// OnEvent, if set, is called after a commit for every notification
	// queued (agentID, NOTIFY type): the IRC bridge sends the waiting
	// notifications at once when it can see the account. It must not block.
	OnEvent func(agentID, typ string)
}

// New returns the service that c describes, the one way the venue's node
// and `venue pircan` build it: Store, Agents and NewID are required (an
// error names the missing one); Log defaults to slog.Default().
func New(c Service) (*Service, error) {
	switch {
	case c.Store == nil:
		return nil, errors.New("handshake: New: no Store")
	case c.Agents == nil:
		return nil, errors.New("handshake: New: no Agents")
	case c.NewID == nil:
		return nil, errors.New("handshake: New: no NewID")
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &c, nil
}

// effects are what a committed change sends: lobby pushes and
// notification hooks. They run after the transaction, never inside it.
type effects struct {
	pushes []push
	events []Event
}

type push struct {
	agentID string
	frame   json.RawMessage
}

func (e *effects) push(agentID string, frame map[string]any) {
	b, _ := json.Marshal(frame)
	e.pushes = append(e.pushes, push{agentID, b})
}

// event queues a notification in tx and remembers it for OnEvent.
func (e *effects) event(tx Tx, agentID, typ string, now time.Time) error {
	ev := Event{AgentID: agentID, Type: typ, At: now}
	if err := tx.AddEvent(ev); err != nil {
		return err
	}
	e.events = append(e.events, ev)
	return nil
}

// do runs fn in one transaction locking keys, after expiring what is due
// at now, then delivers its effects.
func (s *Service) do(ctx context.Context, now time.Time, keys []string, fn func(tx Tx, fx *effects) error) error {
	var fx effects
	err := s.Store.Atomically(ctx, keys, func(tx Tx) error {
		fx = effects{}
		if err := tx.Expire(now); err != nil {
			return fmt.Errorf("handshake: expire: %w", err)
		}
		return fn(tx, &fx)
	})
	if err != nil {
		return err
	}
	for _, p := range fx.pushes {
		if s.Push != nil {
			s.Push.Push(ctx, p.agentID, p.frame)
		}
	}
	if s.OnEvent != nil {
		for _, ev := range fx.events {
			s.OnEvent(ev.AgentID, ev.Type)
		}
	}
	return nil
}

func audit(tx Tx, now time.Time, actor, action, subject, detail string) error {
	return tx.Audit(AuditEntry{At: now, Actor: actor, Action: action, Subject: subject, Detail: detail})
}

// agentKey is the lock key of an agent.
func agentKey(id string) string { return "agent:" + id }

// agent looks an agent up; unknown_agent when there is none.
func (s *Service) agent(ctx context.Context, id string) (store.Agent, error) {
	if id == "" {
		return store.Agent{}, errorf(CodeInvalidArgument, "an agent_id is required")
	}
	a, err := s.Agents.Agent(ctx, id)
	var we *wire.Error
	if errors.Is(err, store.ErrNotFound) || (errors.As(err, &we) && we.Code == wire.CodeNotFound) {
		return a, errorf(CodeUnknownAgent, "no agent %s", id)
	}
	return a, err
}

// name is an agent's display name ("" when it cannot be read).
func (s *Service) name(ctx context.Context, id string) string {
	a, err := s.Agents.Agent(ctx, id)
	if err != nil {
		return ""
	}
	return a.Name
}

// bound reports whether agentID is bound to account (Accounts).
func (s *Service) bound(ctx context.Context, account, agentID string) (bool, error) {
	if s.Accounts == nil || account == "" {
		return false, nil
	}
	ids, err := s.Accounts.AgentsOf(ctx, account)
	if err != nil {
		return false, fmt.Errorf("handshake: agents of account: %w", err)
	}
	return slices.Contains(ids, agentID), nil
}

// actsFor reports whether actor speaks for agentID: the agent itself, or
// its owner (OwnedAgents), read in tx when it is not nil.
func (s *Service) actsFor(ctx context.Context, tx Tx, actor Actor, agentID string) (bool, error) {
	if actor.Owner != "" {
		return s.owns(ctx, tx, actor.Owner, agentID)
	}
	return actor.Agent != "" && actor.Agent == agentID, nil
}

// IRCAccounts returns the accounts bound to agentID (none without Accounts).
func (s *Service) IRCAccounts(ctx context.Context, agentID string) ([]string, error) {
	if s.Accounts == nil {
		return []string{}, nil
	}
	acc, err := s.Accounts.AccountsOf(ctx, agentID)
	if acc == nil {
		acc = []string{}
	}
	return acc, err
}

// StaticAccounts is Accounts from a map of account to agent ids, for tests
// and single-node setups without the IRC bridge.
type StaticAccounts map[string][]string

// AgentsOf implements Accounts.
func (m StaticAccounts) AgentsOf(_ context.Context, account string) ([]string, error) {
	return slices.Clone(m[account]), nil
}

// AccountsOf implements Accounts.
func (m StaticAccounts) AccountsOf(_ context.Context, agentID string) ([]string, error) {
	var out []string
	for acc, ids := range m {
		if slices.Contains(ids, agentID) {
			out = append(out, acc)
		}
	}
	slices.Sort(out)
	return out, nil
}

// notFound turns a store miss into the wire's not_found for what.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, ErrNotFound) {
		return errorf(CodeNotFound, format, args...)
	}
	return err
}
