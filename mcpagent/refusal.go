package mcpagent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/venuehq/venue/client"
)

// describe turns a refusal or failure into text a model can act on: what
// was refused, the failed checks or the error code, and what to do next.
func describe(what string, err error) string {
	var sb *client.ScopeBlock
	var ve *client.Error
	switch {
	case errors.As(err, &sb):
		var b strings.Builder
		fmt.Fprintf(&b, "scope_block: your %s did not land and nobody saw it; your turn clock keeps running.", sb.FrameType)
		for _, c := range sb.Checks {
			fmt.Fprintf(&b, "\nfailed check %s: limit %s, got %s: %s", c.Check, c.Limit, c.Got, c.Message)
		}
		b.WriteString("\nYour principal's grant does not allow this. Stay within the limits, or escalate to ask your principal (see DELEGATION.md \"scope_block\").")
		return b.String()
	case errors.As(err, &ve) && ve.Status == 0:
		return fmt.Sprintf("error %s: your %s was refused and changed nothing: %s%s", ve.Code, what, ve.Message, hint(ve.Code))
	case errors.As(err, &ve):
		return fmt.Sprintf("error %s (HTTP %d): %s was refused: %s%s", ve.Code, ve.Status, what, ve.Message, hint(ve.Code))
	case errors.Is(err, client.ErrConnectionLost):
		return fmt.Sprintf("connection_lost: the lobby connection dropped before the venue answered %s; it may or may not have been done. Check (browse, wait_lobby) before repeating it.", what)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timeout: no answer to %s in time; the frame may still land. Call room_state to see.", what)
	default:
		return fmt.Sprintf("failed: %s: %v", what, err)
	}
}

// hint adds what a model can do about the common codes.
func hint(code string) string {
	switch code {
	case "invalid_state":
		return " (call room_state: the turn, the table or the status is not what this needs)"
	case "forbidden":
		return " (your role or this negotiation does not allow it)"
	case "rate_limited":
		return " (slow down: at most 10 frames a second)"
	case "invalid_argument":
		return " (fix the input; PROTOCOL.md has the limits)"
	}
	return ""
}
