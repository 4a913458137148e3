// Package deliveries is the deal after the deal (PROTOCOL.md "Deliveries"):
// the bouncer party of a deal submits its delivery, the brand party
// approves or disputes it, an approval releases the deal's settlement
// instruction to the Settler (package settlement), which reports it settled
// or failed, and a delivery the brand leaves unanswered for the approval
// window is approved by the venue. It also signs the evidence of a deal
// (one JWS over the receipt, the transcript, the grants that bound each
// binding frame, the deliveries and the settlement) and verifies it offline.
//
// The rules (Submit, Answer, AutoApprove, Report) are pure: they change a
// Record and take `now`. Service runs them under the Store's lock (memory or
// Postgres, package deliverypg), tells the Settler and appends the events;
// NewAPI carries them over HTTP.
package deliveries

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/wire"
)

// Statuses of a delivery.
const (
	StatusSubmitted = "submitted" // awaits the brand's answer
	StatusApproved  = "approved"  // by the brand, or by the venue after the window
	StatusDisputed  = "disputed"  // by the brand, with a reason
)

// Who answered a delivery (Delivery.AnsweredBy).
const (
	ByBrand = "brand"
	ByVenue = "venue" // the approval window passed unanswered
)

// DefaultApprovalWindow is how long a delivery may stay unanswered before
// the venue approves it (`venue serve --delivery-approval-window`).
const DefaultApprovalWindow = 14 * 24 * time.Hour

// Bounds of a delivery (PROTOCOL.md "Deliveries").
const (
	MaxURLChars    = 2048
	MaxNoteChars   = negotiation.MaxContentLen
	MaxReasonChars = negotiation.MaxContentLen
	// MaxDeliveries bounds the deliveries of one deal.
	MaxDeliveries = 20
)

// Delivery is one delivery of a deal. Times are UTC.
type Delivery struct {
	ID            string // "dlv_" + 24 hex
	NegotiationID string
	URL           string // https
	Note          string // "" none
	SHA256        string // 64 lowercase hex of the delivered content; "" none
	Status        string
	SubmittedAt   time.Time
	DueAt         time.Time // when the venue approves it unanswered
	AnsweredAt    time.Time // zero while submitted
	AnsweredBy    string    // ByBrand or ByVenue; "" while submitted
	Reason        string    // a dispute's
}

// View is the delivery as the wire shows it (PROTOCOL.md "Deliveries").
func (d *Delivery) View() map[string]any {
	v := map[string]any{
		"delivery_id": d.ID, "negotiation_id": d.NegotiationID, "url": d.URL, "status": d.Status,
		"submitted_at": wire.Time(d.SubmittedAt), "approve_by": wire.Time(d.DueAt),
	}
	if d.Note != "" {
		v["note"] = d.Note
	}
	if d.SHA256 != "" {
		v["sha256"] = d.SHA256
	}
	if !d.AnsweredAt.IsZero() {
		v["answered_at"], v["answered_by"] = wire.Time(d.AnsweredAt), d.AnsweredBy
	}
	if d.Reason != "" {
		v["reason"] = d.Reason
	}
	return v
}

// Record is what the venue keeps of one deal after the deal: its
// settlement instruction's status ("" for a deal without one: arena) and
// its deliveries, oldest first.
type Record struct {
	NegotiationID string
	Settlement    string
	Deliveries    []Delivery
}

// Latest is the newest delivery, nil when none.
func (r *Record) Latest() *Delivery {
	if len(r.Deliveries) == 0 {
		return nil
	}
	return &r.Deliveries[len(r.Deliveries)-1]
}

// find is the delivery id of the record, nil when none.
func (r *Record) find(id string) *Delivery {
	for i := range r.Deliveries {
		if r.Deliveries[i].ID == id {
			return &r.Deliveries[i]
		}
	}
	return nil
}

// Deal is what the rules read of the negotiation (an ended negotiation
// never changes).
type Deal struct {
	ID      string
	Status  string // the negotiation's
	Arena   bool
	Brand   string // agent ids
	Bouncer string
}

