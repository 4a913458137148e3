package pircan

import (
	"slices"
	"testing"

	"github.com/venuehq/venue/clock"
)

// The gate of presence: a line for an account waits for a WHOX answer
// when the bridge cannot see the nick, goes when the answer is the
// account, and is dropped when another account, or nobody, holds the nick.
func TestPresenceGate(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(T0)
	var asked []string
	p := newPresence(c.Now, func(o Out) bool { asked = append(asked, o.Command+" "+o.Params[0]); return true }, func() {})
	line := Out{Command: "NOTICE", Params: []string{"Ann", "x"}, Account: "ann", NickKey: "ann"}

	// Without MONITOR: one WHOX per line.
	p.claim("ann", "Ann", "ann")
	if v := p.check(line); v != waitLine || !slices.Equal(asked, []string{"WHO Ann"}) {
		t.Fatalf("first check %v, asked %v", v, asked)
	}
	if v := p.check(line); v != waitLine || len(asked) != 1 {
		t.Fatalf("asked twice: %v", asked)
	}
	p.answer("ann", "Ann", "ann")
	for range 2 { // the pacer checks before it takes the line, and when
		if v := p.check(line); v != sendLine {
			t.Fatalf("after the answer %v", v)
		}
	}
	p.taken(line)
	if v := p.check(line); v != waitLine || len(asked) != 2 {
		t.Fatalf("second line %v, asked %v", v, asked)
	}
	p.answer("ann", "Ann", "") // logged out, or someone else: dropped
	if v := p.check(line); v != dropLine {
		t.Fatalf("nobody's nick: %v", v)
	}

	// With MONITOR: MONITOR + then WHOX once; lines go until the nick
	// goes offline (731).
	p.setMonitor(1)
	asked = nil
	p.claim("ann", "Ann", "ann")
	if v := p.check(line); v != waitLine || !slices.Equal(asked, []string{"MONITOR +", "WHO Ann"}) {
		t.Fatalf("monitored check %v, asked %v", v, asked)
	}
	p.online("ann")
	p.answer("ann", "Ann", "ann")
	for range 3 {
		if v := p.check(line); v != sendLine {
			t.Fatalf("monitored line %v", v)
		}
		p.taken(line)
	}
	p.forget("ann")
	if v := p.check(line); v != waitLine || asked[len(asked)-1] != "WHO Ann" || len(asked) != 3 {
		t.Fatalf("after 731 %v, asked %v", v, asked)
	}
	p.endOfWho("ann") // no 354: nobody holds it
	if v := p.check(line); v != dropLine {
		t.Fatalf("empty WHO: %v", v)
	}
	// A full MONITOR list starts again.
	bob := Out{Command: "NOTICE", Params: []string{"Bob", "x"}, Account: "bob", NickKey: "bob"}
	if v := p.check(bob); v != waitLine || !slices.Contains(asked, "MONITOR C") {
		t.Fatalf("full list: %v %v", v, asked)
	}
	// In a shared channel the tag confirms at once; lines without an
	// account always go.
	p.inChannel("cat", "Cat", "cat")
	if v := p.check(Out{Command: "NOTICE", Params: []string{"Cat", "x"}, Account: "cat", NickKey: "cat"}); v != sendLine {
		t.Fatalf("channel member %v", v)
	}
	if v := p.check(Out{Command: "NOTICE", Params: []string{"Dan", "x"}}); v != sendLine {
		t.Fatalf("no account %v", v)
	}
}
