// edgeproxy console, the response cache's rules (a panel of #deployments): every level's rules
// from GET admin/cache, one set by PUT admin/cache/{level}/{name} and dropped by DELETE, each
// write carrying the configuration version read with the rules (If-Match). A stale version
// (409) says "changed by someone else since you opened it" and reads the rules again; a
// refusal names its field (a team or key that does not exist, a pool no deployment serves, a
// TTL out of range) and is shown on it. Fields the form does not show (max_answer_bytes,
// coalesce_wait_seconds) are sent back as they were.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, $ } = C;
  const LEVELS = { pools: "pool", teams: "team", keys: "key" };

  let version = 0;
  let rules = { pools: {}, teams: {}, keys: {} };

  function problem(failure) {
    const box = $("cache-error");
    if (!failure) {
      box.hidden = true;
      for (const node of $("cache-form").querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
      return;
    }
    if (failure.status === 409) {
      box.textContent = `Changed by someone else since you opened it; the rules were read again, nothing saved. (${failure.message})`;
      box.hidden = false;
      return;
    }
    // The API names the rule as cache.<level>.<name>, or a field of the rule (ttl_seconds).
    const param = failure.param && /^cache\.|^(name|level)$/.test(failure.param) ? "name" : failure.param;
    C.showError($("cache-form"), box, new C.ApiError(failure.status, failure.message, param));
  }

  async function load() {
    try {
      const data = await C.api("GET", "cache");
      version = data.version;
      rules = data.cache;
      draw();
      $("cache-view").setAttribute("data-version", String(version));
      $("cache-view").setAttribute("data-loaded", String(Date.now()));
    } catch (failure) {
      problem(failure);
    }
  }

  function draw() {
    const rows = [];
    for (const level of Object.keys(LEVELS)) {
      for (const name of Object.keys(rules[level] || {}).sort()) {
        const rule = rules[level][name];
        rows.push(
          el(
            "tr",
            { "data-rule": `${level}/${name}` },
            cell(LEVELS[level]),
            cell(name, "name mono"),
            cell(rule.enabled === false ? "off" : "on"),
            cell(rule.enabled === false ? "-" : rule.scope || "key"),
            cell(rule.enabled === false ? "-" : `${rule.ttl_seconds || 3600} s`, "num"),
            cell(rule.coalesce ? `yes (${rule.coalesce_wait_seconds || 30} s)` : "no"),
            el(
              "td",
              {},
              el("button", { type: "button", class: "act-cache-edit", text: "Edit", "aria-label": `Edit the cache rule of ${LEVELS[level]} ${name}`, onclick: () => edit(level, name) }),
              el("button", { type: "button", class: "act-cache-delete", text: "Remove", "aria-label": `Remove the cache rule of ${LEVELS[level]} ${name}`, onclick: () => remove(level, name) }),
            ),
          ),
        );
      }
    }
    $("cache-list").replaceChildren(C.table(["Level", "Pool, team or key", "Cache", "Shared by", "TTL", "Coalesce", ""], rows, "grid cache-table"));
    if (!rows.length) $("cache-list").append(el("p", { class: "muted", text: "No cache rules: the response cache is off." }));
  }

  function edit(level, name) {
    const rule = rules[level][name] || {};
    $("cache-level").value = level;
    $("cache-name").value = name;
    $("cache-enabled").checked = rule.enabled !== false;
    $("cache-scope").value = rule.scope || "key";
    $("cache-ttl").value = String(rule.ttl_seconds || 3600);
    $("cache-coalesce").checked = Boolean(rule.coalesce);
    $("cache-name").focus();
  }

  async function save(event) {
    event.preventDefault();
    const level = $("cache-level").value;
    const name = $("cache-name").value.trim();
    const before = (rules[level] || {})[name] || {};
    const body = {
      ...before,
      enabled: $("cache-enabled").checked,
      scope: $("cache-scope").value,
      ttl_seconds: Number($("cache-ttl").value),
      coalesce: $("cache-coalesce").checked,
    };
    try {
      await C.api("PUT", `cache/${level}/${encodeURIComponent(name)}`, { body, version });
      problem(null);
      await reread(`the cache rule of ${LEVELS[level]} ${name}`);
    } catch (failure) {
      if (failure.status === 409) await load();
      problem(failure);
    }
  }

  async function remove(level, name) {
    try {
      await C.api("DELETE", `cache/${level}/${encodeURIComponent(name)}`, { version });
      problem(null);
      await reread(`the cache rule of ${LEVELS[level]} ${name} removed`);
    } catch (failure) {
      if (failure.status === 409 || failure.status === 404) await load();
      problem(failure);
    }
  }

  // After a write: the rules, and the routing panel (the configuration version moved on).
  async function reread(what) {
    await load();
    $("cache-saved").textContent = `Saved: ${what} (configuration version ${version}).`;
    if (window.edgeproxyRouting) await window.edgeproxyRouting.load();
  }

  window.edgeproxyCache = { load };

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("deployments", load);
    $("cache-form").addEventListener("submit", save);
  });
})();
