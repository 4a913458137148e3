package bench

// The scale-out run (BENCHMARKS.md "Scale out: three nodes"): many
// negotiations whose two parties sit on different nodes of one venue on
// Postgres + Redis, driven by several load-generator processes (a process
// holds one socket per file descriptor, and this machine allows 20,000 a
// process), then a reconnect storm: one node killed (SIGKILL, so every one
// of its sockets is cut at once), its clients resuming on the other nodes
// with ?since= (PROTOCOL.md "Replay with since"). Each party socket checks
// that it saw every seq of its negotiation, none twice.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// ScaleWorker is one load-generator process of a scale run: negotiations
// Offset..Offset+Count-1 of the run, set up through Nodes and driven there.
type ScaleWorker struct {
	// Nodes are the venue nodes' base URLs (http://host:port). Negotiation
	// g's brand socket opens on node g mod len(Nodes), its bouncer's on the
	// next one.
	Nodes []string
	// Offset and Count: which negotiations of the run are this process's.
	Offset, Count int
	// Interval between two moves of one negotiation (the run's rate is
	// negotiations / Interval); 4 s by default, under the 60 s turn clock.
	Interval time.Duration
	// Setup is how many brand-bouncer pairs set up their negotiations at
	// once (default 64).
	Setup int
}

// WorkerReport is what one worker saw. Frames count transcript entries
// delivered to the other party (negotiation_message of the other side).
type WorkerReport struct {
	Negotiations int   `json:"negotiations"`
	Sockets      int   `json:"sockets"`
	Sent         int64 `json:"sent"`
	// Delivered is counted from "go" to "stop"; DeliveredAtCut from "go"
	// to "cut".
	Delivered      int64 `json:"delivered"`
	DeliveredAtCut int64 `json:"delivered_at_cut"`
	// Gaps: stored seqs a party socket that was still live at the end
	// never saw (as an ack or an entry); Unresumed: the same on a socket
	// no node took back (a failed resume, not a lost frame); Duplicates:
	// entries a socket got twice; Disorder: entries a connection got after
	// a later one; Lost: a seq acked to its sender that the store does not
	// hold with the sender's id; Phantom: seqs a socket saw past the
	// store's last; DoubleCommits: one message id stored twice (see
	// scalecheck.go).
	Gaps          int64 `json:"gaps"`
	Unresumed     int64 `json:"gaps_on_unresumed_sockets"`
	Duplicates    int64 `json:"duplicates"`
	Disorder      int64 `json:"out_of_order"`
	Lost          int64 `json:"lost_acked"`
	Phantom       int64 `json:"phantom"`
	DoubleCommits int64 `json:"double_commits"`
	// Entries is the seqs checked (both sockets of every negotiation, up
	// to its stored last seq); Unchecked the negotiations whose stored
	// transcript could not be read.
	Entries   int64 `json:"entries_checked"`
	Unchecked int   `json:"unchecked"`
	// Unanswered: frames that got neither an ack nor an error within 15 s
	// on a connection that stayed up (waited for up to a minute, then
	// resent with the same id).
	Unanswered int64 `json:"unanswered"`
	// AckCounts: send-to-ack latency, counts per ackBounds bucket.
	AckCounts []int64 `json:"ack_counts"`
	// Cut sockets: dropped after "cut"; Resumed: of those, back with
	// since= on another node; ResumeSeconds: from the cut to each resume.
	Cut           int       `json:"cut_sockets"`
	Resumed       int       `json:"resumed"`
	ResumeSeconds []float64 `json:"resume_seconds,omitempty"`
	// Drops before the cut (a healthy run has none), error frames by code,
	// negotiations that ended before the stop (their deadline or a turn).
	DropsBeforeCut int64            `json:"drops_before_cut"`
	Errors         map[string]int64 `json:"errors,omitempty"`
	// DropReasons counts the drops before the cut by what ended the
	// socket: "close <code> <reason>" when the venue closed it, else the
	// read error.
	DropReasons map[string]int64 `json:"drop_reasons,omitempty"`
	Ended       int64            `json:"ended_early"`
	// LiveAtGo: negotiations set up and not ended when counting began.
	LiveAtGo     int     `json:"live_at_go"`
	SetupSeconds float64 `json:"setup_seconds"`
	// GapSamples describe up to 20 findings of the check: negotiation,
	// side, seq, what the store holds, the socket's node and drops.
	GapSamples []string `json:"gap_samples,omitempty"`
	// SetupFailed: negotiations this worker could not set up (the venue
	// busy past the retries); they are left out of every figure.
	SetupFailed int `json:"setup_failed"`
}

