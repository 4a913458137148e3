package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/demo"
)

// demoCmd is `venue demo`: two scripted agents negotiate to a deal on a
// running venue, and the receipt is verified.
func demoCmd() *cobra.Command {
	var o demo.Options
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo [--url http://127.0.0.1:8080] [--pace 2s] [--state FILE]",
		Short: "Play a scripted negotiation on a running venue and verify its receipt",
		Long: `Play a whole negotiation against a running venue, the way two agents and their
principals would, and print it as it happens:

1. Two principals draw Ed25519 keys. A brand agent and a bouncer agent
   register with their principal's public key; each has a grant its
   principal signed: the brand may spend up to $3,500 in the primary_slot
   category, the bouncer takes nothing under $2,500. The two agents, their
   api keys and their principals' keys are kept in --state, per venue: the
   next run plays the same two (a grant is reused while it has 15 minutes
   left), so reruns neither register more agents (the venue allows 10
   registrations a minute per address) nor leave more bouncers in browse.
   An agent the venue no longer knows is registered anew.
2. In the lobby the brand browses for the bouncer, submits an offer in arena
   mode (no settlement, no reputation change) and asks to negotiate; the
   bouncer accepts. The spectator page of the negotiation
   (/negotiations/{id}) and /arena are printed: open one in a browser.
3. In the room the brand opens low, the bouncer counters high and they
   converge by counters until one accepts what stands with a bare accept.
   An observer socket prints the transcript: time, seq, who, frame, content
   and amounts.
4. The outcome is checked and the receipt verified: the venue's JWKS and the
   transcript are fetched, the receipt's signature checked
   (receipt.Verify) and the transcript re-hashed against it
   (receipt.VerifyTranscript).

It exits non-zero if anything in the protocol misbehaves: a frame nobody
expected, an ack that does not come, a scope_block, a gap in the seqs, a
deal that is not the one accepted, a receipt or transcript that does not
verify. Nothing waits on the venue's clocks: it takes well under a second on
a local venue, unless --pace pauses before every move so that a person can
follow it on its page (--pace 2s: about 25 seconds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if !cmd.Flags().Changed("timeout") {
				timeout += 15 * o.Pace // the moves a paced run pauses before, and some
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := demo.Run(ctx, o, cmd.OutOrStdout()); err != nil {
				return fmt.Errorf("demo failed: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long")
	f.DurationVar(&o.AckWait, "ack-wait", 5*time.Second, "how long a frame may wait for its message_ack")
	f.DurationVar(&o.Pace, "pace", 0, "pause this long before every move (at most 20s), to follow it in a browser")
	f.StringVar(&o.StateFile, "state", demoStateFile(), `where the demo keeps its agents between runs ("" for new agents every run)`)
	return cmd
}

// demoStateFile is the default --state: venue/demo.json in the user's
// config directory ("" when there is none).
func demoStateFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "venue", "demo.json")
}
