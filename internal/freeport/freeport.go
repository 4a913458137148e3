// Package freeport finds loopback TCP addresses for a child process to
// listen on (the bench's child venue and relay, the chaos run's nodes).
package freeport

import (
	"fmt"
	"net"
)

// Addrs returns n distinct loopback addresses ("127.0.0.1:PORT") that were
// free a moment ago. All n listeners are open at once before any is
// closed: two Listen-then-Close calls in a row may be handed the same
// ephemeral port, which gave a child venue the same --addr and
// --admin-addr. A port can still be taken by another process between
// Addrs and the child's own Listen. It returns Listen's error.
func Addrs(n int) ([]string, error) {
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("freeport: %w", err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// Ports is Addrs as port numbers.
func Ports(n int) ([]int, error) {
	addrs, err := Addrs(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, a := range addrs {
		ap, err := net.ResolveTCPAddr("tcp", a)
		if err != nil {
			return nil, fmt.Errorf("freeport: %w", err)
		}
		ports[i] = ap.Port
	}
	return ports, nil
}
