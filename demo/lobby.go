package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/venuehq/venue/client"
)

// demoLobby matches the two in the lobby (arena mode) and returns the live
// negotiation's id.
func demoLobby(ctx context.Context, out io.Writer, pace time.Duration, brand, bouncer demoAgent) (string, error) {
	bl, err := brand.c.DialLobby(ctx, brand.id)
	if err != nil {
		return "", fmt.Errorf("brand lobby: %w", err)
	}
	defer bl.Close()
	kl, err := bouncer.c.DialLobby(ctx, bouncer.id)
	if err != nil {
		return "", fmt.Errorf("bouncer lobby: %w", err)
	}
	defer kl.Close()

	found, err := bl.BrowseBouncers(ctx, client.BrowseQuery{Category: demoCategory, Q: bouncer.name})
	if err != nil {
		return "", fmt.Errorf("browse_bouncers: %w", err)
	}
	ok := false
	for _, p := range found.Items {
		ok = ok || p.AgentID == bouncer.id
	}
	if !ok {
		return "", fmt.Errorf("browse_bouncers for %q in %s did not list the bouncer %s", bouncer.name, demoCategory, bouncer.id)
	}
	prof, err := bl.GetProfile(ctx, bouncer.id)
	if err != nil {
		return "", fmt.Errorf("get_profile: %w", err)
	}
	fmt.Fprintf(out, "\nlobby    the brand browses %s and finds %s: %q, reputation %d\n", demoCategory, prof.Name, prof.Description, prof.Reputation)

	off, err := bl.SubmitOffer(ctx, bouncer.id, client.Offer{
		Title: "Spring launch", Brief: fmt.Sprintf("%d sends in the primary slot", demoSends),
	}, true)
	if err != nil {
		return "", fmt.Errorf("submit_offer: %w", err)
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		return "", fmt.Errorf("create_negotiation: %w", err)
	}
	fmt.Fprintf(out, "lobby    offer %s submitted (arena), negotiation %s requested\n", off.OfferID, created.NegotiationID)
	base := brand.c.BaseURL()
	fmt.Fprintf(out, "watch    %s/negotiations/%s (every practice negotiation: %s/arena)\n", base, created.NegotiationID, base)
	if pace == 0 {
		fmt.Fprintln(out, "         it takes under a second: rerun with --pace 2s to follow it there")
	}
	req, err := demoPush(ctx, kl, "negotiation_requested", created.NegotiationID)
	if err != nil {
		return "", err
	}
	if req.Brand == nil || req.Brand.AgentID != brand.id || !req.Arena {
		return "", fmt.Errorf("negotiation_requested does not show the brand's arena request: %s", req.Raw)
	}
	if err := pause(ctx, pace); err != nil {
		return "", err
	}
	acc, err := kl.AcceptNegotiation(ctx, created.NegotiationID)
	if err != nil {
		return "", fmt.Errorf("accept_negotiation: %w", err)
	}
	if _, err := demoPush(ctx, bl, "negotiation_accepted", created.NegotiationID); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "lobby    the bouncer accepts; live from %s until %s\n\n", acc.StartedAt, acc.DeadlineAt)
	return created.NegotiationID, nil
}

// demoPush waits for the lobby push of type typ about negID; other pushes
// (a request pushed twice, say) are skipped, an error push fails.
func demoPush(ctx context.Context, l *client.Lobby, typ, negID string) (client.Push, error) {
	for {
		select {
		case p, ok := <-l.Pushes():
			if !ok {
				return client.Push{}, fmt.Errorf("the lobby closed while waiting for %s: %v", typ, l.Err())
			}
			if p.Err != nil {
				return client.Push{}, fmt.Errorf("lobby error while waiting for %s: %w", typ, p.Err)
			}
			if p.Type == typ && p.NegotiationID == negID {
				return p, nil
			}
			if p.NegotiationID == negID && p.Type != "negotiation_requested" {
				return client.Push{}, fmt.Errorf("waiting for %s, got %s", typ, p.Raw)
			}
		case <-ctx.Done():
			return client.Push{}, fmt.Errorf("no %s: %w", typ, ctx.Err())
		}
	}
}
