package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/grants/grantflag"
)

// revocationsPath is the principal's own endpoint: it takes a revocation
// token and no API key (DELEGATION.md "Revoking without the agent").
const revocationsPath = "/v1/revocations"

type revokeOptions struct {
	keyFile, agent, aud, url, grant string
	ttl                             time.Duration
	post, newKey                    bool
}

func (o *revokeOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.keyFile, "key", "", "the principal's private key, PKCS#8 PEM as written by venue keygen (required)")
	f.StringVar(&o.agent, "agent", "", "the agent id: the token's sub (required)")
	f.StringVar(&o.aud, "aud", "venue", "the venue's audience, see GET /v1/info")
	f.DurationVar(&o.ttl, "ttl", 10*time.Minute, "how long the token may be posted (at most 24h)")
	f.StringVar(&o.url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL, for --post (env VENUE_URL)")
	f.BoolVar(&o.post, "post", false, "POST the token to {url}"+revocationsPath+" and print the venue's answer")
}

// revokeCmd is `venue revoke`: the principal revokes one of its grants by
// jti, with its own key, whatever the agent does.
func revokeCmd() *cobra.Command {
	var o revokeOptions
	cmd := &cobra.Command{
		Use:   "revoke --key FILE --agent ID --grant JTI [--post]",
		Short: "Revoke a grant with the principal key (no API key needed)",
		Long: `revoke signs a revocation token (typ revocation+jwt) with the principal's key:
the grant with that jti, signed by this key for this agent, is revoked from
the moment the venue reads the token, also if the agent has not uploaded it
yet. The venue needs no API key for it, so a principal can act when its agent
misbehaves or its key leaked. A standing proposal the agent made under the
grant is withdrawn (PROTOCOL.md "What everyone else gets").

The token is printed on stdout; with --post it is sent to the venue and the
answer printed. Posting a revocation twice changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.grant == "" {
				return errors.New("--grant is required: the jti of the grant to revoke (GET /v1/grants lists them)")
			}
			return runRevoke(cmd, o, grants.RevocationClaims{Kind: grants.RevokeGrant, GrantJTI: o.grant}, "")
		},
	}
	o.flags(cmd)
	cmd.Flags().StringVar(&o.grant, "grant", "", "the jti of the grant to revoke (required)")
	return cmd
}

// revokeAPIKeyCmd is `venue revoke-api-key`: the principal kills its
// agent's API key and, with --new-key, sets the one that replaces it.
func revokeAPIKeyCmd() *cobra.Command {
	var o revokeOptions
	cmd := &cobra.Command{
		Use:   "revoke-api-key --key FILE --agent ID [--new-key] [--post]",
		Short: "Revoke an agent's API key with the principal key (no API key needed)",
		Long: `revoke-api-key signs a revocation token (typ revocation+jwt, revoke api_key)
with the principal's key: every API key of the agent issued before the token
stops working at once, so a leaked bsk_ key is dead even if nobody can reach
the agent. Replaying the token later touches no key issued after it.

With --new-key it also draws a fresh API key, prints it on stderr (give it to
the agent; the venue never sees it, only its SHA-256 in the token) and the
venue makes it the agent's key. Without it the agent has no working key until
its principal posts one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := grants.RevocationClaims{Kind: grants.RevokeAPIKey}
			var key string
			if o.newKey {
				key = directory.NewAPIKey()
				c.NewKeyHash = directory.HashKey(key)
			}
			return runRevoke(cmd, o, c, key)
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&o.newKey, "new-key", false, "draw the replacement API key and print it on stderr")
	return cmd
}

func runRevoke(cmd *cobra.Command, o revokeOptions, c grants.RevocationClaims, newKey string) error {
	if o.agent == "" {
		return errors.New("--agent is required: the agent id")
	}
	priv, err := grantflag.LoadPrincipalKey(o.keyFile)
	if err != nil {
		return err
	}
	now := time.Now()
	c.Subject, c.Audience, c.IssuedAt, c.ExpiresAt = o.agent, o.aud, now, now.Add(o.ttl)
	token, err := grants.SignRevocation(priv, c)
	if err != nil {
		return err
	}
	if newKey != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "new api key for %s (give it to the agent; shown once): %s\n", o.agent, newKey)
	}
	if !o.post {
		fmt.Fprintln(cmd.OutOrStdout(), token)
		return nil
	}
	return post(cmd, o.url, "", revocationsPath, token)
}
