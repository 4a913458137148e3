package webhooks

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/events"
)

// purgeEvery is how often a node drops old attempts and ended deliveries.
const purgeEvery = time.Hour

// Node is one venue node's webhooks: the routes and the sender over the
// shared Store. The venue mounts it (Mount), runs it (Run) and wakes it
// when it appended events (Wake).
type Node struct {
	routes Routes
	sender *Sender
	clock  clock.Clock
	log    *slog.Logger
	wg     sync.WaitGroup
}

// NewNode returns the webhooks of a node on store, guarded by g, on clk
// (the venue clock).
func NewNode(store Store, g Guard, clk clock.Clock, log *slog.Logger) *Node {
	if log == nil {
		log = slog.Default()
	}
	s := &Sender{Store: store, Clock: clk, Client: g.Client(), Log: log}
	return &Node{routes: Routes{Store: store, Guard: g, Now: clk.Now, Wake: s.Wake}, sender: s, clock: clk, log: log}
}

// Mount adds the webhook routes (Routes.Mount).
func (n *Node) Mount(e *echo.Echo, auth echo.MiddlewareFunc, keyed ...echo.MiddlewareFunc) {
	n.routes.Mount(e, auth, keyed...)
}

// Wake asks the sender for a pass now; it never blocks.
func (n *Node) Wake() { n.sender.Wake() }

// Run delivers (Sender.Run) and purges what is older than Retention,
// until ctx is done.
func (n *Node) Run(ctx context.Context) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			t := n.clock.NewTimer(purgeEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			if err := n.routes.Store.Purge(ctx, n.clock.Now().Add(-Retention)); err != nil && ctx.Err() == nil {
				n.log.Warn("webhooks: purge", "err", err)
			}
		}
	}()
	_ = n.sender.Run(ctx)
	n.wg.Wait()
}

// Tap returns st whose Append also wakes the node's sender: the venue
// hands it to everything on the node that appends events, so a webhook
// hears of them at once (the sender's poll finds events appended
// elsewhere within Poll).
func (n *Node) Tap(st events.Store) events.Store { return tapped{st, n.sender} }

type tapped struct {
	events.Store
	s *Sender
}

func (t tapped) Append(ctx context.Context, evs ...events.Event) error {
	err := t.Store.Append(ctx, evs...)
	if err == nil && len(evs) > 0 {
		t.s.Wake()
	}
	return err
}