// DealOf reads a negotiation's state.
func DealOf(st *negotiation.State) Deal {
	return Deal{ID: st.ID, Status: st.Status, Arena: st.Arena, Brand: st.Brand.AgentID, Bouncer: st.Bouncer.AgentID}
}

// Settles reports whether the deal has a settlement instruction: a live
// (not arena) deal.
func (d Deal) Settles() bool { return d.Status == negotiation.StatusDeal && !d.Arena }

// init fills a fresh record: a live deal's instruction starts pending.
func (r *Record) init(d Deal) {
	r.NegotiationID = d.ID
	if r.Settlement == "" && d.Settles() {
		r.Settlement = settlement.StatusPending
	}
}

// Submission is the body of POST /v1/negotiations/{id}/deliveries.
type Submission struct {
	URL    string
	Note   string
	SHA256 string
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseSubmission reads {"url","note"?,"sha256"?} (no other key). Errors:
// invalid_json, invalid_argument naming the field (url: an absolute https
// URL with a host, at most MaxURLChars; note: at most MaxNoteChars; sha256:
// 64 lowercase hex).
func ParseSubmission(body []byte) (Submission, *wire.Error) {
	m, werr := wire.DecodeBody(body)
	if werr != nil {
		return Submission{}, werr
	}
	f := wire.NewFields(m)
	if werr := f.Only("url", "note", "sha256"); werr != nil {
		return Submission{}, werr
	}
	s := Submission{URL: f.NonEmpty("url"), Note: f.String("note", false), SHA256: f.String("sha256", false)}
	if f.Err != nil {
		return Submission{}, f.Err
	}
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || utf8.RuneCountInString(s.URL) > MaxURLChars {
		return Submission{}, wire.Errorf(wire.CodeInvalidArgument, "url must be an absolute https URL of at most %d characters", MaxURLChars)
	}
	if utf8.RuneCountInString(s.Note) > MaxNoteChars {
		return Submission{}, wire.Errorf(wire.CodeInvalidArgument, "note is at most %d characters", MaxNoteChars)
	}
	if s.SHA256 != "" && !sha256RE.MatchString(s.SHA256) {
		return Submission{}, wire.Errorf(wire.CodeInvalidArgument, "sha256 must be 64 lowercase hex characters")
	}
	return s, nil
}

// ParseReason reads a dispute's body {"reason"}: 1 to MaxReasonChars
// characters. Errors: invalid_json, invalid_argument.
func ParseReason(body []byte) (string, *wire.Error) {
	m, werr := wire.DecodeBody(body)
	if werr != nil {
		return "", werr
	}
	f := wire.NewFields(m)
	if werr := f.Only("reason"); werr != nil {
		return "", werr
	}
	reason := f.String("reason", false)
	if f.Err != nil || reason == "" || utf8.RuneCountInString(reason) > MaxReasonChars {
		return "", wire.Errorf(wire.CodeInvalidArgument, "reason is required: 1 to %d characters", MaxReasonChars)
	}
	return reason, nil
}

// NewID returns a fresh delivery id, "dlv_" + 24 hex.
func NewID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "dlv_" + hex.EncodeToString(b)
}

