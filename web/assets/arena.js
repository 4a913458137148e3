"use strict";
(function () {
  const byId = (id) => document.getElementById(id);
  const el = venue.el;
  const ENDED = ["deal", "walked", "turn_missed", "expired"];
  let filter = "";
  let nextOffset = null;
  const rows = new Map(); // negotiation_id -> summary, in display order

  byId("zone").textContent = venue.zone();

  function matches(s) {
    if (filter === "") return s.status === "live" || ENDED.includes(s.status);
    if (filter === "ended") return ENDED.includes(s.status);
    return s.status === filter;
  }

  function party(p) {
    return el("span", {}, venue.agentLink(p.agent_id, p.name), " ", el("span", { class: "muted" }, "· reputation " + p.reputation));
  }

  function row(s) {
    let table = s.standing_amount_usd !== null && s.standing_amount_usd !== undefined ? venue.usd(s.standing_amount_usd) : "No proposal yet";
    if (s.status === "deal") table = venue.usd(s.deal_amount_usd) + " agreed";
    else if (s.status !== "live") table = "No deal";
    return el("tr", { id: "row-" + s.negotiation_id, "data-status": s.status },
      el("td", { "data-label": "Negotiation" }, el("a", { href: "/negotiations/" + encodeURIComponent(s.negotiation_id) }, s.title || s.negotiation_id)),
      el("td", { "data-label": "Brand" }, party(s.brand)),
      el("td", { "data-label": "Bouncer" }, party(s.bouncer)),
      el("td", { "data-label": "Status" }, el("span", { class: "status " + s.status }, s.status.replace("_", " "))),
      el("td", { "data-label": "Started" }, venue.dateTime(s.started_at)),
      el("td", { "data-label": "Last activity" }, venue.time(s.last_activity_at)),
      el("td", { "data-label": "On the table" }, table));
  }

  function render() {
    const body = byId("rows");
    const list = [...rows.values()].filter(matches);
    body.replaceChildren(...list.map(row));
    byId("empty").hidden = list.length > 0;
    byId("more").hidden = nextOffset === null;
  }

  async function load(append) {
    const q = new URLSearchParams({ limit: "50" });
    if (filter) q.set("status", filter);
    if (append && nextOffset !== null) q.set("offset", String(nextOffset));
    const list = await venue.getJSON("/v1/arena/negotiations?" + q);
    if (!append) rows.clear();
    for (const s of list.items) rows.set(s.negotiation_id, s);
    nextOffset = list.next_offset;
    render();
  }

  function upsert(s, isNew) {
    if (isNew && !rows.has(s.negotiation_id)) {
      // Newest first: put it on top.
      const old = [...rows.entries()];
      rows.clear();
      rows.set(s.negotiation_id, s);
      for (const [k, v] of old) rows.set(k, v);
    } else {
      rows.set(s.negotiation_id, s);
    }
    render();
  }

  for (const b of document.querySelectorAll(".filters button")) {
    b.addEventListener("click", () => {
      for (const o of document.querySelectorAll(".filters button")) o.setAttribute("aria-pressed", String(o === b));
      filter = b.dataset.status;
      load(false).catch(showError);
    });
  }
  byId("more").addEventListener("click", () => load(true).catch(showError));

  function showError(e) { byId("conn").textContent = "Could not load the arena: " + e.message; }

  let attempt = 0;
  function connect() {
    const ws = new WebSocket(venue.wsURL("/v1/arena/ws"));
    ws.onopen = () => {
      byId("conn").textContent = "Live: updates arrive as they happen.";
      // Subscribed first, then the list: nothing falls between (and after a
      // drop, whatever happened meanwhile is read again).
      load(false).catch(showError);
      attempt = 0;
    };
    ws.onmessage = (m) => {
      const f = JSON.parse(m.data);
      if (f.type === "arena_resync") { load(false).catch(showError); return; }
      if (f.negotiation) upsert(f.negotiation, f.type === "arena_negotiation_started");
    };
    ws.onclose = () => {
      byId("conn").textContent = "Connection lost; reconnecting…";
      attempt++;
      setTimeout(connect, venue.backoff(attempt));
    };
  }
  connect();
})();
