package pircan

import (
	"context"
	"errors"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/store"
)

// Directory is the part of the venue's agent directory the bridge uses
// (*directory.Service implements it). Errors wrap store.ErrNotFound and
// store.ErrConflict.
type Directory interface {
	// AgentByIRCAccount returns the agent bound to a case-folded account.
	AgentByIRCAccount(ctx context.Context, account string) (store.Agent, error)
	// RegisterIRC creates an agent bound to r.Account; ErrConflict when
	// the account is bound already (a concurrent HELLO won).
	RegisterIRC(ctx context.Context, r directory.IRCRegistration) (store.Agent, error)
	// SetIRCNick records the nick last seen with an agent's account.
	SetIRCNick(ctx context.Context, id, nick string) error
	// Find lists agents of every kind (FIND).
	Find(ctx context.Context, q store.AgentQuery) ([]store.Agent, int, error)
}

var _ Directory = (*directory.Service)(nil)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
