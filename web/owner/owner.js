// The owner portal: sign in with a code approved by LOGIN over IRC, then
// decide owner-decides contact requests and set policies. Every text from
// the server is set with textContent, never parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MS = 1500;
let pollTimer = null;
let signedIn = false; // the dashboard is shown; the session is still polled, so a LOGOUT shows within seconds

function status(text, isError) {
  const s = $("status");
  s.textContent = text || "";
  s.className = isError ? "error" : "";
}

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (method !== "GET") {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body || {});
  }
  const res = await fetch("/owner/api/" + path, opts);
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const err = new Error((data.error && data.error.message) || res.statusText);
    err.code = data.error && data.error.code;
    err.status = res.status;
    throw err;
  }
  return data;
}

function show(section) {
  $("nobridge").hidden = section !== "nobridge";
  $("signin").hidden = section !== "signin";
  $("dashboard").hidden = section !== "dashboard";
  $("who").hidden = section !== "dashboard";
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

async function start() {
  signedIn = false;
  try {
    const s = await api("POST", "start");
    showCode(s.code, s.expires_at);
    poll();
  } catch (e) {
    if (e.code === "unavailable") return show("nobridge");
    status(e.message, true);
  }
}

function showCode(code, expires) {
  show("signin");
  $("code").textContent = code;
  $("login-line").textContent = "/msg PIRCAN PIRCAN/1 LOGIN {\"code\":\"" + code + "\"}";
  $("code-expires").textContent = new Date(expires).toLocaleTimeString();
}

function poll() {
  clearTimeout(pollTimer);
  pollTimer = setTimeout(check, POLL_MS);
}

async function check() {
  let s;
  try {
    s = await api("GET", "session");
  } catch (e) {
    if (e.status === 401) return start();
    status(e.message, true);
    return poll();
  }
  switch (s.state) {
    case "no_bridge":
      signedIn = false;
      return show("nobridge");
    case "pending":
      showCode(s.code, s.expires_at);
      return poll();
    case "signed_in":
      $("account").textContent = s.account;
      poll();
      if (signedIn) return; // still signed in: keep what is on screen
      signedIn = true;
      status("");
      return load();
    default:
      if (signedIn) status("You were signed out (LOGOUT, or the sign-in ended).", true);
      return start(); // expired or ended: a new code
  }
}

async function load() {
  let d;
  try {
    d = await api("GET", "agents");
  } catch (e) {
    if (e.status === 401) return start();
    return status(e.message, true);
  }
  show("dashboard");
  renderAgents(d.agents, d.policies);
  renderPending(d.pending);
}

function renderAgents(agents, policies) {
  const body = $("agents").querySelector("tbody");
  body.replaceChildren();
  $("no-agents").hidden = agents.length > 0;
  for (const a of agents) {
    const tr = document.createElement("tr");
    tr.dataset.agent = a.agent_id;
    const name = el("td");
    name.append(el("div", a.name), el("div", a.agent_id, "id"));
    const sel = document.createElement("select");
    sel.name = "policy";
    for (const p of policies) {
      const o = el("option", p);
      o.value = p;
      o.selected = p === a.policy;
      sel.append(o);
    }
    const pol = el("td");
    pol.append(sel);
    const btn = el("button", "Set policy");
    btn.type = "button";
    btn.className = "set-policy";
    btn.addEventListener("click", async () => {
      try {
        await api("PUT", "agents/" + encodeURIComponent(a.agent_id) + "/policy", { policy: sel.value });
        status("Policy of " + a.name + " set to " + sel.value + ".");
        load();
      } catch (e) {
        status(e.message, true);
      }
    });
    const act = el("td");
    act.append(btn);
    tr.append(name, pol, act);
    body.append(tr);
  }
}

function renderPending(reqs) {
  const box = $("pending");
  box.replaceChildren();
  $("no-pending").hidden = reqs.length > 0;
  for (const r of reqs) {
    const d = el("div", undefined, "request");
    d.dataset.request = r.request_id;
    const head = el("div");
    head.append(el("strong", r.from_name || r.from), document.createTextNode(" → " + (r.to_name || r.to)));
    d.append(head, el("div", r.from, "id"), el("p", r.purpose, "purpose"));
    const scopes = el("div");
    for (const sc of r.scopes) {
      const l = document.createElement("label");
      const cb = document.createElement("input");
      cb.type = "checkbox";
      cb.checked = true;
      cb.value = sc;
      cb.name = "scope";
      l.append(cb, document.createTextNode(" " + sc));
      scopes.append(l);
    }
    const ttl = document.createElement("label");
    const n = document.createElement("input");
    n.type = "number";
    n.name = "ttl_days";
    n.min = 1;
    n.max = r.ttl_days;
    n.value = r.ttl_days;
    ttl.append(document.createTextNode("Days "), n);
    scopes.append(ttl);
    d.append(scopes, el("div", "Expires " + new Date(r.expires_at).toLocaleString(), "note"));
    const actions = el("div", undefined, "actions");
    const accept = el("button", "Accept", "primary accept");
    accept.type = "button";
    accept.addEventListener("click", async () => {
      const granted = [...d.querySelectorAll("input[name=scope]:checked")].map((c) => c.value);
      try {
        await api("POST", "requests/" + encodeURIComponent(r.request_id) + "/accept", { scopes: granted, ttl_days: Number(n.value) });
        status("Accepted: " + granted.join(", ") + " for " + n.value + " days.");
        load();
      } catch (e) {
        status(e.message, true);
      }
    });
    const decline = el("button", "Decline", "decline");
    decline.type = "button";
    decline.addEventListener("click", async () => {
      try {
        await api("POST", "requests/" + encodeURIComponent(r.request_id) + "/decline");
        status("Declined.");
        load();
      } catch (e) {
        status(e.message, true);
      }
    });
    actions.append(accept, decline);
    d.append(actions);
    box.append(d);
  }
}

$("signout").addEventListener("click", async () => {
  try {
    await api("POST", "signout");
  } catch (e) {
    /* signed out either way */
  }
  start();
});

check();
