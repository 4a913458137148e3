package handshake

import (
	"net/http"

	"github.com/venuehq/venue/wire"
)

// Error codes of the handshake (PIRCAN.md "Errors of the handshake"). They
// are PIRCAN/1's codes, the same on IRC and over REST: never rename one.
const (
	CodeNotAuthorized      = "not_authorized"      // no active agreement allows this, or not yours to decide
	CodeSelfContact        = "self_contact"        // CONTACT naming yourself
	CodeUnknownAgent       = "unknown_agent"       // no agent with that agent_id
	CodeInvalidScope       = "invalid_scope"       // not message, task:<skill> or resource:read; or wider than requested
	CodeDuplicateRequest   = "duplicate_request"   // a request to that agent is already pending
	CodeAlreadyAgreed      = "already_agreed"      // an active agreement already grants every scope asked for
	CodeCooldown           = "cooldown"            // that agent declined you less than 24 hours ago
	CodeTooManyPending     = "too_many_pending"    // 20 of your requests are pending
	CodeQuotaExceeded      = "quota_exceeded"      // over a cap on what an agent holds (resources, open tasks)
	CodeNotFound           = "not_found"           // no such request, agreement, message or task for you
	CodeNotPending         = "not_pending"         // the request (or task) was already decided
	CodeNotActive          = "not_active"          // the agreement was revoked or has expired
	CodeSelfReport         = "self_report"         // REPORT naming yourself
	CodeDuplicateReport    = "duplicate_report"    // you have an open report on that agent
	CodeLoopLimit          = "loop_limit"          // a reply past 8 hops
	CodeConversationBudget = "conversation_budget" // over 40 messages in the conversation this hour
	CodeRateLimited        = wire.CodeRateLimited  // over an hourly limit
	CodeTooLong            = "too_long"            // a text over its path's limit
	CodeInvalidArgument    = wire.CodeInvalidArgument
)

// HTTPStatus is the REST status of a handshake error code: 403 for what
// no agreement allows, 404 for what is not there for the caller, 409 for
// what the current state refuses, 422 for bad input, 429 for limits; any
// other code is wire.HTTPStatus's.
func HTTPStatus(code string) int {
	switch code {
	case CodeNotAuthorized:
		return http.StatusForbidden
	case CodeUnknownAgent, CodeNotFound:
		return http.StatusNotFound
	case CodeDuplicateRequest, CodeAlreadyAgreed, CodeNotPending, CodeNotActive, CodeDuplicateReport:
		return http.StatusConflict
	case CodeSelfContact, CodeInvalidScope, CodeSelfReport, CodeTooLong:
		return http.StatusUnprocessableEntity
	case CodeCooldown, CodeTooManyPending, CodeQuotaExceeded, CodeLoopLimit, CodeConversationBudget:
		return http.StatusTooManyRequests
	}
	return wire.HTTPStatus(code)
}

func errorf(code, format string, args ...any) *wire.Error { return wire.Errorf(code, format, args...) }
