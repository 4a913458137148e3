package freeport

import (
	"net"
	"testing"
)

// Every address of one call is distinct and can be listened on.
func TestAddrsDistinct(t *testing.T) {
	addrs, err := Addrs(64)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 64 {
		t.Fatalf("got %d addresses, want 64", len(addrs))
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("address %s handed out twice in %v", a, addrs)
		}
		seen[a] = true
	}
	ln, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatalf("listen on %s: %v", addrs[0], err)
	}
	ln.Close()
}

func TestPorts(t *testing.T) {
	ports, err := Ports(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("ports %v: want 3 distinct", ports)
	}
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			t.Fatalf("port %d out of range", p)
		}
	}
}
