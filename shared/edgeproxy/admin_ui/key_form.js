// edgeproxy console, the key editor: creates a key (POST admin/keys) or changes one
// (PATCH admin/keys/{id} with If-Match: the version read when the editor opened). An edit
// sends only the fields the operator changed; a stale version (409) is shown as "changed by
// someone else since you opened it" with each field that changed, the other's values taken
// into the fields the operator left alone, so saving again applies only the operator's own.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, field, $ } = C;

  const ROLES = ["free", "pro", "internal", "admin"];
  const PERIODS = ["total", "daily", "weekly", "monthly"];
  // The editable fields: how a key's value is shown in its control, and read back.
  const FIELDS = [
    { name: "name", label: "Name", type: "text", required: true },
    { name: "role", label: "Role", options: ROLES },
    { name: "models", label: "Models", type: "text", hint: "comma separated; empty: every model", list: true },
    { name: "rpm_limit", label: "Requests per minute", type: "number", hint: "empty: no limit" },
    { name: "tpm_limit", label: "Tokens per minute", type: "number", hint: "empty: no limit" },
    { name: "max_parallel_requests", label: "In flight at once", type: "number", hint: "empty: no limit" },
    { name: "budget_usd", label: "Budget (USD)", type: "number", step: "any", hint: "empty: no budget" },
    { name: "budget_period", label: "Budget period", options: PERIODS },
    { name: "expires_at", label: "Expires (UTC)", type: "datetime-local", hint: "empty: never" },
  ];

  let editing = null; // {key (as read), version, teams} or {create: true}
  let onSaved = () => {};

  // A key's value as its control's text.
  function shown(spec, value) {
    if (value === null || value === undefined) return "";
    if (spec.list) return value.join(", ");
    if (spec.type === "datetime-local") return String(value).replace(/Z$/, "").replace(/\+00:00$/, "").slice(0, 16);
    return String(value);
  }

  // A control's text as the API's value (null: removed).
  function parsedValue(spec, text) {
    const value = text.trim();
    if (spec.list) return value ? value.split(",").map((m) => m.trim()).filter(Boolean) : null;
    if (value === "") return spec.options || spec.required ? value : null;
    if (spec.type === "number") return Number(value);
    if (spec.type === "datetime-local") return value + ":00Z";
    return value;
  }

  function control(spec) {
    if (spec.options) return el("select", { name: spec.name }, ...spec.options.map((o) => el("option", { value: o, text: o })));
    const attrs = { name: spec.name, type: spec.type, autocomplete: "off", spellcheck: "false", required: spec.required };
    if (spec.type === "number") Object.assign(attrs, { min: "0", step: spec.step || "1" });
    if (spec.name === "name") attrs.maxlength = "128";
    return el("input", attrs);
  }

  function teamControl(teams) {
    const select = el("select", { name: "team_id" }, el("option", { value: "", text: "(no team)" }));
    for (const team of teams) select.append(el("option", { value: team.id, text: `${team.name} (${team.id})` }));
    return select;
  }

  function build(title, withTeam, teams) {
    const form = $("key-form");
    const grid = el("div", { class: "fields" });
    for (const spec of FIELDS) grid.append(field(spec.label, control(spec), spec.hint));
    if (withTeam) grid.append(field("Team", teamControl(teams)));
    $("key-editor-title").textContent = title;
    $("key-form-fields").replaceChildren(grid);
    $("key-form-error").hidden = true;
    $("key-conflict").hidden = true;
    $("key-editor").hidden = false;
    form.querySelector("[name=name]").focus();
  }

  const input = (name) => $("key-form").querySelector(`[name="${name}"]`);

  function fill(key) {
    for (const spec of FIELDS) input(spec.name).value = shown(spec, key[spec.name]);
  }

  function openCreate(teams, saved) {
    editing = { create: true };
    onSaved = saved;
    build("New key", true, teams);
    fill({ role: "free", budget_period: "total" });
  }

  function openEdit(key, saved) {
    editing = { key, version: key.version };
    onSaved = saved;
    build(`Change key ${key.name} (${key.prefix})`, false, []);
    fill(key);
  }

  function close() {
    editing = null;
    $("key-editor").hidden = true;
    $("key-form-fields").replaceChildren();
  }

  // The fields whose control differs from ``key`` (what the operator changed).
  function changedFrom(key) {
    const out = {};
    for (const spec of FIELDS) {
      const text = input(spec.name).value;
      if (text.trim() !== shown(spec, key[spec.name])) out[spec.name] = parsedValue(spec, text);
    }
    return out;
  }

  // What someone else changed between ``before`` and ``after``: [label, old, new] per field.
  function theirChanges(before, after) {
    const out = [];
    for (const spec of FIELDS) {
      const [a, b] = [shown(spec, before[spec.name]), shown(spec, after[spec.name])];
      if (a !== b) out.push({ spec, old: a || "(none)", now: b || "(none)" });
    }
    if (before.team_id !== after.team_id) out.push({ spec: { label: "Team" }, old: before.team_id || "(none)", now: after.team_id || "(none)" });
    if (before.status !== after.status) out.push({ spec: { label: "Status" }, old: before.status, now: after.status });
    return out;
  }

  async function conflict(mine) {
    const before = editing.key;
    const after = await C.api("GET", `keys/${encodeURIComponent(before.id)}`);
    const changes = theirChanges(before, after);
    const list = $("key-conflict-fields");
    list.replaceChildren(
      ...changes.map((c) => el("li", { "data-field": c.spec.name || c.spec.label.toLowerCase(), text: `${c.spec.label}: ${c.old} → ${c.now}` + (c.spec.name in mine ? " (you changed it too: yours is kept in the form)" : "") })),
    );
    if (!changes.length) list.append(el("li", { text: "(its version moved on; no field shown here changed)" }));
    // The other's values in the fields the operator did not touch; the operator's kept.
    for (const c of changes) if (c.spec.name && !(c.spec.name in mine)) input(c.spec.name).value = shown(c.spec, after[c.spec.name]);
    editing = { key: after, version: after.version };
    $("key-conflict").hidden = false;
    $("key-conflict").focus();
  }

  async function save(event) {
    event.preventDefault();
    if (!editing) return;
    const error = $("key-form-error");
    error.hidden = true;
    const button = $("key-save");
    button.disabled = true;
    try {
      if (editing.create) {
        const body = {};
        for (const spec of FIELDS) {
          const value = parsedValue(spec, input(spec.name).value);
          if (value !== null && value !== "") body[spec.name] = value;
        }
        const team = input("team_id").value;
        if (team) body.team_id = team;
        const created = await C.api("POST", "keys", { body });
        close();
        onSaved(created);
      } else {
        const mine = changedFrom(editing.key);
        if (!Object.keys(mine).length) {
          close();
          return;
        }
        const id = encodeURIComponent(editing.key.id);
        try {
          const after = await C.api("PATCH", `keys/${id}`, { body: mine, version: editing.version });
          close();
          onSaved(after);
        } catch (failure) {
          if (failure.status !== 409 && failure.status !== 412) throw failure;
          await conflict(mine);
        }
      }
    } catch (failure) {
      C.showError($("key-form"), error, failure);
    } finally {
      button.disabled = false;
    }
  }

  window.edgeproxyKeyForm = { openCreate, openEdit, close };

  document.addEventListener("DOMContentLoaded", () => {
    $("key-form").addEventListener("submit", save);
    $("key-cancel").addEventListener("click", close);
  });
})();
