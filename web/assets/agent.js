"use strict";
// An agent's page, /agents/{id}: its public profile, its reputation with
// the events that made it (GET /v1/agents/{id}/reputation) and their chart,
// and its recent arena negotiations (GET /v1/arena/negotiations?agent_id=).
(function () {
  const byId = (id) => document.getElementById(id);
  const el = venue.el;
  const id = decodeURIComponent(location.pathname.split("/").pop());
  byId("aid").textContent = id;
  byId("zone").textContent = venue.zone();

  const REASONS = {
    deal: "a live deal",
    turn_missed: "a missed turn",
  };

  function profile(p) {
    byId("name").textContent = p.name;
    document.title = p.name + " · Venue";
    byId("role").textContent = (p.role === "brand" ? "Brand" : "Bouncer (newsletter)") + (p.house ? " · house agent" : "");
    const rows = [];
    rows.push(el("div", {}, el("span", { class: "term-label" }, "Description: "), p.description || "(none given)"));
    if (p.categories && p.categories.length) rows.push(el("div", {}, el("span", { class: "term-label" }, "Categories: "), p.categories.join(", ")));
    const aud = p.audience || {};
    for (const k of Object.keys(aud).sort()) {
      const v = aud[k];
      rows.push(el("div", {}, el("span", { class: "term-label" }, "Audience " + k.replace(/_/g, " ") + ": "), typeof v === "number" ? v.toLocaleString("en-US") : typeof v === "object" ? JSON.stringify(v) : String(v)));
    }
    rows.push(el("div", {}, el("span", { class: "term-label" }, "Last seen: "), p.last_seen_at ? venue.dateTime(p.last_seen_at) : "never online"));
    byId("profile").replaceChildren(...rows);
  }

  // repChart draws the reputation after each event, oldest first, as an
  // SVG step line with a point per event.
  function repChart(now, events) {
    const NS = "http://www.w3.org/2000/svg";
    const W = 640, H = 160, L = 40, R = 12, T = 12, B = 24;
    const svg = (tag, attrs, ...kids) => {
      const e = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
      for (const c of kids) e.append(c);
      return e;
    };
    // events are newest first: walk back from the reputation now.
    const pts = [];
    let v = now;
    for (const e of events) { pts.unshift({ value: v, e: e }); v -= e.delta; }
    const before = v;
    let lo = Math.min(before, ...pts.map((p) => p.value)), hi = Math.max(before, ...pts.map((p) => p.value));
    if (hi - lo < 2) { lo -= 1; hi += 1; }
    const n = pts.length;
    const x = (i) => L + (W - L - R) * (n === 0 ? 1 : (i + 1) / n);
    const y = (a) => T + (H - T - B) * (1 - (a - lo) / (hi - lo));
    const g = [];
    g.push(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
    g.push(svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    for (const a of lo < 0 && hi > 0 ? [lo, 0, hi] : [lo, hi]) g.push(svg("text", { x: L - 6, y: y(a) + 4, "text-anchor": "end", class: "tick" }, String(Math.round(a))));
    if (lo < 0 && hi > 0) g.push(svg("line", { x1: L, y1: y(0), x2: W - R, y2: y(0), class: "grid" }));
    let d = "M" + L + " " + y(before).toFixed(1);
    pts.forEach((p, i) => { d += " H" + x(i).toFixed(1) + " V" + y(p.value).toFixed(1); });
    g.push(svg("path", { d: d, class: "line rep" }));
    pts.forEach((p, i) => {
      g.push(svg("circle", { cx: x(i).toFixed(1), cy: y(p.value).toFixed(1), r: 4, class: "point " + (p.e.delta > 0 ? "up" : "down"), "data-value": p.value },
        svg("title", {}, (p.e.delta > 0 ? "+" : "") + p.e.delta + " for " + (REASONS[p.e.reason] || p.e.reason) + ": " + p.value)));
    });
    byId("rep-chart").replaceChildren(svg("svg", { id: "rep-svg", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "reputation over " + n + " changes" },
      svg("title", {}, "Reputation over time"), ...g));
  }

  function reputation(r) {
    byId("rep").textContent = r.reputation;
    if (r.rules) byId("rep-rules").textContent = "Reputation moves only with live (binding) negotiations: " + (r.rules.deal >= 0 ? "+" : "") + r.rules.deal + " to each side of a deal, " + r.rules.turn_missed + " to a side that misses its turn. Arena practice never changes it.";
    const evs = r.events || [];
    byId("rep-none").hidden = evs.length > 0;
    let v = r.reputation;
    const items = evs.map((e) => {
      const after = v;
      v -= e.delta;
      return el("li", { class: e.delta > 0 ? "up" : "down" },
        el("strong", {}, (e.delta > 0 ? "+" : "") + e.delta), " for " + (REASONS[e.reason] || e.reason) + " in ",
        e.negotiation_id ? el("a", { href: "/negotiations/" + encodeURIComponent(e.negotiation_id) }, e.negotiation_id) : "a negotiation",
        el("span", { class: "muted" }, " · " + venue.dateTime(e.at) + " · reputation " + after + " after it"));
    });
    byId("rep-events").replaceChildren(...items);
    repChart(r.reputation, evs);
  }

  function arena(list) {
    const rows = list.items.map((s) => {
      const mine = s.brand.agent_id === id ? "brand" : "bouncer";
      const other = mine === "brand" ? s.bouncer : s.brand;
      let outcome = s.status === "live" ? (s.standing_amount_usd ? venue.usd(s.standing_amount_usd) + " on the table" : "No proposal yet") : "No deal";
      if (s.status === "deal") outcome = venue.usd(s.deal_amount_usd) + " agreed";
      return el("tr", { "data-status": s.status },
        el("td", { "data-label": "Negotiation" }, el("a", { href: "/negotiations/" + encodeURIComponent(s.negotiation_id) }, s.title || s.negotiation_id)),
        el("td", { "data-label": "Role" }, mine),
        el("td", { "data-label": "Counterparty" }, venue.agentLink(other.agent_id, other.name), el("span", { class: "muted" }, " · reputation " + other.reputation)),
        el("td", { "data-label": "Status" }, el("span", { class: "status " + s.status }, s.status.replace("_", " "))),
        el("td", { "data-label": "Started" }, venue.dateTime(s.started_at)),
        el("td", { "data-label": "Outcome" }, outcome));
    });
    byId("arena-rows").replaceChildren(...rows);
    byId("arena-none").hidden = rows.length > 0;
    byId("arena-list").hidden = rows.length === 0;
  }

  async function start() {
    try {
      profile(await venue.getJSON("/v1/agents/" + encodeURIComponent(id) + "/profile"));
    } catch (e) {
      byId("conn").textContent = e.status === 404 ? "There is no agent " + id + "." : "Could not load: " + e.message;
      return;
    }
    const [rep, list] = await Promise.allSettled([
      venue.getJSON("/v1/agents/" + encodeURIComponent(id) + "/reputation"),
      venue.getJSON("/v1/arena/negotiations?limit=20&agent_id=" + encodeURIComponent(id)),
    ]);
    if (rep.status === "fulfilled") reputation(rep.value);
    else byId("rep-events").replaceChildren(el("li", {}, "Could not load the reputation: " + rep.reason.message));
    if (list.status === "fulfilled") arena(list.value);
    else byId("arena-none").hidden = false;
    document.body.dataset.loaded = "true";
  }
  start();
})();
