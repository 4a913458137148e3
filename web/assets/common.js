// Shared helpers of the venue's pages. No dependencies.
"use strict";

const venue = {};

// el builds an element: el("a", {href: "/x", class: "y"}, "text", child...).
venue.el = function (tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
};

// Times are shown in the viewer's own time zone (PROTOCOL.md "Pages"),
// 24-hour, each labelled with the zone's short name ("14:05:09 UTC").
venue.time = function (iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (isNaN(d)) return "—";
  return d.toLocaleTimeString("en-GB", { hourCycle: "h23", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
};
venue.dateTime = function (iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (isNaN(d)) return "—";
  return d.toLocaleString("en-GB", { day: "numeric", month: "short", year: "numeric", hourCycle: "h23", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
};
venue.zone = function () {
  let z = "local time";
  try { z = Intl.DateTimeFormat().resolvedOptions().timeZone || z; } catch (e) { /* keep */ }
  return z + ", 24-hour clock";
};

// duration renders milliseconds as "4.2 s", "1 min 05 s", "2 h 03 min".
venue.duration = function (ms) {
  if (!(ms >= 0)) return "—";
  if (ms < 10000) return (ms / 1000).toFixed(1) + " s";
  const s = Math.round(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) ? Math.floor(s / 60) + " min " + String(s % 60).padStart(2, "0") + " s" : s + " s";
  return Math.floor(s / 3600) + " h " + String(Math.floor(s / 60) % 60).padStart(2, "0") + " min";
};

// agentLink is an agent's name linking to its page, /agents/{id}.
venue.agentLink = function (agentID, name, attrs) {
  return venue.el("a", Object.assign({ href: "/agents/" + encodeURIComponent(agentID), class: "agent" }, attrs || {}), name || agentID);
};

// termFields are the terms the venue reads, as labelled rows
// (DELEGATION.md "What the venue reads in `terms`"), other keys after them.
venue.termFields = function (t, withAmount) {
  const rows = [];
  if (!t || typeof t !== "object") return rows;
  const known = new Set(["amount_usd", "category", "sends", "flight", "usage_rights_days", "exclusivity"]);
  if (withAmount && t.amount_usd !== undefined) rows.push(["Amount", venue.usd(t.amount_usd)]);
  if (t.category !== undefined) rows.push(["Category", String(t.category)]);
  if (t.sends !== undefined) rows.push(["Sends", String(t.sends)]);
  if (t.flight && typeof t.flight === "object") rows.push(["Flight", t.flight.start + " to " + t.flight.end]);
  if (t.usage_rights_days !== undefined) rows.push(["Usage rights", t.usage_rights_days + " days"]);
  if (t.exclusivity && typeof t.exclusivity === "object") rows.push(["Exclusivity", (t.exclusivity.categories || []).join(", ") + " for " + t.exclusivity.days + " days"]);
  for (const k of Object.keys(t).sort()) {
    if (!known.has(k)) rows.push([k.replace(/_/g, " "), typeof t[k] === "object" ? JSON.stringify(t[k]) : String(t[k])]);
  }
  return rows.map(([k, v]) => venue.el("div", { class: "term" }, venue.el("span", { class: "term-label" }, k + ": "), v));
};

// rawTerms is the terms' JSON behind a toggle (a details element).
venue.rawTerms = function (t) {
  return venue.el("details", { class: "raw" }, venue.el("summary", {}, "Raw terms (JSON)"), venue.el("code", { class: "terms" }, JSON.stringify(t)));
};

// countdown renders milliseconds left as m:ss (0:00 when past).
venue.countdown = function (ms) {
  if (ms <= 0) return "0:00";
  const s = Math.ceil(ms / 1000);
  return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
};

venue.usd = function (v) {
  if (v === null || v === undefined) return "—";
  const n = Number(v);
  if (!isFinite(n)) return String(v);
  return "$" + n.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
};

venue.getJSON = async function (path) {
  const r = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const err = new Error((body && body.error && body.error.message) || ("HTTP " + r.status));
    err.status = r.status;
    err.code = body && body.error && body.error.code;
    throw err;
  }
  return body;
};

venue.wsURL = function (path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
};

// Backoff for reconnects: 0.5 s doubling to 10 s, with jitter.
venue.backoff = function (attempt) {
  const max = Math.min(10000, 500 * Math.pow(2, attempt));
  return max / 2 + Math.random() * max / 2;
};

// jcs is RFC 8785 canonical JSON of a parsed value: object keys sorted by
// UTF-16 code units, numbers and strings as ECMAScript serialises them.
venue.jcs = function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
};

venue.sha256hex = async function (text) {
  const buf = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
};

venue.b64url = function (s) {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
  const pad = s.length % 4 === 2 ? "==" : s.length % 4 === 3 ? "=" : s.length % 4 === 1 ? null : "";
  if (pad === null) throw new Error("not base64url");
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + pad);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
};

// The owner portal is linked from every page when an IRC bridge runs (its
// sign-in goes through the bridge; without one the portal could not work).
document.addEventListener("DOMContentLoaded", function () {
  const nav = document.querySelector("header.site nav");
  if (!nav) return;
  fetch("/owner/api/bridge", { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : { bridge: false }))
    .then((d) => {
      if (d.bridge && !nav.querySelector("a[href='/owner']")) nav.append(venue.el("a", { href: "/owner" }, "Owner portal"));
    })
    .catch(() => {});
});
