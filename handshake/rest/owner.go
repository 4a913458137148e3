package rest

import (
	"net/http"
	"strings"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/internal/httpapi"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/web"
	"github.com/venuehq/venue/wire"
)

// CookieName is the owner portal's cookie: the browser's sign-in secret.
const CookieName = "venue_owner"

func (h *Handler) ownerRoutes() {
	m := h.mux
	m.HandleFunc("GET /owner", h.page)
	m.HandleFunc("GET /owner/assets/{file}", h.asset)
	m.HandleFunc("GET /owner/api/bridge", h.bridge)
	m.HandleFunc("POST /owner/api/start", h.owner(h.start, false))
	m.HandleFunc("GET /owner/api/session", h.owner(h.session, false))
	m.HandleFunc("POST /owner/api/signout", h.owner(h.signOut, false))
	m.HandleFunc("GET /owner/api/agents", h.owner(h.ownerAgents, true))
	m.HandleFunc("PUT /owner/api/agents/{id}/policy", h.owner(h.ownerPolicy, true))
	m.HandleFunc("POST /owner/api/requests/{id}/accept", h.owner(h.ownerAccept, true))
	m.HandleFunc("POST /owner/api/requests/{id}/decline", h.owner(h.ownerDecline, true))
}

// page is GET /owner: the embedded page.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) { serveFile(w, r, "owner.html") }

// asset is GET /owner/assets/{file}: its script and style.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("file") == "owner.html" {
		http.NotFound(w, r)
		return
	}
	serveFile(w, r, r.PathValue("file"))
}

// serveFile writes a file of the portal with headers that let nothing
// from elsewhere load.
func serveFile(w http.ResponseWriter, r *http.Request, name string) {
	b, ct, ok := web.OwnerFile(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ct)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

// ownerHandler is a route of the portal; account is "" on the routes
// that need no sign-in.
type ownerHandler func(w http.ResponseWriter, r *http.Request, secret, account string) error

// owner wraps a portal route: state-changing requests must be JSON (a
// cross-site form cannot send that without a preflight; the cookie is
// SameSite=Strict too); signedIn routes need an approved sign-in.
func (h *Handler) owner(fn ownerHandler, signedIn bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := func() error {
			if r.Method != http.MethodGet && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				return wire.Errorf(wire.CodeForbidden, "portal requests must be application/json")
			}
			secret := ""
			if c, err := r.Cookie(CookieName); err == nil {
				secret = c.Value
			}
			account := ""
			if signedIn {
				var err error
				if account, err = h.Portal.Owner(r.Context(), secret, h.Now()); err != nil {
					return err
				}
			}
			return fn(w, r, secret, account)
		}()
		if err != nil {
			h.fail(w, r, err)
		}
	}
}

// bridge is GET /owner/api/bridge: {"bridge": bool}, whether an IRC bridge
// runs (the venue's pages link to the portal only then).
func (h *Handler) bridge(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"bridge": h.Bridge})
}

// errNoBridge is the portal's answer when no bridge runs: no code could
// ever be approved.
func errNoBridge() error {
	return wire.Errorf(wire.CodeUnavailable, "no IRC bridge runs on this venue, so nobody can sign in here: the owner portal needs PIRCAN (PIRCAN.md)")
}

// start is POST /owner/api/start: a new sign-in for this browser; sets the
// cookie and answers {"code","expires_at"}. Without a bridge: 503
// unavailable, and no code.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, _, _ string) error {
	if !h.Bridge {
		return errNoBridge()
	}
	addr := admission.AddressKey(httpapi.IPExtractor(h.TrustedProxies)(r))
	st, err := h.Portal.Start(r.Context(), addr, r.UserAgent(), h.Now())
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: st.Secret, Path: "/owner", HttpOnly: true, Secure: h.SecureCookie,
		SameSite: http.SameSiteStrictMode, MaxAge: int(handshake.SessionLifetime.Seconds() + handshake.CodeLifetime.Seconds()),
	})
	writeJSON(w, http.StatusCreated, map[string]any{"code": st.Code, "expires_at": wire.Time(st.CodeExpiresAt),
		"login": `PIRCAN/1 LOGIN {"code":"` + st.Code + `"}`})
	return nil
}

