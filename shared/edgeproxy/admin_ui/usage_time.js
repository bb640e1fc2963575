// edgeproxy console, usage over time (#usage): spend, tokens, requests, errors, response-cache
// hits and what they saved, and prompt-cache reads per hour (last 24 hours) or per day (last 7 or 30 days), by key, team,
// model, deployment or organization (its name beside its id), from GET admin/usage (the hourly aggregates, held to a scoped admin's
// team by the API). One stacked bar chart per measure (charts.js: SVG by hand), the same
// colour for the same key in every chart, and beside each the numbers it draws. The CSV is
// the API's own (format=csv), fetched with the admin key and handed to the browser as a file.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, $ } = C;
  const RANGES = {
    "24h": { hours: 24, granularity: "hour" },
    "7d": { hours: 7 * 24, granularity: "day" },
    "30d": { hours: 30 * 24, granularity: "day" },
  };
  const MEASURES = [
    { name: "spend", label: "Spend", of: (r) => r.cost_usd, fmt: (x) => C.fmtUsd(x) },
    { name: "tokens", label: "Tokens", of: (r) => r.tokens, fmt: C.fmtInt },
    { name: "requests", label: "Requests", of: (r) => r.requests, fmt: C.fmtInt },
    { name: "errors", label: "Errors (failed requests)", of: (r) => r.failures, fmt: C.fmtInt },
    { name: "cache", label: "Cache hits (answers the response cache served, no upstream call)", of: (r) => r.cache_hits, fmt: C.fmtInt },
    { name: "saved", label: "Saved by the response cache (what its answers had cost)", of: (r) => r.saved_usd, fmt: (x) => C.fmtUsd(x) },
    { name: "prompt-cache", label: "Prompt-cache reads (input tokens read from a provider's cache)", of: (r) => r.cache_read_tokens, fmt: C.fmtInt },
  ];
  const KEEP = 5; // series drawn on their own; the rest as "other"

  function query(format) {
    const range = RANGES[$("usage-range").value];
    const now = Date.now();
    const start = range.granularity === "day" ? Math.floor(now / 86400000) * 86400000 - (range.hours - 24) * 3600000 : Math.floor(now / 3600000) * 3600000 - (range.hours - 1) * 3600000;
    const params = new URLSearchParams({ from: new Date(start).toISOString(), granularity: range.granularity, group_by: $("usage-by").value });
    if (format) params.set("format", format);
    return { params, start, range };
  }

  // Every period of the range, as the API names them (2026-12-01 or 2026-12-01T13:00Z).
  function periods(start, range) {
    const step = range.granularity === "day" ? 86400000 : 3600000;
    const out = [];
    for (let at = start; at <= Date.now(); at += step) {
      const iso = new Date(at).toISOString();
      out.push(range.granularity === "day" ? iso.slice(0, 10) : iso.slice(0, 13) + ":00Z");
    }
    return out;
  }

  let orgNames = new Map(); // organization id -> its name (GET admin/organizations), for the legend

  function seriesName(row, by) {
    if (by === "organization" && row.organization && orgNames.get(row.organization)) return `${orgNames.get(row.organization)} (${row.organization})`;
    if (by === "key") return row.key_name ? `${row.key_name} (${row.key_id})` : row.key_id || "(no key)";
    return row[by] || `(no ${by})`;
  }

  function draw(report, axis, by) {
    const index = new Map(axis.map((p, i) => [p, i]));
    const names = new Map(); // name -> rows
    for (const row of report.rows) {
      const name = seriesName(row, by);
      if (!names.has(name)) names.set(name, []);
      names.get(name).push(row);
    }
    const total = (rows, m) => rows.reduce((sum, r) => sum + (m.of(r) || 0), 0);
    const ranked = [...names.keys()].sort((a, b) => total(names.get(b), MEASURES[0]) - total(names.get(a), MEASURES[0]) || total(names.get(b), MEASURES[2]) - total(names.get(a), MEASURES[2]) || a.localeCompare(b));
    const kept = ranked.slice(0, KEEP);
    const rest = ranked.slice(KEEP);
    const groups = kept.map((name, i) => ({ name, cls: "s" + i, rows: names.get(name) }));
    if (rest.length) groups.push({ name: `other (${rest.length})`, cls: "s-other", rows: rest.flatMap((n) => names.get(n)) });
    const box = $("usage-charts");
    box.replaceChildren();
    if (!report.rows.length) box.append(el("p", { class: "muted", text: "No requests in this period." }));
    for (const m of MEASURES) {
      const series = groups.map((g) => {
        const values = axis.map(() => 0);
        for (const r of g.rows) if (index.has(r.period)) values[index.get(r.period)] += m.of(r) || 0;
        return { name: g.name, cls: g.cls, values };
      });
      const numbers = groups.map((g) => el("tr", { "data-series": g.name }, el("td", {}, el("span", { class: "swatch " + g.cls, "aria-hidden": "true" }), document.createTextNode(g.name)), cell(m.fmt(total(g.rows, m)), "num")));
      const all = el("tr", { class: "total" }, cell("Total"), cell(m.fmt(total(report.rows, m)), "num"));
      const figure = el(
        "figure",
        { class: "usage-chart", "data-measure": m.name },
        el("figcaption", {}, el("h3", { text: m.label })),
        el("div", { class: "chart-row" }, el("div", { class: "chart-box" }, window.edgeproxyCharts.stacked(m.label, axis, series, m.fmt, m.name !== "spend")), C.table([by[0].toUpperCase() + by.slice(1), m.label.split(" (")[0]], [...numbers, all], "grid chart-numbers")),
      );
      box.append(figure);
    }
  }

  let loads = 0; // the newest load's number: an older answer arriving after it is not drawn

  async function load() {
    const error = $("usage-time-error");
    const { params, start, range } = query();
    const by = params.get("group_by"); // the grouping this answer is for, not the one shown later
    const mine = ++loads;
    try {
      const report = await C.api("GET", "usage?" + params.toString());
      if (by === "organization") {
        // A scoped admin may read no organization list: the legend then names the ids.
        const orgs = await C.api("GET", "organizations").catch(() => ({ data: [] }));
        orgNames = new Map(orgs.data.map((o) => [o.id, o.name]));
      }
      if (mine !== loads) return;
      draw(report, periods(start, range), by);
      error.hidden = true;
      $("usage-time-view").setAttribute("data-loaded", String(Date.now()));
    } catch (failure) {
      error.textContent = "Usage could not be read: " + (failure.message || failure);
      error.hidden = false;
    }
  }

  // The API's CSV with the admin key as a header (a plain link could not send it).
  async function csv() {
    const error = $("usage-time-error");
    try {
      const response = await fetch("usage?" + query("csv").params.toString(), {
        headers: { accept: "text/csv", authorization: "Bearer " + window.sessionStorage.getItem("edgeproxy.adminKey") },
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const url = URL.createObjectURL(await response.blob());
      const link = el("a", { href: url, download: `edgeproxy-usage-${$("usage-range").value}-by-${$("usage-by").value}.csv`, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      error.hidden = true;
    } catch (failure) {
      error.textContent = "The CSV could not be read: " + (failure.message || failure);
      error.hidden = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("usage", load);
    $("usage-range").addEventListener("change", load);
    $("usage-by").addEventListener("change", load);
    $("usage-reload").addEventListener("click", load);
    $("usage-csv").addEventListener("click", csv);
    $("usage-filters").addEventListener("submit", (event) => event.preventDefault());
  });
})();
