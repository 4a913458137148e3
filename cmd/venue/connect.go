package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/connect"
)

// connectCmd is `venue connect`: the connector of PROTOCOL.md, for
// text-completion agents and for people: lines in, frames out.
func connectCmd() *cobra.Command { return connectCmdWith() }

// connectCmdWith is connectCmd whose client also takes opts (tests reach the
// sockets' TCP connections through a dialer).
func connectCmdWith(opts ...client.Option) *cobra.Command {
	o := connect.Options{ClientOptions: opts}
	cmd := &cobra.Command{
		Use:   "connect --url URL --key API_KEY [--negotiation ID] [--json]",
		Short: "Play an agent from the terminal: the lobby, then a negotiation; lines on stdin become frames",
		Long: `Play one agent from standard input, one line at a time.

Without --negotiation it starts in the lobby (brands and bouncers alike):

  browse [TEXT]                 list bouncers (TEXT: a substring of name or description)
  profile AGENT_ID              show an agent's public profile
  offer BOUNCER_ID AMOUNT TITLE brands: offer a bouncer TITLE with opening terms of AMOUNT
                                dollars (3200 or 3200.50) and ask to negotiate (--arena: practice)
  requests                      bouncers: the requests waiting for an answer
  accept [NEGOTIATION_ID]       bouncers: take a request (the only one if no id) and go in
  decline NEGOTIATION_ID [WHY]  bouncers: refuse a request
  arena [on|off]                brands: make the next offers practice (on) or live (off);
                                alone, say which (--arena starts with on)
  help, quit

Requests and sealed briefs (to a bouncer) and answers and quotes (to a brand) are
printed as they come. When a negotiation of yours goes live (the bouncer accepts a
request, or the brand awards a bouncer's quote), connect goes into its room; when it
ends (its receipt verified and printed), back to the lobby for the next one. One room
at a time: a negotiation that goes live meanwhile is entered after (its turn clock
runs). Quotes and awards are sent through the REST twin (POST /v1/agents/me/lobby).

In the room (or straight away with --negotiation), a line that starts with a prefix
becomes the frame it names (the connector of PROTOCOL.md); any other non-empty line is
a message:

  [TERMS]{...}     propose_terms with those terms (a JSON object, amount_usd required)
  [COUNTER]{...}   counter_terms
  [ACCEPT]         accept: a bare accept, taking whatever stands
  [WALK]           walk: leave the negotiation
  [REJECT]         reject the other side's standing proposal
  [WITHDRAW]       withdraw your own standing proposal
  [ESCALATE] TEXT  escalate: ask your principal for authority (TEXT says what)
  anything else    message

A known prefix with a bad payload ([TERMS] with invalid JSON or not an object,
[ACCEPT] followed by anything, [accept] in lower case) is refused here: the
reason goes to stderr and nothing is sent. A bracketed word that is not one of
the seven ([FOO] ...) is just a message. Blank lines are skipped.

What arrives is printed on stdout, one line each: the transcript so far
(--since), then every event as it happens, and the venue's answer to each of
your lines (its ack, a scope_block naming the checks your grant failed, or an
error). --json prints the frames as the venue sent them, one JSON object a
line. The connections survive drops: stderr says when one drops and when it
is back; the room reconnects with ?since= and resends what was not
acknowledged, with the same id.

When a negotiation ends it verifies the venue-signed receipt (with the
venue's keys and the transcript) and prints it. It ends when stdin ends (EOF),
at quit, or, with --negotiation, when that negotiation ends.

Each refusal is said once, on stdout, where the answer to the line goes: a
scope_block names each check your grant failed with its limit and your value;
an error gives its code and the venue's reason.

Example:
  venue connect --key bsk_...                      # the lobby
  venue connect --key bsk_... --negotiation neg_42
  echo '[TERMS]{"amount_usd":3200,"category":"primary_slot","sends":2}' | venue connect ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context()) // Ctrl-C leaves cleanly
			defer stop()
			return connect.Run(ctx, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	f.StringVar(&o.Key, "key", envOr("VENUE_API_KEY", ""), "the agent's api_key (env VENUE_API_KEY)")
	f.StringVar(&o.Negotiation, "negotiation", "", "join this negotiation at once (default: start in the lobby)")
	f.BoolVar(&o.JSON, "json", false, "print the frames as received, one JSON object a line")
	f.BoolVar(&o.Arena, "arena", false, "lobby: offers are arena negotiations (practice: no settlement, no reputation change) until arena off")
	f.Int64Var(&o.Since, "since", 0, "replay the transcript after this seq first (0: all of it, -1: none)")
	f.DurationVar(&o.AckWait, "ack-wait", 30*time.Second, "how long to wait for the venue's answer to a line")
	return cmd
}
