package handshake

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Owner verifications (WHOAMI's owner, PIRCAN.md "Owners").
const (
	// OwnerConfirmed: the agent named Account and Account confirmed it
	// over IRC (OWN): only Account owns the agent.
	OwnerConfirmed = "confirmed"
	// OwnerPending: the agent named Account, which has not confirmed yet;
	// the agent's own account owns it meanwhile.
	OwnerPending = "pending"
	// OwnerSelf: no owner named; the agent's own account owns it.
	OwnerSelf = "self"
)

// MaxOwnerAccount is the longest owner account name, in characters.
const MaxOwnerAccount = 64

// Owner is the owner account an agent named (OWNER), by its bridge's
// case-folded key: pending until Account confirms (ConfirmedAt).
type Owner struct {
	AgentID     string
	Account     string
	NamedAt     time.Time
	ConfirmedAt time.Time
}

// Confirmed reports whether the owner confirmed.
func (o Owner) Confirmed() bool { return !o.ConfirmedAt.IsZero() }

// OwnerView is WHOAMI's owner: {"name","verification"}.
type OwnerView struct {
	Name         string
	Verification string // OwnerConfirmed, OwnerPending, OwnerSelf
}

// Fields is the view as a reply object.
func (v OwnerView) Fields() map[string]any {
	return map[string]any{"name": v.Name, "verification": v.Verification}
}

// ownerOf reads agentID's owner record; ok false when none is named.
func ownerOf(tx Tx, agentID string) (Owner, bool, error) {
	o, err := tx.Owner(agentID)
	if errors.Is(err, ErrNotFound) {
		return Owner{}, false, nil
	}
	return o, err == nil, err
}

// hasOwner reports whether agentID has a confirmed owner.
func hasOwner(tx Tx, agentID string) (bool, error) {
	o, ok, err := ownerOf(tx, agentID)
	return ok && o.Confirmed(), err
}

// NameOwner is OWNER {"account"} from agentID: it names account (folded)
// its owner, pending until account confirms with ConfirmOwner. Naming
// again replaces a pending owner; "" withdraws it. Errors:
// invalid_argument (a malformed account, or the agent's own),
// not_authorized (an owner confirmed already: only it releases the agent,
// Disown).
func (s *Service) NameOwner(ctx context.Context, agentID, account string, now time.Time) (OwnerView, error) {
	if account != "" && !validAccount(account) {
		return OwnerView{}, errorf(CodeInvalidArgument, "account must be a NickServ account name (at most %d characters, no blanks or controls)", MaxOwnerAccount)
	}
	own, err := s.IRCAccounts(ctx, agentID)
	if err != nil {
		return OwnerView{}, err
	}
	if slices.Contains(own, account) {
		return OwnerView{}, errorf(CodeInvalidArgument, "that is your own account, which owns you while you name no owner")
	}
	err = s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		cur, ok, err := ownerOf(tx, agentID)
		if err != nil {
			return err
		}
		if ok && cur.Confirmed() {
			return errorf(CodeNotAuthorized, "your owner %s confirmed: only your owner releases you (DISOWN)", cur.Account)
		}
		switch {
		case account == "" && !ok:
			return nil
		case account == "":
			if err := tx.DeleteOwner(agentID); err != nil {
				return err
			}
		case ok && cur.Account == account:
			return nil
		default:
			if err := tx.SetOwner(Owner{AgentID: agentID, Account: account, NamedAt: now}); err != nil {
				return err
			}
		}
		return audit(tx, now, "agent:"+agentID, "owner", agentID, account)
	})
	if err != nil {
		return OwnerView{}, err
	}
	return s.OwnerOf(ctx, agentID)
}