// scaleSide is one party socket of a negotiation and what it saw.
type scaleSide struct {
	neg  *scaleNeg
	who  int // 0 brand, 1 bouncer
	key  string
	node int
	mu   sync.Mutex
	ws   *websocket.Conn
	seen []uint8 // by seq: 1 acked to this side, 2 delivered as an entry
	dups int64
	// top is the highest entry seq this connection delivered (reset to
	// since on a resume); disorder counts entries that came after a later
	// one on one connection.
	top, disorder int64
	drops         int  // connections of this side that dropped
	endedSeen     bool // this socket got negotiation_ended: its stream is whole
	acks          chan ackSeen
	resume        chan struct{} // closed and replaced at each resume
	dead          atomic.Bool   // no node took it back within a minute
}

// ackSeen is the answer to a frame: its ack (seq > 0) or an error (code).
type ackSeen struct {
	re   string
	seq  int64
	code string
}

type scaleNeg struct {
	id    string
	g     int
	sides [2]*scaleSide
	ended atomic.Bool
	// acked is each acked message's id by its seq; only drive writes it,
	// and the check reads it after every drive has returned.
	acked map[int64]string
}

type scaleRun struct {
	w         ScaleWorker
	delivered atomic.Int64
	sent      atomic.Int64
	counting  atomic.Bool
	// armed is set at "arm", just before the node is killed: a drop from
	// then on is the cut's. cutAt is the unix ns of the kill ("cut").
	armed      atomic.Bool
	cutAt      atomic.Int64
	stopping   atomic.Bool
	drops      atomic.Int64
	mu         sync.Mutex
	errs       map[string]int64
	whyDropped map[string]int64 // drops before the cut, by dropReason
	cut        int
	resumedAt  []int64 // unix ns of each resume after a cut drop
	failed     int
	unanswered atomic.Int64
	ackMu      sync.Mutex
	ackCounts  []int64
}

// RunScaleWorker sets up w's negotiations, opens both party sockets of
// each, prints "ready N" on out, and drives them, one move per Interval
// per negotiation by the party on turn, until "stop" on in; "go" on in
// starts counting, "arm" (answered "armed" on out) says a node is about to
// be killed, "cut <unix ns>" says when it was. It then
// prints its WorkerReport as one JSON line. A party socket that drops
// reconnects to the next node with ?since= its last contiguous seq and
// resends an unanswered frame with the same id (PROTOCOL.md "Idempotent
// resend").
func RunScaleWorker(ctx context.Context, w ScaleWorker, in io.Reader, out io.Writer) error {
	if w.Interval <= 0 {
		w.Interval = 4 * time.Second
	}
	if w.Setup <= 0 {
		w.Setup = 64
	}
	if len(w.Nodes) == 0 || w.Count <= 0 {
		return errors.New("bench: a scale worker needs nodes and negotiations")
	}
	r := &scaleRun{w: w, errs: map[string]int64{}, whyDropped: map[string]int64{}, ackCounts: make([]int64, len(ackBounds)+1)}
	aud, err := venueAudience(ctx, w.Nodes[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	negs := make([]*scaleNeg, w.Count)
	start := time.Now()
	var drivers sync.WaitGroup
	err = r.setup(ctx, aud, negs, &drivers)
	if err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	kept := negs[:0]
	for _, n := range negs {
		if n != nil {
			kept = append(kept, n)
		}
	}
	negs = kept
	setup := time.Since(start)
	fmt.Fprintf(out, "ready %d\n", w.Count)
	atCut, delivered, sent, live := r.commands(in, out, negs)
	r.stopping.Store(true)
	drivers.Wait() // each finishes its move in flight
	rep := r.report(ctx, negs)
	rep.Sent, rep.Delivered, rep.DeliveredAtCut, rep.SetupSeconds, rep.LiveAtGo = sent, delivered, atCut, setup.Seconds(), live
	cancel()
	return json.NewEncoder(out).Encode(rep)
}

// commands follows the run's commands on in until "stop": "go" starts
// counting, "arm" counts every drop from then on as the cut's and answers
// "armed" on out (the runner kills the node only once every worker has:
// a socket of the killed node that dropped before its worker heard of the
// cut was counted as a drop before it), "cut <unix ns>" marks the kill.
// It returns the frames delivered at the cut and at the stop, those sent,
// and how many of negs were live at "go".
func (r *scaleRun) commands(in io.Reader, out io.Writer, negs []*scaleNeg) (atCut, delivered, sent int64, live int) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0:
		case f[0] == "go":
			for _, n := range negs {
				if !n.ended.Load() {
					live++
				}
			}
			r.delivered.Store(0)
			r.sent.Store(0)
			r.counting.Store(true)
		case f[0] == "arm":
			r.armed.Store(true)
			fmt.Fprintln(out, "armed")
		case f[0] == "cut" && len(f) == 2:
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			atCut = r.delivered.Load()
			r.cutAt.Store(ns)
		case f[0] == "stop":
			r.counting.Store(false)
			return atCut, r.delivered.Load(), r.sent.Load(), live
		}
	}
	r.counting.Store(false)
	return atCut, r.delivered.Load(), r.sent.Load(), live
}

