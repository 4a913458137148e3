package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/delegation"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/grants/grantflag"
)

// decideOptions are the flags of `venue decide`.
type decideOptions struct {
	grantflag.Decision
	url    string
	post   bool
	apiKey string
}

// decideCmd is `venue decide`: the principal answers an escalation (an agent
// asking to go beyond its grant) with a signed decision token.
func decideCmd() *cobra.Command {
	var o decideOptions
	cmd := &cobra.Command{
		Use:       "decide --key FILE --escalation ID approve|deny [scope flags]",
		Short:     "Sign (and optionally post) the decision on an escalation",
		ValidArgs: []string{grants.DecisionApprove, grants.DecisionDeny},
		Long: `Sign the principal's decision on an escalation (DELEGATION.md): a JWT (EdDSA,
typ decision+jwt) with escalation_id and decision approve or deny, signed with
the key "venue keygen" wrote.

An approval carries a new grant scoped to the escalation's negotiation (its
negotiation_id is the part of the escalation id before the last ".e"; ids
look like <negotiation_id>.e<seq>). Build that grant with the same scope flags
as "venue grant" (--max-amount, --category, ...); flags left out do not
restrict. The approved grant is valid as long as the decision token (--ttl).
A denial takes no scope flags.

The token is printed on stdout, one line. Send it as
POST /v1/escalations/<id>/decision {"token":"<token>"}: give it to your agent,
or pass --post to send it to --url yourself (the response body is then printed
on stdout; a non-2xx answer is an error). The escalating agent then receives
escalation_resolved and its turn clock resumes.

Example:
  venue decide --key principal.pem --escalation neg_42.e7 approve --max-amount 4000
  venue decide --key principal.pem --escalation neg_42.e7 deny --post`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != grants.DecisionApprove && args[0] != grants.DecisionDeny) {
				return fmt.Errorf("want one argument, approve or deny; got %q", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDecide(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	o.Decision.Register(f)
	f.StringVar(&o.url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL, for --post (env VENUE_URL)")
	f.BoolVar(&o.post, "post", false, "POST the decision to {url}/v1/escalations/{id}/decision and print the response")
	f.StringVar(&o.apiKey, "api-key", envOr("VENUE_API_KEY", ""), "sent as Authorization: Bearer with --post, if set (env VENUE_API_KEY)")
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("escalation")
	return cmd
}

func runDecide(cmd *cobra.Command, o decideOptions, decision string) error {
	token, summary, err := o.Sign(cmd.Flags(), decision, time.Now(), delegation.EscalationNegotiation)
	if err != nil {
		return err
	}
	if !o.post {
		fmt.Fprintln(cmd.OutOrStdout(), token)
		fmt.Fprint(cmd.ErrOrStderr(), summary)
		return nil
	}
	fmt.Fprint(cmd.ErrOrStderr(), summary)
	fmt.Fprintf(cmd.ErrOrStderr(), "token %s\n", token)
	path := "/v1/escalations/" + url.PathEscape(o.Escalation) + "/decision"
	return post(cmd, o.url, o.apiKey, path, token)
}
