package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/grants/grantflag"
)

type rotateOptions struct {
	keyFile, newKeyFile, agent, aud, url, apiKey string
	ttl                                          time.Duration
	put                                          bool
}

// rotateKeyCmd is `venue rotate-key`: the principal proves, with its
// current key, that a new key replaces it for one agent.
func rotateKeyCmd() *cobra.Command {
	var o rotateOptions
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Sign the proof that replaces a principal key (for PUT /v1/agents/me/principal-key)",
		Long: `rotate-key signs, with the principal's CURRENT key, a short-lived proof that
a new key replaces it for one agent, and prints the request body
{"principal_key": <new public JWK>, "proof": <JWT>} for
PUT /v1/agents/me/principal-key. The venue refuses to replace a principal key
without it, so an agent holding only its api key cannot swap its principal's
key for its own. Grants signed by the old key stop applying once the new key
is set; sign new ones with the new key.

With --put (and --api-key, the agent's key) it sends the request itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRotate(cmd.Context(), cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.keyFile, "key", "", "the CURRENT principal private key (PKCS#8 PEM) (required)")
	f.StringVar(&o.newKeyFile, "new-key", "", "the NEW principal private key, as written by venue keygen (required)")
	f.StringVar(&o.agent, "agent", "", "the agent id whose principal key is replaced (required)")
	f.StringVar(&o.aud, "aud", "venue", "the venue's audience (GET /v1/info)")
	f.DurationVar(&o.ttl, "ttl", 10*time.Minute, "how long the proof is valid (at most 1h)")
	f.StringVar(&o.url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue, for --put (env VENUE_URL)")
	f.StringVar(&o.apiKey, "api-key", envOr("VENUE_API_KEY", ""), "the agent's api key, for --put (env VENUE_API_KEY)")
	f.BoolVar(&o.put, "put", false, "send the PUT and print the venue's answer")
	return cmd
}

func runRotate(ctx context.Context, cmd *cobra.Command, o rotateOptions) error {
	if o.agent == "" {
		return fmt.Errorf("--agent is required")
	}
	cur, err := grantflag.LoadPrincipalKey(o.keyFile)
	if err != nil {
		return err
	}
	if o.newKeyFile == "" {
		return fmt.Errorf("--new-key is required (create one with venue keygen --out FILE)")
	}
	next, err := grantflag.LoadPrincipalKey(o.newKeyFile)
	if err != nil {
		return fmt.Errorf("--new-key: %w", err)
	}
	jwk := grants.PublicJWK(next.Public().(ed25519.PublicKey))
	now := time.Now()
	proof, err := grants.SignRotation(cur, grants.RotationClaims{
		Subject: o.agent, Audience: o.aud, NewThumbprint: grants.Thumbprint(jwk), IssuedAt: now, ExpiresAt: now.Add(o.ttl),
	})
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"principal_key": jwk, "proof": proof})
	if !o.put {
		fmt.Fprintln(cmd.OutOrStdout(), string(body))
		return nil
	}
	if o.apiKey == "" {
		return fmt.Errorf("--put needs --api-key (or VENUE_API_KEY): the agent's api key")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimRight(o.url, "/")+"/v1/agents/me/principal-key", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the venue refused the rotation: %d %s", resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSpace(string(answer)))
	return nil
}
