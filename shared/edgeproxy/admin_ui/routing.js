// edgeproxy console, routing (the lower half of #deployments): the router's preset and
// strategy (PUT admin/router-settings), one pool's strategy (PUT admin/pools/{pool}, its
// other overrides sent back unchanged), that pool's effective settings with the level and
// the configuration path each comes from (GET admin/pools/{pool}/effective), a model's rules
// (PUT/DELETE admin/model-rules/{model}), the aliases (PUT/DELETE admin/aliases/{name}) and the
// fallback chains (GET admin/fallbacks, PUT/DELETE admin/fallbacks/{reason}/{model}).
// Every write carries the configuration version read with what it changes (If-Match); a
// stale one (409) says "changed by someone else since you opened it" and reads again.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, $ } = C;
  const PRESETS = ["patient", "interactive"];

  let version = 0;
  let pools = [];
  let rules = {};
  let aliases = {};
  let fallbacks = [];

  function options(select, values, inherit) {
    const chosen = select.value;
    select.replaceChildren(...(inherit ? [el("option", { value: "", text: inherit })] : []), ...values.map((v) => el("option", { value: v, text: v })));
    if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
  }

  function problem(id, failure) {
    const box = $(id);
    if (!failure) {
      box.hidden = true;
      return;
    }
    box.textContent = failure.status === 409 ? `Changed by someone else since you opened it; read again, nothing saved. (${failure.message})` : failure.message || String(failure);
    box.hidden = false;
  }

  async function load() {
    try {
      const [router, strategies, listed, ruled, aliased, chains] = await Promise.all([
        C.api("GET", "router-settings"),
        C.api("GET", "strategies"),
        C.api("GET", "pools"),
        C.api("GET", "model-rules"),
        C.api("GET", "aliases"),
        C.api("GET", "fallbacks"),
      ]);
      version = router.version;
      pools = listed.pools;
      rules = ruled.models || {};
      aliases = aliased.aliases || {};
      fallbacks = chains.fallbacks || [];
      const names = strategies.strategies.map((s) => s.name);
      options($("router-preset"), PRESETS);
      $("router-preset").value = router.preset;
      options($("router-strategy"), names);
      $("router-strategy").value = router.strategy;
      options($("pool-strategy"), names, "(the router's)");
      options($("pool-pick"), pools.map((p) => p.model));
      options($("rules-model"), [...new Set([...pools.map((p) => p.model.split(":")[0]), ...Object.keys(rules)])].sort());
      poolChosen();
      rulesChosen();
      drawAliases();
      drawFallbacks();
      problem("router-error", null);
      $("routing-view").setAttribute("data-loaded", String(Date.now()));
    } catch (failure) {
      problem("router-error", failure);
    }
  }

  // After a write: this view and the deployments' list read again (the version moved on).
  async function reread(what) {
    await load();
    if (what) $("routing-saved").textContent = `Saved: ${what} (configuration version ${version}).`;
    if (window.edgeproxyDeployments) await window.edgeproxyDeployments.load();
  }

  // -- one pool -------------------------------------------------------------------------

  const chosenPool = () => pools.find((p) => p.model === $("pool-pick").value);

  async function poolChosen() {
    const pool = chosenPool();
    if (!pool) return $("pool-effective").replaceChildren(el("p", { class: "muted", text: "No pool yet: add a deployment." }));
    $("pool-strategy").value = pool.settings.strategy || "";
    try {
      const report = await C.api("GET", `pools/${encodeURIComponent(pool.model)}/effective`);
      $("pool-effective").replaceChildren(effective(report));
      problem("pool-error", null);
    } catch (failure) {
      problem("pool-error", failure);
    }
  }

  // Every {value, level, source} of the report, as one row each, named by its path.
  function settings(node, path, out) {
    if (node && typeof node === "object" && !Array.isArray(node)) {
      if ("value" in node && "level" in node) return out.push([path, node]);
      for (const [name, child] of Object.entries(node)) settings(child, path ? `${path}.${name}` : name, out);
    }
    return out;
  }

  function effective(report) {
    const rows = settings({ tiers: report.tiers, sticky: report.sticky, continuation: report.continuation, circuit: report.circuit, deadlines: report.deadlines, min_role: report.min_role }, "", []);
    const text = (v) => (v === null || v === undefined ? "-" : typeof v === "object" ? JSON.stringify(v) : String(v));
    const body = rows.map(([path, s]) => el("tr", { "data-setting": path, "data-level": s.level }, cell(path, "mono"), cell(text(s.value)), cell(s.level), cell(s.source || "(built-in default)", "mono")));
    const box = el("div", {}, el("p", { class: "muted", text: `Pool ${report.pool}, ${report.operation} on ${report.protocol}. Levels, strongest first: ${report.precedence.join(" › ")}.` + (report.aliases.length ? ` Aliases: ${report.aliases.join(", ")}.` : "") }));
    box.append(C.table(["Setting", "Value", "Level", "From"], body, "grid effective-table"));
    return box;
  }

  async function savePool(event) {
    event.preventDefault();
    const pool = chosenPool();
    if (!pool) return;
    const body = { ...pool.settings, strategy: $("pool-strategy").value || null };
    try {
      await C.api("PUT", `pools/${encodeURIComponent(pool.model)}`, { body, version });
      await reread(`the strategy of pool ${pool.model}`);
    } catch (failure) {
      await reread();
      problem("pool-error", failure);
    }
  }

  async function saveRouter(event) {
    event.preventDefault();
    try {
      await C.api("PUT", "router-settings", { body: { preset: $("router-preset").value, strategy: $("router-strategy").value }, version });
      await reread("the router settings");
    } catch (failure) {
      await reread();
      problem("router-error", failure);
    }
  }

  // -- model rules ----------------------------------------------------------------------

  function rulesChosen() {
    const set = rules[$("rules-model").value];
    $("rules-json").value = set ? JSON.stringify(set, null, 2) : "";
  }

  async function saveRules(event) {
    event.preventDefault();
    const model = $("rules-model").value;
    if (!model) return;
    const text = $("rules-json").value.trim();
    const path = `model-rules/${encodeURIComponent(model)}`;
    try {
      let body;
      try {
        body = text ? JSON.parse(text) : null;
      } catch (_) {
        throw new C.ApiError(400, "The levels are not JSON: " + text.slice(0, 80), "settings");
      }
      if (body === null) await C.api("DELETE", path, { version });
      else await C.api("PUT", path, { body, version });
      await reread(`the rules of ${model}`);
      problem("rules-error", null);
    } catch (failure) {
      if (failure.status === 409) await reread();
      C.showError($("rules-form"), $("rules-error"), failure.status === 409 ? { message: "Changed by someone else since you opened it; read again, nothing saved." } : failure);
    }
  }

  // -- aliases --------------------------------------------------------------------------

  function drawAliases() {
    const names = Object.keys(aliases).sort();
    const rows = names.map((name) => {
      const a = aliases[name];
      const since = a.deprecation ? C.fmtTime(a.deprecation.since) : "-";
      return el(
        "tr",
        { "data-alias": name },
        cell(name, "name"),
        cell(a.model),
        cell(since),
        cell(a.deprecation && a.deprecation.sunset ? C.fmtTime(a.deprecation.sunset) : "-"),
        el("td", {}, el("button", { type: "button", class: "act-alias-delete", text: "Remove", "aria-label": `Remove alias ${name}`, onclick: () => removeAlias(name) })),
      );
    });
    $("aliases-list").replaceChildren(C.table(["Alias", "Model", "Deprecated since", "Sunset", ""], rows, "grid aliases-table"));
    if (!names.length) $("aliases-list").append(el("p", { class: "muted", text: "No aliases." }));
  }

  async function saveAlias(event) {
    event.preventDefault();
    const name = $("alias-name").value.trim();
    const body = { model: $("alias-model").value.trim() };
    const [since, sunset, link] = ["alias-since", "alias-sunset", "alias-link"].map((id) => $(id).value.trim());
    if (since) body.deprecation = { since: since + ":00Z" };
    if (body.deprecation && sunset) body.deprecation.sunset = sunset + ":00Z";
    if (body.deprecation && link) body.deprecation.link = link;
    if (!since && (sunset || link)) {
      problem("alias-error", { message: "A sunset or a link belongs to a deprecation: give its start (Deprecated since) too." });
      return;
    }
    try {
      await C.api("PUT", `aliases/${encodeURIComponent(name)}`, { body, version });
      $("alias-form").reset();
      await reread(`alias ${name}`);
      problem("alias-error", null);
    } catch (failure) {
      if (failure.status === 409) await reread();
      problem("alias-error", failure);
    }
  }

  async function removeAlias(name) {
    try {
      await C.api("DELETE", `aliases/${encodeURIComponent(name)}`, { version });
      await reread(`alias ${name} removed`);
      problem("alias-error", null);
    } catch (failure) {
      await reread();
      problem("alias-error", failure);
    }
  }

  // -- fallback chains --------------------------------------------------------------------

  function drawFallbacks() {
    const order = (a, b) => a.model.localeCompare(b.model) || (a.reason || "general").localeCompare(b.reason || "general");
    const rows = [...fallbacks].sort(order).map((f) => {
      const reason = f.reason || "general";
      return el(
        "tr",
        { "data-fallback": `${f.model}/${reason}` },
        cell(f.model, "name"),
        cell(reason),
        cell(f.to.join(" → ")),
        cell(f.continuation === null || f.continuation === undefined ? "(the router's)" : f.continuation ? "yes" : "no"),
        el(
          "td",
          {},
          el("button", { type: "button", class: "act-fallback-edit", text: "Edit", "aria-label": `Edit the ${reason} fallbacks of ${f.model}`, onclick: () => editFallback(f) }),
          el("button", { type: "button", class: "act-fallback-delete", text: "Remove", "aria-label": `Remove the ${reason} fallbacks of ${f.model}`, onclick: () => removeFallback(f.model, reason) }),
        ),
      );
    });
    $("fallbacks-list").replaceChildren(C.table(["Model", "When", "Then try, in order", "Cut stream continues", ""], rows, "grid fallbacks-table"));
    if (!rows.length) $("fallbacks-list").append(el("p", { class: "muted", text: "No fallback chains." }));
  }

  function editFallback(f) {
    $("fallback-model").value = f.model;
    $("fallback-reason").value = f.reason || "general";
    $("fallback-to").value = f.to.join(", ");
    $("fallback-to").focus();
  }

  async function saveFallback(event) {
    event.preventDefault();
    const model = $("fallback-model").value.trim();
    const reason = $("fallback-reason").value;
    const to = $("fallback-to").value.split(",").map((m) => m.trim()).filter(Boolean);
    try {
      await C.api("PUT", `fallbacks/${encodeURIComponent(reason)}/${encodeURIComponent(model)}`, { body: { to }, version });
      $("fallback-form").reset();
      await reread(`fallbacks of ${model} (${reason})`);
      problem("fallback-error", null);
    } catch (failure) {
      if (failure.status === 409) await reread();
      problem("fallback-error", failure);
    }
  }

  async function removeFallback(model, reason) {
    try {
      await C.api("DELETE", `fallbacks/${encodeURIComponent(reason)}/${encodeURIComponent(model)}`, { version });
      await reread(`fallbacks of ${model} (${reason}) removed`);
      problem("fallback-error", null);
    } catch (failure) {
      await reread();
      problem("fallback-error", failure);
    }
  }

  window.edgeproxyRouting = { load };

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("deployments", load);
    $("pool-pick").addEventListener("change", poolChosen);
    $("pool-form").addEventListener("submit", savePool);
    $("router-form").addEventListener("submit", saveRouter);
    $("rules-model").addEventListener("change", rulesChosen);
    $("rules-form").addEventListener("submit", saveRules);
    $("alias-form").addEventListener("submit", saveAlias);
    $("fallback-form").addEventListener("submit", saveFallback);
  });
})();
