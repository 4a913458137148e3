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
    startedAt: null, prevAt: null,
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
      byId(role + "-name").replaceChildren(venue.agentLink(p.agent_id, p.name));
      byId(role + "-rep-why").href = "/agents/" + encodeURIComponent(p.agent_id);
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

  function renderStanding() {
    // An ended negotiation shows its outcome instead of the table and the
    // clocks.
    const over = ENDED.includes(st.status);
    byId("standing").hidden = over;
    byId("clocks").hidden = over;
    const b = byId("standing-body");
    if (!st.standing) { b.textContent = "No proposal on the table."; return; }
    const s = st.standing;
    b.replaceChildren(
      el("div", { class: "amount" }, amount(s.terms)),
      ...venue.termFields(s.terms, false),
      el("div", {}, "Proposed by ", el("strong", {}, nameOf(s.by)), s.expires_at ? " · expires at " + venue.time(s.expires_at) : " · no expiry"),
      venue.rawTerms(s.terms));
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
    const at = Date.parse(f.at);
    const prev = st.prevAt;
    const gap = isNaN(at) ? "" : prev !== null ? " · " + venue.duration(at - prev) + " after #" + (f.seq - 1) : st.startedAt ? " · " + venue.duration(at - st.startedAt) + " after the start" : "";
    if (!isNaN(at)) st.prevAt = at;
    const meta = el("div", { class: "meta" }, el("a", { href: "#seq-" + f.seq, class: "anchor", title: "link to this entry" }, "#" + f.seq), " · " + venue.time(f.at),
      el("span", { class: "gap" }, gap));
    switch (f.type) {
      case "negotiation_message": {
        const w = el("span", { class: "who" }, who);
        let body;
        switch (f.frame_type) {
          case "message": body = el("div", {}, w, ": ", f.content || ""); break;
          case "research": body = el("div", {}, w, " is researching: ", f.content || ""); break;
          case "propose_terms": case "counter_terms":
            body = el("div", {}, el("div", {}, w, f.frame_type === "propose_terms" ? " proposes " : " counters with ", el("strong", {}, amount(f.terms)), f.content ? " “" + f.content + "”" : ""),
              el("div", { class: "term-list" }, ...venue.termFields(f.terms, false)), venue.rawTerms(f.terms));
            break;
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
        return el("li", { class: "from-" + role, "data-seq": f.seq, id: "seq-" + f.seq }, meta, body);
      }
      case "proposal_expired":
        return el("li", { "data-seq": f.seq, id: "seq-" + f.seq }, meta, el("div", {}, "The proposal by ", nameOf(f.by), " expired."));
      case "negotiation_ended": {
        let text = "Ended: " + f.status.replace("_", " ");
        if (f.status === "deal") text = "Deal at " + amount(f.terms) + ".";
        if (f.status === "walked") text = nameOf(f.by) + " walked away. No deal.";
        if (f.status === "turn_missed") text = nameOf(f.by) + " missed its turn. No deal.";
        if (f.status === "expired") text = "The deadline passed. No deal.";
        return el("li", { class: "ended", "data-seq": f.seq, id: "seq-" + f.seq }, meta, el("div", {}, text));
      }
    }
    return null;
  }

  function onEntry(f) {
    st.entries.set(f.seq, f);
    st.lastSeq = f.seq;
    const li = line(f);
    if (li) byId("transcript").append(li);
    if (li && location.hash === "#seq-" + f.seq) highlight();
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
    renderStanding(); renderTurn(); tick(); chart();
  }

  // highlight scrolls to the entry the address names (#seq-12) and marks
  // it; entries arrive after the page loads, so it runs again as they come.
  function highlight() {
    const m = /^#seq-(\d+)$/.exec(location.hash);
    for (const e of document.querySelectorAll("#transcript li.highlight")) e.classList.remove("highlight");
    if (!m) return;
    const li = document.getElementById("seq-" + m[1]);
    if (!li) return;
    li.classList.add("highlight");
    li.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", highlight);

  // chart draws both sides' amounts over time as inline SVG: each side's
  // proposals as points joined by steps, the deal as a diamond, the
  // deadline as a dashed line (an arrow at the edge when it lies beyond the
  // end), "now" while live.
  function chart() {
    const NS = "http://www.w3.org/2000/svg";
    const W = 640, H = 220, L = 86, R = 16, T = 16, B = 30;
    const svg = (tag, attrs, ...kids) => {
      const e = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
      for (const c of kids) e.append(c);
      return e;
    };
    const pts = [];
    let deal = null;
    for (const f of st.entries.values()) {
      if (f.type === "negotiation_message" && (f.frame_type === "propose_terms" || f.frame_type === "counter_terms") && f.terms && f.terms.amount_usd !== undefined) {
        pts.push({ seq: f.seq, at: Date.parse(f.at), amount: Number(f.terms.amount_usd), role: roleOf(f.from) });
      }
      if (f.type === "negotiation_ended" && f.status === "deal" && f.terms && f.terms.amount_usd !== undefined) {
        deal = { seq: f.seq, at: Date.parse(f.at), amount: Number(f.terms.amount_usd) };
      }
    }
    const box = byId("chart");
    const start = st.startedAt || (pts.length ? pts[0].at : Date.now());
    const deadline = st.deadline ? st.deadline.getTime() : null;
    const live = st.status === "live";
    let end = live && deadline ? deadline : Math.max(start + 1000, ...pts.map((p) => p.at), deal ? deal.at : 0, st.ended ? Date.parse(st.ended.at) : 0);
    if (!live) end = start + (end - start) * 1.08;
    const amounts = pts.map((p) => p.amount).concat(deal ? [deal.amount] : []);
    let lo = amounts.length ? Math.min(...amounts) : 0, hi = amounts.length ? Math.max(...amounts) : 1;
    if (hi - lo < 1) { lo -= 50; hi += 50; }
    const pad = (hi - lo) * 0.12;
    lo = Math.max(0, lo - pad); hi += pad;
    const x = (t) => L + (W - L - R) * Math.min(1, Math.max(0, (t - start) / (end - start)));
    const y = (a) => T + (H - T - B) * (1 - (a - lo) / (hi - lo));
    const g = [];
    g.push(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
    g.push(svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    for (const a of [lo, (lo + hi) / 2, hi]) {
      g.push(svg("line", { x1: L, y1: y(a), x2: W - R, y2: y(a), class: "grid" }));
      g.push(svg("text", { x: L - 6, y: y(a) + 4, "text-anchor": "end", class: "tick" }, venue.usd(Math.round(a))));
    }
    g.push(svg("text", { x: L, y: H - 10, class: "tick" }, venue.time(new Date(start).toISOString())));
    g.push(svg("text", { x: W - R, y: H - 10, "text-anchor": "end", class: "tick" }, venue.time(new Date(end).toISOString())));
    if (deadline !== null) {
      if (deadline <= end) {
        g.push(svg("line", { id: "chart-deadline", x1: x(deadline), y1: T, x2: x(deadline), y2: H - B, class: "deadline", "data-at": new Date(deadline).toISOString() },
          svg("title", {}, "Deadline " + venue.time(new Date(deadline).toISOString()))));
        g.push(svg("text", { x: x(deadline) - 4, y: T + 10, "text-anchor": "end", class: "tick" }, "deadline"));
      } else {
        g.push(svg("text", { id: "chart-deadline", x: W - R, y: T + 10, "text-anchor": "end", class: "tick deadline-note", "data-at": new Date(deadline).toISOString() },
          "deadline " + venue.time(new Date(deadline).toISOString()) + " →"));
      }
    }
    if (live) g.push(svg("line", { x1: x(Date.now()), y1: T, x2: x(Date.now()), y2: H - B, class: "now" }));
    for (const role of ["brand", "bouncer"]) {
      const mine = pts.filter((p) => p.role === role);
      if (mine.length === 0) continue;
      let d = "";
      mine.forEach((p, i) => { d += (i === 0 ? "M" : " H" + x(p.at).toFixed(1) + " V") + (i === 0 ? x(p.at).toFixed(1) + " " + y(p.amount).toFixed(1) : y(p.amount).toFixed(1)); });
      const stop = deal ? deal.at : live ? Date.now() : st.ended ? Date.parse(st.ended.at) : mine[mine.length - 1].at;
      d += " H" + x(Math.max(stop, mine[mine.length - 1].at)).toFixed(1);
      g.push(svg("path", { d: d, class: "line " + role }));
      for (const p of mine) {
        g.push(svg("circle", { cx: x(p.at).toFixed(1), cy: y(p.amount).toFixed(1), r: 5, class: "point " + role, "data-seq": p.seq, "data-amount": p.amount },
          svg("title", {}, "#" + p.seq + " " + nameOf(role === "brand" ? st.brand.agent_id : st.bouncer.agent_id) + ": " + venue.usd(p.amount))));
      }
    }
    if (deal) {
      const cx = x(deal.at), cy = y(deal.amount);
      g.push(svg("path", { id: "chart-deal", d: "M" + cx + " " + (cy - 9) + " L" + (cx + 9) + " " + cy + " L" + cx + " " + (cy + 9) + " L" + (cx - 9) + " " + cy + " Z", class: "deal", "data-amount": deal.amount },
        svg("title", {}, "Deal at " + venue.usd(deal.amount))));
      g.push(svg("text", { x: Math.min(cx + 12, W - R - 110), y: cy - 10, class: "tick deal-label" }, "deal " + venue.usd(deal.amount)));
    }
    const title = svg("title", {}, "Amounts proposed over time" + (deal ? "; deal at " + venue.usd(deal.amount) : ""));
    box.replaceChildren(svg("svg", { id: "chart-svg", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": pts.length + " proposals charted" }, title, ...g));
  }

  function onFrame(f) {
    if (f.type === "negotiation_started") {
      const c = f.context;
      setStatus(c.status);
      st.deadline = c.deadline_at ? new Date(c.deadline_at) : null;
      if (c.started_at) st.startedAt = Date.parse(c.started_at);
      applyTurn(c);
      if (c.standing) st.standing = c.standing;
      else if (c.last_seq <= st.lastSeq) st.standing = null;
      renderStanding(); renderTurn(); tick(); chart();
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
    const what = { deal: "Deal", walked: "No deal: " + nameOf(f.by) + " walked away", turn_missed: "No deal: " + nameOf(f.by) + " missed its turn", expired: "No deal: the deadline passed" }[f.status] || f.status;
    const parts = [el("div", { class: "outcome-line" }, el("span", { class: "status " + f.status }, f.status.replace("_", " ")), " ", el("strong", {}, what), " at ", venue.time(f.at),
      st.startedAt ? " (" + venue.duration(Date.parse(f.at) - st.startedAt) + " after the start)" : "")];
    if (f.status === "deal") {
      parts.push(el("div", { class: "amount" }, amount(f.terms)));
      parts.push(el("div", { class: "term-list" }, ...venue.termFields(f.terms, false)));
      parts.push(venue.rawTerms(f.terms));
    }
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
          sigOK = await venue.ed25519Verify(venue.b64url(key.x), venue.b64url(parts[2]), new TextEncoder().encode(parts[0] + "." + parts[1]));
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
    venueLog.show(id, served, byId("logcheck"));
  }

  // watchers shows how many are watching, on every node of the venue.
  async function watchers() {
    try {
      const w = await venue.getJSON("/v1/negotiations/" + encodeURIComponent(id) + "/watchers");
      byId("watchers").textContent = "· " + w.watchers + (w.watchers === 1 ? " person watching" : " people watching");
      byId("watchers").dataset.count = w.watchers;
    } catch (e) { /* next time */ }
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
    if (view.delayed_seconds) {
      byId("delay").hidden = false;
      byId("delay").textContent = "Shown " + view.delayed_seconds + " seconds behind the parties (this venue delays what spectators see of a live negotiation).";
    }
    connect();
    watchers();
    setInterval(watchers, 3000);
    setInterval(tick, 250);
    setInterval(() => { if (st.status === "live") chart(); }, 5000);
    pausedPoll = setInterval(refreshPaused, 5000);
  }
  start();
})();
