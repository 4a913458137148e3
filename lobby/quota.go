package lobby

import (
	"context"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Lobby quotas (PROTOCOL.md "Lobby socket"): a brand cannot flood a bouncer
// with requests, and a bouncer can shut a brand out.
const (
	DefaultPendingPerPair    = 3  // pending requests from one brand to one bouncer
	DefaultPendingPerBouncer = 50 // pending requests to one bouncer from all brands
	// RequestRetention is how long a request that never went live (and an
	// offer never used) is kept before PurgeRequests deletes it.
	RequestRetention = time.Hour
)

// Block and unblock frames (bouncers only).
const (
	TypeBlockBrand   = "block_brand"
	TypeUnblockBrand = "unblock_brand"
	TypeBrandBlocked = "brand_blocked"
)

func (s *Service) pendingPerPair() int {
	if s.PendingPerPair > 0 {
		return s.PendingPerPair
	}
	return DefaultPendingPerPair
}

func (s *Service) pendingPerBouncer() int {
	if s.PendingPerBouncer > 0 {
		return s.PendingPerBouncer
	}
	return DefaultPendingPerBouncer
}

// admitRequest refuses a new request from brand to bouncer when the bouncer
// blocks the brand (forbidden) or a pending quota is full (rate_limited;
// the quota frees as requests are accepted, declined or lapse after two
// minutes). Two requests racing may both pass: the quotas bound a flood,
// not an exact count.
func (s *Service) admitRequest(ctx context.Context, brandID, bouncerID string) error {
	blocked, err := s.Store.Blocked(ctx, bouncerID, brandID)
	if err != nil {
		return err
	}
	if blocked {
		return wire.Errorf(wire.CodeForbidden, "this bouncer does not take requests from you")
	}
	pair, total, err := s.Store.PendingCounts(ctx, bouncerID, brandID)
	if err != nil {
		return err
	}
	if pair >= s.pendingPerPair() {
		return wire.Errorf(wire.CodeRateLimited, "you have %d requests pending with this bouncer (at most %d); wait for an answer or the 2-minute lapse", pair, s.pendingPerPair())
	}
	if total >= s.pendingPerBouncer() {
		return wire.Errorf(wire.CodeRateLimited, "this bouncer has %d requests pending (at most %d); try again later", total, s.pendingPerBouncer())
	}
	return nil
}

// block is block_brand / unblock_brand {"brand": agent_id}: a bouncer
// refuses (or again takes) requests from one brand. Its pending requests
// from that brand stay until answered or lapsed.
func (s *Service) block(ctx context.Context, bouncer store.Agent, r *wire.Fields, blocked bool) (map[string]any, error) {
	brand := r.NonEmpty("brand")
	if r.Err != nil {
		return nil, r.Err
	}
	if bouncer.Role != negotiation.RoleBouncer {
		return nil, wire.Errorf(wire.CodeForbidden, "blocking is for bouncers")
	}
	if err := s.Store.SetBlocked(ctx, bouncer.ID, brand, blocked, s.Now()); err != nil {
		return nil, err
	}
	return map[string]any{"type": TypeBrandBlocked, "brand": brand, "blocked": blocked}, nil
}

// PurgeRequests deletes requests that never went live and unused offers
// older than RequestRetention; the venue runs it now and then.
func (s *Service) PurgeRequests(ctx context.Context) (int, error) {
	return s.Store.PurgeRequests(ctx, s.Now().Add(-RequestRetention))
}
