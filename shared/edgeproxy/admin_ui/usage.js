// edgeproxy status page, usage view: spend and tokens by client key and model over the last
// 24 hours and the last 30 days, from GET admin/usage (the hourly aggregates, never the
// request log). Its own script: it reads the admin key the page stored for this tab and
// draws into #usage-view once the board is shown. Text only: nothing from the API is ever
// parsed as HTML.
"use strict";

(() => {
  const KEY = "edgeproxy.adminKey";
  const EVERY_S = 60;
  const WINDOWS = [
    { id: "usage-day", hours: 24 },
    { id: "usage-month", hours: 30 * 24 },
  ];
  const $ = (id) => document.getElementById(id);
  let timer = null;

  function cell(tag, text, cls) {
    const node = document.createElement(tag);
    node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  const fmtInt = (n) => Math.round(n || 0).toLocaleString("en");
  const fmtUsd = (x) => "$" + (x || 0).toFixed(x >= 100 ? 2 : 4);

  // Rows of every period summed per key and model, largest spend first.
  function summed(rows) {
    const by = new Map();
    for (const row of rows) {
      const id = (row.key_id || "-") + "\u0000" + (row.model || "");
      const held = by.get(id) || {
        key: row.key_name || row.key_id || "-",
        model: row.model || "",
        requests: 0,
        tokens: 0,
        cost: 0,
      };
      held.requests += row.requests || 0;
      held.tokens += row.tokens || 0;
      held.cost += row.cost_usd || 0;
      by.set(id, held);
    }
    return [...by.values()].sort((a, b) => b.cost - a.cost || b.tokens - a.tokens);
  }

  function table(report) {
    const rows = summed(report.rows);
    if (!rows.length) return cell("p", "No requests in this window.", "muted");
    const head = document.createElement("tr");
    for (const name of ["Key", "Model", "Requests", "Tokens", "Spend"]) head.append(cell("th", name));
    const body = rows.map((r) => {
      const tr = document.createElement("tr");
      tr.append(
        cell("td", r.key),
        cell("td", r.model),
        cell("td", fmtInt(r.requests), "num"),
        cell("td", fmtInt(r.tokens), "num"),
        cell("td", fmtUsd(r.cost), "num"),
      );
      return tr;
    });
    const totals = document.createElement("tr");
    totals.className = "total";
    totals.append(
      cell("td", "Total"),
      cell("td", ""),
      cell("td", fmtInt(report.totals.requests), "num"),
      cell("td", fmtInt(report.totals.tokens), "num"),
      cell("td", fmtUsd(report.totals.cost_usd), "num"),
    );
    const node = document.createElement("table");
    node.className = "usage-table";
    const thead = document.createElement("thead");
    thead.append(head);
    const tbody = document.createElement("tbody");
    tbody.append(...body, totals);
    node.append(thead, tbody);
    return node;
  }

  async function report(hours) {
    const key = window.sessionStorage.getItem(KEY);
    const from = new Date(Date.now() - hours * 3600 * 1000).toISOString();
    const params = new URLSearchParams({ from, group_by: "key,model", granularity: "day" });
    const response = await fetch("usage?" + params.toString(), {
      headers: { accept: "application/json", authorization: "Bearer " + key },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    if (!response.ok) throw new Error("usage report: HTTP " + response.status);
    return response.json();
  }

  async function refresh() {
    const view = $("usage-view");
    const board = $("board");
    if (!view || !board || board.hidden || !window.sessionStorage.getItem(KEY)) return;
    try {
      const reports = await Promise.all(WINDOWS.map((w) => report(w.hours)));
      WINDOWS.forEach((w, i) => $(w.id).replaceChildren(table(reports[i])));
      $("usage-error").hidden = true;
      view.setAttribute("data-loaded", "true");
    } catch (error) {
      $("usage-error").textContent = "Usage could not be read: " + (error.message || error);
      $("usage-error").hidden = false;
    }
  }

  function schedule() {
    clearTimeout(timer);
    refresh().finally(() => {
      timer = setTimeout(schedule, EVERY_S * 1000);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const board = $("board");
    if (!board) return;
    // Draw as soon as the page shows the board (sign-in), then every minute.
    new MutationObserver(() => {
      if (!board.hidden) schedule();
    }).observe(board, { attributes: true, attributeFilter: ["hidden"] });
    if (!board.hidden) schedule();
  });
})();
