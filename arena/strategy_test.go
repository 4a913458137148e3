package arena

import (
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func TestLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role        string
		anchor      int64
		open, limit int64
	}{
		{negotiation.RoleBouncer, 320000, 480000, 256000},
		{negotiation.RoleBrand, 320000, 192000, 384000},
		{negotiation.RoleBouncer, 0, 150000, 80000}, // default anchor $1,000
		{negotiation.RoleBrand, 1, 0, 0},            // rounded to whole dollars
		{negotiation.RoleBouncer, 12345, 18500, 9900},
	}
	for _, tt := range tests {
		open, limit := Limits(tt.role, tt.anchor)
		if open != tt.open || limit != tt.limit {
			t.Errorf("Limits(%s, %d) = %d, %d; want %d, %d", tt.role, tt.anchor, open, limit, tt.open, tt.limit)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	dl := t0.Add(negotiation.Deadline)
	theirs := func(c int64) *StandingView { return &StandingView{Theirs: true, AmountCents: c} }
	tests := []struct {
		name string
		p    Position
		want Move // Content not compared
	}{
		{"off turn waits", Position{Role: "bouncer", AnchorCents: 100000, Standing: theirs(200000), Now: t0, Deadline: dl},
			Move{Kind: MoveWait}},
		{"bouncer opens on an empty table", Position{Role: "bouncer", AnchorCents: 100000, OnTurn: true, Now: t0, Deadline: dl},
			Move{Kind: MovePropose, AmountCents: 150000}},
		{"brand opens on an empty table", Position{Role: "brand", AnchorCents: 100000, OnTurn: true, Now: t0, Deadline: dl},
			Move{Kind: MovePropose, AmountCents: 60000}},
		{"re-proposes its last after a reject", Position{Role: "brand", AnchorCents: 100000, LastCents: 70000, OnTurn: true, Now: t0, Deadline: dl},
			Move{Kind: MovePropose, AmountCents: 70000}},
		{"own proposal stands: talks, never misses the turn", Position{Role: "brand", AnchorCents: 100000, LastCents: 70000, OnTurn: true,
			Standing: &StandingView{AmountCents: 70000}, Now: t0, Deadline: dl}, Move{Kind: MoveMessage}},
		{"accepts a better offer at once", Position{Role: "bouncer", AnchorCents: 100000, OnTurn: true, Standing: theirs(160000), Now: t0, Deadline: dl},
			Move{Kind: MoveAccept}},
		{"accepts inside the band", Position{Role: "bouncer", AnchorCents: 100000, LastCents: 120000, OnTurn: true, Standing: theirs(114000), Now: t0, Deadline: dl},
			Move{Kind: MoveAccept}},
		{"band edge: exactly 5%", Position{Role: "brand", AnchorCents: 100000, LastCents: 100000, OnTurn: true, Standing: theirs(105000), Now: t0, Deadline: dl},
			Move{Kind: MoveAccept}},
		{"just outside the band: counters to the midpoint", Position{Role: "brand", AnchorCents: 100000, LastCents: 100000, OnTurn: true, Standing: theirs(105100), Now: t0, Deadline: dl},
			Move{Kind: MoveCounter, AmountCents: 102600}},
		{"inside the band but past its limit: counters at the limit", Position{Role: "bouncer", AnchorCents: 100000, LastCents: 80000, OnTurn: true, Standing: theirs(78000), Now: t0, Deadline: dl},
			Move{Kind: MoveCounter, AmountCents: 80000}},
		{"first answer to their proposal is its opening", Position{Role: "bouncer", AnchorCents: 100000, OnTurn: true, Standing: theirs(50000), Now: t0, Deadline: dl},
			Move{Kind: MoveCounter, AmountCents: 150000}},
		{"midpoint, rounded to dollars", Position{Role: "bouncer", AnchorCents: 100000, LastCents: 150000, OnTurn: true, Standing: theirs(60001), Now: t0, Deadline: dl},
			Move{Kind: MoveCounter, AmountCents: 105000}},
		{"never below its limit", Position{Role: "bouncer", AnchorCents: 100000, LastCents: 85000, OnTurn: true, Standing: theirs(10000), Now: t0, Deadline: dl},
			Move{Kind: MoveCounter, AmountCents: 80000}},
		{"walks after too many counters", Position{Role: "bouncer", AnchorCents: 100000, LastCents: 80000, Counters: MaxCounters, OnTurn: true, Standing: theirs(10000), Now: t0, Deadline: dl},
			Move{Kind: MoveWalk}},
		{"walks near the deadline", Position{Role: "brand", AnchorCents: 100000, OnTurn: true, Standing: theirs(60000), Now: dl.Add(-WalkMargin + time.Millisecond), Deadline: dl},
			Move{Kind: MoveWalk}},
		{"an expired proposal is not accepted", Position{Role: "bouncer", AnchorCents: 100000, LastCents: 150000, OnTurn: true,
			Standing: &StandingView{Theirs: true, AmountCents: 200000, ExpiresAt: t0}, Now: t0, Deadline: dl}, Move{Kind: MovePropose, AmountCents: 150000}},
	}
	for _, tt := range tests {
		got := Decide(tt.p)
		if got.Kind != tt.want.Kind || got.AmountCents != tt.want.AmountCents {
			t.Errorf("%s: Decide = %+v, want %+v", tt.name, got, tt.want)
		}
		if got.Kind != MoveWait && got.Content == "" {
			t.Errorf("%s: a move without content", tt.name)
		}
	}
}

// sideState is one simulated player.
type sideState struct {
	role     string
	anchor   int64
	last     int64
	counters int
}

// play runs two Decide players against each other (brand first, one second
// per frame) and returns the ending, the amount and the frames sent. It
// fails the test if a player waits on its turn or acts after the deadline.
func play(t *testing.T, brandAnchor, bouncerAnchor int64) (status string, amount int64, frames int) {
	t.Helper()
	now, dl := t0, t0.Add(negotiation.Deadline)
	players := map[string]*sideState{
		"brand":   {role: negotiation.RoleBrand, anchor: brandAnchor},
		"bouncer": {role: negotiation.RoleBouncer, anchor: bouncerAnchor},
	}
	var standing *struct {
		by     string
		amount int64
	}
	turn := "brand"
	for frames = 0; frames < 200; frames++ {
		p := players[turn]
		pos := Position{Role: p.role, AnchorCents: p.anchor, LastCents: p.last, Counters: p.counters, OnTurn: true, Now: now, Deadline: dl}
		if standing != nil {
			pos.Standing = &StandingView{Theirs: standing.by != turn, AmountCents: standing.amount}
		}
		off := Position{Role: players[other(turn)].role, AnchorCents: 1, Now: now, Deadline: dl}
		if m := Decide(off); m.Kind != MoveWait {
			t.Fatalf("the side off turn moved: %+v", m)
		}
		m := Decide(pos)
		if !now.Before(dl) {
			t.Fatalf("acted at or after the deadline")
		}
		switch m.Kind {
		case MoveWait:
			t.Fatalf("%s waited on its turn at %+v", turn, pos)
		case MoveAccept:
			return "deal", standing.amount, frames + 1
		case MoveWalk:
			return "walked", 0, frames + 1
		case MovePropose, MoveCounter:
			standing = &struct {
				by     string
				amount int64
			}{turn, m.AmountCents}
			p.last = m.AmountCents
			if m.Kind == MoveCounter {
				p.counters++
			}
		}
		turn = other(turn)
		now = now.Add(time.Second)
	}
	t.Fatalf("no ending after %d frames", frames)
	return
}

func other(s string) string {
	if s == "brand" {
		return "bouncer"
	}
	return "brand"
}

// TestStrategyAgainstItself: two house players reach a deal between their
// limits when those overlap, and walk when they do not; the turn is never
// missed and no move comes after the deadline.
func TestStrategyAgainstItself(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                       string
		brandAnchor, bouncerAnchor int64
		status                     string
	}{
		{"same anchor", 320000, 320000, "deal"},
		{"brand expects less", 200000, 320000, "walked"}, // brand's limit $2,400 < bouncer's $2,560
		{"far apart", 100000, 500000, "walked"},
		{"brand expects more", 500000, 300000, "deal"},
		{"default anchors", 0, 0, "deal"},
	}
	for _, tt := range tests {
		status, amount, frames := play(t, tt.brandAnchor, tt.bouncerAnchor)
		_, brandLimit := Limits(negotiation.RoleBrand, tt.brandAnchor)
		_, bouncerLimit := Limits(negotiation.RoleBouncer, tt.bouncerAnchor)
		overlap := brandLimit >= bouncerLimit
		if overlap != (status == "deal") || status != tt.status {
			t.Errorf("%s: %s after %d frames, limits brand %d bouncer %d", tt.name, status, frames, brandLimit, bouncerLimit)
		}
		if status == "deal" && (amount > brandLimit || amount < bouncerLimit) {
			t.Errorf("%s: deal at %d outside the limits [%d, %d]", tt.name, amount, bouncerLimit, brandLimit)
		}
		t.Logf("%s: %s at %d in %d frames", tt.name, status, amount, frames)
	}
}

