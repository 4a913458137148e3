package arena

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/internal/inproc"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
)

// Node is the arena's pieces on one node (PROTOCOL.md "Arena, reputation
// and settlements"): the live feed, the settler of live deals, the routes
// and, once started, the house agents and their way in.
type Node struct {
	Feed    *Feed
	Settler settlement.Settler
	API     *API
	log     *slog.Logger

	mu    sync.Mutex
	house *House         // nil until started (and when off)
	in    *inproc.Server // the house's way in, nil with the house
}

// NewNode builds the feed on b, the routes on st (authenticate resolves a
// request's Bearer key) and takes settler for live deals (nil:
// settlement.Recorder, which moves no money).
func NewNode(b bus.Bus, st store.Store, settler settlement.Settler, authenticate func(*http.Request) (store.Agent, error), log *slog.Logger) *Node {
	if settler == nil {
		settler = settlement.Recorder{Log: log}
	}
	n := &Node{Feed: NewFeed(b, log), Settler: settler, log: log}
	n.API = NewAPI(APIConfig{Store: st, Feed: n.Feed, Authenticate: authenticate, Log: log})
	return n
}

// Settle hands a committed step's settlement instruction, if any, to the
// settler (the hub's Committed hook, after the sender's reply); a failure
// is logged.
func (n *Node) Settle(ctx context.Context, st *negotiation.State, out negotiation.Outcome) {
	if out.Settlement == nil {
		return
	}
	if err := n.Settler.Settle(context.WithoutCancel(ctx), *out.Settlement); err != nil {
		n.log.Error("settle", "negotiation_id", st.ID, "settlement_id", out.Settlement.ID, "err", err)
	}
}

// House returns the node's house agents, nil when they are off or not
// started yet.
func (n *Node) House() *House {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.house
}

// StartHouse starts the house agents of cfg against h, the node's own
// handler served in-process (cfg.Dial is its way in): they run on wg until
// ctx is done, and POST /v1/arena/spar uses them from now on.
func (n *Node) StartHouse(ctx context.Context, h http.Handler, cfg HouseConfig, wg *sync.WaitGroup) {
	in := inproc.Serve(h)
	cfg.Dial = in.DialContext
	house := NewHouse(cfg)
	n.mu.Lock()
	n.house, n.in = house, in
	n.mu.Unlock()
	n.API.SetHouse(house)
	wg.Go(func() {
		defer n.StopHouse()
		if err := house.Run(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("house agents stopped", "err", err)
		}
	})
}

// StopHouse closes the house agents' way in (no new sockets; they redial
// in vain until their context ends). Idempotent.
func (n *Node) StopHouse() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.in != nil {
		_ = n.in.Close()
	}
}
