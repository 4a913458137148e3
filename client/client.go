package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/receipt"
)

// maxBody bounds what the client reads of one REST answer.
const maxBody = 16 << 20

// Client talks to one venue. It is safe for concurrent use. The zero value
// is not usable: call [New].
type Client struct {
	base   *url.URL // http(s)://host[:port][/prefix], no trailing slash
	key    string   // api_key; "" for the calls that need none
	http   *http.Client
	dialer *websocket.Dialer

	hook      func(ConnEvent) // WithConnHook
	reconnect Backoff         // the Lobby's; WithLobbyBackoff
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the REST calls with hc (default: a client with a
// 30-second timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithDialer dials the sockets with d (default: a copy of
// websocket.DefaultDialer). Tests use its NetDialContext to reach the TCP
// connection underneath.
func WithDialer(d *websocket.Dialer) Option { return func(c *Client) { c.dialer = d } }

// WithAPIKey sets the agent's api_key, as [Client.WithKey] does.
func WithAPIKey(key string) Option { return func(c *Client) { c.key = key } }

// New returns a client for the venue at baseURL (http://host:port or
// https://host, as GET /v1/info reports it). Socket addresses are derived
// from it (ws:// or wss://).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://HOST[:PORT]", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	d := *websocket.DefaultDialer
	c := &Client{base: u, http: &http.Client{Timeout: 30 * time.Second}, dialer: &d}
	for _, o := range opts {
		o(c)
	}
	c.reconnect = c.reconnect.withDefaults()
	return c, nil
}

// WithKey returns a copy of c that authenticates as the agent whose api_key
// is apiKey (Authorization: Bearer, on REST and socket upgrades alike).
func (c *Client) WithKey(apiKey string) *Client {
	cp := *c
	cp.key = apiKey
	return &cp
}

// APIKey returns the api_key c authenticates with ("" for none).
func (c *Client) APIKey() string { return c.key }

// BaseURL returns the venue's base URL as given to New.
func (c *Client) BaseURL() string { return c.base.String() }

// Error is a refusal by the venue: a REST error answer
// ({"error":{"code","message"}} with its status) or an `error` frame on a
// socket (Status 0). Code is one of the venue's stable codes.
type Error struct {
	Status  int    // HTTP status; 0 for an error frame
	Code    string // invalid_argument, invalid_state, unauthorized, ...
	Message string // for people
}

// Error implements error.
func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("venue: %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("venue: %s: %s", e.Code, e.Message)
}

// IsCode reports whether err is (or wraps) a [*Error] with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Agent is a registered agent: keep the APIKey, it is shown once.
type Agent struct {
	ID     string `json:"agent_id"`
	APIKey string `json:"api_key"`
}

// Party is one side of a negotiation as the venue shows it.
type Party struct {
	AgentID    string `json:"agent_id"`
	Name       string `json:"name"`
	Reputation int    `json:"reputation"`
}

// Profile is an agent's public profile (GET /v1/agents/<id>/profile,
// get_profile, browse_bouncers). The last three fields are filled by
// [Client.Me] only.
type Profile struct {
	AgentID     string          `json:"agent_id"`
	Name        string          `json:"name"`
	Role        string          `json:"role"`
	Reputation  int             `json:"reputation"`
	Description string          `json:"description"`
	Categories  []string        `json:"categories"`
	Audience    json.RawMessage `json:"audience,omitempty"`
	// House marks the venue's own sparring partners; LastSeenAt is when a
	// lobby socket of the agent was last open ("" never). Whether it is
	// online now is said by browse_bouncers only (BouncerItem).
	House      bool   `json:"house,omitempty"`
	LastSeenAt string `json:"last_seen_at,omitempty"`

	PrincipalKey        *grants.JWK `json:"principal_key,omitempty"`
	PrincipalThumbprint string      `json:"principal_thumbprint,omitempty"`
	CreatedAt           string      `json:"created_at,omitempty"`
}

// ProfileUpdate is what an agent says about itself (PUT
// /v1/agents/me/profile). Audience, if set, must be a JSON object.
type ProfileUpdate struct {
	Description string          `json:"description"`
	Categories  []string        `json:"categories,omitempty"`
	Audience    json.RawMessage `json:"audience,omitempty"`
}

// Grant is an uploaded grant as the venue shows it (POST and GET /v1/grants).
type Grant struct {
	JTI           string          `json:"jti"`
	Issuer        string          `json:"iss"`
	IssuedAt      string          `json:"iat,omitempty"`
	ExpiresAt     string          `json:"exp"`
	Scope         json.RawMessage `json:"grant"`
	Status        string          `json:"status"` // active, revoked, expired, key_rotated, not_yet_valid
	UploadedAt    string          `json:"uploaded_at"`
	SpentUSD      string          `json:"spent_usd"`
	NegotiationID string          `json:"negotiation_id,omitempty"`
	RevokedAt     string          `json:"revoked_at,omitempty"`
}

// Info is GET /v1/info: what a client needs before it starts.
type Info struct {
	Name     string         `json:"name"`
	Version  string         `json:"version"`
	Audience string         `json:"aud"` // the grant audience
	JWKSURI  string         `json:"jwks_uri"`
	Backend  string         `json:"backend"`
	Limits   map[string]any `json:"limits"`
}

// Decision is the venue's answer to an escalation decision.
type Decision struct {
	EscalationID  string `json:"escalation_id"`
	Decision      string `json:"decision"`
	NegotiationID string `json:"negotiation_id"`
}

// Info returns GET /v1/info.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var out Info
	err := c.do(ctx, http.MethodGet, "/v1/info", nil, &out, false)
	return out, err
}

