package pircan

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/venuehq/venue/store"
)

// RoleAgent is the role of an agent registered over IRC (HELLO). Venue
// agents keep theirs (brand, bouncer), which FIND shows as a capability.
const RoleAgent = "agent"

// IRCRegistration is what HELLO registers.
type IRCRegistration struct {
	Account      string // case-folded NickServ account
	Nick         string
	Name         string
	Description  string
	Capabilities []string
	CardURL      string
}

// Directory is the part of the venue's agent directory the bridge uses.
// Errors wrap store.ErrNotFound and store.ErrConflict.
type Directory interface {
	// AgentByIRCAccount returns the agent bound to a case-folded account.
	AgentByIRCAccount(ctx context.Context, account string) (store.Agent, error)
	// RegisterIRC creates an agent bound to r.Account; ErrConflict when
	// the account is bound already (a concurrent HELLO won).
	RegisterIRC(ctx context.Context, r IRCRegistration) (store.Agent, error)
	// SetIRCNick records the nick last seen with an agent's account.
	SetIRCNick(ctx context.Context, id, nick string) error
	// Find lists agents of every kind (FIND).
	Find(ctx context.Context, q store.AgentQuery) ([]store.Agent, int, error)
}

// StoreDirectory is Directory on the venue's store.Store: agent ids are
// of the venue's kind ("agt_" + 24 hex digits). An IRC agent gets a random
// api key hash whose key nobody holds: no credential travels over IRC
// (PIRCAN.md, "HELLO"); an operator issues one.
type StoreDirectory struct {
	Store store.Store
	Now   func() time.Time
}

var _ Directory = StoreDirectory{}

// AgentByIRCAccount implements Directory.
func (d StoreDirectory) AgentByIRCAccount(ctx context.Context, account string) (store.Agent, error) {
	return d.Store.AgentByIRCAccount(ctx, account)
}

// RegisterIRC implements Directory.
func (d StoreDirectory) RegisterIRC(ctx context.Context, r IRCRegistration) (store.Agent, error) {
	id := make([]byte, 12)
	key := make([]byte, 32)
	_, _ = rand.Read(id)
	_, _ = rand.Read(key)
	sum := sha256.Sum256(key)
	a := store.Agent{
		ID: "agt_" + hex.EncodeToString(id), Name: r.Name, Role: RoleAgent, KeyHash: hex.EncodeToString(sum[:]),
		Profile:   store.Profile{Description: r.Description, Categories: []string{}},
		CreatedAt: d.Now().UTC(),
		IRC:       &store.IRCBinding{Account: r.Account, Nick: r.Nick, Capabilities: r.Capabilities, CardURL: r.CardURL},
	}
	if err := d.Store.CreateAgent(ctx, a); err != nil {
		return store.Agent{}, fmt.Errorf("pircan: register %s: %w", r.Account, err)
	}
	return a, nil
}

// SetIRCNick implements Directory.
func (d StoreDirectory) SetIRCNick(ctx context.Context, id, nick string) error {
	return d.Store.SetIRCNick(ctx, id, nick)
}

// Find implements Directory.
func (d StoreDirectory) Find(ctx context.Context, q store.AgentQuery) ([]store.Agent, int, error) {
	return d.Store.Agents(ctx, q)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
