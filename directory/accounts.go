package directory

import (
	"context"
	"errors"

	"github.com/venuehq/venue/store"
)

// IRCAccounts is the handshake's account bindings (handshake.Accounts)
// over the IRC binding HELLO records on an agent (store.Agent.IRC): an
// account owns the agent bound to it, and an IRC agent's irc_accounts is
// its one account (PIRCAN.md "Handshake, messages and the owner portal").
// Accounts are the bridge's case-folded keys. A venue agent has none.
type IRCAccounts struct {
	Store store.Store
}

// AgentsOf returns the agent bound to a case-folded account: none, or one.
func (a IRCAccounts) AgentsOf(ctx context.Context, account string) ([]string, error) {
	if account == "" {
		return []string{}, nil
	}
	ag, err := a.Store.AgentByIRCAccount(ctx, account)
	if errors.Is(err, store.ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return []string{ag.ID}, nil
}

// AccountsOf returns the account bound to agentID: none for a venue agent
// or an unknown id.
func (a IRCAccounts) AccountsOf(ctx context.Context, agentID string) ([]string, error) {
	ag, err := a.Store.Agent(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if ag.IRC == nil || ag.IRC.Account == "" {
		return []string{}, nil
	}
	return []string{ag.IRC.Account}, nil
}
