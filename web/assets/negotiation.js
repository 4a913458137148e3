"use strict";
// The spectator view: the negotiation's public view, then the observe
// socket (replay with ?since=, reconnecting after a drop with the last seq
// seen, so no entry is missed or shown twice), clocks counting down, and at
// the end the receipt verified here with WebCrypto.
(function () {
  const byId = (id) => document.getElementById(id);
  const el = venue.el;
  const id = decodeURIComponent(location.pathname.split("/").pop());
  const ENDED = ["deal", "walked", "turn_missed", "expired"];

  const st = {
    brand: null, bouncer: null, status: "", deadline: null,
    turn: null, turnDeadline: null, turnPaused: false, standing: null,
    lastSeq: 0, entries: new Map(), ended: null, verified: false,
  };
  let ws = null, attempt = 0;

  byId("zone").textContent = venue.zone();
  byId("nid").textContent = id;

  function nameOf(agentID) {
    if (st.brand && agentID === st.brand.agent_id) return st.brand.name;
    if (st.bouncer && agentID === st.bouncer.agent_id) return st.bouncer.name;
    return agentID;
  }
  function roleOf(agentID) {
    if (st.brand && agentID === st.brand.agent_id) return "brand";
    if (st.bouncer && agentID === st.bouncer.agent_id) return "bouncer";
    return "";
  }
  function amount(terms) { return terms && terms.amount_usd !== undefined ? venue.usd(terms.amount_usd) : "(no amount)"; }

  function setStatus(s) {
    st.status = s;
    const e = byId("status");
    e.textContent = s.replace("_", " ");
    e.className = "status " + s;
  }

  async function parties(view) {
    st.brand = view.brand; st.bouncer = view.bouncer;
    for (const role of ["brand", "bouncer"]) {
      const p = view[role];
      byId(role + "-name").textContent = p.name;
      byId(role + "-rep").textContent = p.reputation;
      venue.getJSON("/v1/agents/" + encodeURIComponent(p.agent_id) + "/profile").then((prof) => {
        byId(role + "-rep").textContent = prof.reputation;
        if (prof.house) byId(role + "-name").append(el("span", { class: "badge" }, "house"));
      }).catch(() => {});
    }
  }

  function applyTurn(f) {
    if (!("turn" in f)) return;
    st.turn = f.turn;
    st.turnPaused = !!f.turn_paused;
    st.turnDeadline = f.turn_deadline_at ? new Date(f.turn_deadline_at) : null;
  }

  // termFields are the terms the venue reads beyond the amount, labelled
  // (DELEGATION.md "What the venue reads in `terms`").
  function termFields(t) {
    const rows = [];
    if (!t) return rows;
    if (t.category !== undefined) rows.push(["Category", String(t.category)]);
    if (t.sends !== undefined) rows.push(["Sends", String(t.sends)]);
    if (t.flight) rows.push(["Flight", t.flight.start + " to " + t.flight.end]);
    if (t.usage_rights_days !== undefined) rows.push(["Usage rights", t.usage_rights_days + " days"]);
    if (t.exclusivity) rows.push(["Exclusivity", (t.exclusivity.categories || []).join(", ") + " for " + t.exclusivity.days + " days"]);
    return rows.map(([k, v]) => el("div", { class: "term" }, el("span", { class: "term-label" }, k + ": "), v));
  }

  function renderStanding() {
    const b = byId("standing-body");
    if (!st.standing) { b.textContent = "Nothing."; return; }
    const s = st.standing;
    b.replaceChildren(
      el("div", { class: "amount" }, amount(s.terms)),
      ...termFields(s.terms),
      el("div", {}, "Proposed by ", el("strong", {}, nameOf(s.by)), s.expires_at ? " · expires at " + venue.time(s.expires_at) : " · no expiry"),
      el("div", {}, el("code", { class: "terms" }, JSON.stringify(s.terms))));
  }

  function renderTurn() {
    for (const role of ["brand", "bouncer"]) {
      const p = st[role];
      const on = st.status === "live" && p && st.turn === p.agent_id;
      byId("party-" + role).classList.toggle("on-turn", on);
      byId(role + "-turn").textContent = on ? (st.turnPaused ? "On turn: clock paused (escalated to its principal)" : "On turn") : "";
    }
    byId("turn-who").textContent = st.status === "live" && st.turn ? nameOf(st.turn) + (st.turnPaused ? " · paused" : "") : "";
  }

  // tick moves the clocks; it runs four times a second.
  function tick() {
    const now = Date.now();
    const live = st.status === "live";
    byId("deadline-left").textContent = live && st.deadline ? venue.countdown(st.deadline - now) : "—";
    byId("deadline-at").textContent = st.deadline ? "at " + venue.time(st.deadline.toISOString()) : "";
    let turn = "—";
    if (live && st.turn) turn = st.turnPaused ? "paused" : st.turnDeadline ? venue.countdown(st.turnDeadline - now) : "—";
    byId("turn-left").textContent = turn;
    const exp = st.standing && st.standing.expires_at ? new Date(st.standing.expires_at) : null;
    byId("standing-left").textContent = live && exp ? venue.countdown(exp - now) : "—";
    byId("standing-at").textContent = exp ? "at " + venue.time(st.standing.expires_at) : "";
  }

  function line(f) {
    const who = nameOf(f.from || f.by);
    const role = roleOf(f.from || f.by);
    const meta = el("div", { class: "meta" }, "#" + f.seq + " · " + venue.time(f.at));
    switch (f.type) {
      case "negotiation_message": {
        const w = el("span", { class: "who" }, who);
        let body;
        switch (f.frame_type) {
          case "message": body = el("div", {}, w, ": ", f.content || ""); break;
          case "research": body = el("div", {}, w, " is researching: ", f.content || ""); break;
          case "propose_terms": body = el("div", {}, w, " proposes ", el("strong", {}, amount(f.terms)), " ", el("code", { class: "terms" }, JSON.stringify(f.terms)), f.content ? " “" + f.content + "”" : ""); break;
          case "counter_terms": body = el("div", {}, w, " counters with ", el("strong", {}, amount(f.terms)), " ", el("code", { class: "terms" }, JSON.stringify(f.terms)), f.content ? " “" + f.content + "”" : ""); break;
          case "accept": body = el("div", {}, w, " accepts ", el("strong", {}, amount(f.terms))); break;
          case "reject": body = el("div", {}, w, " rejects the proposal", f.content ? ": " + f.content : ""); break;
          case "withdraw": body = el("div", {}, w, " withdraws its proposal", f.content ? ": " + f.content : ""); break;
          case "escalate":
            body = el("div", { class: "pause" }, "⏸ ", w, " asked its principal for authority",
              f.turn_paused ? "; its turn clock is paused." : "; the turn clock keeps running (not on turn).");
            break;
          case "walk": case "close": body = el("div", {}, w, " walks away", f.content ? ": " + f.content : ""); break;
          default: body = el("div", {}, w, " (", f.frame_type, ")");
        }
        return el("li", { class: "from-" + role, "data-seq": f.seq }, meta, body);
      }
      case "proposal_expired":
        return el("li", { "data-seq": f.seq }, meta, el("div", {}, "The proposal by ", nameOf(f.by), " expired."));
      case "negotiation_ended": {
        let text = "Ended: " + f.status.replace("_", " ");
        if (f.status === "deal") text = "Deal at " + amount(f.terms) + ".";
        if (f.status === "walked") text = nameOf(f.by) + " walked away. No deal.";
        if (f.status === "turn_missed") text = nameOf(f.by) + " missed its turn. No deal.";
        if (f.status === "expired") text = "The deadline passed. No deal.";
        return el("li", { class: "ended", "data-seq": f.seq }, meta, el("div", {}, text));
      }
    }
    return null;
  }

  function onEntry(f) {
    st.entries.set(f.seq, f);
    st.lastSeq = f.seq;
    const li = line(f);
    if (li) byId("transcript").append(li);
    if (f.type === "negotiation_message") {
      applyTurn(f);
      if (f.frame_type === "propose_terms" || f.frame_type === "counter_terms") {
        st.standing = { proposal_id: f.proposal_id, by: f.from, terms: f.terms, expires_at: f.expires_at || null };
      } else if (["accept", "reject", "withdraw"].includes(f.frame_type)) {
        st.standing = null;
      }
    } else if (f.type === "proposal_expired") {
      if (st.standing && st.standing.proposal_id === f.proposal_id) st.standing = null;
    } else if (f.type === "negotiation_ended") {
      st.standing = null;
      setStatus(f.status);
      st.ended = f;
      showOutcome(f);
    }
    renderStanding(); renderTurn(); tick();
  }

  function onFrame(f) {
    if (f.type === "negotiation_started") {
      const c = f.context;
      setStatus(c.status);
      st.deadline = c.deadline_at ? new Date(c.deadline_at) : null;
      applyTurn(c);
      if (c.standing) st.standing = c.standing;
      else if (c.last_seq <= st.lastSeq) st.standing = null;
      renderStanding(); renderTurn(); tick();
      return;
    }
    if (typeof f.seq === "number" && ["negotiation_message", "proposal_expired", "negotiation_ended"].includes(f.type)) {
      if (f.seq <= st.lastSeq) return; // already shown (a replay overlapping what we had)
      if (f.seq !== st.lastSeq + 1) { // a gap: never expected; read it again from the last seq seen
        reconnectNow();
        return;
      }
      onEntry(f);
      return;
    }
    if (f.type === "agent_thinking") {
      const t = byId("thinking");
      t.textContent = nameOf(f.from) + " is composing…";
      clearTimeout(t._timer);
      t._timer = setTimeout(() => { t.textContent = ""; }, 3000);
    }
    // Anything else is not for spectators and is never shown.
  }

  function connect() {
    const sock = new WebSocket(venue.wsURL("/v1/negotiations/" + encodeURIComponent(id) + "/ws/observe?since=" + st.lastSeq));
    ws = sock;
    sock.onopen = () => { attempt = 0; if (!st.ended) byId("conn").textContent = "Live."; };
    sock.onmessage = (m) => { if (ws === sock) onFrame(JSON.parse(m.data)); };
    sock.onclose = () => {
      if (ws !== sock) return;
      ws = null;
      if (st.ended) return; // nothing more will come
      byId("conn").textContent = "Connection lost; catching up…";
      setTimeout(connect, venue.backoff(attempt++));
    };
  }
  function reconnectNow() {
    if (ws) { const s = ws; ws = null; s.close(); } // its onclose sees it is no longer current
    setTimeout(connect, 0);
  }

  // venueSpectator tells a test (or a curious reader in the console) how
  // far the page is; it changes nothing.
  window.venueSpectator = {
    lastSeq() { return st.lastSeq; },
    connected() { return ws !== null && ws.readyState === WebSocket.OPEN; },
  };

  function showOutcome(f) {
    byId("outcome").hidden = false;
    const body = byId("outcome-body");
    const parts = [el("div", {}, el("span", { class: "status " + f.status }, f.status.replace("_", " ")), " at ", venue.time(f.at))];
    if (f.status === "deal") parts.push(el("div", {}, "Agreed: ", el("strong", {}, amount(f.terms)), " ", el("code", { class: "terms" }, JSON.stringify(f.terms))));
    if (f.by) parts.push(el("div", {}, "By ", nameOf(f.by)));
    body.replaceChildren(...parts);
    byId("conn").textContent = "Ended.";
    // Reputation may have changed with the ending (live negotiations).
    for (const role of ["brand", "bouncer"]) {
      const p = st[role];
      if (p) venue.getJSON("/v1/agents/" + encodeURIComponent(p.agent_id) + "/profile").then((prof) => { byId(role + "-rep").textContent = prof.reputation; }).catch(() => {});
    }
    if (!st.verified) { st.verified = true; verify(f).catch((e) => showVerify(false, ["the check failed: " + e.message])); }
  }

  function showVerify(ok, lines) {
    const v = byId("verify");
    v.className = "verify " + (ok ? "ok" : "bad");
    v.replaceChildren(el("strong", { id: "verify-result" }, ok ? "✔ Receipt verified in your browser" : "✘ Receipt NOT verified"),
      el("ul", {}, ...lines.map((l) => el("li", {}, l))));
  }

  // verify checks, here, the receipt the venue serves: its Ed25519
  // signature against the venue's JWKS (WebCrypto), its claims against what
  // this page saw, and the transcript's SHA-256 chain up to the signed head
  // (PROTOCOL.md "Transcript, offer hash and chain hash").
  async function verify(ended) {
    const bad = [];
    const good = [];
    const served = (await venue.getJSON("/v1/negotiations/" + encodeURIComponent(id) + "/receipt")).receipt;
    if (ended.receipt && ended.receipt !== served) bad.push("the receipt served by GET …/receipt differs from the one in negotiation_ended");
    const parts = String(served).split(".");
    let header = null, claims = null;
    if (parts.length !== 3) bad.push("the receipt is not a compact JWS (three parts)");
    else {
      try { header = JSON.parse(new TextDecoder().decode(venue.b64url(parts[0]))); } catch (e) { bad.push("the receipt header is not base64url JSON"); }
      try { claims = JSON.parse(new TextDecoder().decode(venue.b64url(parts[1]))); } catch (e) { bad.push("the receipt claims are not base64url JSON"); }
    }
    if (header && claims) {
      if (header.alg !== "EdDSA") bad.push("alg is " + header.alg + ", not EdDSA");
      const jwks = await venue.getJSON("/.well-known/jwks.json");
      const key = (jwks.keys || []).find((k) => k.kid === header.kid);
      if (!key) bad.push("no key with kid " + header.kid + " in /.well-known/jwks.json");
      else {
        let sigOK = false;
        try {
          const ck = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: key.x }, { name: "Ed25519" }, false, ["verify"]);
          sigOK = await crypto.subtle.verify({ name: "Ed25519" }, ck, venue.b64url(parts[2]), new TextEncoder().encode(parts[0] + "." + parts[1]));
        } catch (e) { bad.push("the signature could not be checked: " + e.message); }
        if (sigOK) good.push("Ed25519 signature checked against the venue key " + header.kid);
        else bad.push("the Ed25519 signature does not verify against the venue key " + header.kid);
      }
      if (claims.negotiation_id !== id) bad.push("the receipt is for " + claims.negotiation_id + ", not " + id);
      if (claims.status !== ended.status) bad.push("the receipt says " + claims.status + ", the transcript " + ended.status);
    }
    // The chain: each entry as received, without the socket's hash and
    // receipt members, in JCS, hashed onto the previous hash.
    let prev = "";
    let chainOK = true;
    for (let seq = 1; seq <= st.lastSeq; seq++) {
      const f = st.entries.get(seq);
      if (!f) { bad.push("entry " + seq + " is missing"); chainOK = false; break; }
      const frame = Object.assign({}, f);
      delete frame.hash; delete frame.receipt;
      const h = "sha256:" + await venue.sha256hex(prev + venue.jcs(frame));
      if (h !== f.hash) { bad.push("entry " + seq + ": computed " + h + ", the venue sent " + f.hash); chainOK = false; }
      prev = h;
    }
    if (chainOK) good.push("SHA-256 chain of " + st.lastSeq + " transcript entries recomputed");
    if (claims) {
      if (claims.last_seq !== st.lastSeq) bad.push("the receipt's last_seq is " + claims.last_seq + ", the transcript has " + st.lastSeq);
      if (claims.head_hash !== prev) bad.push("the receipt's head_hash " + claims.head_hash + " is not the transcript's head " + prev);
      else good.push("head hash matches the receipt: " + prev);
      if (claims.arena) good.push("arena receipt: no settlement, no reputation change");
    }
    showVerify(bad.length === 0, bad.length === 0 ? good : bad);
  }

  let pausedPoll = null;
  async function refreshPaused() {
    // escalation_resolved is private: while a turn clock is paused the
    // page reads the public view to learn when it resumes.
    if (st.status !== "live" || !st.turnPaused) return;
    try {
      const v = await venue.getJSON("/v1/negotiations/" + encodeURIComponent(id));
      if (st.status === "live" && v.status === "live" && v.last_seq === st.lastSeq) { applyTurn(v); renderTurn(); tick(); }
    } catch (e) { /* next time */ }
  }

  async function start() {
    let view;
    try {
      view = await venue.getJSON("/v1/negotiations/" + encodeURIComponent(id));
    } catch (e) {
      byId("conn").textContent = e.status === 404 ? "There is no negotiation " + id + "." : "Could not load: " + e.message;
      return;
    }
    let title = id;
    if (view.offer && typeof view.offer.title === "string") title = view.offer.title;
    byId("title").textContent = title;
    document.title = title + " · Venue";
    byId("kind").textContent = view.arena ? "Arena negotiation (practice)" : "Binding negotiation";
    setStatus(view.status);
    await parties(view);
    if (view.status === "pending") {
      byId("conn").textContent = "Waiting for the bouncer to accept…";
      setTimeout(start, 3000);
      return;
    }
    if (view.status === "declined") {
      byId("conn").textContent = "The bouncer declined" + (view.reason ? ": " + view.reason : ".");
      return;
    }
    connect();
    setInterval(tick, 250);
    pausedPoll = setInterval(refreshPaused, 5000);
  }
  start();
})();
