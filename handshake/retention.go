package handshake

import (
	"context"
	"fmt"
	"time"
)

// Retention is how long the handshake keeps what is done with (PIRCAN.md
// "Retention"): rows older than these are purged by Service.Purge. A zero
// field keeps that kind for ever.
type Retention struct {
	// SignIns: owner portal sign-ins (codes and sessions), by creation.
	SignIns time.Duration
	// Audit: audit log entries, by time (at least 90 days by default: what
	// an operator needs to answer a report).
	Audit time.Duration
	// Messages: direct messages, read or not, by time sent.
	Messages time.Duration
	// Requests: contact requests no longer pending (accepted, declined,
	// cancelled, expired), by the time they were decided or expired.
	Requests time.Duration
	// Tasks: tasks answered (completed, failed, rejected), by the time
	// they were answered.
	Tasks time.Duration
}

// DefaultRetention: sign-ins 30 days, the audit log 365 days, messages,
// decided requests and answered tasks 90 days.
var DefaultRetention = Retention{SignIns: 30 * 24 * time.Hour, Audit: 365 * 24 * time.Hour,
	Messages: 90 * 24 * time.Hour, Requests: 90 * 24 * time.Hour, Tasks: 90 * 24 * time.Hour}

// MinRetention is the shortest retention Validate accepts: a day, longer
// than any session, request cooldown or hourly window that reads the rows.
const MinRetention = 24 * time.Hour

// Validate refuses a retention under MinRetention (zero: kept for ever;
// nil: the defaults).
func (r *Retention) Validate() error {
	if r == nil {
		return nil
	}
	for name, d := range map[string]time.Duration{"sign-ins": r.SignIns, "audit log": r.Audit,
		"messages": r.Messages, "requests": r.Requests, "tasks": r.Tasks} {
		if d != 0 && d < MinRetention {
			return fmt.Errorf("handshake: %s retention %v is under %v (0 keeps them for ever)", name, d, MinRetention)
		}
	}
	return nil
}

// PurgeBefore are the cutoffs of one purge: rows of a kind older than its
// time go (zero: none of that kind).
type PurgeBefore struct {
	SignIns, Audit, Messages, Requests, Tasks time.Time
}

// Purged counts the rows one purge deleted, per kind.
type Purged struct {
	SignIns, Audit, Messages, Requests, Tasks int
}

// Total is the rows deleted of every kind.
func (p Purged) Total() int { return p.SignIns + p.Audit + p.Messages + p.Requests + p.Tasks }

func (p *Purged) add(q Purged) {
	p.SignIns += q.SignIns
	p.Audit += q.Audit
	p.Messages += q.Messages
	p.Requests += q.Requests
	p.Tasks += q.Tasks
}

// purgeBatch is the most rows of each kind one transaction deletes.
const purgeBatch = 1000

// purgeKey is the lock Purge holds, so that nodes purge one at a time
// (the second finds nothing left).
const purgeKey = "handshake:purge"

// Purge deletes what r says is older than it keeps at now, in
// transactions of at most 1,000 rows of each kind under one lock held
// across nodes (the venue's purge loop calls it on every node; only one
// purges at a time and the others find nothing left). It returns the rows
// deleted. Errors: the store's.
func (s *Service) Purge(ctx context.Context, r Retention, now time.Time) (Purged, error) {
	cut := func(d time.Duration) time.Time {
		if d <= 0 {
			return time.Time{}
		}
		return now.Add(-d)
	}
	before := PurgeBefore{SignIns: cut(r.SignIns), Audit: cut(r.Audit), Messages: cut(r.Messages),
		Requests: cut(r.Requests), Tasks: cut(r.Tasks)}
	var all Purged
	for {
		var p Purged
		err := s.Store.Atomically(ctx, []string{purgeKey}, func(tx Tx) error {
			var err error
			p, err = tx.Purge(before, purgeBatch)
			return err
		})
		if err != nil {
			return all, fmt.Errorf("handshake: purge: %w", err)
		}
		all.add(p)
		if max(p.SignIns, p.Audit, p.Messages, p.Requests, p.Tasks) < purgeBatch || ctx.Err() != nil {
			return all, nil
		}
	}
}
