package chaos

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/grants"
)

// ledger is what the clients were told, for the checks.
type ledger struct {
	mu sync.Mutex
	// acked: negotiation -> seq -> (sender, frame_type) of every message_ack.
	acked map[string]map[int64]ackRec
	// nothingChanged: frames answered unavailable or internal.
	nothingChanged []sentRec
	setupErrs      []string
	unknown        atomic.Int64 // outcome_unknown answers
	resolved       atomic.Int64 // outcome_unknown answers a resend turned into the truth
	codes          map[string]int
	negotiations   map[string]bool // live negotiations the workload opened
	sent           atomic.Int64
	reconnects     atomic.Int64
	// observers: delivery faults seen by observer sockets.
	obsGaps, obsDups atomic.Int64
	obsFrames        atomic.Int64
}

type ackRec struct{ sender, frameType string }

type sentRec struct{ neg, sender, id string }

func newLedger() *ledger {
	return &ledger{acked: map[string]map[int64]ackRec{}, codes: map[string]int{}, negotiations: map[string]bool{}}
}

func (l *ledger) ack(neg string, seq int64, r ackRec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.acked[neg]
	if m == nil {
		m = map[int64]ackRec{}
		l.acked[neg] = m
	}
	m[seq] = r
}

func (l *ledger) code(c string) {
	l.mu.Lock()
	l.codes[c]++
	l.mu.Unlock()
}

var dialer = &websocket.Dialer{HandshakeTimeout: 5 * time.Second}

// workload drives negotiations against the nodes until ctx is done.
type workload struct {
	nodes []*Node
	aud   string
	l     *ledger
	seq   atomic.Int64
}

