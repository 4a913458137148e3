package grants

import "time"

// Select returns the grant that applies to an agent in a negotiation
// (DELEGATION.md "Which grant applies"), or nil if none does.
//
// Pass every grant the agent uploaded under its principal, revoked and
// expired ones included, in upload order; revoked(jti) reports a revoked
// grant (revoked may be nil).
//
// A grant naming negotiationID takes precedence over the general ones
// (those naming no negotiation); grants naming another negotiation never
// apply. Within each kind, and for each issuer, the newest grant by IssuedAt
// that has started (nbf, if any, is not after now) supersedes every older
// one: if it has expired or was revoked, none of that kind applies, and an
// older one never comes back. So an agent that revokes its principal's
// newest grant, or lets it lapse, is left with less authority, never with
// the larger limit an older grant gave (a missing iat counts as oldest; on
// a tie the later one in grants wins). Among issuers, the newest applicable
// grant wins.
func Select(grants []*Grant, negotiationID string, now time.Time, revoked func(jti string) bool) *Grant {
	if negotiationID != "" {
		if g := latest(grants, negotiationID, now, revoked); g != nil {
			return g
		}
	}
	return latest(grants, "", now, revoked)
}

// latest is the newest applicable grant naming negotiation neg ("" for the
// general ones), after supersession within each issuer.
func latest(grants []*Grant, neg string, now time.Time, revoked func(string) bool) *Grant {
	newest := map[string]*Grant{}
	var issuers []string
	for _, g := range grants {
		if g == nil || g.Scope.NegotiationID != neg || (!g.NotBefore.IsZero() && now.Before(g.NotBefore)) {
			continue
		}
		cur, seen := newest[g.Issuer]
		if !seen {
			issuers = append(issuers, g.Issuer)
		}
		if newer(g, cur) {
			newest[g.Issuer] = g
		}
	}
	var best *Grant
	for _, iss := range issuers {
		g := newest[iss]
		if !g.ActiveAt(now) || (revoked != nil && revoked(g.JTI)) {
			continue
		}
		if newer(g, best) {
			best = g
		}
	}
	return best
}

func newer(g, cur *Grant) bool { return cur == nil || !g.IssuedAt.Before(cur.IssuedAt) }
