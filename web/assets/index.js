"use strict";
(function () {
  const byId = (id) => document.getElementById(id);
  const rows = new Map(); // negotiation_id -> summary
  const ENDED = ["deal", "walked", "turn_missed", "expired"];

  function render() {
    let live = 0, ended = 0, deals = 0;
    for (const s of rows.values()) {
      if (s.status === "live") live++;
      else if (ENDED.includes(s.status)) { ended++; if (s.status === "deal") deals++; }
    }
    byId("count-live").textContent = live;
    byId("count-ended").textContent = ended >= 100 ? "100+" : ended;
    byId("count-deals").textContent = deals;
  }

  async function load() {
    const list = await venue.getJSON("/v1/arena/negotiations?limit=100");
    rows.clear();
    for (const s of list.items) rows.set(s.negotiation_id, s);
    render();
  }

  let attempt = 0;
  function connect() {
    const ws = new WebSocket(venue.wsURL("/v1/arena/ws"));
    ws.onopen = () => { attempt = 0; byId("conn").textContent = "Live."; load().catch(() => {}); };
    ws.onmessage = (m) => {
      const f = JSON.parse(m.data);
      if (f.type === "arena_resync") { load().catch(() => {}); return; }
      if (f.negotiation) { rows.set(f.negotiation.negotiation_id, f.negotiation); render(); }
    };
    ws.onclose = () => {
      byId("conn").textContent = "Reconnecting…";
      setTimeout(connect, venue.backoff(attempt++));
    };
  }
  load().catch((e) => { byId("conn").textContent = "Could not load the arena: " + e.message; });
  connect();
})();