// Register registers an agent (POST /v1/register) with role "brand" or
// "bouncer" and, if principalKey is not nil, its principal's public key. The
// client's own key is not used and not changed: call WithKey with the
// returned APIKey.
func (c *Client) Register(ctx context.Context, name, role string, principalKey *grants.JWK) (Agent, error) {
	body := map[string]any{"name": name, "role": role}
	if principalKey != nil {
		body["principal_key"] = principalKey
	}
	var a Agent
	err := c.do(ctx, http.MethodPost, "/v1/register", body, &a, false)
	return a, err
}

// Me returns the agent's own record (GET /v1/agents/me), principal key
// included.
func (c *Client) Me(ctx context.Context) (Profile, error) {
	var p Profile
	err := c.do(ctx, http.MethodGet, "/v1/agents/me", nil, &p, true)
	return p, err
}

// SetPrincipalKey sets the agent's first principal public key (PUT
// /v1/agents/me/principal-key) and returns its RFC 7638 thumbprint, the `iss`
// of the grants it signs. Replacing a key needs RotatePrincipalKey.
func (c *Client) SetPrincipalKey(ctx context.Context, key grants.JWK) (string, error) {
	var out struct {
		Thumbprint string `json:"thumbprint"`
	}
	err := c.do(ctx, http.MethodPut, "/v1/agents/me/principal-key", key, &out, true)
	return out.Thumbprint, err
}

// RotatePrincipalKey replaces the agent's principal key with key; proof is a
// key-rotation token signed by the CURRENT principal key
// (grants.SignRotation, or `venue rotate-key`). Returns the new thumbprint.
func (c *Client) RotatePrincipalKey(ctx context.Context, key grants.JWK, proof string) (string, error) {
	var out struct {
		Thumbprint string `json:"thumbprint"`
	}
	body := map[string]any{"principal_key": key, "proof": proof}
	err := c.do(ctx, http.MethodPut, "/v1/agents/me/principal-key", body, &out, true)
	return out.Thumbprint, err
}

// UploadGrant uploads a grant token signed by the principal (POST
// /v1/grants). The newest valid grant applies.
func (c *Client) UploadGrant(ctx context.Context, token string) (Grant, error) {
	var g Grant
	err := c.do(ctx, http.MethodPost, "/v1/grants", map[string]string{"token": token}, &g, true)
	return g, err
}

// Grants lists all the agent's grants with their status now, in upload
// order (GET /v1/grants, following each page's `next`).
func (c *Client) Grants(ctx context.Context) ([]Grant, error) {
	var all []Grant
	after := ""
	for {
		var out struct {
			Items []Grant `json:"items"`
			Next  string  `json:"next"`
		}
		path := "/v1/grants"
		if after != "" {
			path += "?after=" + url.QueryEscape(after)
		}
		if err := c.do(ctx, http.MethodGet, path, nil, &out, true); err != nil {
			return all, err
		}
		all = append(all, out.Items...)
		if out.Next == "" || out.Next == after {
			return all, nil
		}
		after = out.Next
	}
}