// report checks negs against the store and fills a WorkerReport with what
// the run saw, closing every socket.
func (r *scaleRun) report(ctx context.Context, negs []*scaleNeg) WorkerReport {
	rep := WorkerReport{Negotiations: len(negs), Sockets: 2 * len(negs), DropsBeforeCut: r.drops.Load(), Unanswered: r.unanswered.Load()}
	c := r.verify(ctx, negs)
	rep.Gaps, rep.Unresumed, rep.Lost, rep.Phantom, rep.DoubleCommits = c.Gaps, c.Unresumed, c.Lost, c.Phantom, c.DoubleCommits
	rep.Entries, rep.Unchecked, rep.GapSamples = c.Entries, c.Unchecked, c.Samples
	for _, n := range negs {
		if n.ended.Load() {
			rep.Ended++
		}
		for _, s := range n.sides {
			s.mu.Lock()
			rep.Duplicates += s.dups
			rep.Disorder += s.disorder
			if s.ws != nil {
				_ = s.ws.Close()
			}
			s.mu.Unlock()
		}
	}
	r.ackMu.Lock()
	rep.AckCounts = r.ackCounts
	r.ackMu.Unlock()
	r.mu.Lock()
	rep.SetupFailed, rep.Cut, rep.Resumed, rep.Errors = r.failed, r.cut, len(r.resumedAt), r.errs
	if cut := r.cutAt.Load(); cut != 0 {
		for _, at := range r.resumedAt {
			rep.ResumeSeconds = append(rep.ResumeSeconds, time.Duration(max(at-cut, 0)).Seconds())
		}
	}
	rep.DropReasons = r.whyDropped
	r.mu.Unlock()
	return rep
}

// dial opens s's socket on its node, with since when resuming (since >=
// 0; -1 for the first socket, which replays nothing), and reads
// negotiation_started.
func (r *scaleRun) dial(ctx context.Context, s *scaleSide, since int64) error {
	path := "/v1/negotiations/" + s.neg.id + "/ws?token=" + s.key
	if since >= 0 {
		path += "&since=" + strconv.FormatInt(since, 10)
	}
	ws, _, err := dialer.DialContext(ctx, wsURL(r.w.Nodes[s.node], path), nil)
	if err != nil {
		return err
	}
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, _, err := ws.ReadMessage(); err != nil { // negotiation_started
		_ = ws.Close()
		return err
	}
	_ = ws.SetReadDeadline(time.Time{})
	s.mu.Lock()
	s.ws, s.top = ws, max(since, 0)
	s.mu.Unlock()
	return nil
}

