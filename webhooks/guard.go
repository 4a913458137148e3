package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Resolver looks a host's addresses up (net.DefaultResolver; tests give
// their own).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard is the rule on webhook targets (PROTOCOL.md "Webhooks"): https to
// public addresses only, unless AllowPrivate (`venue serve
// --webhooks-allow-private`), which also takes http and private,
// loopback and link-local addresses. It is checked when a webhook is set
// (CheckURL) and again on every connection (Client: the address actually
// dialled, after any DNS answer, so a name that resolves to a public
// address when set and to a private one later is still refused).
type Guard struct {
	AllowPrivate bool
	Resolver     Resolver // nil: net.DefaultResolver
}

// errRefusedAddress is the dial error for an address the guard refuses.
var errRefusedAddress = errors.New("address not allowed for webhooks")

func (g Guard) resolver() Resolver {
	if g.Resolver == nil {
		return net.DefaultResolver
	}
	return g.Resolver
}

// CheckURL checks a webhook URL: absolute http(s) with a host, no user
// info or fragment, at most 2,048 bytes, https and public addresses only
// unless AllowPrivate; the host must resolve. The error is a sentence for
// the agent.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	if len(raw) > 2048 {
		return errors.New("url is at most 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("url must be an absolute http(s) URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowPrivate:
	case g.AllowPrivate:
		return errors.New("url must be http or https")
	default:
		return errors.New("url must be https")
	}
	if u.User != nil || u.Fragment != "" {
		return errors.New("url must carry no user info or fragment")
	}
	if g.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !Public(ip) {
			return fmt.Errorf("url's address %s is not public", ip)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return fmt.Errorf("url's host %s does not resolve", host)
	}
	for _, ip := range ips {
		if !Public(ip) {
			return fmt.Errorf("url's host %s resolves to %s, which is not public", host, ip.Unmap())
		}
	}
	return nil
}

// notPublic are ranges beyond netip's own tests that are no public
// unicast destination: this network, shared address space (CGNAT), IETF
// protocol assignments, documentation, benchmarking, reserved, NAT64 and
// 6to4 (which embed IPv4), discard, documentation (v6).
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// Public reports whether ip is a public unicast address: not loopback,
// private (RFC 1918, fc00::/7), link-local, unspecified, multicast, nor a
// range of notPublic. IPv4-mapped IPv6 is judged as its IPv4.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// control is the dialer's Control hook: it runs on the address about to
// be connected to, whatever name led there.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !Public(ap.Addr()) {
		return fmt.Errorf("%w: %s", errRefusedAddress, address)
	}
	return nil
}

// Client is the HTTP client of deliveries: no proxy, no redirects (a 3xx
// is an answer that is not 2xx), each connection's address checked by the
// guard, connections dialled with the guard's Resolver.
func (g Guard) Client() *http.Client {
	d := &net.Dialer{Timeout: Timeout, Control: g.control}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil || g.Resolver == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := g.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		var last error = fmt.Errorf("%s does not resolve", host)
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
	tr := &http.Transport{
		Proxy: nil, DialContext: dial, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: Timeout, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// describe turns a failed request's error into a short reason for the
// deliveries list.
func describe(err error) string {
	switch {
	case errors.Is(err, errRefusedAddress):
		return "refused: the address is not public"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout: no answer in 10 s"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout: no answer in 10 s"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "no answer: " + truncate(msg)
}
