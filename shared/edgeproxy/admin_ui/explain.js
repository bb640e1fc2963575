// edgeproxy status page, the routing explainer: asks POST admin/route/explain for one model and
// caller and shows each deployment's place in the decision, and the limits of the key's team,
// organization and end user (``levels``) with the one that would refuse it (``refused_by``:
// level, id, reason). Separate from app.js on purpose; everything from the API is set as
// text, never parsed as HTML.
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

  // "used / limit" of one counter, "-" when the level sets no such limit.
  const of = (used, limit, money) => (limit === null || limit === undefined ? "-" : money ? `$${Number(used).toFixed(4)} / $${Number(limit).toFixed(2)}` : `${used} / ${limit}`);

  function levels(report) {
    const box = $("explain-levels");
    const rows = report.levels || [];
    box.replaceChildren();
    box.hidden = rows.length === 0;
    if (!rows.length) return;
    const refused = report.refused_by;
    const table = document.createElement("table");
    table.className = "grid explain-levels";
    const head = document.createElement("tr");
    for (const name of ["level", "id", "requests this minute", "tokens this minute", "spend", "in flight"]) head.append(cell("th", name));
    table.append(head);
    for (const level of rows) {
      const tr = document.createElement("tr");
      tr.setAttribute("data-level", level.level);
      if (refused && refused.level === level.level && refused.id === level.id) tr.className = "explain-refused";
      tr.append(
        cell("td", level.level),
        cell("td", level.id),
        cell("td", of(level.requests_this_minute, level.rpm_limit)),
        cell("td", of(level.tokens_this_minute, level.tpm_limit)),
        cell("td", of(level.spend_usd, level.budget_usd, true)),
        cell("td", of(level.in_flight, level.max_parallel_requests)),
      );
      table.append(tr);
    }
    box.append(table);
  }

  function refusal(report) {
    const box = $("explain-refused");
    const refused = report.refused_by;
    box.hidden = !refused;
    if (!refused) return box.replaceChildren();
    const retry = refused.retry_after_s ? ` Retry after ${Math.ceil(refused.retry_after_s)} s.` : "";
    box.textContent = `Refused at the ${refused.level} level, ${refused.id} (${refused.reason}): ${refused.message}${retry}`;
    box.setAttribute("data-level", refused.level);
    box.setAttribute("data-reason", refused.reason);
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
    refusal(report);
    levels(report);
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
