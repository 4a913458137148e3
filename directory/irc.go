package directory

import (
	"context"
	"fmt"

	"github.com/venuehq/venue/store"
)

// RoleAgent is the role of an agent registered over IRC with PIRCAN/1
// HELLO (PIRCAN.md). Venue agents keep theirs (brand, bouncer), which FIND
// shows as a capability.
const RoleAgent = "agent"

// IRCRegistration is what PIRCAN/1 HELLO registers; the bridge has checked
// the fields' limits (PIRCAN.md, "HELLO").
type IRCRegistration struct {
	Account      string // the NickServ account, case-folded by the bridge
	Nick         string
	Name         string
	Description  string
	Capabilities []string
	CardURL      string
}

// RegisterIRC creates an agent bound to r.Account, with an id of the
// venue's kind. It gets an api key hash whose key is never shown: no
// credential travels over IRC (an operator issues one). Errors wrap
// store.ErrConflict when the account is bound already (a concurrent HELLO
// won).
func (s *Service) RegisterIRC(ctx context.Context, r IRCRegistration) (store.Agent, error) {
	a := store.Agent{
		ID: NewID("agt"), Name: r.Name, Role: RoleAgent, KeyHash: HashKey(NewAPIKey()),
		Profile:   store.Profile{Description: r.Description, Categories: []string{}},
		CreatedAt: s.Now().UTC(),
		IRC:       &store.IRCBinding{Account: r.Account, Nick: r.Nick, Capabilities: r.Capabilities, CardURL: r.CardURL},
	}
	if err := s.Store.CreateAgent(ctx, a); err != nil {
		return store.Agent{}, fmt.Errorf("directory: register irc account %s: %w", r.Account, err)
	}
	return a, nil
}

// AgentByIRCAccount returns the agent bound to a case-folded NickServ
// account; errors wrap store.ErrNotFound.
func (s *Service) AgentByIRCAccount(ctx context.Context, account string) (store.Agent, error) {
	return s.Store.AgentByIRCAccount(ctx, account)
}

// SetIRCNick records the nick last seen using an IRC agent's account.
func (s *Service) SetIRCNick(ctx context.Context, id, nick string) error {
	return s.Store.SetIRCNick(ctx, id, nick)
}