// RevokeGrant revokes one of the agent's grants (DELETE /v1/grants/<jti>).
func (c *Client) RevokeGrant(ctx context.Context, jti string) error {
	return c.do(ctx, http.MethodDelete, "/v1/grants/"+url.PathEscape(jti), nil, nil, true)
}

// Profile returns an agent's public profile (no key needed).
func (c *Client) Profile(ctx context.Context, agentID string) (Profile, error) {
	var p Profile
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(agentID)+"/profile", nil, &p, false)
	return p, err
}

// SetProfile replaces the agent's public profile and returns it.
func (c *Client) SetProfile(ctx context.Context, p ProfileUpdate) (Profile, error) {
	var out Profile
	err := c.do(ctx, http.MethodPut, "/v1/agents/me/profile", p, &out, true)
	return out, err
}

// Transcript is GET /v1/negotiations/<id>/transcript. Entries are in the
// form receipt.VerifyTranscript takes.
type Transcript struct {
	NegotiationID string          `json:"negotiation_id"`
	Entries       []receipt.Entry `json:"entries"`
	LastSeq       int64           `json:"last_seq"`
	HeadHash      string          `json:"head_hash"`
	Raw           json.RawMessage `json:"-"`
}

// Transcript returns every transcript frame of a negotiation with its seq
// and chain hash (no key needed).
func (c *Client) Transcript(ctx context.Context, negotiationID string) (Transcript, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/v1/negotiations/"+url.PathEscape(negotiationID)+"/transcript", nil, &raw, false); err != nil {
		return Transcript{}, err
	}
	var t Transcript
	if err := json.Unmarshal(raw, &t); err != nil {
		return Transcript{}, fmt.Errorf("client: transcript of %s: %w", negotiationID, err)
	}
	t.Raw = raw
	return t, nil
}

