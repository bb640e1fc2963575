// edgeproxy console, the deployments view (#deployments): every deployment (GET
// admin/deployments), enabled or not, its weight; a new one or a changed one tried first
// with a connection test (POST admin/connection-test: the same egress and credential rules
// as the write, then one chat call of one token, nothing stored), its error shown on the
// field it is about; then saved (POST admin/deployments, or PATCH admin/deployments/{id}
// with only the changed fields) with If-Match: the configuration version read when the
// editor opened. A stale version (409) is shown as "changed by someone else since you
// opened it" with what changed, as the keys view does.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, field, $ } = C;
  const PROVIDERS = ["openai_compat", "openai", "anthropic", "azure", "bedrock"];
  // A change of one of these must pass a connection test before it is saved.
  const CONNECTION = ["provider", "base_url", "upstream_model", "credential"];
  const FIELDS = [
    { name: "id", label: "Id", type: "text", required: true, createOnly: true },
    { name: "model", label: "Pool (public model)", type: "text", required: true },
    { name: "provider", label: "Provider", options: PROVIDERS },
    { name: "base_url", label: "Base URL", type: "text", hint: "https://... (the egress rule applies)" },
    { name: "upstream_model", label: "Upstream model", type: "text", required: true },
    { name: "credential", label: "Credential reference", type: "text", hint: "env:EDGEPROXY_CRED_<NAME>, ssm:/edgeproxy/<path> or secretsmanager:edgeproxy/<name>; never the secret itself" },
    { name: "weight", label: "Weight", type: "number", step: "any" },
    { name: "priority", label: "Priority (higher: tried first)", type: "number", step: "1", signed: true },
    { name: "rpm_limit", label: "Requests per minute", type: "number", hint: "empty: no limit" },
    { name: "tpm_limit", label: "Tokens per minute", type: "number", hint: "empty: no limit" },
    { name: "input_price_per_mtok", label: "Input price (USD per million tokens)", type: "number", step: "any" },
    { name: "output_price_per_mtok", label: "Output price (USD per million tokens)", type: "number", step: "any" },
    { name: "enabled", label: "Enabled", options: ["true", "false"] },
  ];

  let deployments = [];
  let version = 0;
  let editing = null; // {dep (as read), version} or {create: true, version}
  let tested = null; // the JSON of the body whose connection test passed

  async function load() {
    const error = $("deps-error");
    try {
      const listed = await C.api("GET", "deployments");
      deployments = listed.deployments;
      version = listed.version;
      error.hidden = true;
      draw();
      $("deployments-view").setAttribute("data-loaded", String(Date.now()));
      $("deployments-view").setAttribute("data-version", String(version));
    } catch (failure) {
      error.textContent = "Deployments could not be read: " + (failure.message || failure);
      error.hidden = false;
    }
  }

  function row(d) {
    const label = d.enabled ? "Disable" : "Enable";
    return el(
      "tr",
      { "data-deployment-row": d.id, "data-enabled": String(d.enabled) },
      cell(d.id, "name"),
      cell(d.model),
      cell(d.provider),
      cell(d.base_url || "-", "mono"),
      cell(d.upstream_model),
      el("td", {}, el("span", { class: "state state-dep-" + (d.enabled ? "on" : "off"), text: d.enabled ? "enabled" : "disabled" })),
      cell(String(d.weight), "num"),
      cell(String(d.priority), "num"),
      el(
        "td",
        {},
        el(
          "div",
          { class: "actions" },
          el("button", { type: "button", class: "act-edit", text: "Change…", "aria-label": `Change ${d.id}`, onclick: () => openEdit(d) }),
          el("button", { type: "button", class: "act-toggle", text: label, "aria-label": `${label} ${d.id}`, onclick: () => toggle(d) }),
        ),
      ),
    );
  }

  function draw() {
    const columns = ["Id", "Pool", "Provider", "Base URL", "Upstream model", "State", "Weight", "Priority", ""];
    $("deps-list").replaceChildren(C.table(columns, deployments.map(row), "grid deps-table"));
    if (!deployments.length) $("deps-list").append(el("p", { class: "muted", text: "No deployments yet." }));
  }

  // -- the editor ---------------------------------------------------------------------

  const input = (name) => $("dep-form").querySelector(`[name="${name}"]`);
  const shown = (value) => (value === null || value === undefined ? "" : String(value));

  function parsed(spec, text) {
    const value = text.trim();
    if (spec.name === "enabled") return value === "true";
    if (value === "") return null;
    if (spec.type === "number") return Number(value);
    return value;
  }

  function control(spec) {
    if (spec.options) return el("select", { name: spec.name }, ...spec.options.map((o) => el("option", { value: o, text: o })));
    const attrs = { name: spec.name, type: spec.type, autocomplete: "off", spellcheck: "false", required: spec.required };
    if (spec.type === "number") Object.assign(attrs, { min: spec.signed ? null : "0", step: spec.step || "1" });
    return el("input", attrs);
  }

  function build(title, create) {
    const grid = el("div", { class: "fields" });
    for (const spec of FIELDS) if (create || !spec.createOnly) grid.append(field(spec.label, control(spec), spec.hint));
    $("dep-editor-title").textContent = title;
    $("dep-form-fields").replaceChildren(grid);
    $("dep-form-error").hidden = true;
    $("dep-test-result").textContent = "";
    $("dep-conflict").hidden = true;
    $("dep-editor").hidden = false;
    tested = null;
    grid.querySelector("input").focus();
  }

  function fill(dep) {
    for (const spec of FIELDS) if (input(spec.name)) input(spec.name).value = shown(dep[spec.name]);
  }

  function openCreate() {
    editing = { create: true, version };
    build("New deployment", true);
    fill({ provider: "openai_compat", weight: 1, priority: 0, enabled: true });
  }

  function openEdit(dep) {
    editing = { dep, version };
    build(`Change deployment ${dep.id}`, false);
    fill(dep);
  }

  function close() {
    editing = null;
    tested = null;
    $("dep-editor").hidden = true;
    $("dep-form-fields").replaceChildren();
  }

  // The fields whose control differs from ``dep`` (what the operator changed).
  function changedFrom(dep) {
    const out = {};
    for (const spec of FIELDS) {
      if (!input(spec.name)) continue;
      const text = input(spec.name).value;
      if (text.trim() !== shown(dep[spec.name])) out[spec.name] = parsed(spec, text);
    }
    return out;
  }

  // The whole deployment the form describes (a changed one: as read, with the changes;
  // header and query values the API shows as "[redacted]" are sent back so: they stand for
  // the stored values while base_url stays, and a moved base_url is refused without them).
  function candidate() {
    const base = editing.create ? {} : { ...editing.dep };
    const body = { ...base, ...(editing.create ? {} : changedFrom(editing.dep)) };
    if (editing.create) {
      for (const spec of FIELDS) {
        const value = parsed(spec, input(spec.name).value);
        if (value !== null) body[spec.name] = value;
      }
    }
    for (const [name, value] of Object.entries(body)) if (value === null) delete body[name];
    return body;
  }

  function markField(name) {
    for (const node of $("dep-form").querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
    const target = name && input(name);
    if (target) {
      target.setAttribute("aria-invalid", "true");
      target.setAttribute("aria-describedby", "dep-form-error");
      target.focus();
    }
  }

  // The connection test of what the form says; true when it passed.
  async function test() {
    const result = $("dep-test-result");
    const error = $("dep-form-error");
    error.hidden = true;
    result.textContent = "Testing…";
    result.removeAttribute("data-ok");
    const body = candidate();
    try {
      const found = await C.api("POST", "connection-test", { body });
      if (found.ok) {
        tested = JSON.stringify(body);
        markField(null);
        result.textContent = `Connection test passed: HTTP ${found.status} in ${C.fmtInt(found.latency_ms)} ms` + (found.served_model ? ` (model ${found.served_model})` : "");
        result.setAttribute("data-ok", "true");
        return true;
      }
      result.textContent = "";
      result.setAttribute("data-ok", "false");
      error.textContent = `Connection test failed${found.status ? " (HTTP " + found.status + ")" : ""}: ${found.error}`;
      error.hidden = false;
      markField(found.field);
      return false;
    } catch (failure) {
      result.textContent = "";
      result.setAttribute("data-ok", "false");
      C.showError($("dep-form"), error, failure);
      return false;
    }
  }

  // What someone else changed between ``before`` and ``after``.
  function theirChanges(before, after) {
    const out = [];
    for (const spec of FIELDS) {
      const [a, b] = [shown(before[spec.name]), shown(after[spec.name])];
      if (a !== b) out.push({ spec, old: a || "(none)", now: b || "(none)" });
    }
    return out;
  }

  async function conflict(mine) {
    const before = editing.dep;
    const listed = await C.api("GET", "deployments");
    const after = listed.deployments.find((d) => d.id === before.id);
    const list = $("dep-conflict-fields");
    if (!after) {
      list.replaceChildren(el("li", { text: "The deployment was removed." }));
    } else {
      const changes = theirChanges(before, after);
      list.replaceChildren(...changes.map((c) => el("li", { "data-field": c.spec.name, text: `${c.spec.label}: ${c.old} → ${c.now}` + (c.spec.name in mine ? " (you changed it too: yours is kept in the form)" : "") })));
      if (!changes.length) list.append(el("li", { text: "(the configuration's version moved on; no field of this deployment changed)" }));
      for (const c of changes) if (!(c.spec.name in mine)) input(c.spec.name).value = shown(after[c.spec.name]);
      editing = { dep: after, version: listed.version };
    }
    $("dep-conflict").hidden = false;
    $("dep-conflict").focus();
  }

  async function save(event) {
    event.preventDefault();
    if (!editing) return;
    const error = $("dep-form-error");
    error.hidden = true;
    const button = $("dep-save");
    button.disabled = true;
    try {
      const mine = editing.create ? null : changedFrom(editing.dep);
      if (mine && !Object.keys(mine).length) return close();
      // A new base_url restates the credential reference the form shows (the API refuses a
      // move that does not: the stored credential is not sent to a new host unasked).
      if (mine && "base_url" in mine && editing.dep.credential && !("credential" in mine)) mine.credential = parsed(FIELDS.find((f) => f.name === "credential"), input("credential").value);
      const connects = editing.create || CONNECTION.some((name) => name in mine);
      if (connects && tested !== JSON.stringify(candidate()) && !(await test())) return;
      try {
        if (editing.create) await C.api("POST", "deployments", { body: candidate(), version: editing.version });
        else await C.api("PATCH", `deployments/${encodeURIComponent(editing.dep.id)}`, { body: mine, version: editing.version });
      } catch (failure) {
        if (failure.status !== 409 || editing.create) throw failure;
        return await conflict(mine);
      }
      close();
      await load();
      if (window.edgeproxyRouting) await window.edgeproxyRouting.load(); // its version moved on
    } catch (failure) {
      if (failure.status === 409 && editing && editing.create) {
        failure.message = "Changed by someone else since you opened it: " + failure.message + " Open the editor again.";
      }
      C.showError($("dep-form"), error, failure);
    } finally {
      button.disabled = false;
    }
  }

  async function toggle(dep) {
    const error = $("deps-error");
    try {
      await C.api("PATCH", `deployments/${encodeURIComponent(dep.id)}`, { body: { enabled: !dep.enabled }, version });
      await load();
      if (window.edgeproxyRouting) await window.edgeproxyRouting.load(); // its version moved on
    } catch (failure) {
      await load();
      error.textContent = failure.status === 409 ? `Changed by someone else since you opened it; the list was read again: ${failure.message}` : failure.message || String(failure);
      error.hidden = false;
    }
  }

  window.edgeproxyDeployments = { load };

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("deployments", load);
    $("dep-new").addEventListener("click", openCreate);
    $("dep-form").addEventListener("submit", save);
    $("dep-cancel").addEventListener("click", close);
    $("dep-test").addEventListener("click", test);
  });
})();
