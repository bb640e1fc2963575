// edgeproxy console, the request log view (#log): one hour of the log (GET
// admin/usage/requests?at=, newest first), filtered in the page by key, team, model,
// deployment, status and the minutes of the hour (from, to), and by end user through the API
// (end_user=, the records that named that end user); a record opens its attempts (the deployments tried, in order, and
// why it moved on), its latency, tokens and cost, and a link to the routing explainer.
// The log names each record's key and the key's team when the request ran; a record of an
// older release without it takes the key's team now (from GET admin/keys).
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, $ } = C;
  const LIMIT = 1000;

  let records = [];
  let teamOf = new Map(); // key id -> team id
  let openId = null;

  // The hour picker's value (a UTC time, minutes ignored) as an ISO time; now if empty.
  function hourAt() {
    const text = $("log-hour").value;
    return text ? text + ":00Z" : new Date().toISOString();
  }

  function options(select, values, anyText) {
    const chosen = select.value;
    select.replaceChildren(el("option", { value: "", text: anyText }), ...[...values].sort().map((v) => el("option", { value: v, text: v })));
    select.value = values.has(chosen) ? chosen : "";
  }

  async function load() {
    const error = $("log-error");
    try {
      const params = new URLSearchParams({ at: hourAt(), limit: String(LIMIT) });
      const endUser = $("log-end-user").value.trim();
      if (endUser) params.set("end_user", endUser); // the API's filter: the hour's records of this end user
      const [log, keys] = await Promise.all([C.api("GET", "usage/requests?" + params.toString()), C.api("GET", "keys").catch(() => ({ data: [] }))]);
      records = log.data;
      teamOf = new Map(keys.data.map((k) => [k.id, k.team_id]));
      $("log-hour-shown").textContent = `${log.hour} (UTC), ${records.length} record${records.length === 1 ? "" : "s"}${records.length >= LIMIT ? ", the newest " + LIMIT : ""}`;
      options($("log-key"), new Set(records.map((r) => r.key_name ? `${r.key_name} (${r.key_id})` : r.key_id || "-")), "Any key");
      options($("log-team"), new Set(records.map(teamOfRecord)), "Any team");
      options($("log-model"), new Set(records.map((r) => r.model)), "Any model");
      options($("log-deployment"), new Set(records.flatMap((r) => r.tried)), "Any deployment");
      error.hidden = true;
      draw();
      $("log-view").setAttribute("data-loaded", String(Date.now()));
    } catch (failure) {
      error.textContent = "The request log could not be read: " + (failure.message || failure);
      error.hidden = false;
    }
  }

  const teamOfRecord = (r) => r.team || teamOf.get(r.key_id) || "-";
  // A record's time of day (UTC) as HH:MM, as a time input's value reads.
  const clock = (r) => C.fmtEpoch(r.at).slice(11, 16);

  const keyLabel = (r) => (r.key_name ? `${r.key_name} (${r.key_id})` : r.key_id || "-");

  function statusMatches(r, wanted) {
    if (!wanted) return true;
    if (/^\dxx$/.test(wanted)) return String(r.status)[0] === wanted[0];
    return r.outcome === wanted;
  }

  function matching() {
    const [key, team, model, dep, status, from, to] = ["log-key", "log-team", "log-model", "log-deployment", "log-status", "log-from", "log-to"].map((id) => $(id).value);
    return records.filter(
      (r) =>
        (!key || keyLabel(r) === key) &&
        (!team || teamOfRecord(r) === team) &&
        (!from || clock(r) >= from) &&
        (!to || clock(r) <= to) &&
        (!model || r.model === model) &&
        (!dep || r.tried.includes(dep)) &&
        statusMatches(r, status),
    );
  }

  function row(r) {
    const tr = el(
      "tr",
      { "data-request": r.request_id, "data-outcome": r.outcome, class: r.request_id === openId ? "chosen" : null },
      cell(C.fmtEpoch(r.at).slice(11)),
      cell(keyLabel(r)),
      cell(r.end_user || "-"),
      cell(r.model),
      cell(r.deployment || "-"),
      el("td", {}, el("span", { class: "state state-log-" + r.outcome, text: `${r.status} ${r.outcome}` }), r.cache ? el("span", { class: "cache-tag", "data-cache": r.cache, text: ` cache: ${r.cache}` }) : null),
      cell(`${C.fmtInt(r.latency_ms)} ms`, "num"),
      cell(C.fmtUsd(r.cost_usd) + (r.cache === "hit" ? ` (saved ${C.fmtUsd(r.saved_usd)})` : ""), "num"),
      el("td", {}, el("button", { type: "button", class: "act-open-record", text: "Open", "aria-label": `Open request ${r.request_id}`, onclick: () => open(r) })),
    );
    return tr;
  }

  function draw() {
    const shown = matching();
    const columns = ["Time (UTC)", "Key", "End user", "Model", "Served by", "Status", "Latency", "Cost", ""];
    $("log-list").replaceChildren(C.table(columns, shown.map(row), "grid log-table"));
    if (!shown.length) $("log-list").append(el("p", { class: "muted", text: records.length ? "No record matches these filters." : "No requests in this hour." }));
    $("log-count").textContent = `${shown.length} of ${records.length} shown`;
  }

  // Each deployment tried, in order, and what became of it.
  function attempts(r) {
    const list = el("ol", { class: "attempts" });
    if (r.cache === "hit") {
      list.append(el("li", { text: "answered from the response cache: no deployment was called" + (r.deployment ? ` (the stored answer came from ${r.deployment})` : "") }));
      return list;
    }
    r.tried.forEach((dep, i) => {
      const last = i === r.tried.length - 1;
      let what;
      if (last && r.deployment === dep) what = r.outcome === "stream_cut" ? `served, then the stream was cut (${r.failure_class || "error"})` : "served the answer";
      else if (r.deployment === dep && r.continued) what = "served part of a stream, continued on the next";
      else if (last) what = `failed: ${r.failure_class || "error"} (the request ended here)`;
      else what = "failed; the request moved on to the next";
      list.append(el("li", { "data-deployment": dep }, el("strong", { text: dep }), document.createTextNode(" · " + what)));
    });
    if (!r.tried.length) list.append(el("li", { text: `no deployment was tried: ${r.outcome} (${r.failure_class || "refused before routing"})` }));
    return list;
  }

  function facts(r) {
    const list = el("dl", { class: "facts" });
    const add = (label, value) => list.append(el("dt", { text: label }), el("dd", { text: value }));
    add("Request id", r.request_id);
    add("Time", C.fmtEpoch(r.at));
    const team = teamOfRecord(r);
    add("Key", keyLabel(r) + (team !== "-" ? ` · team ${team}` : "") + (r.organization ? ` · organization ${r.organization}` : ""));
    if (r.end_user) add("End user", r.end_user);
    add("Model", r.served_model && r.served_model !== r.model ? `${r.model} → ${r.served_model}` : r.model);
    add("Operation", r.operation + (r.stream ? " (stream)" : ""));
    add("Status", `${r.status} ${r.outcome}` + (r.failure_class ? ` (${r.failure_class})` : ""));
    add("Latency", `${C.fmtInt(r.latency_ms)} ms in all · ${C.fmtInt(r.upstream_ms)} ms upstream · ${C.fmtInt(r.added_ms)} ms added by the gateway` + (r.ttft_ms === null ? "" : ` · first token ${C.fmtInt(r.ttft_ms)} ms`));
    add("Tokens", `${C.fmtInt(r.prompt_tokens)} in (${C.fmtInt(r.cache_read_tokens)} from the provider's prompt cache) · ${C.fmtInt(r.completion_tokens)} out` + (r.usage_estimated ? " (estimated)" : ""));
    add("Cost", C.fmtUsd(r.cost_usd));
    if (r.cache) add("Response cache", r.cache === "hit" ? `hit · no upstream call · saved ${C.fmtUsd(r.saved_usd)}` : r.cache);
    if (r.anomalies.length) add("Anomalies", r.anomalies.join(", "));
    if (r.notes && r.notes.length) add("Notes", r.notes.join(", "));
    return list;
  }

  // The explainer on the status view, filled with this record's model and key, and run:
  // it explains the routing as it stands now (the log keeps no routing state of the past).
  function explain(r) {
    window.location.hash = "#status";
    $("explain-model").value = r.model;
    $("explain-caller").value = r.key_id || "";
    if (r.key_id) $("explain-form").requestSubmit();
    $("explain").scrollIntoView();
  }

  // What the explainer cannot replay: the admin changes made since the request (the audit
  // log's newest 200), so the operator knows whether "now" is still "that moment".
  async function since(r) {
    let entries;
    try {
      entries = (await C.api("GET", "audit?limit=200")).data;
    } catch (_) {
      return; // a scoped admin reads no audit log: nothing said
    }
    const box = $("log-since");
    if (!box || openId !== r.request_id) return;
    const later = entries.filter((e) => e.at > r.at);
    box.setAttribute("data-changes", String(later.length));
    if (!later.length) {
      box.textContent = "No admin change since this request: the explainer's configuration is the one it met (health, circuits and limits move on their own).";
      return;
    }
    const shown = later.slice(0, 3).map((e) => `${C.fmtEpoch(e.at).slice(11)} ${e.action} ${e.target}`);
    box.textContent = `${later.length} admin change${later.length === 1 ? "" : "s"} since this request (${shown.join("; ")}${later.length > 3 ? "; …" : ""}): the explainer shows the routing as it is now.`;
  }

  function open(r) {
    openId = r.request_id;
    const box = $("log-record");
    box.replaceChildren(
      el("h3", { text: "Request " + r.request_id }),
      facts(r),
      el("h4", { text: `Attempts (${r.attempts})` }),
      attempts(r),
      el(
        "p",
        {},
        el("button", { type: "button", id: "log-explain", text: "Explain this model and key's routing now", onclick: () => explain(r) }),
        el("span", { class: "muted", text: ` (the request was at ${C.fmtEpoch(r.at)})` }),
      ),
      el("p", { id: "log-since", class: "muted" }),
      el("button", { type: "button", id: "log-record-close", text: "Close", onclick: closeRecord }),
    );
    since(r);
    box.hidden = false;
    box.setAttribute("data-request", r.request_id);
    draw();
    box.querySelector("#log-record-close").focus();
  }

  function closeRecord() {
    openId = null;
    $("log-record").hidden = true;
    $("log-record").replaceChildren();
    draw();
  }

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("log", load);
    for (const id of ["log-key", "log-team", "log-model", "log-deployment", "log-status", "log-from", "log-to"]) $(id).addEventListener("input", draw);
    $("log-hour").addEventListener("change", load);
    $("log-end-user").addEventListener("change", load);
    $("log-reload").addEventListener("click", load);
    $("log-filters").addEventListener("submit", (event) => event.preventDefault());
  });
})();
