// edgeproxy status page, the routing explainer: asks POST admin/route/explain for one model and
// caller and shows each deployment's place in the decision. Separate from app.js on purpose;
// everything from the API is set as text, never parsed as HTML.
"use strict";

(() => {
  const KEY = "edgeproxy.adminKey"; // the key app.js keeps in this tab's session storage
  const $ = (id) => document.getElementById(id);
  const COLUMNS = ["deployment", "tier", "outcome", "cause", "rank", "score", "retry-after", "detail"];

  function cell(tag, text) {
    const node = document.createElement(tag);
    node.textContent = String(text);
    return node;
  }

  function row(candidate) {
    const tr = document.createElement("tr");
    tr.className = "explain-" + candidate.outcome;
    const cause = candidate.strategy ? `${candidate.cause} (${candidate.strategy})` : candidate.cause;
    const values = [
      candidate.deployment + (candidate.bound ? " (bound)" : ""),
      candidate.tier,
      candidate.outcome,
      cause,
      candidate.rank === null ? "-" : candidate.rank,
      candidate.score === null ? "-" : candidate.score,
      candidate.retry_after_ms ? (candidate.retry_after_ms / 1000).toFixed(1) + " s" : "-",
      candidate.detail || "-",
    ];
    for (const value of values) tr.append(cell("td", value));
    return tr;
  }

  function show(report) {
    const verdict = report.chosen
      ? `${report.chosen} by ${report.sticky ? "sticky binding" : report.strategy || "the only deployment"}`
      : `nothing routable (${report.blocked ? report.blocked.reason : "stopped"})`;
    $("explain-verdict").textContent = `${report.model} for ${report.caller} (${report.role}): ${verdict}`;
    const table = $("explain-table");
    table.replaceChildren();
    const head = document.createElement("tr");
    for (const name of COLUMNS) head.append(cell("th", name));
    table.append(head, ...report.candidates.map(row));
    table.hidden = false;
  }

  async function ask(event) {
    event.preventDefault();
    const error = $("explain-error");
    error.hidden = true;
    const caller = $("explain-caller").value.trim();
    const order = {
      operation: "chat",
      body: { model: $("explain-model").value.trim(), messages: [{ role: "user", content: "hi" }] },
    };
    if (/^[0-9a-f]{16}$/.test(caller)) order.key_id = caller;
    else order.caller = caller;
    try {
      const response = await fetch("route/explain", {
        method: "POST",
        headers: {
          accept: "application/json",
          "content-type": "application/json",
          authorization: "Bearer " + window.sessionStorage.getItem(KEY),
        },
        body: JSON.stringify(order),
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
      const data = await response.json().catch(() => null);
      if (!response.ok) throw new Error((data && data.error && data.error.message) || response.statusText);
      show(data);
    } catch (failure) {
      error.textContent = failure.message || String(failure);
      error.hidden = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = $("explain-form");
    if (form) form.addEventListener("submit", ask);
  });
})();
