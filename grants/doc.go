// Package grants holds the rules of delegated authority (PROTOCOL.md "Registration and auth"; DELEGATION.md "The checks"):
// a principal's Ed25519 public key as a JWK and its RFC 7638 thumbprint, the
// grant and escalation-decision tokens a principal signs (compact JWS, EdDSA
// only), the scope a grant carries, the checks a binding frame must pass
// against that scope, and the choice of which grant applies.
//
// The package is pure: it does no I/O, starts no goroutines and never reads
// the clock; every rule that depends on time takes `now` as an argument.
//
// Money is kept as integer US cents (int64). On the wire it is a JSON number
// of dollars with at most two decimals, from 0 to 10,000,000 (see [ParseUSD]).
//
// Token errors are [*TokenError] values with a stable Code; [TokenError.HTTPStatus]
// is the one table from code to HTTP status. Scope failures are [Failure]
// values gathered by [Check] and sent to the sender alone in a [ScopeBlock].
package grants