// Receipt returns the venue-signed receipt (a JWT) of an ended negotiation.
func (c *Client) Receipt(ctx context.Context, negotiationID string) (string, error) {
	var out struct {
		Receipt string `json:"receipt"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/negotiations/"+url.PathEscape(negotiationID)+"/receipt", nil, &out, false)
	return out.Receipt, err
}

// JWKS returns the venue's public keys (GET /.well-known/jwks.json) as
// receipt.Verify takes them.
func (c *Client) JWKS(ctx context.Context) ([]byte, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/.well-known/jwks.json", nil, &raw, false); err != nil {
		return nil, err
	}
	return raw, nil
}

// Decide posts a principal's signed decision on an escalation (POST
// /v1/escalations/<id>/decision); no api_key is needed, the token is the
// authority.
func (c *Client) Decide(ctx context.Context, escalationID, token string) (Decision, error) {
	var d Decision
	err := c.do(ctx, http.MethodPost, "/v1/escalations/"+url.PathEscape(escalationID)+"/decision",
		map[string]string{"token": token}, &d, false)
	return d, err
}

// do makes one REST call: body (if not nil) as JSON, the answer decoded into
// out (if not nil). A non-2xx answer is a *Error.
func (c *Client) do(ctx context.Context, method, path string, body, out any, auth bool) error {
	raw, err := c.Raw(ctx, method, path, body, auth)
	if err != nil || out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("client: %s %s: answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// Raw makes one REST call (path under the base URL, query included) and
// returns the body of its 2xx answer as it came: body, if not nil, is sent
// as JSON; with auth the api_key is sent as a Bearer token. A non-2xx
// answer is a *Error. The typed methods use it; tools that print what the
// venue said (venue decide --post) and paths without a typed method (the
// receipt log's) call it directly.
//
// An authenticated POST, PUT or DELETE carries a fresh Idempotency-Key
// (PROTOCOL.md "Without a socket"; not the api_key rotation, whose answer
// the venue does not keep), so it is retried safely: after a failed
// connection or a 409 idempotency_in_flight it is sent again with the same
// key, up to maxAttempts times in all.
func (c *Client) Raw(ctx context.Context, method, path string, body any, auth bool) ([]byte, error) {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: encode body: %w", method, path, err)
		}
		payload = b
	}
	if auth && c.key == "" {
		return nil, fmt.Errorf("client: %s %s: an api_key is needed (Client.WithKey)", method, path)
	}
	var key string
	if auth && method != http.MethodGet && path != "/v1/agents/me/api-key" {
		key = newIdempotencyKey()
	}
	for attempt := 1; ; attempt++ {
		raw, status, err := c.send(ctx, method, path, payload, body != nil, auth, key)
		if key != "" && attempt < maxAttempts && retryable(raw, status, err) && pause(ctx, attempt) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if status < 200 || status > 299 {
			return nil, errorFromBody(status, raw)
		}
		return raw, nil
	}
}

// retryable: the connection failed, or the first request with the key is
// still being answered.
func retryable(raw []byte, status int, err error) bool {
	return err != nil || (status == http.StatusConflict && bytes.Contains(raw, []byte(`"idempotency_in_flight"`)))
}

// pause waits before attempt+1; false if ctx ended first.
func pause(ctx context.Context, attempt int) bool {
	t := time.NewTimer(time.Duration(attempt) * retryPause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// maxAttempts and retryPause bound the retries of a keyed request.
const (
	maxAttempts = 3
	retryPause  = 250 * time.Millisecond
)

// newIdempotencyKey is 128 random bits in hex.
func newIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// send makes one attempt of a call and returns the answer's body and status.
func (c *Client) send(ctx context.Context, method, path string, payload []byte, hasBody, auth bool, key string) ([]byte, int, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error // it repeats the method and URL
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, 0, fmt.Errorf("client: %s %s: read answer: %w", method, path, err)
	}
	return raw, resp.StatusCode, nil
}

// errorFromBody reads a REST error answer ({"error":{"code","message"}}).
func errorFromBody(status int, raw []byte) *Error {
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		return &Error{Status: status, Code: body.Error.Code, Message: body.Error.Message}
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Status: status, Code: fmt.Sprintf("http_%d", status), Message: msg}
}

// wsURL is the socket address of path with the query q.
func (c *Client) wsURL(path string, q url.Values) string {
	u := *c.base
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path += path
	u.RawQuery = q.Encode()
	return u.String()
}

// dial opens a socket; a refused handshake is a *Error with the status. The
// token never appears in an error.
func (c *Client) dial(ctx context.Context, path string, q url.Values) (*websocket.Conn, error) {
	// The key goes in Authorization: Bearer, never in the URL, so no
	// proxy's access log keeps it (PROTOCOL.md "Registration and auth").
	var h http.Header
	if tok := q.Get("token"); tok != "" {
		q = cloneValues(q)
		q.Del("token")
		h = http.Header{"Authorization": {"Bearer " + tok}}
	}
	ws, resp, err := c.dialer.DialContext(ctx, c.wsURL(path, q), h)
	if err != nil {
		if resp != nil {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				return nil, errorFromBody(resp.StatusCode, raw)
			}
		}
		return nil, fmt.Errorf("client: dial %s: %w", path, err)
	}
	return ws, nil
}

// VerifyReceipt fetches the receipt of an ended negotiation, the venue's
// JWKS and the transcript, and checks all three together: the receipt is
// signed by a key of the JWKS (receipt.Verify) and the transcript is exactly
// the one it commits to (receipt.VerifyTranscript). It returns the claims and
// the transcript that verified.
func (c *Client) VerifyReceipt(ctx context.Context, negotiationID string) (*receipt.Claims, Transcript, error) {
	tok, err := c.Receipt(ctx, negotiationID)
	if err != nil {
		return nil, Transcript{}, err
	}
	jwks, err := c.JWKS(ctx)
	if err != nil {
		return nil, Transcript{}, err
	}
	claims, err := receipt.Verify(tok, jwks)
	if err != nil {
		return nil, Transcript{}, fmt.Errorf("client: receipt of %s: %w", negotiationID, err)
	}
	if claims.NegotiationID != negotiationID {
		return nil, Transcript{}, fmt.Errorf("client: the receipt served for %s is of negotiation %s", negotiationID, claims.NegotiationID)
	}
	tr, err := c.Transcript(ctx, negotiationID)
	if err != nil {
		return nil, Transcript{}, err
	}
	if err := receipt.VerifyTranscript(claims, tr.Entries); err != nil {
		return nil, Transcript{}, fmt.Errorf("client: transcript of %s: %w", negotiationID, err)
	}
	return claims, tr, nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
