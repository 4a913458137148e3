package wsconn

import (
	"fmt"
	"testing"

	"github.com/venuehq/venue/hub"
)

type recorder struct {
	got  []string
	code int
}

func (r *recorder) Write(b []byte) bool           { r.got = append(r.got, string(b)); return true }
func (r *recorder) Close(code int, reason string) { r.code = code }

// TestEarlyTransport: what a session writes before its socket exists is
// sent first and in order; later writes go straight through; a close
// before the socket is applied to it; too much held closes it with 1013.
func TestEarlyTransport(t *testing.T) {
	e := &Early{}
	e.Write([]byte("a"))
	e.Write([]byte("b"))
	r := &recorder{}
	e.Attach(r)
	e.Write([]byte("c"))
	if fmt.Sprint(r.got) != "[a b c]" || r.code != 0 {
		t.Fatalf("got %v, closed %d", r.got, r.code)
	}

	closed := &Early{}
	closed.Close(hub.ClosePolicy, "x")
	r2 := &recorder{}
	closed.Attach(r2)
	if r2.code != hub.ClosePolicy {
		t.Fatalf("close before attach: %d", r2.code)
	}

	full := &Early{}
	for i := 0; i <= maxEarly; i++ {
		full.Write([]byte("x"))
	}
	r3 := &recorder{}
	full.Attach(r3)
	if len(r3.got) != maxEarly || r3.code != hub.CloseTryAgainLater {
		t.Fatalf("over the limit: %d frames, closed %d", len(r3.got), r3.code)
	}
}
