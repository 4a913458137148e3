package deliveries

import (
	"testing"
	"time"

	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/wire"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func code(e *wire.Error) string {
	if e == nil {
		return ""
	}
	return e.Code
}

func TestParseSubmission(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"url":"https://example.com/p"}`:                                     ``,
		`{"url":"https://example.com/p","note":"n","sha256":"` + hex64 + `"}`: ``,
		`{}`:                                        wire.CodeInvalidArgument,
		`{"url":"http://example.com/p"}`:            wire.CodeInvalidArgument,
		`{"url":"https:///p"}`:                      wire.CodeInvalidArgument,
		`{"url":"https://u:p@example.com/"}`:        wire.CodeInvalidArgument,
		`{"url":5}`:                                 wire.CodeInvalidArgument,
		`{"url":"https://e.com","sha256":"ABC"}`:    wire.CodeInvalidArgument,
		`{"url":"https://e.com","extra":1}`:         wire.CodeInvalidArgument,
		`{"url":"https://e.com","note":7}`:          wire.CodeInvalidArgument,
		`[1]`:                                       wire.CodeInvalidJSON,
		`{"url":"https://e.com","url":"https://x"}`: wire.CodeInvalidJSON,
	} {
		if _, werr := ParseSubmission([]byte(body)); code(werr) != want {
			t.Errorf("%s: %v, want %q", body, werr, want)
		}
	}
	for body, want := range map[string]string{`{"reason":"late"}`: "", `{"reason":""}`: wire.CodeInvalidArgument, `{}`: wire.CodeInvalidArgument, `{"why":"x"}`: wire.CodeInvalidArgument} {
		if _, werr := ParseReason([]byte(body)); code(werr) != want {
			t.Errorf("reason %s: %v, want %q", body, werr, want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestRules: who may do what in which state; a refused step changes nothing.
func TestRules(t *testing.T) {
	t.Parallel()
	deal := Deal{ID: "neg_1", Status: "deal", Brand: "b", Bouncer: "k"}
	arena := deal
	arena.Arena = true
	walked := deal
	walked.Status = "walked"
	sub := Submission{URL: "https://example.com/p"}
	submitted := func(d Deal) (Record, string) {
		var r Record
		dl, werr := Submit(&r, d, "k", sub, "dlv_1", t0, time.Hour)
		if werr != nil {
			t.Fatal(werr)
		}
		return r, dl.ID
	}

	// Submit: the bouncer of a deal only, one at a time.
	var r Record
	if _, werr := Submit(&r, deal, "b", sub, "x", t0, time.Hour); code(werr) != wire.CodeForbidden || r.Settlement != "" {
		t.Fatalf("brand delivers: %v %+v", werr, r)
	}
	if _, werr := Submit(&r, walked, "k", sub, "x", t0, time.Hour); code(werr) != wire.CodeInvalidState {
		t.Fatalf("deliver before a deal: %v", werr)
	}
	r, id := submitted(deal)
	if r.Settlement != settlement.StatusPending || r.Latest().DueAt != t0.Add(time.Hour) {
		t.Fatalf("submitted %+v", r)
	}
	if _, werr := Submit(&r, deal, "k", sub, "x", t0, time.Hour); code(werr) != wire.CodeInvalidState || len(r.Deliveries) != 1 {
		t.Fatalf("second while one awaits: %v", werr)
	}

	// Answer: the brand only; approve moves pending -> released; twice is refused.
	if _, werr := Answer(&r, deal, "k", id, true, "", t0); code(werr) != wire.CodeForbidden {
		t.Fatalf("bouncer approves: %v", werr)
	}
	if _, werr := Answer(&r, deal, "b", "dlv_none", true, "", t0); code(werr) != wire.CodeNotFound {
		t.Fatalf("unknown delivery: %v", werr)
	}
	if _, werr := Answer(&r, deal, "b", id, true, "", t0.Add(time.Minute)); werr != nil || r.Settlement != settlement.StatusReleased ||
		r.Latest().AnsweredBy != ByBrand || r.Latest().Status != StatusApproved {
		t.Fatalf("approve: %v %+v", werr, r)
	}
	before := r.Latest().AnsweredAt
	if _, werr := Answer(&r, deal, "b", id, true, "", t0.Add(2*time.Minute)); code(werr) != wire.CodeInvalidState || r.Latest().AnsweredAt != before {
		t.Fatalf("approve twice: %v", werr)
	}
	if _, werr := Answer(&r, deal, "b", id, false, "late", t0); code(werr) != wire.CodeInvalidState || r.Settlement != settlement.StatusReleased {
		t.Fatalf("dispute after approval: %v", werr)
	}
	if _, werr := Submit(&r, deal, "k", sub, "x", t0, time.Hour); code(werr) != wire.CodeInvalidState {
		t.Fatalf("deliver after approval: %v", werr)
	}
	// Report: released -> settled, once.
	if werr := Report(&r, "pending"); code(werr) != wire.CodeInvalidArgument {
		t.Fatalf("report pending: %v", werr)
	}
	if werr := Report(&r, settlement.StatusSettled); werr != nil || r.Settlement != settlement.StatusSettled {
		t.Fatalf("report: %v", werr)
	}
	if werr := Report(&r, settlement.StatusFailed); code(werr) != wire.CodeInvalidState || r.Settlement != settlement.StatusSettled {
		t.Fatalf("report twice: %v", werr)
	}

	// Dispute -> disputed; approving it after is refused.
	r, id = submitted(deal)
	if _, werr := Answer(&r, deal, "b", id, false, "not run", t0); werr != nil || r.Settlement != settlement.StatusDisputed || r.Latest().Reason != "not run" {
		t.Fatalf("dispute: %v %+v", werr, r)
	}
	if _, werr := Answer(&r, deal, "b", id, true, "", t0); code(werr) != wire.CodeInvalidState || r.Settlement != settlement.StatusDisputed {
		t.Fatalf("approve after dispute: %v", werr)
	}
	if AutoApprove(&r, t0.Add(100*time.Hour)) != nil {
		t.Fatal("a disputed delivery was approved by the venue")
	}

	// The venue approves at DueAt, not before.
	r, _ = submitted(deal)
	if AutoApprove(&r, t0.Add(time.Hour-time.Nanosecond)) != nil || r.Settlement != settlement.StatusPending {
		t.Fatal("approved early")
	}
	if dl := AutoApprove(&r, t0.Add(time.Hour)); dl == nil || dl.AnsweredBy != ByVenue || r.Settlement != settlement.StatusReleased {
		t.Fatalf("auto: %+v", r)
	}

	// Arena: the same path, nothing settles.
	r, id = submitted(arena)
	if _, werr := Answer(&r, arena, "b", id, true, "", t0); werr != nil || r.Settlement != "" || r.Latest().Status != StatusApproved {
		t.Fatalf("arena approve: %v %+v", werr, r)
	}
	if werr := Report(&r, settlement.StatusSettled); code(werr) != wire.CodeInvalidState {
		t.Fatalf("arena report: %v", werr)
	}
}
