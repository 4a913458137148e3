package rest

import (
	"net/http"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

func (h *Handler) agentRoutes() {
	m := h.mux
	m.HandleFunc("POST /v1/contacts", h.agent(h.contact))
	m.HandleFunc("GET /v1/contacts", h.agent(h.contacts))
	m.HandleFunc("POST /v1/contacts/{id}/accept", h.agent(h.accept))
	m.HandleFunc("POST /v1/contacts/{id}/decline", h.agent(h.decline))
	m.HandleFunc("POST /v1/contacts/{id}/cancel", h.agent(h.cancel))
	m.HandleFunc("GET /v1/agreements", h.agent(h.agreements))
	m.HandleFunc("POST /v1/agreements/{id}/revoke", h.agent(h.revoke))
	m.HandleFunc("POST /v1/messages", h.agent(h.send))
	m.HandleFunc("GET /v1/messages", h.agent(h.inbox))
	m.HandleFunc("POST /v1/tasks", h.agent(h.createTask))
	m.HandleFunc("GET /v1/tasks", h.agent(h.tasks))
	m.HandleFunc("POST /v1/tasks/{id}/complete", h.agent(h.complete))
	m.HandleFunc("GET /v1/policy", h.agent(h.policy))
	m.HandleFunc("PUT /v1/policy", h.agent(h.setPolicy))
	m.HandleFunc("POST /v1/reports", h.agent(h.report))
	m.HandleFunc("POST /v1/resources", h.agent(h.addResource))
	m.HandleFunc("GET /v1/resources", h.agent(h.resources))
	m.HandleFunc("GET /v1/resources/{id}", h.agent(h.readResource))
}

// contact is POST /v1/contacts {"to","purpose","scopes"?,"ttl_days"?}
// -> 201 the request.
func (h *Handler) contact(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "to", "purpose", "scopes", "ttl_days")
	if err != nil {
		return err
	}
	in := handshake.ContactInput{To: f.String("to", true), Purpose: f.String("purpose", true), Scopes: stringList(f, "scopes"), TTLDays: f.IntIn("ttl_days", 1, handshake.MaxTTLDays, 0)}
	if f.Err != nil {
		return f.Err
	}
	req, err := h.Service.Contact(r.Context(), a.ID, in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, handshake.RequestView(req))
	return nil
}

// contacts is GET /v1/contacts?direction=&status=&limit=&offset=.
func (h *Handler) contacts(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	if werr := wire.QueryOnly(r.URL.RawQuery, "direction", "status", "limit", "offset"); werr != nil {
		return werr
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rs, total, err := h.Service.Contacts(r.Context(), a.ID, handshake.ContactsQuery{Direction: q.Get("direction"), Status: q.Get("status"), Limit: limit, Offset: offset}, h.Now())
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, req := range rs {
		items = append(items, handshake.RequestView(req))
	}
	writeJSON(w, http.StatusOK, map[string]any{"contacts": listOf(items), "returned": len(rs), "total": total, "offset": offset})
	return nil
}

// acceptBody reads {"scopes"?, "ttl_days"?}.
func acceptBody(w http.ResponseWriter, r *http.Request) (handshake.AcceptInput, error) {
	f, err := body(w, r, "scopes", "ttl_days")
	if err != nil {
		return handshake.AcceptInput{}, err
	}
	in := handshake.AcceptInput{Scopes: stringList(f, "scopes"), TTLDays: f.IntIn("ttl_days", 1, handshake.MaxTTLDays, 0)}
	if f.Err != nil {
		return in, f.Err
	}
	return in, nil
}

// accept is POST /v1/contacts/{id}/accept {"scopes"?,"ttl_days"?} -> the agreement.
func (h *Handler) accept(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	in, err := acceptBody(w, r)
	if err != nil {
		return err
	}
	ag, err := h.Service.Accept(r.Context(), handshake.AgentActor(a.ID), r.PathValue("id"), in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.Service.AgreementView(r.Context(), ag, a.ID))
	return nil
}

// decline is POST /v1/contacts/{id}/decline -> the request.
func (h *Handler) decline(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	req, err := h.Service.Decline(r.Context(), handshake.AgentActor(a.ID), r.PathValue("id"), h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, handshake.RequestView(req))
	return nil
}

// cancel is POST /v1/contacts/{id}/cancel -> the request.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	req, err := h.Service.Cancel(r.Context(), handshake.AgentActor(a.ID), r.PathValue("id"), h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, handshake.RequestView(req))
	return nil
}

// agreements is GET /v1/agreements?all=true.
func (h *Handler) agreements(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	if werr := wire.QueryOnly(r.URL.RawQuery, "all"); werr != nil {
		return werr
	}
	all := r.URL.Query().Get("all")
	if all != "" && all != "true" && all != "false" {
		return wire.Errorf(wire.CodeInvalidArgument, "all must be true or false")
	}
	ags, err := h.Service.Agreements(r.Context(), a.ID, all == "true", h.Now())
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, ag := range ags {
		items = append(items, h.Service.AgreementView(r.Context(), ag, a.ID))
	}
	writeJSON(w, http.StatusOK, map[string]any{"agreements": listOf(items)})
	return nil
}

// revoke is POST /v1/agreements/{id}/revoke -> the agreement.
func (h *Handler) revoke(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	ag, err := h.Service.Revoke(r.Context(), handshake.AgentActor(a.ID), r.PathValue("id"), h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.Service.AgreementView(r.Context(), ag, a.ID))
	return nil
}

