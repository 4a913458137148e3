package grants

import "fmt"

// Stable codes of a [TokenError] (DELEGATION.md "The checks": the `grant` check names these
// reasons). They are wire values: never rename one.
const (
	CodeMalformed      = "malformed"       // not a JWS, bad JSON, a required claim missing, a bad scope
	CodeBadSignature   = "bad_signature"   // the signature does not verify with the principal key
	CodeWrongAlgorithm = "wrong_algorithm" // alg other than EdDSA, none included
	CodeWrongType      = "wrong_type"      // header typ is not the expected one
	CodeWrongIssuer    = "wrong_issuer"    // iss is not the principal key's thumbprint
	CodeWrongSubject   = "wrong_subject"   // sub is not the agent
	CodeWrongAudience  = "wrong_audience"  // aud does not contain the venue's audience
	CodeExpired        = "expired"         // exp has passed (beyond leeway)
	CodeNotYetValid    = "not_yet_valid"   // nbf or iat is in the future (beyond leeway)
)

// TokenError is why a grant or decision token was refused. Code is one of
// the Code* constants; Message is for humans and never holds a secret.
type TokenError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *TokenError) Error() string { return "grants: " + e.Code + ": " + e.Message }

// HTTPStatus is the one table from code to HTTP status: malformed 422;
// bad_signature, wrong_algorithm, wrong_type, wrong_issuer 401;
// wrong_subject, wrong_audience, expired, not_yet_valid 403; anything else 400.
// (Literal numbers keep this pure package free of net/http.)
func (e *TokenError) HTTPStatus() int {
	switch e.Code {
	case CodeMalformed:
		return 422 // Unprocessable Entity
	case CodeBadSignature, CodeWrongAlgorithm, CodeWrongType, CodeWrongIssuer:
		return 401 // Unauthorized
	case CodeWrongSubject, CodeWrongAudience, CodeExpired, CodeNotYetValid:
		return 403 // Forbidden
	default:
		return 400 // Bad Request
	}
}

func tokenErr(code, format string, a ...any) *TokenError {
	return &TokenError{Code: code, Message: fmt.Sprintf(format, a...)}
}