// ConfirmOwner is OWN {"agent_id"} from account: it confirms the owner
// agentID named. From then on only account owns the agent: the portal
// (LOGIN), its policy locks, its decisions. Confirming twice is no
// change. Errors: not_found (agentID named no such owner).
func (s *Service) ConfirmOwner(ctx context.Context, account, agentID string, now time.Time) (OwnerView, error) {
	err := s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		o, ok, err := ownerOf(tx, agentID)
		if err != nil {
			return err
		}
		if !ok || account == "" || o.Account != account {
			return errorf(CodeNotFound, "agent %s did not name you its owner", agentID)
		}
		if o.Confirmed() {
			return nil
		}
		o.ConfirmedAt = now
		if err := tx.SetOwner(o); err != nil {
			return err
		}
		return audit(tx, now, "owner:"+account, "own", agentID, "")
	})
	if err != nil {
		return OwnerView{}, err
	}
	return s.OwnerOf(ctx, agentID)
}

// Disown is DISOWN {"agent_id"} from account: the owner agentID named
// (confirmed or not) gives it up; the agent's own account owns it again.
// Errors: not_found (account is not its named owner).
func (s *Service) Disown(ctx context.Context, account, agentID string, now time.Time) (OwnerView, error) {
	err := s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		o, ok, err := ownerOf(tx, agentID)
		if err != nil {
			return err
		}
		if !ok || account == "" || o.Account != account {
			return errorf(CodeNotFound, "agent %s did not name you its owner", agentID)
		}
		if err := tx.DeleteOwner(agentID); err != nil {
			return err
		}
		return audit(tx, now, "owner:"+account, "disown", agentID, "")
	})
	if err != nil {
		return OwnerView{}, err
	}
	return s.OwnerOf(ctx, agentID)
}

// OwnerOf is WHOAMI's owner of agentID: the named owner (confirmed or
// pending), else the agent's own account ("self"); ok false for an agent
// with neither (a venue agent).
func (s *Service) OwnerOf(ctx context.Context, agentID string) (OwnerView, error) {
	var o Owner
	var ok bool
	err := s.Store.Atomically(ctx, nil, func(tx Tx) error {
		var err error
		o, ok, err = ownerOf(tx, agentID)
		return err
	})
	if err != nil {
		return OwnerView{}, err
	}
	if ok && o.Confirmed() {
		return OwnerView{Name: o.Account, Verification: OwnerConfirmed}, nil
	}
	if ok {
		return OwnerView{Name: o.Account, Verification: OwnerPending}, nil
	}
	own, err := s.IRCAccounts(ctx, agentID)
	if err != nil || len(own) == 0 {
		return OwnerView{}, err
	}
	return OwnerView{Name: own[0], Verification: OwnerSelf}, nil
}

// OwnedAgents returns the agents account owns, sorted: those whose named
// owner it is and that confirmed, and those bound to it (Accounts) that
// have no confirmed owner.
func (s *Service) OwnedAgents(ctx context.Context, account string) ([]string, error) {
	if account == "" {
		return []string{}, nil
	}
	var bound []string
	if s.Accounts != nil {
		var err error
		if bound, err = s.Accounts.AgentsOf(ctx, account); err != nil {
			return nil, err
		}
	}
	out := []string{}
	err := s.Store.Atomically(ctx, nil, func(tx Tx) error {
		owned, err := tx.OwnedBy(account)
		if err != nil {
			return err
		}
		out = append(out[:0], owned...)
		for _, id := range bound {
			if named, err := hasOwner(tx, id); err != nil {
				return err
			} else if !named && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// owns reports whether account owns agentID (see OwnedAgents), in tx
// when it is not nil.
func (s *Service) owns(ctx context.Context, tx Tx, account, agentID string) (bool, error) {
	if account == "" {
		return false, nil
	}
	var o Owner
	var named bool
	read := func(tx Tx) error {
		var err error
		o, named, err = ownerOf(tx, agentID)
		return err
	}
	var err error
	if tx != nil {
		err = read(tx)
	} else {
		err = s.Store.Atomically(ctx, nil, read)
	}
	if err != nil {
		return false, err
	}
	if named && o.Confirmed() {
		return o.Account == account, nil
	}
	return s.bound(ctx, account, agentID)
}

// validAccount: 1-64 characters, no blanks, controls or format characters.
func validAccount(a string) bool {
	if a == "" || len([]rune(a)) > MaxOwnerAccount {
		return false
	}
	return strings.IndexFunc(a, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}) < 0
}