// send is POST /v1/messages {"to","text","reply_to"?} -> 201 the message.
func (h *Handler) send(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "to", "text", "reply_to")
	if err != nil {
		return err
	}
	in := handshake.SendInput{To: f.String("to", true), Text: f.String("text", true), ReplyTo: f.String("reply_to", false)}
	if f.Err != nil {
		return f.Err
	}
	m, err := h.Service.Send(r.Context(), a.ID, in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, handshake.MessageView(m, a.Name))
	return nil
}

// inbox is GET /v1/messages?limit=: the oldest unread, marked read. A
// refused query marks nothing.
func (h *Handler) inbox(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	if werr := wire.QueryOnly(r.URL.RawQuery, "limit"); werr != nil {
		return werr
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	ms, err := h.Service.Inbox(r.Context(), a.ID, limit, h.Now())
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, m := range ms {
		items = append(items, handshake.MessageView(m, h.Service.Names(r.Context(), m.From)[m.From]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": listOf(items)})
	return nil
}

// createTask is POST /v1/tasks {"to","skill","text"} -> 201 the task.
func (h *Handler) createTask(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "to", "skill", "text")
	if err != nil {
		return err
	}
	in := handshake.TaskInput{To: f.String("to", true), Skill: f.String("skill", true), Text: f.String("text", true)}
	if f.Err != nil {
		return f.Err
	}
	t, err := h.Service.CreateTask(r.Context(), a.ID, in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, handshake.TaskView(t, a.Name))
	return nil
}

// tasks is GET /v1/tasks?limit=: the open tasks addressed to the agent.
func (h *Handler) tasks(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	if werr := wire.QueryOnly(r.URL.RawQuery, "limit"); werr != nil {
		return werr
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	ts, total, err := h.Service.Tasks(r.Context(), a.ID, limit, h.Now())
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, t := range ts {
		items = append(items, handshake.TaskView(t, h.Service.Names(r.Context(), t.From)[t.From]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": listOf(items), "total": total})
	return nil
}

// complete is POST /v1/tasks/{id}/complete {"outcome","text"?} -> the task.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "outcome", "text")
	if err != nil {
		return err
	}
	outcome, text := f.String("outcome", true), f.String("text", false)
	if f.Err != nil {
		return f.Err
	}
	t, err := h.Service.Complete(r.Context(), a.ID, r.PathValue("id"), outcome, text, false, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, handshake.TaskView(t, h.Service.Names(r.Context(), t.From)[t.From]))
	return nil
}

func policyView(p handshake.PolicyRecord) map[string]any {
	return map[string]any{"agent_id": p.AgentID, "policy": p.Policy, "owner_set": p.OwnerSet}
}

// policy is GET /v1/policy.
func (h *Handler) policy(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	p, err := h.Service.Policy(r.Context(), a.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyView(p))
	return nil
}

// setPolicy is PUT /v1/policy {"policy"}.
func (h *Handler) setPolicy(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "policy")
	if err != nil {
		return err
	}
	pol := f.String("policy", true)
	if f.Err != nil {
		return f.Err
	}
	p, err := h.Service.SetPolicy(r.Context(), handshake.AgentActor(a.ID), a.ID, pol, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyView(p))
	return nil
}

// report is POST /v1/reports {"agent_id","category","details"?} -> 201.
func (h *Handler) report(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "agent_id", "category", "details")
	if err != nil {
		return err
	}
	in := handshake.ReportInput{AgentID: f.String("agent_id", true), Category: f.String("category", true), Details: f.String("details", false)}
	if f.Err != nil {
		return f.Err
	}
	rep, err := h.Service.Report(r.Context(), a.ID, in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"report_id": rep.ID, "agent_id": rep.Reported, "category": rep.Category, "status": "open"})
	return nil
}

// addResource is POST /v1/resources {"title","tags"?,"access"?,"content"?} -> 201.
func (h *Handler) addResource(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	f, err := body(w, r, "title", "tags", "access", "content")
	if err != nil {
		return err
	}
	in := handshake.ResourceInput{Title: f.String("title", true), Tags: stringList(f, "tags"), Access: f.String("access", false), Content: f.String("content", false)}
	if f.Err != nil {
		return f.Err
	}
	res, err := h.Service.AddResource(r.Context(), a.ID, in, h.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, handshake.Listed{Resource: res, Readable: true}.View())
	return nil
}

// resources is GET /v1/resources?q=&tag=&limit=&offset=.
func (h *Handler) resources(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	if werr := wire.QueryOnly(r.URL.RawQuery, "q", "tag", "limit", "offset"); werr != nil {
		return werr
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ls, total, err := h.Service.Resources(r.Context(), a.ID, handshake.ResourceQuery{Q: q.Get("q"), Tag: q.Get("tag"), Limit: limit, Offset: offset}, h.Now())
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, l := range ls {
		items = append(items, l.View())
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": listOf(items), "returned": len(ls), "total": total, "offset": offset})
	return nil
}

// readResource is GET /v1/resources/{id}: metadata and content, if readable.
func (h *Handler) readResource(w http.ResponseWriter, r *http.Request, a store.Agent) error {
	res, err := h.Service.ReadResource(r.Context(), a.ID, r.PathValue("id"), h.Now())
	if err != nil {
		return err
	}
	v := handshake.Listed{Resource: res, Readable: true}.View()
	v["content"] = res.Content
	writeJSON(w, http.StatusOK, v)
	return nil
}