func call(ctx context.Context, method, url, key string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// retry runs fn until it succeeds, the nodes being faulted meanwhile.
func retry(ctx context.Context, fn func(attempt int) error) error {
	var err error
	for a := 0; a < 40; a++ {
		if err = fn(a); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return err
}

type agent struct {
	id, key string
	priv    ed25519.PrivateKey
}

func (w *workload) node(i int) *Node { return w.nodes[((i%len(w.nodes))+len(w.nodes))%len(w.nodes)] }

func (w *workload) register(ctx context.Context, role string, n int) (agent, error) {
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		return agent{}, err
	}
	var a struct {
		AgentID string `json:"agent_id"`
		APIKey  string `json:"api_key"`
	}
	err = retry(ctx, func(at int) error {
		return call(ctx, "POST", w.node(n+at).URL()+"/v1/register", "", map[string]any{
			"name": fmt.Sprintf("chaos %s %d", role, w.seq.Add(1)), "role": role, "principal_key": grants.PublicJWK(pub)}, &a)
	})
	if err != nil {
		return agent{}, err
	}
	return agent{id: a.AgentID, key: a.APIKey, priv: priv}, nil
}

func (w *workload) grant(ctx context.Context, a agent, n int, budgetCents *int64) error {
	now := time.Now()
	tok, err := grants.SignGrant(a.priv, grants.GrantClaims{Subject: a.id, Audience: w.aud, IssuedAt: now.Add(-time.Minute),
		ExpiresAt: now.Add(2 * time.Hour), Scope: grants.Scope{BudgetCents: budgetCents}})
	if err != nil {
		return err
	}
	return retry(ctx, func(at int) error {
		err := call(ctx, "POST", w.node(n+at).URL()+"/v1/grants", a.key, map[string]any{"token": tok}, nil)
		if err != nil && strings.Contains(err.Error(), "duplicate_jti") {
			return nil // an earlier attempt landed
		}
		return err
	})
}

// request sends frame on ws and reads until want (or an error frame).
func request(ws *websocket.Conn, frame map[string]any, want string) (map[string]any, error) {
	if frame != nil {
		if err := ws.WriteJSON(frame); err != nil {
			return nil, err
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", want, err)
		}
		switch m["type"] {
		case want:
			return m, nil
		case "error":
			return nil, fmt.Errorf("waiting for %s: error %v: %v", want, m["code"], m["message"])
		}
	}
}

func wsURL(n *Node, path string) string { return "ws://" + n.Addr + path }

// group is one brand with a budget for one deal and two bouncers: two
// negotiations whose deals race for the budget, parties on different
// nodes.
func (w *workload) group(ctx context.Context, g int) error {
	budget := int64(500_000) // $5,000: one $3,000 deal, not two
	brand, err := w.register(ctx, "brand", g)
	if err != nil {
		return err
	}
	if err := w.grant(ctx, brand, g, &budget); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for k := range 2 {
		bouncer, err := w.register(ctx, "bouncer", g+1+k)
		if err != nil {
			return err
		}
		if err := w.grant(ctx, bouncer, g+1+k, nil); err != nil {
			return err
		}
		neg, err := w.open(ctx, brand, bouncer, g+k)
		if err != nil {
			return err
		}
		w.l.mu.Lock()
		w.l.negotiations[neg] = true
		w.l.mu.Unlock()
		wg.Go(func() { w.observe(ctx, neg, g+k) })
		wg.Go(func() { w.party(ctx, neg, brand, true, g+k+1) })
		wg.Go(func() { w.party(ctx, neg, bouncer, false, g+k+2) })
	}
	wg.Wait()
	return nil
}

// open runs the lobby dance to a live negotiation.
func (w *workload) open(ctx context.Context, brand, bouncer agent, n int) (string, error) {
	var neg string
	err := retry(ctx, func(at int) error {
		bl, _, err := dialer.DialContext(ctx, wsURL(w.node(n+at), "/v1/agents/"+brand.id+"/ws?token="+brand.key), nil)
		if err != nil {
			return err
		}
		defer bl.Close()
		kl, _, err := dialer.DialContext(ctx, wsURL(w.node(n+at+1), "/v1/agents/"+bouncer.id+"/ws?token="+bouncer.key), nil)
		if err != nil {
			return err
		}
		defer kl.Close()
		offer, err := request(bl, map[string]any{"type": "submit_offer", "id": "o", "to": bouncer.id, "offer": map[string]any{"title": "chaos"}}, "offer_submitted")
		if err != nil {
			return err
		}
		created, err := request(bl, map[string]any{"type": "create_negotiation", "id": "c", "offer_id": offer["offer_id"]}, "negotiation_created")
		if err != nil {
			return err
		}
		neg, _ = created["negotiation_id"].(string)
		if _, err := request(kl, nil, "negotiation_requested"); err != nil {
			return err
		}
		_, err = request(kl, map[string]any{"type": "accept_negotiation", "id": "a", "negotiation_id": neg}, "negotiation_accepted")
		return err
	})
	return neg, err
}

// observe watches a negotiation from node n until it ends, reconnecting
// with since= and counting gaps and duplicates of seq.
func (w *workload) observe(ctx context.Context, neg string, n int) {
	var last int64
	for try := 0; ctx.Err() == nil; try++ {
		ws, _, err := dialer.DialContext(ctx, wsURL(w.node(n+try), "/v1/negotiations/"+neg+"/ws/observe?since="+strconv.FormatInt(last, 10)), nil)
		if err != nil {
			sleep(ctx, 300*time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { ws.Close() })
		for {
			_ = ws.SetReadDeadline(time.Now().Add(90 * time.Second))
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				break
			}
			seq, ok := m["seq"].(float64)
			if !ok || m["type"] == "message_ack" {
				continue
			}
			switch s := int64(seq); {
			case s <= last:
				w.l.obsDups.Add(1)
			case s > last+1:
				w.l.obsGaps.Add(1)
				last = s
			default:
				last = s
			}
			w.l.obsFrames.Add(1)
			if m["type"] == "negotiation_ended" {
				stop()
				ws.Close()
				return
			}
		}
		stop()
		ws.Close()
		w.l.reconnects.Add(1)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// party plays one side until the negotiation ends or ctx is done.
func (w *workload) party(ctx context.Context, neg string, a agent, brand bool, n int) {
	terms := func(amount int) map[string]any {
		return map[string]any{"amount_usd": amount, "category": "primary_slot", "sends": 1}
	}
	var last int64
	ids := 0
	for try := 0; ctx.Err() == nil; try++ {
		ws, _, err := dialer.DialContext(ctx, wsURL(w.node(n+try), "/v1/negotiations/"+neg+"/ws?token="+a.key+"&since="+strconv.FormatInt(last, 10)), nil)
		if err != nil {
			sleep(ctx, 300*time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { ws.Close() })
		ended := w.play(ctx, ws, neg, a, brand, terms, &last, &ids)
		stop()
		ws.Close()
		if ended {
			return
		}
		w.l.reconnects.Add(1)
	}
}

// play is one socket's life: it reacts to the room and sends frames,
// reading each answer. It reports whether the negotiation ended.
func (w *workload) play(ctx context.Context, ws *websocket.Conn, neg string, a agent, brand bool,
	terms func(int) map[string]any, last *int64, ids *int) bool {
	var turn string
	standingBy := ""
	// send sends one frame and reads until its answer, handling what
	// arrives meanwhile; outcome_unknown is resent with the same id.
	var pending map[string]any
	handle := func(m map[string]any) (ended bool) {
		if s, ok := m["seq"].(float64); ok && int64(s) > *last && m["type"] != "message_ack" {
			*last = int64(s)
		}
		if t, ok := m["turn"].(string); ok {
			turn = t
		}
		switch m["type"] {
		case "negotiation_started":
			ctx, _ := m["context"].(map[string]any)
			if t, ok := ctx["turn"].(string); ok {
				turn = t
			}
			if st, ok := ctx["standing"].(map[string]any); ok {
				standingBy, _ = st["by"].(string)
			} else {
				standingBy = ""
			}
			if s, _ := ctx["status"].(string); s != "" && s != "live" {
				return true
			}
		case "negotiation_message":
			switch m["frame_type"] {
			case "propose_terms", "counter_terms":
				standingBy, _ = m["from"].(string)
			case "reject", "withdraw", "accept":
				standingBy = ""
			}
		case "proposal_expired", "proposal_withdrawn":
			standingBy = ""
		case "negotiation_ended":
			return true
		}
		return false
	}
	for ctx.Err() == nil {
		// Wait for something, or act.
		if pending == nil && turn == a.id {
			*ids++
			id := fmt.Sprintf("%s-%d", a.id[len(a.id)-6:], *ids)
			r := rand.IntN(100)
			switch {
			case standingBy == "" || standingBy == a.id:
				pending = map[string]any{"type": "propose_terms", "id": id, "terms": terms(3000 + 100*rand.IntN(3)), "ttl_seconds": 10}
			case r < 45:
				pending = map[string]any{"type": "accept", "id": id}
			case r < 75:
				pending = map[string]any{"type": "counter_terms", "id": id, "terms": terms(3000 + 100*rand.IntN(3)), "ttl_seconds": 10}
			case r < 85:
				pending = map[string]any{"type": "message", "id": id, "content": "thinking it over"}
			default:
				pending = map[string]any{"type": "reject", "id": id}
			}
			if rand.IntN(4) == 0 { // let some proposals run out
				sleep(ctx, time.Duration(rand.IntN(12000))*time.Millisecond)
			} else {
				sleep(ctx, time.Duration(rand.IntN(400))*time.Millisecond)
			}
		} else if pending == nil && standingBy == a.id && rand.IntN(8) == 0 {
			// Withdraw off turn, racing the other side's accept or counter.
			*ids++
			pending = map[string]any{"type": "withdraw", "id": fmt.Sprintf("%s-%d", a.id[len(a.id)-6:], *ids)}
		}
		if pending != nil {
			if err := ws.WriteJSON(pending); err != nil {
				return false // reconnect; pending is resent with its id below
			}
			w.l.sent.Add(1)
		}
		// Read until pending's answer (or, with nothing pending, one frame).
		for {
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				if pending != nil {
					// The answer never came: the truth comes with the resend.
					w.resend(ctx, neg, a, pending)
					pending = nil
				}
				return false
			}
			if handle(m) {
				return true
			}
			if pending == nil {
				break
			}
			if m["re"] != pending["id"] && m["type"] != "scope_block" {
				continue
			}
			switch m["type"] {
			case "message_ack":
				seq, _ := m["seq"].(float64)
				ft, _ := m["frame_type"].(string)
				w.l.ack(neg, int64(seq), ackRec{a.id, ft})
				if int64(seq) > *last {
					*last = int64(seq)
				}
				switch ft {
				case "propose_terms", "counter_terms":
					standingBy = a.id
				case "accept", "reject", "withdraw":
					standingBy = ""
				}
				if t, ok := m["turn"].(string); ok {
					turn = t
				}
				pending = nil
			case "scope_block":
				w.l.code("scope_block")
				pending = nil
				if rand.IntN(3) == 0 { // out of budget, say: leave
					*ids++
					pending = map[string]any{"type": "walk", "id": fmt.Sprintf("%s-%d", a.id[len(a.id)-6:], *ids)}
					if err := ws.WriteJSON(pending); err != nil {
						w.resend(ctx, neg, a, pending)
						return false
					}
					w.l.sent.Add(1)
					continue
				}
			case "error":
				code, _ := m["code"].(string)
				w.l.code(code)
				switch code {
				case "outcome_unknown":
					w.l.unknown.Add(1)
					w.resend(ctx, neg, a, pending)
				case "unavailable", "internal":
					w.l.mu.Lock()
					w.l.nothingChanged = append(w.l.nothingChanged, sentRec{neg, a.id, pending["id"].(string)})
					w.l.mu.Unlock()
				}
				if code == "invalid_state" && strings.Contains(fmt.Sprint(m["message"]), "the negotiation is") {
					return true
				}
				pending = nil
			default:
				continue
			}
			break
		}
	}
	return false
}

// resend sends frame again with its id over a fresh socket (any node)
// until it gets an answer: the truth about the first send.
func (w *workload) resend(ctx context.Context, neg string, a agent, frame map[string]any) {
	for try := 0; ctx.Err() == nil && try < 40; try++ {
		ws, _, err := dialer.DialContext(ctx, wsURL(w.node(try), "/v1/negotiations/"+neg+"/ws?token="+a.key), nil)
		if err != nil {
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		if err := ws.WriteJSON(frame); err != nil {
			ws.Close()
			continue
		}
		_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				break
			}
			if m["re"] != frame["id"] && m["type"] != "scope_block" {
				continue
			}
			ws.Close()
			switch m["type"] {
			case "message_ack":
				seq, _ := m["seq"].(float64)
				ft, _ := m["frame_type"].(string)
				w.l.ack(neg, int64(seq), ackRec{a.id, ft})
				w.l.resolved.Add(1)
				return
			case "error":
				code, _ := m["code"].(string)
				if code == "outcome_unknown" || code == "unavailable" {
					sleep(ctx, 500*time.Millisecond)
					goto again
				}
				w.l.resolved.Add(1)
				return
			default:
				w.l.resolved.Add(1)
				return
			}
		}
		ws.Close()
	again:
	}
}