// Submit adds the bouncer's delivery to the deal (PROTOCOL.md
// "Deliveries"), due for the venue's approval window after now. Errors:
// forbidden (agentID is not the bouncer party); invalid_state (the
// negotiation did not end in a deal; a delivery awaits the brand's answer;
// the delivery was approved or disputed; MaxDeliveries reached). r is
// unchanged on an error.
func Submit(r *Record, d Deal, agentID string, s Submission, id string, now time.Time, window time.Duration) (*Delivery, *wire.Error) {
	if agentID != d.Bouncer {
		return nil, wire.Errorf(wire.CodeForbidden, "only the bouncer party of %s submits deliveries", d.ID)
	}
	if d.Status != negotiation.StatusDeal {
		return nil, wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: deliveries follow a deal", d.ID, d.Status)
	}
	r.init(d)
	for i := range r.Deliveries {
		switch r.Deliveries[i].Status {
		case StatusSubmitted:
			return nil, wire.Errorf(wire.CodeInvalidState, "delivery %s awaits the brand's answer", r.Deliveries[i].ID)
		case StatusApproved:
			return nil, wire.Errorf(wire.CodeInvalidState, "delivery %s was approved: the deal is delivered", r.Deliveries[i].ID)
		case StatusDisputed:
			return nil, wire.Errorf(wire.CodeInvalidState, "delivery %s is disputed: the dispute is settled outside the venue", r.Deliveries[i].ID)
		}
	}
	if len(r.Deliveries) >= MaxDeliveries {
		return nil, wire.Errorf(wire.CodeInvalidState, "a deal has at most %d deliveries", MaxDeliveries)
	}
	now = now.UTC()
	r.Deliveries = append(r.Deliveries, Delivery{
		ID: id, NegotiationID: d.ID, URL: s.URL, Note: s.Note, SHA256: s.SHA256,
		Status: StatusSubmitted, SubmittedAt: now, DueAt: now.Add(window),
	})
	return r.Latest(), nil
}

// Answer is the brand's approval (approve) or dispute (with reason) of
// delivery id. An approval moves a pending settlement to released, a
// dispute to disputed; an arena deal has none to move. Errors: forbidden
// (agentID is not the brand party); invalid_state (the negotiation did not
// end in a deal); not_found (no such delivery of this deal); invalid_state
// (the delivery was answered already). r is unchanged on an error.
func Answer(r *Record, d Deal, agentID, id string, approve bool, reason string, now time.Time) (*Delivery, *wire.Error) {
	if agentID != d.Brand {
		return nil, wire.Errorf(wire.CodeForbidden, "only the brand party of %s approves or disputes deliveries", d.ID)
	}
	if d.Status != negotiation.StatusDeal {
		return nil, wire.Errorf(wire.CodeInvalidState, "negotiation %s is %s: deliveries follow a deal", d.ID, d.Status)
	}
	r.init(d)
	dl := r.find(id)
	if dl == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "no delivery %s of %s", id, d.ID)
	}
	if dl.Status != StatusSubmitted {
		return nil, wire.Errorf(wire.CodeInvalidState, "delivery %s was %s already", id, dl.Status)
	}
	if approve {
		approveOne(r, dl, ByBrand, now)
		return dl, nil
	}
	dl.Status, dl.AnsweredAt, dl.AnsweredBy, dl.Reason = StatusDisputed, now.UTC(), ByBrand, reason
	if r.Settlement == settlement.StatusPending {
		r.Settlement = settlement.StatusDisputed
	}
	return dl, nil
}

func approveOne(r *Record, dl *Delivery, by string, now time.Time) {
	dl.Status, dl.AnsweredAt, dl.AnsweredBy = StatusApproved, now.UTC(), by
	if r.Settlement == settlement.StatusPending {
		r.Settlement = settlement.StatusReleased
	}
}

// AutoApprove approves, as the venue, the delivery left unanswered past
// its DueAt (PROTOCOL.md "Deliveries"); it returns it, or nil when none is
// due at now (nothing changed).
func AutoApprove(r *Record, now time.Time) *Delivery {
	for i := range r.Deliveries {
		dl := &r.Deliveries[i]
		if dl.Status == StatusSubmitted && !now.Before(dl.DueAt) {
			approveOne(r, dl, ByVenue, now)
			return dl
		}
	}
	return nil
}

// Report records the Settler's outcome of a released settlement: status
// settled or failed. Errors: invalid_argument (another status);
// invalid_state (the settlement is not released: reported already, or
// never released).
func Report(r *Record, status string) *wire.Error {
	if status != settlement.StatusSettled && status != settlement.StatusFailed {
		return wire.Errorf(wire.CodeInvalidArgument, "a settler reports settled or failed, not %q", status)
	}
	if r.Settlement != settlement.StatusReleased {
		return wire.Errorf(wire.CodeInvalidState, "settlement of %s is %q, not released", r.NegotiationID, r.Settlement)
	}
	r.Settlement = status
	return nil
}
