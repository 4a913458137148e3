package venue

import (
	"context"
	"net/http/httptest"
	"testing"
)

// A socket's context outlives its request and holds none of the request's
// context: net/http cancels that one when the handler returns, and its
// values (net/http's own, per connection) would stay alive for the
// socket's life.
func TestSocketContextHoldsNothingOfTheRequest(t *testing.T) {
	t.Parallel()
	type key struct{}
	reqCtx, cancelReq := context.WithCancel(context.WithValue(context.Background(), key{}, "request's"))
	r := httptest.NewRequest("GET", "/v1/negotiations/n/ws", nil).WithContext(reqCtx)
	ctx, cancel := socketContext(r)
	cancelReq()
	if err := ctx.Err(); err != nil {
		t.Fatalf("the request's end ended the socket's context: %v", err)
	}
	if v := ctx.Value(key{}); v != nil {
		t.Fatalf("the socket's context holds the request's value %v", v)
	}
	cancel()
	if ctx.Err() == nil {
		t.Fatal("cancel did not end the socket's context")
	}
}
