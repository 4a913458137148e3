package pircan

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/pircan/line"
)

// AgentEvents wakes the bridge when an agent gets an event on any node:
// hub.Hub's SubscribeAgent, or BusEvents on the venue's bus. fn must not
// block; an empty message says pushes may have been lost.
type AgentEvents interface {
	SubscribeAgent(agentID string, fn func([]byte)) (cancel func())
}

// BusEvents is AgentEvents on the venue's bus: the topic the hub pushes an
// agent's lobby frames on (PROTOCOL.md "Handshake pushes"), so the bridge
// hears of an event made by any node, over any path.
type BusEvents struct{ Bus bus.Bus }

// Push publishes a lobby frame to an agent's sockets on every node, as
// hub.Hub does: the handshake's Pusher where the bridge runs without a
// venue node (`venue pircan`).
func (e BusEvents) Push(ctx context.Context, agentID string, frame json.RawMessage) {
	_ = e.Bus.Publish(ctx, bus.AgentTopic(agentID), frame) // lost pushes are read from the store
}

// SubscribeAgent implements AgentEvents.
func (e BusEvents) SubscribeAgent(agentID string, fn func([]byte)) func() {
	return e.Bus.Subscribe(bus.AgentTopic(agentID), fn)
}

// sighting is an identified account seen on IRC with a nick: it messaged
// PIRCAN, joined a shared channel, identified while in one (account-notify)
// or spoke in one.
type sighting struct {
	Nick, NickKey, AccountKey string
	// Channel: seen in a channel the bridge is in, so the bridge will see
	// the nick quit, part or change: it follows the agent from then on.
	Channel bool
	// Spoke: a channel message. These are looked at once a minute per
	// account at most; the others every time.
	Spoke bool
}

// Bounds of the notifier's memory.
const (
	spokeRecheck = time.Minute
	maxPresent   = 10000 // agents followed at once (subscribed to)
	maxChecked   = 10000 // accounts remembered for the spoke throttle
)

// notifier sends NOTIFY (PIRCAN.md "NOTIFY"): when an account is seen it
// takes the agent's waiting events from the store (TakeNotifications,
// which collapses them to one line per type with the current count) and
// sends them to the nick it was seen with, and follows the agent's events
// (AgentEvents) from then on. While that nick shares a channel with the
// bridge (so that its QUIT, PART or NICK is seen) new events go out at
// once; a nick seen only messaging PIRCAN is asked after first (WHOX, and
// MONITOR tells when it goes), so nothing is sent to a nick that changed
// hands. A NOTIFY line never carries a name, purpose or
// text.
//
// seen and woke do I/O and run on the bridge's notify goroutine; gone,
// renamed and reset only change its maps and may run anywhere.
type notifier struct {
	m      *metrics // the bridge's (unregistered ones until New sets them)
	dir    Directory
	hs     *handshake.Service
	events AgentEvents // nil: NOTIFY only when the account is seen
	clock  clock.Clock
	log    *slog.Logger
	wake   func(agentID string) // must not block

	mu      sync.Mutex
	byAgent map[string]*present
	byNick  map[string]string    // case-folded nick -> agent id
	checked map[string]time.Time // account -> when a Spoke sighting last looked
}

// present is an agent whose account is on IRC under nick.
type present struct {
	agentID, account, nick, nickKey string
	cancel                          func()
	// verify: the nick was seen only messaging PIRCAN, not in a shared
	// channel, so the bridge would not see it quit or change hands: before
	// each send it asks the server who holds the nick (WHOX) and sends
	// only when the answer is the account.
	verify bool
}

func newNotifier(dir Directory, hs *handshake.Service, events AgentEvents, c clock.Clock, log *slog.Logger, wake func(string)) *notifier {
	return &notifier{m: newMetrics(nil), dir: dir, hs: hs, events: events, clock: c, log: log, wake: wake,
		byAgent: map[string]*present{}, byNick: map[string]string{}, checked: map[string]time.Time{}}
}

