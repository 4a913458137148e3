// Package faultproxy is a TCP proxy that injects the faults of the chaos
// run (RELIABILITY.md "Faults") between a venue node and one of its
// services: a cut (open connections reset, new ones refused), latency on
// every forwarded chunk, and, for Postgres, the loss of exactly the answer
// to a COMMIT: the proxy reads the Postgres wire protocol, lets the COMMIT
// through, and when the server's CommandComplete "COMMIT" comes back it
// drops it and resets both sides, so the transaction is stored and the
// client never learns it (PROTOCOL.md "Errors", `outcome_unknown`).
package faultproxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is what the proxy speaks: raw TCP, or the Postgres protocol (needed
// for DropCommitReply; clients must connect with sslmode=disable or
// prefer, an SSLRequest is answered "N").
type Kind int

// Kinds of proxy.
const (
	TCP Kind = iota
	Postgres
)

// Proxy forwards connections from its listener to upstream. Safe for
// concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string
	kind     Kind

	mu      sync.Mutex
	links   map[*link]struct{}
	cut     bool
	latency time.Duration
	drops   int    // COMMIT answers still to drop
	match   string // drop only in transactions that ran a statement containing this
	thenCut bool   // cut the path right after a drop
	closed  bool

	dropped  atomic.Int64
	accepted atomic.Int64
	wg       sync.WaitGroup
}

// Listen starts a proxy on addr ("127.0.0.1:0" for any free port) to
// upstream.
func Listen(addr, upstream string, kind Kind) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, kind: kind, links: map[*link]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut cuts the path (true: every open connection is reset, new ones are
// accepted and closed at once) or heals it (false).
func (p *Proxy) Cut(on bool) {
	p.mu.Lock()
	p.cut = on
	var ls []*link
	if on {
		for l := range p.links {
			ls = append(ls, l)
		}
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.reset()
	}
}

// SetLatency delays every forwarded chunk, both ways, by d (0: none).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// DropCommitReply arms the loss of the next n COMMIT answers (Postgres
// proxies only) of transactions that ran a statement containing match
// ("" for any transaction). thenCut cuts the path right after each drop
// (as Cut(true)): the client cannot even ask what became of its commit.
func (p *Proxy) DropCommitReply(n int, match string, thenCut bool) {
	p.mu.Lock()
	p.drops, p.match, p.thenCut = n, match, thenCut
	p.mu.Unlock()
}

// Dropped is how many COMMIT answers were dropped so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Accepted is how many connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// ResetAll resets every open connection once (a network blip; new
// connections go through).
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	var ls []*link
	for l := range p.links {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.reset()
	}
}

// Close stops the proxy and resets every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.ResetAll()
	p.wg.Wait()
}

func (p *Proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *Proxy) delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// takeDrop reports whether a COMMIT answer of a transaction that ran
// statements (joined) should be dropped, using one up if so.
func (p *Proxy) takeDrop(ran string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drops <= 0 || !strings.Contains(ran, p.match) {
		return false
	}
	p.drops--
	if p.thenCut {
		p.cut = true
	}
	return true
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		refuse := p.cut || p.closed
		p.mu.Unlock()
		if refuse {
			abort(c)
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	once           sync.Once
	mu             sync.Mutex
	ran            strings.Builder // statements of the open transaction (Postgres)
	stmts          map[string]string
	portals        map[string]string
}

// reset ends both sides with a TCP reset.
func (l *link) reset() {
	l.once.Do(func() {
		abort(l.client)
		abort(l.server)
	})
}

func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (p *Proxy) serve(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		abort(c)
		return
	}
	l := &link{client: c, server: s, stmts: map[string]string{}, portals: map[string]string{}}
	p.mu.Lock()
	if p.cut || p.closed {
		p.mu.Unlock()
		l.reset()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
		l.reset()
	}()
	var wg sync.WaitGroup
	if p.kind == Postgres {
		wg.Go(func() { _ = p.pgFrontend(l); l.reset() })
		wg.Go(func() { _ = p.pgBackend(l); l.reset() })
	} else {
		wg.Go(func() { p.pipe(l.server, l.client); l.reset() })
		wg.Go(func() { p.pipe(l.client, l.server); l.reset() })
	}
	wg.Wait()
}

