package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/negotiation"
)

// Check is one invariant's result.
type Check struct {
	Checked    int      `json:"checked"`
	Violations int      `json:"violations"`
	Examples   []string `json:"examples,omitempty"`
}

func (c *Check) fail(format string, a ...any) {
	c.Violations++
	if len(c.Examples) < 5 {
		c.Examples = append(c.Examples, fmt.Sprintf(format, a...))
	}
}

// MaxLateness is the stated bound on how late a clock may fire during the
// run (faults included: a node stopped 10 s, Postgres restarted).
const MaxLateness = 30 * time.Second

// BudgetCents is each brand's grant budget in the workload ($5,000: one
// $3,000 deal, never two).
const BudgetCents = 500_000

type entry struct {
	seq       int64
	at        time.Time
	typ, from string
	frame     map[string]any
	frameType string
}

// check reads the run's own Postgres directly (no proxy) and checks every
// invariant of RELIABILITY.md "What is checked".
func check(ctx context.Context, pg *Postgres, verifyURL string, l *ledger) (map[string]*Check, error) {
	conn, err := pgx.Connect(ctx, URL(pg.Addr()))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	checks := map[string]*Check{}
	c := func(name string) *Check {
		if checks[name] == nil {
			checks[name] = &Check{}
		}
		return checks[name]
	}
	for _, name := range []string{"acked_frames_exactly_once", "seqs_gapless", "chains_and_receipts_verify", "one_ending",
		"settlement_per_live_deal", "budget_not_overspent", "clocks_fired_on_time_once", "entries_inside_window",
		"no_false_nothing_changed", "observers_no_gap_no_duplicate"} {
		c(name)
	}
	l.mu.Lock()
	negs := make([]string, 0, len(l.negotiations))
	for n := range l.negotiations {
		negs = append(negs, n)
	}
	l.mu.Unlock()
	verifier, err := client.New(verifyURL)
	if err != nil {
		return nil, err
	}
	dealsByBrand := map[string]int64{}
	for _, neg := range negs {
		var raw []byte
		var lastSeq int64
		if err := conn.QueryRow(ctx, `SELECT state, last_seq FROM negotiations WHERE id = $1`, neg).Scan(&raw, &lastSeq); err != nil {
			c("seqs_gapless").fail("%s: %v", neg, err)
			continue
		}
		var st negotiation.State
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, err
		}
		rows, err := conn.Query(ctx, `SELECT seq, created_at, frame_type, from_agent, frame FROM transcript WHERE negotiation_id = $1 ORDER BY seq`, neg)
		if err != nil {
			return nil, err
		}
		var es []entry
		for rows.Next() {
			var e entry
			var frame string
			if err := rows.Scan(&e.seq, &e.at, &e.typ, &e.from, &frame); err != nil {
				return nil, err
			}
			_ = json.Unmarshal([]byte(frame), &e.frame)
			e.frameType, _ = e.frame["frame_type"].(string)
			es = append(es, e)
		}
		rows.Close()
		// Seqs gapless, 1..last_seq.
		g := c("seqs_gapless")
		g.Checked++
		for i, e := range es {
			if e.seq != int64(i+1) {
				g.fail("%s: entry %d has seq %d", neg, i+1, e.seq)
				break
			}
		}
		if int64(len(es)) != lastSeq {
			g.fail("%s: %d entries, last_seq %d", neg, len(es), lastSeq)
		}
		bySeq := map[int64]entry{}
		for _, e := range es {
			bySeq[e.seq] = e
		}
		// Every acknowledged frame is in the transcript, once, as acked.
		l.mu.Lock()
		acks := l.acked[neg]
		l.mu.Unlock()
		for seq, a := range acks {
			ac := c("acked_frames_exactly_once")
			ac.Checked++
			e, ok := bySeq[seq]
			if !ok || e.from != a.sender || e.frameType != a.frameType {
				ac.fail("%s seq %d: acked %s by %s, stored %q by %q", neg, seq, a.frameType, a.sender, e.frameType, e.from)
			}
		}
		// One ending; a settlement exactly for each live deal.
		endings := 0
		for _, e := range es {
			if e.typ == negotiation.TypeNegotiationEnded {
				endings++
			}
		}
		oe := c("one_ending")
		oe.Checked++
		if ended := st.Ended(); (ended && endings != 1) || (!ended && endings != 0) {
			oe.fail("%s: status %s with %d negotiation_ended", neg, st.Status, endings)
		}
		var settlements int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM settlements WHERE negotiation_id = $1`, neg).Scan(&settlements); err != nil {
			return nil, err
		}
		sp := c("settlement_per_live_deal")
		sp.Checked++
		want := 0
		if st.Status == negotiation.StatusDeal && !st.Arena {
			want = 1
			dealsByBrand[st.Brand.AgentID] += st.DealAmountCents
		}
		if settlements != want {
			sp.fail("%s: status %s, %d settlements", neg, st.Status, settlements)
		}
		// Chains and receipts of ended negotiations verify.
		if st.Ended() {
			cv := c("chains_and_receipts_verify")
			cv.Checked++
			if _, _, err := verifier.VerifyReceipt(ctx, neg); err != nil {
				cv.fail("%s: %v", neg, err)
			}
		}
		// Clocks: each proposal expired at most once, never before its
		// expires_at, late by at most MaxLateness; a turn_missed never
		// before the turn deadline.
		expiresAt := map[string]time.Time{}
		expired := map[string]int{}
		var turnDeadline time.Time
		for _, e := range es {
			if pid, ok := e.frame["proposal_id"].(string); ok && (e.frameType == "propose_terms" || e.frameType == "counter_terms") {
				if s, ok := e.frame["expires_at"].(string); ok {
					expiresAt[pid], _ = time.Parse(time.RFC3339Nano, s)
				}
			}
			cl := c("clocks_fired_on_time_once")
			if e.typ == "proposal_expired" {
				cl.Checked++
				pid, _ := e.frame["proposal_id"].(string)
				expired[pid]++
				due := expiresAt[pid]
				switch {
				case expired[pid] > 1:
					cl.fail("%s: proposal %s expired %d times", neg, pid, expired[pid])
				case due.IsZero():
					cl.fail("%s: proposal %s expired without an expiry", neg, pid)
				case e.at.Before(due):
					cl.fail("%s: proposal %s expired %v early", neg, pid, due.Sub(e.at))
				case e.at.Sub(due) > MaxLateness:
					cl.fail("%s: proposal %s expired %v late", neg, pid, e.at.Sub(due))
				}
			}
			if e.typ == negotiation.TypeNegotiationEnded && e.frame["status"] == negotiation.StatusTurnMissed {
				cl.Checked++
				if e.at.Before(turnDeadline) {
					cl.fail("%s: turn missed %v early", neg, turnDeadline.Sub(e.at))
				}
			}
			if s, ok := e.frame["turn_deadline_at"].(string); ok {
				turnDeadline, _ = time.Parse(time.RFC3339Nano, s)
			}
			// Entries inside the window, in time order.
			iw := c("entries_inside_window")
			iw.Checked++
			if e.at.Before(st.StartedAt) || (!st.DeadlineAt.IsZero() && e.at.After(st.DeadlineAt.Add(MaxLateness))) {
				iw.fail("%s seq %d at %v outside %v..%v", neg, e.seq, e.at, st.StartedAt, st.DeadlineAt)
			}
			if p, ok := bySeq[e.seq-1]; ok && e.at.Before(p.at) {
				iw.fail("%s seq %d at %v before seq %d at %v", neg, e.seq, e.at, p.seq, p.at)
			}
		}
		// No sender told "nothing changed" about a frame that landed.
		l.mu.Lock()
		for _, r := range l.nothingChanged {
			if r.neg != neg {
				continue
			}
			nc := c("no_false_nothing_changed")
			nc.Checked++
			if _, landed := st.Acks[r.sender+"\n"+r.id]; landed {
				nc.fail("%s: frame %s of %s answered nothing changed, landed", neg, r.id, r.sender)
			}
		}
		l.mu.Unlock()
	}
	for brand, cents := range dealsByBrand {
		b := c("budget_not_overspent")
		b.Checked++
		if cents > BudgetCents {
			b.fail("brand %s: deals of %d cents over a budget of %d", brand, cents, BudgetCents)
		}
	}
	ob := c("observers_no_gap_no_duplicate")
	ob.Checked = int(l.obsFrames.Load())
	for range l.obsGaps.Load() {
		ob.fail("an observer saw a gap in seqs")
	}
	for range l.obsDups.Load() {
		ob.fail("an observer saw a seq twice")
	}
	return checks, nil
}