// FuzzDecide: whatever it sees, on its turn the strategy sends a frame
// (never waits, so never misses a turn), off its turn it waits, and an
// amount it offers never passes its own limit in the direction that hurts it.
func FuzzDecide(f *testing.F) {
	f.Add(true, int64(320000), int64(0), 0, true, true, int64(100000), int64(0), int64(60))
	f.Add(false, int64(1), int64(5), 9, true, false, int64(-4), int64(3), int64(479))
	f.Fuzz(func(t *testing.T, bouncer bool, anchor, last int64, counters int, onTurn, theirs bool, amount, expiresIn, elapsed int64) {
		if anchor < 0 || anchor > 1_000_000_000 || last < 0 || last > 1_000_000_000 || amount < 0 || amount > 1_000_000_000 || counters < 0 {
			return
		}
		role := negotiation.RoleBrand
		if bouncer {
			role = negotiation.RoleBouncer
		}
		now := t0.Add(time.Duration(elapsed%600) * time.Second)
		p := Position{Role: role, AnchorCents: anchor, LastCents: last, Counters: counters, OnTurn: onTurn, Now: now, Deadline: t0.Add(negotiation.Deadline)}
		if amount > 0 {
			p.Standing = &StandingView{Theirs: theirs, AmountCents: amount}
			if expiresIn != 0 {
				p.Standing.ExpiresAt = now.Add(time.Duration(expiresIn%600) * time.Second)
			}
		}
		m := Decide(p)
		if !onTurn {
			if m.Kind != MoveWait {
				t.Fatalf("moved off turn: %+v", m)
			}
			return
		}
		if m.Kind == MoveWait || m.Content == "" {
			t.Fatalf("waited or said nothing on its turn: %+v at %+v", m, p)
		}
		_, limit := Limits(role, anchor)
		if m.Kind == MoveCounter && (bouncer && m.AmountCents < limit && m.AmountCents < amount || !bouncer && m.AmountCents > limit && m.AmountCents > amount) {
			t.Fatalf("countered past its limit %d: %+v at %+v", limit, m, p)
		}
		if m.Kind == MoveAccept && (p.Standing == nil || !p.Standing.Theirs) {
			t.Fatalf("accepted without their proposal standing: %+v", p)
		}
	})
}

// TestLimitsStayProposable: a huge anchor (the brand offers the maximum)
// never makes the house open above what a proposal may name.
func TestLimitsStayProposable(t *testing.T) {
	for _, anchor := range []int64{grants.MaxAmountCents, grants.MaxAmountCents / 2, 1 << 62} {
		for _, role := range []string{negotiation.RoleBouncer, negotiation.RoleBrand} {
			open, limit := Limits(role, anchor)
			if open < 0 || open > grants.MaxAmountCents || limit < 0 || limit > grants.MaxAmountCents {
				t.Errorf("%s at anchor %d: open %d, limit %d", role, anchor, open, limit)
			}
		}
	}
}