// contiguous is the highest seq up to which s saw every one.
func (s *scaleSide) contiguous() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := int64(0)
	for c+1 < int64(len(s.seen)) && s.seen[c+1] != 0 {
		c++
	}
	return c
}

// scaleFrame is what a worker reads of a frame.
type scaleFrame struct {
	Type string `json:"type"`
	Seq  int64  `json:"seq"`
	Re   string `json:"re"`
	Code string `json:"code"`
}

// read reads s's frames until the run stops; on a drop it resumes on the
// next node that takes it, with since. A socket that has not seen the
// ending resumes even when its negotiation has ended (the other socket saw
// it): the replay brings the rest.
func (r *scaleRun) read(ctx context.Context, s *scaleSide) {
	var f scaleFrame
	for {
		s.mu.Lock()
		ws := s.ws
		s.mu.Unlock()
		_, data, err := ws.ReadMessage()
		if err != nil {
			s.mu.Lock()
			whole := s.endedSeen
			s.mu.Unlock()
			if r.stopping.Load() || ctx.Err() != nil || whole || !r.resumeSide(ctx, s, dropReason(err)) {
				return
			}
			continue
		}
		f = scaleFrame{}
		if json.Unmarshal(data, &f) == nil {
			r.note(s, &f)
		}
	}
}

// note records frame f that s received.
func (r *scaleRun) note(s *scaleSide, f *scaleFrame) {
	switch {
	case f.Type == "error":
		r.mu.Lock()
		r.errs[f.Code]++
		r.mu.Unlock()
		if f.Re != "" {
			s.answer(ackSeen{re: f.Re, code: f.Code})
		}
		return
	case f.Type == "negotiation_ended":
		s.neg.ended.Store(true)
	case f.Seq <= 0:
		return
	}
	s.mu.Lock()
	for int64(len(s.seen)) <= f.Seq {
		s.seen = append(s.seen, 0)
	}
	theirs := f.Type == "negotiation_message" && s.seen[f.Seq] == 0
	if f.Type == "message_ack" {
		s.seen[f.Seq] |= 1
	} else {
		if s.seen[f.Seq]&2 != 0 {
			s.dups++
		} else if f.Seq <= s.top {
			s.disorder++
		}
		s.top = max(s.top, f.Seq)
		s.seen[f.Seq] |= 2
		s.endedSeen = s.endedSeen || f.Type == "negotiation_ended"
	}
	s.mu.Unlock()
	if f.Type == "message_ack" {
		s.answer(ackSeen{re: f.Re, seq: f.Seq})
	} else if theirs && r.counting.Load() {
		r.delivered.Add(1)
	}
}

// answer hands an ack or an error to the frame's sender (dropped if it is
// not waiting: it resends).
func (s *scaleSide) answer(a ackSeen) {
	select {
	case s.acks <- a:
	default:
	}
}

// dropReason names what ended a socket for DropReasons: the venue's close
// frame ("close 1013 store unavailable") or the read error.
func dropReason(err error) string {
	if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
		return "close " + strconv.Itoa(ce.Code) + " " + ce.Text
	}
	return err.Error()
}

// resumeSide reconnects s after a drop (why: dropReason), on the nodes
// after its own in turn, with since its last contiguous seq; false if
// none took it within a minute.
func (r *scaleRun) resumeSide(ctx context.Context, s *scaleSide, why string) bool {
	cut := r.armed.Load()
	if !cut {
		r.drops.Add(1)
		r.mu.Lock()
		r.whyDropped[why]++
		r.mu.Unlock()
	} else {
		r.mu.Lock()
		r.cut++
		r.mu.Unlock()
	}
	s.mu.Lock()
	_ = s.ws.Close()
	s.drops++
	s.mu.Unlock()
	// The first try spreads the cut node's sockets over the others.
	s.node = (s.node + 1 + s.neg.g%max(len(r.w.Nodes)-1, 1)) % len(r.w.Nodes)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; s.node = (s.node + 1) % len(r.w.Nodes) {
		if err := r.dial(ctx, s, s.contiguous()); err == nil {
			if cut {
				r.mu.Lock()
				r.resumedAt = append(r.resumedAt, time.Now().UnixNano())
				r.mu.Unlock()
			}
			s.mu.Lock()
			close(s.resume)
			s.resume = make(chan struct{})
			s.mu.Unlock()
			return true
		}
		time.Sleep(time.Duration(100+rand.IntN(200)) * time.Millisecond)
	}
	s.dead.Store(true)
	return false
}

