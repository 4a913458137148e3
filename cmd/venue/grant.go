package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/grants/grantflag"
)

// grantCmd is `venue grant`: the principal signs a grant token (DELEGATION.md)
// for one of its agents, offline, with the key `venue keygen` wrote.
func grantCmd() *cobra.Command {
	var o grantflag.Grant
	cmd := &cobra.Command{
		Use:   "grant --key FILE --agent ID [scope flags]",
		Short: "Sign a grant token (what an agent may agree to) with a principal key",
		Long: `Sign a grant: a JWT (EdDSA, typ grant+jwt) in which the principal tells the
venue what its agent may agree to (DELEGATION.md). The token is signed offline
with the private key written by "venue keygen"; the venue only needs the
public key, uploaded with PUT /v1/agents/me/principal-key.

The token is printed on stdout, one line; a summary (jti, validity, scope) goes
to stderr. Give the token to the agent: it uploads it with
POST /v1/grants {"token":"<token>"}. The newest grant supersedes the older
ones (an agent can never bring an older one back); revoke one yourself with
venue revoke --grant <jti> --post.

Each scope flag restricts; a flag left out leaves its key absent, which does
not restrict. Amounts are dollars with at most two decimals (3500, 3500.25),
read exactly, never rounded.

The grant is valid from now (or from now + --not-before) for --ttl, 24 hours
by default: a leaked or forgotten grant dies on its own (DELEGATION.md "Why
grants are short").

Example:
  venue grant --key principal.pem --agent agt_123 --role brand \
    --max-amount 3500 --category primary_slot --max-sends 2 --budget 10000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGrant(cmd, o)
		},
	}
	o.Register(cmd.Flags())
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

func runGrant(cmd *cobra.Command, o grantflag.Grant) error {
	token, summary, err := o.Sign(cmd.Flags(), time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), token)
	fmt.Fprint(cmd.ErrOrStderr(), summary)
	return nil
}