// session is GET /owner/api/session: {"state","code"?,"account"?,"expires_at"?};
// state "no_bridge" when no bridge runs.
func (h *Handler) session(w http.ResponseWriter, r *http.Request, secret, _ string) error {
	if !h.Bridge {
		writeJSON(w, http.StatusOK, map[string]any{"state": "no_bridge"})
		return nil
	}
	st, err := h.Portal.Status(r.Context(), secret, h.Now())
	if err != nil {
		return err
	}
	v := map[string]any{"state": st.State}
	if st.Code != "" {
		v["code"] = st.Code
	}
	if st.Account != "" {
		v["account"] = st.Account
	}
	if !st.ExpiresAt.IsZero() {
		v["expires_at"] = wire.Time(st.ExpiresAt)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// signOut is POST /owner/api/signout: ends this browser's sign-in.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, secret, _ string) error {
	if err := h.Portal.SignOut(r.Context(), secret, h.Now()); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/owner", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]any{"state": handshake.SignInEnded})
	return nil
}

// ownerAgents is GET /owner/api/agents: the account's agents with their
// policies, and the owner-decides requests waiting for the owner.
func (h *Handler) ownerAgents(w http.ResponseWriter, r *http.Request, _, account string) error {
	ctx := r.Context()
	ids, err := h.Service.OwnedAgents(ctx, account)
	if err != nil {
		return err
	}
	var agents []map[string]any
	for _, id := range ids {
		p, err := h.Service.Policy(ctx, id)
		if err != nil {
			return err
		}
		agents = append(agents, map[string]any{"agent_id": id, "name": h.Service.Names(ctx, id)[id], "policy": p.Policy, "owner_set": p.OwnerSet})
	}
	pending, err := h.Service.Pending(ctx, account, h.Now())
	if err != nil {
		return err
	}
	var reqs []map[string]any
	for _, req := range pending {
		v := handshake.RequestView(req)
		names := h.Service.Names(ctx, req.From, req.To)
		v["from_name"], v["to_name"] = names[req.From], names[req.To]
		reqs = append(reqs, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"account": account, "agents": listOf(agents), "pending": listOf(reqs), "policies": handshake.Policies})
	return nil
}

// ownerPolicy is PUT /owner/api/agents/{id}/policy {"policy"}.
func (h *Handler) ownerPolicy(w http.ResponseWriter, r *http.Request, _, account string) error {
	f, err := body(w, r, "policy")
	if err != nil {
		return err
	}
	pol := f.String("policy", true)
	if f.Err != nil {
		return f.Err
	}
	p, err := h.Service.SetPolicy(r.Context(), handshake.OwnerActor(account), r.PathValue("id"), pol, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyView(p))
	return nil
}

// ownerAccept is POST /owner/api/requests/{id}/accept {"scopes"?,"ttl_days"?}.
func (h *Handler) ownerAccept(w http.ResponseWriter, r *http.Request, _, account string) error {
	in, err := acceptBody(w, r)
	if err != nil {
		return err
	}
	ag, err := h.Service.Accept(r.Context(), handshake.OwnerActor(account), r.PathValue("id"), in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.Service.AgreementView(r.Context(), ag, ag.Target))
	return nil
}

// ownerDecline is POST /owner/api/requests/{id}/decline.
func (h *Handler) ownerDecline(w http.ResponseWriter, r *http.Request, _, account string) error {
	req, err := h.Service.Decline(r.Context(), handshake.OwnerActor(account), r.PathValue("id"), h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, handshake.RequestView(req))
	return nil
}
