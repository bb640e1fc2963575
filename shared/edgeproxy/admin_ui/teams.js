// edgeproxy console, the teams view (#teams): organizations and teams as the signed-in admin
// may see them (GET admin/organizations, admin/teams: scoped by the API, so a team's admin
// sees only that team). Create either; change a name or model access (PATCH with If-Match:
// the version read when the editor opened; a stale one shows what changed); move keys into
// or out of a team (PUT admin/keys/{id}/team with the key's version); delete an empty one.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, field, $ } = C;

  let orgs = [];
  let teams = [];
  let keys = [];
  let editing = null; // {kind: "teams"|"organizations", group (as read) | null}
  let members = null; // the team whose keys are shown

  const models = (list) => (list ? list.join(", ") : "every model");
  const parseModels = (text) => (text.trim() ? text.split(",").map((m) => m.trim()).filter(Boolean) : null);

  async function load() {
    const error = $("teams-error");
    try {
      const [o, t, k] = await Promise.all([
        C.api("GET", "organizations").catch((e) => (e.status === 403 ? { data: [] } : Promise.reject(e))),
        C.api("GET", "teams"),
        C.api("GET", "keys"),
      ]);
      [orgs, teams, keys] = [o.data, t.data, k.data];
      error.hidden = true;
      draw();
      await opened();
      $("teams-view").setAttribute("data-loaded", String(Date.now()));
    } catch (failure) {
      error.textContent = "Teams could not be read: " + (failure.message || failure);
      error.hidden = false;
    }
  }

  function button(cls, text, label, run, disabled) {
    return el("button", { type: "button", class: cls, text, "aria-label": label, disabled, onclick: run });
  }

  function orgRow(o) {
    return el("tr", { "data-organization": o.id }, cell(o.id, "mono"), cell(o.name, "name"), cell(models(o.models)), cell(C.fmtInt(o.teams), "num"),
      el("td", {}, el("div", { class: "actions" }, button("act-edit", "Change…", `Change ${o.name}`, () => openEdit("organizations", o)))));
  }

  function teamRow(t) {
    const actions = el(
      "div",
      { class: "actions" },
      button("act-edit", "Change…", `Change ${t.name}`, () => openEdit("teams", t)),
      button("act-members", "Keys…", `Keys of ${t.name}`, () => showMembers(t)),
      button("act-delete danger", "Delete…", `Delete ${t.name}`, () => remove(t), t.keys > 0),
    );
    return el("tr", { "data-team": t.id }, cell(t.id, "mono"), cell(t.name, "name"), cell(t.organization_id), cell(models(t.models)), cell(C.fmtInt(t.keys), "num"), el("td", {}, actions));
  }

  function draw() {
    $("orgs-list").replaceChildren(C.table(["Id", "Name", "Models", "Teams", ""], orgs.map(orgRow)));
    $("teams-list").replaceChildren(C.table(["Id", "Name", "Organization", "Models", "Keys", ""], teams.map(teamRow)));
    if (!teams.length) $("teams-list").append(el("p", { class: "muted", text: "No teams yet." }));
    $("org-new").disabled = false;
    $("team-new").disabled = !orgs.length;
    if (members) showMembers(teams.find((t) => t.id === members.id) || null);
  }

  // The team the address names (#teams?team=red): its keys, or the API's refusal shown.
  async function opened() {
    const id = C.param("team");
    if (!id || (members && members.id === id)) return;
    try {
      showMembers(teams.find((t) => t.id === id) || (await C.api("GET", `teams/${encodeURIComponent(id)}`)));
    } catch (failure) {
      $("teams-error").textContent = `Team ${id}: ${failure.message || failure}`;
      $("teams-error").hidden = false;
    }
  }

  // -- the editor ------------------------------------------------------------------------

  function open(title, controls) {
    $("group-editor-title").textContent = title;
    $("group-form-fields").replaceChildren(el("div", { class: "fields" }, ...controls));
    $("group-form-error").hidden = true;
    $("group-conflict").hidden = true;
    $("group-editor").hidden = false;
    $("group-form").querySelector("input").focus();
  }

  const input = (name) => $("group-form").querySelector(`[name="${name}"]`);
  const text = (name, attrs = {}) => el("input", { name, type: "text", autocomplete: "off", spellcheck: "false", ...attrs });

  function openCreate(kind) {
    editing = { kind, group: null };
    const controls = [field("Id", text("id", { required: true, maxlength: "63" }), "letters, digits, - and _"), field("Name", text("name", { required: true, maxlength: "128" }))];
    if (kind === "teams") controls.push(field("Organization", el("select", { name: "organization_id" }, ...orgs.map((o) => el("option", { value: o.id, text: `${o.name} (${o.id})` })))));
    controls.push(field("Models", text("models"), "comma separated; empty: every model"));
    open(kind === "teams" ? "New team" : "New organization", controls);
  }

  function openEdit(kind, group) {
    editing = { kind, group };
    open(`Change ${group.name} (${group.id})`, [field("Name", text("name", { required: true, maxlength: "128" })), field("Models", text("models"), "comma separated; empty: every model")]);
    input("name").value = group.name;
    input("models").value = group.models ? group.models.join(", ") : "";
  }

  function closeEditor() {
    editing = null;
    $("group-editor").hidden = true;
    $("group-form-fields").replaceChildren();
  }

  async function conflict(mine) {
    const { kind, group } = editing;
    const after = await C.api("GET", `${kind}/${encodeURIComponent(group.id)}`);
    const changes = [];
    if (after.name !== group.name) changes.push(["Name", group.name, after.name, "name"]);
    if (models(after.models) !== models(group.models)) changes.push(["Models", models(group.models), models(after.models), "models"]);
    $("group-conflict-fields").replaceChildren(...changes.map(([label, old, now, name]) => el("li", { text: `${label}: ${old} → ${now}` + (name in mine ? " (you changed it too: yours is kept in the form)" : "") })));
    if (!changes.length) $("group-conflict-fields").append(el("li", { text: "(its version moved on; no field shown here changed)" }));
    if (!("name" in mine)) input("name").value = after.name;
    if (!("models" in mine)) input("models").value = after.models ? after.models.join(", ") : "";
    editing = { kind, group: after };
    $("group-conflict").hidden = false;
  }

  async function save(event) {
    event.preventDefault();
    if (!editing) return;
    const { kind, group } = editing;
    $("group-form-error").hidden = true;
    try {
      if (!group) {
        const body = { id: input("id").value.trim(), name: input("name").value.trim() };
        const list = parseModels(input("models").value);
        if (list) body.models = list;
        if (kind === "teams") body.organization_id = input("organization_id").value;
        await C.api("POST", kind, { body });
      } else {
        const mine = {};
        if (input("name").value.trim() !== group.name) mine.name = input("name").value.trim();
        if (models(parseModels(input("models").value)) !== models(group.models)) mine.models = parseModels(input("models").value);
        if (!Object.keys(mine).length) return closeEditor();
        try {
          await C.api("PATCH", `${kind}/${encodeURIComponent(group.id)}`, { body: mine, version: group.version });
        } catch (failure) {
          if (failure.status !== 409 && failure.status !== 412) throw failure;
          return await conflict(mine);
        }
      }
      closeEditor();
      await load();
    } catch (failure) {
      C.showError($("group-form"), $("group-form-error"), failure);
    }
  }

  // -- a team's keys ---------------------------------------------------------------------

  function showMembers(team) {
    members = team;
    const box = $("team-members");
    if (!team) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const inside = keys.filter((k) => k.team_id === team.id);
    const outside = keys.filter((k) => k.team_id !== team.id && k.status !== "revoked");
    const rows = inside.map((k) => el("tr", { "data-key": k.id }, cell(k.name, "name"), cell(k.prefix, "mono"), cell(k.status),
      el("td", {}, button("act-remove", "Take out of the team", `Take ${k.name} out of ${team.name}`, () => move(k, null)))));
    const pick = el("select", { id: "team-move-key", name: "key" }, ...outside.map((k) => el("option", { value: k.id, text: `${k.name} (${k.prefix})` + (k.team_id ? ` · now in ${k.team_id}` : "") })));
    const add = el("div", { class: "buttons" }, field("Key", pick), button("act-add", "Move into this team", `Move the key into ${team.name}`, () => {
      const k = keys.find((x) => x.id === pick.value);
      if (k) move(k, team.id);
    }, !outside.length));
    box.replaceChildren(
      el("h3", { text: `Keys of ${team.name} (${team.id})` }),
      inside.length ? C.table(["Name", "Prefix", "Status", ""], rows) : el("p", { class: "muted", text: "No key in this team." }),
      add,
      el("p", { id: "team-members-error", class: "error", role: "alert", hidden: true }),
      button("act-close", "Close", "Close the team's keys", () => showMembers(null)),
    );
    box.setAttribute("data-members", team.id);
    box.hidden = false;
  }

  async function move(k, teamId) {
    try {
      await C.api("PUT", `keys/${encodeURIComponent(k.id)}/team`, { body: { team_id: teamId }, version: k.version });
      await load();
    } catch (failure) {
      const error = $("team-members-error");
      const stale = failure.status === 409 ? "Changed by someone else since you opened it: reload and try again. " : "";
      error.textContent = stale + (failure.message || String(failure));
      error.hidden = false;
      if (failure.status === 409) await load();
    }
  }

  function remove(team) {
    window.edgeproxyActions.ask("Delete the team", `Delete ${team.name} (${team.id}); it has no keys.`, async () => {
      await C.api("DELETE", `teams/${encodeURIComponent(team.id)}`, { version: team.version });
      await load();
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("teams", load);
    $("org-new").addEventListener("click", () => openCreate("organizations"));
    $("team-new").addEventListener("click", () => openCreate("teams"));
    $("group-form").addEventListener("submit", save);
    $("group-cancel").addEventListener("click", closeEditor);
  });
})();
