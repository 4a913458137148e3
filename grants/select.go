package grants

import "time"

// Select returns the grant that applies to an agent in a negotiation
// (DELEGATION.md "The checks"), or nil if none does. Grants not in force at now (see
// [Grant.ActiveAt]) and those revoked (revoked(jti) true; revoked may be
// nil) are skipped. A grant naming negotiationID takes precedence; otherwise
// the newest by IssuedAt among those naming no negotiation (a missing iat
// counts as oldest; on a tie the later one in grants wins, so pass them in
// upload order). Grants naming another negotiation never apply.
func Select(grants []*Grant, negotiationID string, now time.Time, revoked func(jti string) bool) *Grant {
	var scoped, general *Grant
	for _, g := range grants {
		if g == nil || !g.ActiveAt(now) || (revoked != nil && revoked(g.JTI)) {
			continue
		}
		switch g.Scope.NegotiationID {
		case "":
			if newer(g, general) {
				general = g
			}
		case negotiationID:
			if newer(g, scoped) {
				scoped = g
			}
		}
	}
	if scoped != nil {
		return scoped
	}
	return general
}

func newer(g, cur *Grant) bool { return cur == nil || !g.IssuedAt.Before(cur.IssuedAt) }
