// Package webhooks delivers an agent's events to its webhook (PROTOCOL.md
// "Webhooks"), as Standard Webhooks (standardwebhooks.com) specifies them:
// one POST per event of the agent's event log (package events), signed
// with the webhook's whsec_ secret, at least once, retried with growing
// delays on the venue clock. Deliveries are queued in the Store, so they
// survive a node's restart, and each is claimed by one node at a time, so
// the nodes together deliver each event once per attempt. The package also
// owns the webhook's REST routes (Routes) and the target rules (Guard).
package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/venuehq/venue/events"
)

// SecretPrefix starts every webhook secret; base64 of the key follows.
const SecretPrefix = "whsec_"

// SecretBytes is the length of a webhook key (Standard Webhooks: 24 to 64).
const SecretBytes = 32

// Timeout is how long one attempt waits for an answer: longer is a failure.
const Timeout = 10 * time.Second

// Lease is how long a claimed delivery is held by the node attempting it;
// a node that dies mid-attempt leaves it due again after Lease.
const Lease = 2 * Timeout

// Retention is how long attempts and finished deliveries are kept.
const Retention = 72 * time.Hour

// Retries are the delays after each failed attempt (Standard Webhooks'
// schedule): the first retry 5 s after the first attempt, the last one
// 27 h 35 m 5 s after it; a delivery whose last retry fails is given up.
var Retries = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Webhook is an agent's webhook. Events empty: every type.
type Webhook struct {
	AgentID   string
	URL       string
	Events    []string
	Secret    []byte // the HMAC key (what follows whsec_, decoded)
	CreatedAt time.Time
	// DisabledAt is when a 410 Gone answer disabled it (zero: enabled).
	DisabledAt time.Time
}

// SecretString is the secret as shown: whsec_<base64 of the key>.
func (w Webhook) SecretString() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(w.Secret)
}

// Wants reports whether the webhook takes events of type typ.
func (w Webhook) Wants(typ string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, e := range w.Events {
		if e == typ {
			return true
		}
	}
	return false
}

// NewSecret returns a fresh random key.
func NewSecret() []byte {
	b := make([]byte, SecretBytes)
	_, _ = rand.Read(b)
	return b
}

// Sign is the webhook-signature header of one delivery: "v1," and the
// base64 of HMAC-SHA256(key, id + "." + timestamp + "." + body), timestamp
// in Unix seconds (Standard Webhooks "Signature scheme").
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Delivery is one event queued for an agent's webhook.
type Delivery struct {
	AgentID  string
	Event    events.Event
	Attempts int // made so far, this claim's included
	// URL and Secret are the webhook's when the delivery was claimed.
	URL    string
	Secret []byte
}

// Outcomes of an attempt.
const (
	ResultDelivered = "delivered" // 2xx
	ResultRetrying  = "retrying"  // failed, another attempt at Next
	ResultFailed    = "failed"    // failed, the last retry: given up
	ResultDisabled  = "disabled"  // 410 Gone: the webhook is disabled
)

// Attempt is one POST of a delivery and its answer.
type Attempt struct {
	AgentID   string
	EventID   string
	EventType string
	N         int // 1 for the first attempt
	At        time.Time
	URL       string
	Status    int    // the HTTP status; 0 for no answer
	Error     string // why there was no answer ("" with one)
	Result    string // ResultDelivered, ...
	Next      time.Time
}

// ErrNotFound is returned for an agent without a webhook.
var ErrNotFound = errors.New("webhooks: no webhook")

// Store keeps webhooks, the deliveries queued for them and their attempts.
// Safe for concurrent use by many nodes (on Postgres).
type Store interface {
	// Put sets agentID's webhook, replacing any (enabled again); only
	// events appended after it are delivered.
	Put(ctx context.Context, w Webhook) error
	// Get returns agentID's webhook or ErrNotFound.
	Get(ctx context.Context, agentID string) (Webhook, error)
	// Delete removes the webhook and its queued deliveries; ErrNotFound
	// when there is none.
	Delete(ctx context.Context, agentID string) error
	// SetSecret replaces the key; ErrNotFound when there is no webhook.
	SetSecret(ctx context.Context, agentID string, key []byte) error
	// Feed queues a delivery, due at now, for each event appended to the
	// log of an enabled webhook's agent since the last Feed (of any node)
	// and of a type it wants; it returns how many it queued.
	Feed(ctx context.Context, now time.Time) (int, error)
	// Claim takes up to limit deliveries due at now of enabled webhooks,
	// counts an attempt on each and holds them until now+lease: no other
	// Claim returns them before then.
	Claim(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Delivery, error)
	// Record stores an attempt of a claimed delivery (Attempts == a.N):
	// delivered and failed end it, retrying makes it due at a.Next,
	// disabled also disables the webhook and drops its other deliveries.
	// An attempt whose claim was lost (the delivery claimed again since)
	// changes nothing.
	Record(ctx context.Context, a Attempt) error
	// Attempts returns agentID's latest attempts, newest first, at most limit.
	Attempts(ctx context.Context, agentID string, limit int) ([]Attempt, error)
	// Purge drops attempts and ended deliveries made before t.
	Purge(ctx context.Context, before time.Time) error
}

// delay is the wait after failed attempt n (1-based); ok false after the last.
func delay(n int) (time.Duration, bool) {
	if n < 1 || n > len(Retries) {
		return 0, false
	}
	return Retries[n-1], true
}

// MaxTypes is the most event types a webhook lists.
const MaxTypes = 64

// validTypes checks an events list: at most MaxTypes names, each one of
// events.Types (PROTOCOL.md "Event types"), none twice. A name no event
// carries would match nothing: a typo ("negotiation_ende") would silently
// turn the webhook off for what it meant, so it is refused, naming it.
func validTypes(list []string) error {
	if len(list) > MaxTypes {
		return fmt.Errorf("at most %d event types", MaxTypes)
	}
	seen := map[string]bool{}
	for _, t := range list {
		if t == "" || len(t) > 64 || strings.Trim(t, "abcdefghijklmnopqrstuvwxyz_") != "" {
			return fmt.Errorf("event type %q is not 1-64 lowercase letters and underscores", truncate(t))
		}
		if !slices.Contains(events.Types, t) {
			return fmt.Errorf("%q is not an event type a webhook is sent; the types are %s", t, strings.Join(events.Types, ", "))
		}
		if seen[t] {
			return fmt.Errorf("event type %q listed twice", t)
		}
		seen[t] = true
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(s, "")
}
