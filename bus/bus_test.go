package bus

import "testing"

// TestLocalWatched: a topic is watched exactly while it has a subscriber.
func TestLocalWatched(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	if l.Watched("arena") {
		t.Fatal("watched with no subscriber")
	}
	c1 := l.Subscribe("arena", func([]byte) {})
	c2 := l.Subscribe("arena", func([]byte) {})
	if !l.Watched("arena") || l.Watched("neg:1") {
		t.Fatal("Watched does not follow the subscriptions")
	}
	c1()
	if !l.Watched("arena") {
		t.Fatal("unwatched with a subscriber left")
	}
	c2()
	if l.Watched("arena") {
		t.Fatal("watched after the last cancel")
	}
}