// pipe copies src to dst chunk by chunk, each after the latency.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := p.delay(); d > 0 {
				time.Sleep(d) // the injected fault itself, not a wait in a test
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

const (
	sslRequest    = 80877103
	gssEncRequest = 80877104
	maxMessage    = 64 << 20
)

// pgFrontend forwards the client's messages, noting which statements each
// Execute (or simple Query) runs.
func (p *Proxy) pgFrontend(l *link) error {
	r := bufio.NewReaderSize(l.client, 64<<10)
	w := bufio.NewWriterSize(l.server, 64<<10)
	// Startup: SSLRequest / GSSENCRequest are answered "N" here; then the
	// startup message goes through.
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		code := binary.BigEndian.Uint32(hdr[4:])
		if n == 8 && (code == sslRequest || code == gssEncRequest) {
			if _, err := l.client.Write([]byte{'N'}); err != nil {
				return err
			}
			continue
		}
		if n < 8 || n > maxMessage {
			return errors.New("faultproxy: bad startup message")
		}
		rest := make([]byte, n-8)
		if _, err := io.ReadFull(r, rest); err != nil {
			return err
		}
		_, _ = w.Write(hdr[:])
		_, _ = w.Write(rest)
		if err := w.Flush(); err != nil {
			return err
		}
		break
	}
	for {
		typ, body, err := readMsg(r)
		if err != nil {
			return err
		}
		switch typ {
		case 'P': // Parse: name, query
			name, rest := cstr(body)
			query, _ := cstr(rest)
			l.mu.Lock()
			l.stmts[name] = query
			l.mu.Unlock()
		case 'B': // Bind: portal, statement
			portal, rest := cstr(body)
			stmt, _ := cstr(rest)
			l.mu.Lock()
			l.portals[portal] = l.stmts[stmt]
			l.mu.Unlock()
		case 'E': // Execute: portal
			portal, _ := cstr(body)
			l.mu.Lock()
			l.ran.WriteString(l.portals[portal])
			l.ran.WriteByte('\n')
			l.mu.Unlock()
		case 'Q':
			q, _ := cstr(body)
			l.mu.Lock()
			l.ran.WriteString(q)
			l.ran.WriteByte('\n')
			l.mu.Unlock()
		}
		writeMsg(w, typ, body)
		if r.Buffered() == 0 {
			if d := p.delay(); d > 0 {
				time.Sleep(d)
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// pgBackend forwards the server's messages; a CommandComplete "COMMIT" of
// a transaction armed to lose it resets both sides instead.
func (p *Proxy) pgBackend(l *link) error {
	r := bufio.NewReaderSize(l.server, 64<<10)
	w := bufio.NewWriterSize(l.client, 64<<10)
	for {
		typ, body, err := readMsg(r)
		if err != nil {
			return err
		}
		if typ == 'C' {
			tag, _ := cstr(body)
			if tag == "COMMIT" || tag == "ROLLBACK" {
				l.mu.Lock()
				ran := l.ran.String()
				l.ran.Reset()
				l.mu.Unlock()
				if tag == "COMMIT" && p.takeDrop(ran) {
					p.dropped.Add(1)
					l.reset()
					if p.isCut() {
						p.Cut(true)
					}
					return nil
				}
			}
		}
		writeMsg(w, typ, body)
		if r.Buffered() == 0 {
			if d := p.delay(); d > 0 {
				time.Sleep(d)
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

func readMsg(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n < 4 || n > maxMessage {
		return 0, nil, errors.New("faultproxy: bad message length")
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return hdr[0], body, nil
}

func writeMsg(w *bufio.Writer, typ byte, body []byte) {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(body)+4))
	_, _ = w.Write(hdr[:])
	_, _ = w.Write(body)
}

// cstr splits a NUL-terminated string off b.
func cstr(b []byte) (string, []byte) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:]
		}
	}
	return string(b), nil
}