// seen records a sighting and returns the NOTIFY lines waiting for the
// account's agent (none when it has no agent).
func (n *notifier) seen(ctx context.Context, s sighting) (string, []Out) {
	now := n.clock.Now()
	n.mu.Lock()
	if id, ok := n.byNick[s.NickKey]; ok && n.byAgent[id] != nil && n.byAgent[id].account != s.AccountKey {
		n.mu.Unlock()
		n.gone(s.NickKey) // the nick holds another account now
		n.mu.Lock()
	}
	n.mu.Unlock()
	if s.Spoke {
		n.mu.Lock()
		last, ok := n.checked[s.AccountKey]
		_, present := n.byNick[s.NickKey]
		if ok && present && now.Sub(last) < spokeRecheck {
			n.mu.Unlock()
			return "", nil
		}
		if len(n.checked) >= maxChecked {
			clear(n.checked)
		}
		n.checked[s.AccountKey] = now
		n.mu.Unlock()
	}
	a, err := n.dir.AgentByIRCAccount(ctx, s.AccountKey)
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		n.log.Warn("pircan: notify: agent of account", "err", err)
		return "", nil
	}
	if a.IRC != nil && a.IRC.Nick != s.Nick {
		if err := n.dir.SetIRCNick(ctx, a.ID, s.Nick); err != nil {
			n.log.Warn("pircan: record nick", "agent_id", a.ID, "err", err)
		}
	}
	n.follow(a.ID, s)
	return a.ID, n.take(ctx, a.ID, s.Nick)
}

// follow records agentID as present under s.Nick and subscribes to its
// events (once).
func (n *notifier) follow(agentID string, s sighting) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.byAgent[agentID]
	if p == nil {
		if len(n.byAgent) >= maxPresent {
			return
		}
		p = &present{agentID: agentID}
		if n.events != nil {
			p.cancel = n.events.SubscribeAgent(agentID, func([]byte) { n.wake(agentID) })
		}
		n.byAgent[agentID] = p
		n.m.followed.Set(float64(len(n.byAgent)))
	}
	if p.nickKey != s.NickKey {
		delete(n.byNick, p.nickKey)
		p.verify = !s.Channel
	} else if s.Channel {
		p.verify = false
	}
	p.account, p.nick, p.nickKey = s.AccountKey, s.Nick, s.NickKey
	n.byNick[s.NickKey] = agentID
}

// woke sends the events waiting for agentID when its account is present.
// It returns the account (the output queue's key) and the lines.
func (n *notifier) woke(ctx context.Context, agentID string) (string, []Out) {
	n.mu.Lock()
	p := n.byAgent[agentID]
	var account, nick string
	var verify bool
	if p != nil {
		account, nick, verify = p.account, p.nick, p.verify
	}
	n.mu.Unlock()
	if p == nil {
		return "", nil
	}
	if verify {
		// Who holds the nick now? The answer (354, whoxVerifyToken) is a
		// sighting: the events go out if it is still the account.
		return account, []Out{{Command: "WHO", Params: []string{nick, "%tna," + whoxVerifyToken}}}
	}
	return account, n.take(ctx, agentID, nick)
}

// whoxVerifyToken marks the WHO replies that confirm a followed nick
// still holds its account.
const whoxVerifyToken = "747"

// take takes agentID's waiting events and makes its NOTIFY lines to nick.
func (n *notifier) take(ctx context.Context, agentID, nick string) []Out {
	notes, err := n.hs.TakeNotifications(ctx, agentID, n.clock.Now())
	if err != nil {
		n.log.Warn("pircan: take notifications", "agent_id", agentID, "err", err)
		return nil
	}
	out := make([]Out, 0, len(notes))
	for _, note := range notes {
		s, err := line.Format("NOTIFY", objOf(note.Fields()))
		if err != nil {
			n.log.Error("pircan: format NOTIFY", "err", err)
			continue
		}
		out = append(out, notice(nick, s))
		n.m.notify.WithLabelValues(note.Type).Inc()
	}
	return out
}

// gone forgets the agent present under a nick (it quit, or logged out of
// its account): the nick may change hands.
func (n *notifier) gone(nickKey string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := n.byNick[nickKey]
	if !ok {
		return
	}
	delete(n.byNick, nickKey)
	if p := n.byAgent[id]; p != nil {
		if p.cancel != nil {
			p.cancel()
		}
		delete(n.byAgent, id)
		n.m.followed.Set(float64(len(n.byAgent)))
	}
}

// renamed follows a nick change of a present agent.
func (n *notifier) renamed(oldKey, nick, nickKey string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := n.byNick[oldKey]
	if !ok {
		return
	}
	delete(n.byNick, oldKey)
	n.byNick[nickKey] = id
	if p := n.byAgent[id]; p != nil {
		p.nick, p.nickKey = nick, nickKey
	}
}

// reset forgets everyone (the bridge lost its connection).
func (n *notifier) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.byAgent {
		if p.cancel != nil {
			p.cancel()
		}
	}
	clear(n.byAgent)
	n.m.followed.Set(0)
	clear(n.byNick)
	clear(n.checked)
}
