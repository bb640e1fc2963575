// edgeproxy status page: reads the admin API (relative URLs under admin/) with the admin
// key from this tab's session storage, sent only as "Authorization: Bearer". Redraws every
// few seconds without reloading; every action asks first and is audited by the API.
"use strict";

(() => {
  const KEY = "edgeproxy.adminKey";
  const query = new URLSearchParams(window.location.search);
  const EVERY_S = Math.max(1, Number(query.get("every")) || 5); // ?every=N: seconds
  const HISTORY_MINUTES = 60;
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;

  let timer = null;
  let refreshes = 0;
  let signedIn = false;
  let round = 0; // the latest tick: an older one still in flight schedules nothing
  const opened = new Set(); // deployments whose details are open: kept across redraws

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  const adminKey = () => window.sessionStorage.getItem(KEY);

  async function api(method, path, options = {}) {
    const headers = { accept: "application/json", authorization: "Bearer " + adminKey() };
    let body;
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    if (options.version !== undefined) headers["if-match"] = '"' + options.version + '"';
    const response = await fetch(path, {
      method,
      headers,
      body,
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const message = (data && data.error && data.error.message) || response.statusText;
      throw new ApiError(response.status, message || "request failed");
    }
    return data;
  }

  // -- small DOM helpers (text only: nothing from the API is ever parsed as HTML) ---------

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "onclick") node.addEventListener("click", value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function svg(tag, attrs = {}) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    return node;
  }

  const fmtInt = (n) => (n === null || n === undefined ? "-" : Math.round(n).toLocaleString("en"));
  const fmtPct = (x) => (100 * (x || 0)).toFixed(0) + " %";

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "-";
    return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s";
  }

  // An epoch-seconds time as "HH:MM UTC" (the per-minute counters date to the minute).
  const fmtClock = (at) => new Date(at * 1000).toISOString().slice(11, 16) + " UTC";

  function fmtAge(seconds) {
    if (seconds < 90) return Math.round(seconds) + " s";
    if (seconds < 5400) return Math.round(seconds / 60) + " min";
    return (seconds / 3600).toFixed(1) + " h";
  }

  function bar(fraction, cls = "") {
    const root = svg("svg", { class: "bar", viewBox: "0 0 100 6", preserveAspectRatio: "none" });
    const width = Math.max(0, Math.min(1, fraction || 0)) * 100;
    root.append(svg("rect", { class: "track", x: 0, y: 0, width: 100, height: 6, rx: 2 }));
    root.append(svg("rect", { class: ("fill " + cls).trim(), x: 0, y: 0, width, height: 6, rx: 2 }));
    return root;
  }

  // A sparkline of one or more series (null values break the line), scaled to their max.
  function spark(lines) {
    const n = Math.max(1, ...lines.map((l) => l.values.length));
    const top = Math.max(1, ...lines.flatMap((l) => l.values.filter((v) => v !== null)));
    const root = svg("svg", { class: "spark", viewBox: `0 0 ${n} 20`, preserveAspectRatio: "none" });
    root.append(svg("line", { class: "base", x1: 0, y1: 19.5, x2: n, y2: 19.5, "vector-effect": "non-scaling-stroke" }));
    for (const line of lines) {
      let run = [];
      const flush = () => {
        if (run.length === 1) run.push([run[0][0] + 0.8, run[0][1]]); // a lone minute: a dash
        if (run.length) {
          const points = run.map(([x, y]) => `${x},${y.toFixed(2)}`).join(" ");
          root.append(svg("polyline", { class: line.cls || "", points, "vector-effect": "non-scaling-stroke" }));
        }
        run = [];
      };
      line.values.forEach((v, i) => {
        if (v === null) flush();
        else run.push([i + 0.1, 19 - (18 * v) / top]);
      });
      flush();
    }
    return root;
  }

  // -- what one deployment card shows ---------------------------------------------------

  // What the state badge says: a drained deployment is drained, whatever its circuit.
  const shown = (dep) => (dep.drained ? "drained" : dep.status);

  function why(dep) {
    const parts = [];
    const c = dep.circuit;
    if (dep.drained) {
      const d = dep.drain;
      parts.push(d ? `drained by ${d.actor} at ${fmtClock(d.at)}` : "drained (enabled: false)");
    }
    if (dep.status === "cooldown" || dep.status === "half_open") {
      parts.push("circuit " + c.state + (c.cause ? " (" + c.cause + ")" : ""));
      if (c.reason) parts.push("“" + c.reason + "”");
    }
    if (dep.limit) parts.push("limit: " + dep.limit);
    if (dep.credential_rejections > 0) parts.push(dep.credential_rejections + " credential rejections");
    return parts.join(" · ");
  }

  function quotaText(quota) {
    if (!quota) return "not reported";
    const units = quota.units.map((q) => {
      const left = q.limit ? `${fmtInt(q.remaining)} / ${fmtInt(q.limit)}` : fmtInt(q.remaining);
      return `${q.unit} ${left} (${q.source || "?"}, ${fmtAge(q.age_s)} old)`;
    });
    if (quota.error) units.push(`last refresh failed ${fmtAge(quota.error.age_s)} ago`);
    return units.join("; ") || "not reported";
  }

  function useRow(label, used) {
    const fraction = used.limit ? used.used / used.limit : 0;
    const text = used.limit ? `${fmtInt(used.used)} / ${fmtInt(used.limit)}` : `${fmtInt(used.used)} (no limit)`;
    return [el("dt", { text: label }), el("dd", {}, el("span", { text }), used.limit ? bar(fraction, fraction >= 0.9 ? "hot" : "") : null)];
  }

  function facts(dep) {
    const list = el("dl", { class: "facts" });
    const add = (label, value) => list.append(el("dt", { text: label }), el("dd", { text: value }));
    add("Health", `${dep.health_score.toFixed(2)} (${dep.health_samples} samples)`);
    add("Latency EWMA", fmtMs(dep.ewma_latency_ms));
    add("Throughput EWMA", dep.ewma_tokens_per_s === null ? "-" : dep.ewma_tokens_per_s.toFixed(1) + " tok/s");
    list.append(...useRow("RPM", dep.rpm), ...useRow("TPM", dep.tpm));
    add("In flight", fmtInt(dep.inflight));
    add("Quota", quotaText(dep.quota));
    add("Weight", `${dep.weight} · priority ${dep.priority}`);
    return list;
  }

  function shares(dep, share) {
    const mine = share && share.deployments.find((d) => d.deployment_id === dep.id);
    const box = el("div", { class: "shares" });
    if (!mine) return box;
    for (const [label, value, cls] of [
      ["Traffic", mine.traffic_share, ""],
      ["Weight", mine.weight_share, "weight"],
      ["Sticky", mine.sticky_share, "sticky"],
    ]) {
      box.append(el("span", { class: "muted", text: label }), bar(value, cls), el("span", { text: fmtPct(value) }));
    }
    return box;
  }

  function sparks(series) {
    const box = el("div", { class: "sparks" });
    if (!series) return box;
    const sum = (values) => values.reduce((a, b) => a + b, 0);
    const span = `${series.requests.length} min`;
    const classes = Object.keys(series.failures);
    const failed = sum(classes.map((cls) => sum(series.failures[cls])));
    box.append(el("span", { class: "muted", text: `Requests per minute, last ${span} (${fmtInt(sum(series.requests))} in all)` }), spark([{ values: series.requests }]));
    const legend = el("span", { class: "muted legend" }, document.createTextNode(`Failures by class (${fmtInt(failed)}): `));
    for (const cls of classes) legend.append(el("span", { class: cls, text: cls }));
    box.append(legend, spark(classes.map((cls) => ({ values: series.failures[cls], cls }))));
    const medians = series.p50_ms.filter((v) => v !== null);
    const lastMedian = medians.length ? medians[medians.length - 1] : null;
    box.append(el("span", { class: "muted", text: `p50 latency per minute (latest ${fmtMs(lastMedian)})` }), spark([{ values: series.p50_ms }]));
    return box;
  }

  function errorsText(e) {
    if (!e.requests) return `no attempts in ${e.minutes} min`;
    return `${fmtPct(e.rate)} of ${fmtInt(e.requests)} attempts (${fmtInt(e.errors)} failed)`;
  }

  function glance(dep) {
    const e = dep.errors_5m;
    const last = dep.last_error;
    return el(
      "p",
      { class: "glance" },
      el("span", { class: "muted", text: `Errors ${e.minutes} min ` }),
      el("span", { class: "err-rate" + (e.rate >= 0.1 ? " hot" : ""), text: errorsText(e) }),
      el("span", { class: "muted", text: " · last error " }),
      el("span", { class: "last-error", text: last ? `${last.class} at ${fmtClock(last.at)}` : "none in the last hour" }),
      el("span", { class: "muted", text: ` · health ${dep.health_score.toFixed(2)}` }),
      unfinished(dep.unfinished_streams),
    );
  }

  // Streams that ended without a finish reason (000's anomaly): answers the server may
  // have cut, counted over the page's window; shown only once one happened in the hour.
  function unfinished(u) {
    if (!u || u.last_at === null) return null;
    const text = `${fmtInt(u.count)} in ${u.minutes} min, last at ${fmtClock(u.last_at)}`;
    return el(
      "span",
      { class: "unfinished" },
      el("span", { class: "muted", text: " · streams ended without a finish reason " }),
      el("span", { class: "unfinished-count" + (u.count > 0 ? " hot" : ""), text }),
    );
  }

  function details(dep, share, series) {
    const box = el("details", { class: "more", open: opened.has(dep.id) }, el("summary", { text: "Details" }), facts(dep), shares(dep, share), sparks(series));
    box.addEventListener("toggle", () => {
      if (!box.open) opened.delete(dep.id);
      else if (!opened.has(dep.id)) {
        opened.add(dep.id);
        tick(); // newly unfolded: read its pool's history now, not at the next redraw
      }
    });
    return box;
  }

  function card(pool, dep, share, series) {
    const c = dep.circuit;
    const reason = el("p", { class: "why muted" });
    const cause = why(dep);
    if (dep.retry_after_ms > 0) {
      reason.append("retry in ", el("span", { class: "countdown", "data-deadline": Date.now() + dep.retry_after_ms }));
      if (cause) reason.append(" · ");
    }
    reason.append(cause);
    const actions = el(
      "div",
      { class: "actions" },
      el("button", { type: "button", class: "act-open", text: "Force open…", onclick: () => forceOpen(dep.id) }),
      el("button", { type: "button", class: "act-close", text: "Close circuit", disabled: c.state === "closed", onclick: () => closeCircuit(dep.id) }),
      dep.drained
        ? el("button", { type: "button", class: "act-undrain", text: "Undo drain…", onclick: () => undrain(dep) })
        : el("button", { type: "button", class: "act-drain", text: "Drain…", onclick: () => drain(dep.id) }),
    );
    return el(
      "article",
      { class: "deployment", "data-deployment": dep.id, "data-state": shown(dep) },
      el("header", {}, el("h3", { text: dep.id }), el("span", { class: "state state-" + shown(dep), text: shown(dep) })),
      reason,
      glance(dep),
      actions,
      details(dep, share, series),
    );
  }

  // A pool no deployment can serve says what it answers, and which deployment is why.
  function notice(pool) {
    const a = pool.answer;
    if (!a) return null;
    const blockers = pool.deployments.map((d) => `${d.id} ${shown(d)}`).join(", ");
    const wait = a.retry_after_s ? ` (Retry-After ${Math.ceil(a.retry_after_s)} s)` : "";
    const rest = a.fallbacks.length ? ` Fallbacks may still serve it: ${a.fallbacks.join(", ")}.` : "";
    const text = `Answers ${a.status} ${a.code}${wait} now: no deployment can take a request (${blockers}).${rest}`;
    return el("p", { class: "notice", role: "status", text });
  }

  function poolSection(entry) {
    const { pool, share, history } = entry;
    const sticky = pool.sticky.enabled ? `sticky on (idle ${pool.sticky.idle_ttl_seconds} s)` : "sticky off";
    const spread = share ? ` · ${fmtInt(share.requests)} attempts in ${share.last_minute - share.first_minute + 1} min, ${fmtPct(share.sticky_fraction)} sticky, ${fmtPct(share.moved)} moved off weights` : "";
    const list = el("div", { class: "deployments" });
    for (const dep of pool.deployments) {
      const series = history && history.deployments.find((d) => d.id === dep.id);
      list.append(card(pool, dep, share, series));
    }
    return el(
      "section",
      { class: "card pool pool-" + pool.state, "data-pool": pool.pool, "data-state": pool.state },
      el(
        "div",
        { class: "pool-head" },
        el(
          "div",
          { class: "pool-title" },
          el("h2", { text: pool.pool }),
          el("span", { class: "state pool-state state-" + pool.state, text: pool.state }),
          el("span", { class: "muted", text: `${pool.strategy} · ${sticky}${spread}` }),
        ),
        el("button", { type: "button", class: "act-invalidate", text: "Invalidate bindings…", onclick: () => invalidate(pool.pool) }),
      ),
      notice(pool),
      list,
    );
  }

  // The summary bar: what is wrong, counted, before any pool is read.
  function summaryItems(summary) {
    const p = summary.pools;
    const d = summary.deployments;
    const e = summary.errors_5m;
    const item = (name, n, text) => el("li", { class: "tile" + (n > 0 ? " hot" : ""), "data-summary": name }, el("strong", { class: "n", text: fmtInt(n) }), el("span", { text: " " + text }));
    const rate = el(
      "li",
      { class: "tile" + (e.rate >= 0.1 ? " hot" : ""), "data-summary": "errors" },
      el("strong", { class: "n", text: fmtPct(e.rate) }),
      el("span", { text: ` errors, last ${e.minutes} min (${fmtInt(e.errors)} of ${fmtInt(e.requests)} attempts)` }),
    );
    return [
      item("pools-down", p.down, `of ${p.total} pools down`),
      item("pools-degraded", p.degraded, "degraded"),
      item("cooldown", d.cooldown + d.half_open, "in cooldown (circuit open)"),
      item("throttled", d.rate_limited, "throttled or at a limit"),
      item("drained", d.drained, "drained"),
      rate,
    ];
  }

  function auditItem(entry) {
    const when = new Date(entry.at * 1000).toISOString().replace("T", " ").slice(0, 19);
    return el("li", { "data-action": entry.action, "data-target": entry.target, text: `${when} UTC · ${entry.actor} · ${entry.action} · ${entry.target}` });
  }

  function tickCountdowns() {
    const now = Date.now();
    for (const node of document.querySelectorAll(".countdown[data-deadline]")) {
      const left = Math.max(0, Number(node.getAttribute("data-deadline")) - now);
      node.textContent = left > 0 ? Math.ceil(left / 1000) + " s" : "now";
    }
  }

  // -- loading -------------------------------------------------------------------------

  async function refresh(mine) {
    const minutes = $("window").value;
    const report = await api("GET", `status?minutes=${enc(minutes)}`);
    const pools = await Promise.all(
      report.pools.map(async (pool) => {
        // The hour's sparklines are read only for a pool with a card unfolded.
        const unfolded = pool.deployments.some((d) => opened.has(d.id));
        const [share, history] = await Promise.all([
          api("GET", `bindings/share?pool=${enc(pool.pool)}&minutes=${enc(minutes)}`),
          unfolded ? api("GET", `history?pool=${enc(pool.pool)}&minutes=${HISTORY_MINUTES}`) : null,
        ]);
        return { pool, share, history };
      }),
    );
    const audit = await api("GET", "audit?limit=10");
    if (!signedIn || mine !== round) return; // a newer refresh draws instead
    showBoard();
    $("summary").replaceChildren(...summaryItems(report.summary));
    $("pools").replaceChildren(...pools.map(poolSection));
    if (!pools.length) $("pools").append(el("p", { class: "card muted", text: "No pools are configured." }));
    $("audit").replaceChildren(...audit.data.map(auditItem));
    tickCountdowns();
    refreshes += 1;
    const updated = $("updated");
    updated.setAttribute("data-refreshes", String(refreshes));
    updated.textContent = `updated ${new Date().toLocaleTimeString("en-GB")} · every ${EVERY_S} s`;
  }

  function authFailure(error) {
    return error instanceof ApiError && (error.status === 401 || error.status === 403);
  }

  function refusal(error) {
    if (error.status === 403) return "That key was refused: it is not an admin key.";
    return "That key was refused: the gateway does not know it.";
  }

  async function tick() {
    clearTimeout(timer);
    if (!signedIn) return;
    const mine = ++round;
    try {
      await refresh(mine);
      $("board-error").hidden = true;
    } catch (error) {
      if (authFailure(error)) {
        // A team's or organization's admin: no status view, but the console's other views.
        if (error.status === 403 && (await window.edgeproxyConsole.scoped())) return showBoard();
        signOut(refusal(error));
        return;
      }
      showBoard();
      $("board-error").textContent = "Refresh failed: " + (error.message || error);
      $("board-error").hidden = false;
    }
    if (signedIn && mine === round) timer = setTimeout(tick, EVERY_S * 1000);
  }

  function showBoard() {
    $("login").hidden = true;
    $("board").hidden = false;
    $("controls").hidden = false;
  }

  function signOut(message) {
    signedIn = false;
    clearTimeout(timer);
    window.sessionStorage.removeItem(KEY);
    $("summary").replaceChildren();
    $("pools").replaceChildren();
    $("audit").replaceChildren();
    $("board").hidden = true;
    $("controls").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("login-error").hidden = !message;
    $("key").focus();
  }

  async function signIn(event) {
    event.preventDefault();
    const value = $("key").value.trim();
    $("key").value = "";
    if (!value) return;
    window.sessionStorage.setItem(KEY, value);
    signedIn = true;
    await tick(); // shows the board once the key is accepted
  }

  // -- actions: each one asks first; the API audits it ----------------------------------

  let pending = null;

  function confirmAction(title, text, withFields, run) {
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-fields").hidden = !withFields;
    $("confirm-reason").required = withFields;
    $("confirm-reason").value = "";
    $("confirm-error").hidden = true;
    pending = run;
    $("confirm").showModal();
  }

  async function confirmed(event) {
    event.preventDefault();
    if (!pending) return;
    const values = { reason: $("confirm-reason").value.trim(), minutes: Number($("confirm-minutes").value) };
    if (!$("confirm-fields").hidden && (!values.reason || !(values.minutes > 0))) {
      $("confirm-error").textContent = "Give a reason and a number of minutes.";
      $("confirm-error").hidden = false;
      return;
    }
    $("confirm-ok").disabled = true;
    try {
      await pending(values);
      pending = null;
      $("confirm").close();
      await tick();
    } catch (error) {
      if (authFailure(error)) {
        $("confirm").close();
        signOut(refusal(error));
      } else {
        $("confirm-error").textContent = error.message || String(error);
        $("confirm-error").hidden = false;
      }
    } finally {
      $("confirm-ok").disabled = false;
    }
  }

  function forceOpen(id) {
    confirmAction("Force the circuit open", `Take ${id} out of routing for maintenance until the window ends (then one probe decides).`, true, async (values) => {
      const current = await api("GET", `circuits/${enc(id)}`);
      await api("POST", `circuits/${enc(id)}/open`, { body: { reason: values.reason, seconds: values.minutes * 60 }, version: current.version });
    });
  }

  function closeCircuit(id) {
    confirmAction("Close the circuit", `Close ${id}'s circuit now: it routes again at once, whatever opened it.`, false, async () => {
      const current = await api("GET", `circuits/${enc(id)}`);
      await api("POST", `circuits/${enc(id)}/close`, { version: current.version });
    });
  }

  // The drain is the deployment's switch (enabled: false), honoured by every strategy;
  // its weight is left as it is, so undoing a drain restores exactly what was there.
  function setEnabled(id, enabled) {
    return async () => {
      const current = await api("GET", `deployments/${enc(id)}`);
      await api("PATCH", `deployments/${enc(id)}`, { body: { enabled }, version: current.version });
    };
  }

  function drain(id) {
    confirmAction("Drain the deployment", `Disable ${id} (enabled: false): no request, binding or probe reaches it until it is undrained.`, false, setEnabled(id, false));
  }

  function undrain(dep) {
    const d = dep.drain;
    const text = d
      ? `Enable ${dep.id} again (enabled: true); ${d.actor} drained it at ${fmtClock(d.at)}.`
      : `Enable ${dep.id} again (enabled: true).`;
    confirmAction("Undo the drain", text, false, setEnabled(dep.id, true));
  }

  function invalidate(pool) {
    confirmAction("Invalidate bindings", `Drop every sticky binding of ${pool}: each caller is routed afresh.`, false, async () => {
      await api("POST", "bindings/invalidate", { body: { pool } });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", signIn);
    $("signout").addEventListener("click", () => signOut(""));
    $("window").addEventListener("change", () => tick());
    $("confirm-form").addEventListener("submit", confirmed);
    $("confirm-cancel").addEventListener("click", () => {
      pending = null;
      $("confirm").close();
    });
    window.setInterval(tickCountdowns, 250);
    if (adminKey()) {
      signedIn = true;
      tick();
    } else {
      signOut("");
    }
  });
})();
