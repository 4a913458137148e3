package pircan

import (
	"context"
	"errors"
	"strings"
	"time"

	"golang.org/x/text/secure/precis"
)

// ErrNoChannel: no channel with that name.
var ErrNoChannel = errors.New("pircan: no such channel")

// Channel is a channel PIRCAN lists (PIRCAN.md, "CHANNELS"). Operators
// create channels (see ChannelConfig); agents join them with JOIN.
type Channel struct {
	// Name as the operator wrote it, e.g. "#hazmat".
	Name    string `json:"name"`
	Private bool   `json:"private"`
	Topic   string `json:"topic"`
	// Members counts the agents recorded by JOIN (filled by Channels and
	// Channel; ignored by PutChannel).
	Members int `json:"members"`
}

// ChannelQuery selects channels for CHANNELS: every public channel and the
// private ones AgentID is a member of or invited to, whose name or topic
// contains Q (case-insensitively), ordered by name, Limit from Offset.
type ChannelQuery struct {
	Q       string
	AgentID string
	// All lists private channels too (operators; the bridge joining them).
	All    bool
	Limit  int
	Offset int
}

// State is the bridge's own persistent state, beside the agent directory:
// channels with their members and invitations, and the fixed windows of
// the rate limits (PIRCAN.md, "Limits"), kept in the store so a restart
// does not reset them and every node counts the same. Channel arguments
// named key are ChannelKey(name). Implementations: NewMemoryState and
// pircan/pgstate; both pass pircan/statetest.
type State interface {
	// PutChannel creates the channel or updates its name, privacy and topic.
	PutChannel(ctx context.Context, c Channel, now time.Time) error
	// DeleteChannel removes a channel with its members and invitations.
	// ErrNoChannel when there is none.
	DeleteChannel(ctx context.Context, key string) error
	// Channel returns one channel. ErrNoChannel when there is none.
	Channel(ctx context.Context, key string) (Channel, error)
	// Channels lists channels (see ChannelQuery) and the total that match.
	Channels(ctx context.Context, q ChannelQuery) ([]Channel, int, error)
	// AddMember records agentID as a member (idempotent). ErrNoChannel.
	AddMember(ctx context.Context, key, agentID string, now time.Time) error
	// Invite records that agentID may join a private channel (idempotent).
	// ErrNoChannel.
	Invite(ctx context.Context, key, agentID string, now time.Time) error
	// Invited reports whether agentID was invited to the channel.
	Invited(ctx context.Context, key, agentID string) (bool, error)
	// Hit counts one event under key in the fixed window that starts at
	// start and returns the events counted in it so far, this one
	// included. A later start begins a new window (count 1); an earlier
	// one (a node whose clock is behind) counts in the current window.
	Hit(ctx context.Context, key string, start time.Time) (int, error)
	// Charge is Hit counting n events (n ≥ 1) at once: the reply lines of
	// a long list (Limits.LinesPerRequest).
	Charge(ctx context.Context, key string, start time.Time, n int) (int, error)
	// ClaimName records agentID as the holder of a name key (NameKey)
	// unless another holds it, and returns the holder (agentID, or the one
	// that had it). NameHolder returns the holder ("" none).
	ClaimName(ctx context.Context, key, agentID string, now time.Time) (string, error)
	NameHolder(ctx context.Context, key string) (string, error)
	// CheckAccount checks that the account (its folded key) is still the
	// registration it was (PIRCAN.md "An account registered again"): id
	// is the server's account id sent with it now. The first id seen is
	// kept (true); the same again is true; another is false and is kept
	// as the pending one until ConfirmAccount.
	CheckAccount(ctx context.Context, account, id string, now time.Time) (bool, error)
	// ConfirmAccount makes the pending id of account its id (the agent's
	// owner confirmed the new registration); false when none is pending.
	ConfirmAccount(ctx context.Context, account string, now time.Time) (bool, error)
	// PruneWindows forgets windows that started before before (they count
	// nothing any more); the bridge calls it now and then so that one row
	// per nick ever seen does not pile up.
	PruneWindows(ctx context.Context, before time.Time) error
}

// ChannelKey is the key of a channel name: lower-cased with the rfc1459
// casemapping (A-Z, []\~ to a-z, {}|^), InspIRCd's default.
func ChannelKey(name string) string { return Fold("rfc1459", name) }

// Fold case-folds s with an IRC casemapping, the server's CASEMAPPING
// ISUPPORT token (PIRCAN.md "Identity"), so that two spellings the server
// takes for one name get one key, and two names it keeps apart keep two:
//
//   - "ascii": A-Z to a-z;
//   - "rfc1459-strict" and its older spelling "strict-rfc1459": also []\
//     to {}|;
//   - "rfc8265", "rfc7613" and "precis" (Ergo's): the PRECIS
//     UsernameCaseMapped profile (width-mapped, NFC, lower-cased; Unicode
//     names fold as Ergo folds them). A name the profile refuses (the
//     server would not have registered it) folds to its Unicode lower case;
//   - "rfc1459", and any other or no value (the IRC default): also ~ and
//     ^ to one key.
func Fold(casemapping, s string) string {
	switch strings.ToLower(casemapping) {
	case "rfc8265", "rfc7613", "precis":
		if k, err := precis.UsernameCaseMapped.String(s); err == nil {
			return k
		}
		return strings.ToLower(s)
	case "ascii":
		return foldBytes(s, false, false)
	case "rfc1459-strict", "strict-rfc1459":
		return foldBytes(s, true, false)
	default:
		return foldBytes(s, true, true)
	}
}

// foldBytes lower-cases A-Z in s, and []\ when brackets, and ~ (to ^)
// when tilde.
func foldBytes(s string, brackets, tilde bool) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 32
		case brackets && (c == '[' || c == ']' || c == '\\'):
			b[i] = c + 32
		case tilde && c == '~':
			b[i] = '^'
		}
	}
	return string(b)
}
