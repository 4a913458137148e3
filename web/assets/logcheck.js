"use strict";
// venueLog checks, in the browser, a receipt's place in the venue's public
// receipt log (PROTOCOL.md "The receipt log"): the checkpoint's note
// signature with the log key pinned in this browser's storage on the first
// visit (loud when the venue's key changes), then the RFC 9162 inclusion
// proof of the receipt under that checkpoint. SHA-256 is WebCrypto's;
// Ed25519 is WebCrypto's, or the vendored @noble/ed25519 where the browser
// lacks it (venue.ed25519Verify).
(function () {
  const enc = new TextEncoder();
  const PIN = "venue.logKey:" + location.host;

  async function sha256(...parts) {
    let n = 0;
    for (const p of parts) n += p.length;
    const buf = new Uint8Array(n);
    let o = 0;
    for (const p of parts) { buf.set(p, o); o += p.length; }
    return new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
  }
  const leafHash = (receipt) => sha256(Uint8Array.of(0), enc.encode(receipt));
  const nodeHash = (l, r) => sha256(Uint8Array.of(1), l, r);
  const b64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

  // rootFromInclusion is RFC 9162 section 2.1.3.2.
  async function rootFromInclusion(index, size, leaf, path) {
    if (index >= size) throw new Error("leaf index " + index + " is outside a tree of " + size);
    let fn = index, sn = size - 1, r = leaf;
    for (const p of path) {
      if (sn === 0) throw new Error("the inclusion proof is too long");
      if (fn % 2 === 1 || fn === sn) {
        r = await nodeHash(p, r);
        if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      } else {
        r = await nodeHash(r, p);
      }
      fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
    }
    if (sn !== 0) throw new Error("the inclusion proof is too short");
    return r;
  }

  // openCheckpoint checks a signed note against a verifier key
  // "name+hash+base64(0x01 || key)" and returns {origin, size, root}.
  async function openCheckpoint(note, vkey) {
    const i = vkey.indexOf("+"), j = vkey.indexOf("+", i + 1);
    if (i < 0 || j < 0) throw new Error("the log key is not name+hash+key");
    const name = vkey.slice(0, i), hashHex = vkey.slice(i + 1, j), keyB64 = vkey.slice(j + 1);
    const key = b64(keyB64);
    if (key.length !== 33 || key[0] !== 1) throw new Error("the log key is not an Ed25519 note key");
    const cut = note.indexOf("\n\n");
    if (cut < 0) throw new Error("the checkpoint is not a signed note");
    const text = note.slice(0, cut + 1);
    let signed = false;
    for (const line of note.slice(cut + 2).split("\n")) {
      const m = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!m || m[1] !== name) continue;
      const sig = b64(m[2]);
      const h = Array.from(sig.slice(0, 4), (b) => b.toString(16).padStart(2, "0")).join("");
      if (h !== hashHex) continue;
      if (!(await venue.ed25519Verify(key.slice(1), sig.slice(4), enc.encode(text)))) throw new Error("the checkpoint's signature by " + name + " does not verify");
      signed = true;
    }
    if (!signed) throw new Error("the checkpoint is not signed by the pinned key " + vkey);
    const lines = text.split("\n");
    if (lines.length < 4 || lines[0] !== name) throw new Error("the checkpoint's origin is not " + name);
    return { origin: lines[0], size: Number(lines[1]), root: b64(lines[2]) };
  }

  // pinned returns the log key pinned in this browser (pinning the venue's
  // current one on the first visit) and what changed.
  function pinned(current) {
    let pin = null;
    try { pin = localStorage.getItem(PIN); } catch (e) { /* storage off: nothing pinned */ }
    if (!pin) {
      try { localStorage.setItem(PIN, current); } catch (e) { /* not kept */ }
      return { key: current, first: true, changed: false };
    }
    return { key: pin, first: false, changed: pin !== current };
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // check verifies the receipt of negotiation id in the log and returns
  // {ok, lines, index, size, keyChanged}.
  async function check(id, receipt) {
    const info = await venue.getJSON("/v1/info");
    const pin = pinned(info.log_verifier_key);
    const lines = [];
    if (pin.first) lines.push("Log key pinned in this browser on this first visit: " + pin.key);
    if (pin.changed) {
      const retired = (info.log_retired_keys || []).find((k) => k.key === pin.key);
      return {
        ok: false, keyChanged: true,
        lines: ["⚠ THE VENUE'S LOG KEY CHANGED since this browser pinned it.",
          "Pinned: " + pin.key, "Now served: " + info.log_verifier_key,
          retired ? "The venue lists the pinned key as retired after " + retired.tree_size + " entries (a rotation). Check that with others before trusting the new key."
            : "The venue does not list the pinned key as one of its retired keys: treat this log as untrusted."],
      };
    }
    let proof = null;
    for (let i = 0; i < 20 && !proof; i++) { // logged within a few seconds of the ending
      try {
        proof = await venue.getJSON("/v1/log/proof/inclusion?negotiation_id=" + encodeURIComponent(id));
      } catch (e) {
        if (e.status !== 404) throw e;
        await sleep(1500);
      }
    }
    if (!proof) return { ok: false, lines: ["The receipt is not in the public log yet."] };
    const note = await (await fetch("/v1/log/checkpoint", { cache: "no-store" })).text();
    let cp = await openCheckpoint(note, pin.key);
    if (cp.size !== proof.tree_size) { // a newer checkpoint since the proof: ask for its size
      proof = await venue.getJSON("/v1/log/proof/inclusion?negotiation_id=" + encodeURIComponent(id) + "&tree_size=" + cp.size);
    }
    lines.push("Checkpoint of " + cp.size + " entries signed by the pinned log key " + pin.key.split("+").slice(0, 2).join("+"));
    const root = await rootFromInclusion(proof.leaf_index, proof.tree_size, await leafHash(receipt), proof.hashes.map(b64));
    if (!same(root, cp.root)) return { ok: false, lines: ["The inclusion proof does not lead to the checkpoint's root: this receipt is NOT the log's entry."] };
    lines.push("Inclusion proof of " + proof.hashes.length + " hashes recomputed to the checkpoint's root");
    return { ok: true, lines, index: proof.leaf_index, size: cp.size };
  }

  // show runs check and writes its result into box.
  async function show(id, receipt, box) {
    box.hidden = false;
    box.className = "verify";
    box.textContent = "Checking the receipt's place in the public log…";
    let res;
    try { res = await check(id, receipt); } catch (e) { res = { ok: false, lines: ["The log check failed: " + e.message] }; }
    window.venueLog.last = res;
    const el = venue.el;
    const head = res.ok ? "✔ In the public receipt log: entry " + res.index + " of " + res.size + ", verified in your browser"
      : res.keyChanged ? "⚠ Log key changed: receipt log NOT verified" : "✘ Receipt log place NOT verified";
    box.className = "verify " + (res.ok ? "ok" : "bad") + (res.keyChanged ? " loud" : "");
    box.replaceChildren(el("strong", { id: "log-result" }, head), el("ul", {}, ...res.lines.map((l) => el("li", {}, l))));
    if (res.keyChanged) {
      const b = el("button", { type: "button" }, "Trust the new log key");
      b.addEventListener("click", () => { try { localStorage.removeItem(PIN); } catch (e) { /* ignore */ } show(id, receipt, box); });
      box.append(b);
    }
  }

  window.venueLog = { check, show, openCheckpoint, rootFromInclusion, last: null };
})();
