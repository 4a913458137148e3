package admission

import (
	"net"
	"net/netip"
	"strings"
)

// AddressKey is the key of a client address for per-address caps and rate
// limits: an IPv4 address as is, an IPv6 address by its /64 (one host
// usually holds a whole /64, so keying single addresses would let it take
// 2^64 keys). An IPv4-mapped IPv6 address counts as IPv4. Anything that is
// not an IP address is its own key.
func AddressKey(ip string) string {
	a, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}

// ParseCIDRs reads a comma-separated list of CIDR ranges (or single
// addresses, taken as /32 or /128), as --trusted-proxies gives them.
func ParseCIDRs(list string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, err
			}
			s = netip.PrefixFrom(a, a.BitLen()).String()
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
