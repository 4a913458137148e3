// Package demo is `venue demo`: two scripted agents and their principals
// play a whole negotiation on a running venue through package client, an
// observer prints it, and the receipt is verified (DELEGATION.md
// "Receipts"). It prints where to watch it (the spectator page and the
// arena, PROTOCOL.md "Pages"), can be paced for a person to follow, and
// reuses its agents between runs (a state file). cmd/venue only parses its
// flags.
package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// Options are what Run needs (the flags of `venue demo`).
type Options struct {
	// URL is the venue's base URL.
	URL string
	// AckWait bounds the wait for a frame's message_ack (default 5s).
	AckWait time.Duration
	// Pace is the pause before each move of either side (0: none; at most
	// MaxPace), so that a person can follow the negotiation on its page.
	Pace time.Duration
	// StateFile keeps the demo's agents between runs (see state); "" plays
	// new agents every run.
	StateFile string
}

// MaxPace is the longest Options.Pace: well inside the 60-second turn
// clock (PROTOCOL.md "Clocks").
const MaxPace = 20 * time.Second

// The demo's script: what each principal allows, where each side opens,
// when it settles.
const (
	demoCategory         = "primary_slot"
	demoSends            = 2
	demoCeiling    int64 = 3500_00 // cents; the brand's grant: amount_usd.max
	demoFloor      int64 = 2500_00 // cents; the bouncer's grant: amount_usd.min
	demoBrandOpen  int64 = 2000_00
	demoBouncerAsk int64 = 3400_00
	demoCloseGap   int64 = 300_00 // a side accepts when the other is this close to its own last offer
	demoStep       int64 = 25_00  // counters move in $25 steps
)

// Run plays the demo on the venue at o.URL, printing it to out; it fails
// when anything in the protocol misbehaves (see the command's help).
func Run(ctx context.Context, o Options, out io.Writer) error {
	if o.AckWait <= 0 {
		o.AckWait = 5 * time.Second
	}
	if o.Pace < 0 || o.Pace > MaxPace {
		return fmt.Errorf("--pace %s: want 0 to %s (a side has 60 s for its turn)", o.Pace, MaxPace)
	}
	st, err := loadState(o.StateFile)
	if err != nil {
		return err
	}
	c, err := client.New(o.URL)
	if err != nil {
		return err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("is a venue running at %s? %w", o.URL, err)
	}
	fmt.Fprintf(out, "venue %s at %s (grant audience %q)\n\n", info.Version, c.BaseURL(), info.Audience)
	brand, bouncer, err := demoAgents(ctx, c, st, info.Audience, out)
	if err != nil {
		return err
	}
	negID, err := demoLobby(ctx, out, o.Pace, brand, bouncer)
	if err != nil {
		return err
	}
	return demoRoom(ctx, o, out, c, negID, brand, bouncer)
}

// demoAgents is the brand and the bouncer, each with its principal's
// grant: the brand may spend up to $3,500 in the primary slot, the bouncer
// takes nothing under $2,500.
func demoAgents(ctx context.Context, c *client.Client, st *state, aud string, out io.Writer) (brand, bouncer demoAgent, err error) {
	venue := c.BaseURL() + " " + aud
	brand, err = st.agent(ctx, c, venue, aud, agentSpec{role: "brand", name: "Demo Brand",
		scope: grants.Scope{Role: "brand", Amount: &grants.AmountLimit{MaxCents: usdCents(demoCeiling)}, Categories: []string{demoCategory}}}, out)
	if err != nil {
		return brand, bouncer, err
	}
	bouncer, err = st.agent(ctx, c, venue, aud, agentSpec{role: "bouncer", name: "Demo Bouncer",
		scope: grants.Scope{Role: "bouncer", Amount: &grants.AmountLimit{MinCents: usdCents(demoFloor)}}}, out)
	if err != nil {
		return brand, bouncer, err
	}
	if _, err := bouncer.c.SetProfile(ctx, client.ProfileUpdate{
		Description: "A weekly letter for 40,000 readers", Categories: []string{demoCategory},
	}); err != nil {
		return brand, bouncer, fmt.Errorf("bouncer profile: %w", err)
	}
	return brand, bouncer, nil
}

func usdCents(cents int64) *int64 { return &cents }

// pause waits d (none when d is 0), or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