// drive moves n one frame per Interval, by the party on turn (the brand
// first), each a message with an id; an unanswered frame is resent with
// the same id, on the new socket after a drop. A refused frame (an error
// other than unavailable or outcome_unknown) leaves the turn where it was.
func (r *scaleRun) drive(ctx context.Context, n *scaleNeg) {
	turn := 0
	// Moves keep to a fixed schedule, one per Interval from a random
	// start, so the rate is negotiations / Interval whatever the ack
	// latency; a move that comes due while one is in flight goes as soon
	// as it is answered (no burst to catch up).
	next := time.Now().Add(time.Duration(rand.Int64N(int64(r.w.Interval))))
	tick := time.NewTimer(time.Until(next))
	defer tick.Stop()
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if r.stopping.Load() || n.ended.Load() {
			return
		}
		s := n.sides[turn]
		id := "m" + strconv.Itoa(k)
		frame := []byte(`{"type":"message","id":"` + id + `","content":"scale ` + id + ` lorem ipsum dolor sit amet"}`)
		r.sent.Add(1)
		switch r.send(ctx, n, s, id, frame) {
		case sendAcked:
			turn = 1 - turn
		case sendStop:
			return
		}
		next = next.Add(r.w.Interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		tick.Reset(time.Until(next))
	}
}

const (
	sendAcked = iota
	sendRefused
	sendStop
	sendAgain
)

// send writes frame on s until its ack (or a final refusal) comes back;
// a frame refused as unavailable or outcome_unknown, unanswered for a
// minute, or cut off by a drop, goes again with the same id.
func (r *scaleRun) send(ctx context.Context, n *scaleNeg, s *scaleSide, id string, frame []byte) int {
	sentAt := time.Now()
	for {
		if ctx.Err() != nil || n.ended.Load() {
			return sendStop
		}
		s.mu.Lock()
		ws, resumed, drops := s.ws, s.resume, s.drops
		s.mu.Unlock()
		_ = ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if ws.WriteMessage(websocket.TextMessage, frame) != nil {
			select {
			case <-resumed:
			case <-ctx.Done():
				return sendStop
			case <-time.After(15 * time.Second):
			}
		} else if res := r.await(ctx, n, s, id, resumed, drops); res != sendAgain {
			if res == sendAcked {
				r.ackMu.Lock()
				r.ackCounts[ackBucket(time.Since(sentAt))]++
				r.ackMu.Unlock()
			}
			return res
		}
		if r.stopping.Load() {
			return sendStop
		}
	}
}

// await waits for the answer to frame id on s: acked (recorded in
// n.acked), refused for good, stop, or again (unavailable or
// outcome_unknown, which the venue says may be resent with the same id; a
// drop; no answer within a minute). A frame unanswered for 15 s on a
// connection that stayed up is counted, and waited for further rather than
// resent: a busy venue answers late, and a resend would only add a step.
func (r *scaleRun) await(ctx context.Context, n *scaleNeg, s *scaleSide, id string, resumed chan struct{}, drops int) int {
	wait := time.NewTimer(15 * time.Second)
	defer wait.Stop()
	counted := false
	for {
		select {
		case a := <-s.acks:
			switch {
			case a.re != id:
				continue
			case a.seq > 0:
				n.acked[a.seq] = id
				return sendAcked
			case a.code != "unavailable" && a.code != "outcome_unknown":
				return sendRefused
			}
			sleepCtx(ctx, 200*time.Millisecond)
			return sendAgain
		case <-resumed:
			return sendAgain
		case <-wait.C:
			if counted || r.stopping.Load() {
				return sendAgain
			}
			s.mu.Lock()
			if s.drops == drops {
				r.unanswered.Add(1)
			}
			s.mu.Unlock()
			counted = true
			wait.Reset(45 * time.Second)
		case <-ctx.Done():
			return sendStop
		}
	}
}
