// edgeproxy console, the keys view (#keys): every client key the signed-in admin may see
// (GET admin/keys, scoped by the API), searched and filtered in the page; a new key's or a
// rotated key's secret shown once with a copy button, then forgotten; rotate with a grace
// period and revoke, each asked first and sent with the key's version where the API takes one.
"use strict";

(() => {
  const C = window.edgeproxyConsole;
  const { el, cell, $ } = C;
  const DAY_MS = 86400 * 1000;

  let keys = [];
  let teams = [];
  let action = null; // the dialog's pending action

  async function load() {
    const error = $("keys-error");
    try {
      const [listed, teamList] = await Promise.all([C.api("GET", "keys"), C.api("GET", "teams").catch(() => ({ data: [] }))]);
      keys = listed.data;
      teams = teamList.data;
      error.hidden = true;
      fillTeams();
      draw();
      $("keys-view").setAttribute("data-loaded", "true");
    } catch (failure) {
      error.textContent = "Keys could not be read: " + (failure.message || failure);
      error.hidden = false;
    }
  }

  function fillTeams() {
    const select = $("key-filter-team");
    const chosen = select.value;
    const ids = new Set([...teams.map((t) => t.id), ...keys.map((k) => k.team_id).filter(Boolean)]);
    select.replaceChildren(el("option", { value: "", text: "Any team" }), el("option", { value: "-", text: "No team" }));
    for (const id of [...ids].sort()) {
      const team = teams.find((t) => t.id === id);
      select.append(el("option", { value: id, text: team ? `${team.name} (${id})` : id }));
    }
    select.value = [...select.options].some((o) => o.value === chosen) ? chosen : "";
  }

  function expiryMatches(key, wanted, now) {
    if (!wanted) return true;
    const at = key.expires_at ? Date.parse(key.expires_at) : null;
    if (wanted === "never") return at === null;
    if (wanted === "expired") return at !== null && at <= now;
    if (wanted === "week") return at !== null && at > now && at <= now + 7 * DAY_MS;
    return true;
  }

  function matching() {
    const words = $("key-search").value.trim().toLowerCase();
    const team = $("key-filter-team").value;
    const status = $("key-filter-status").value;
    const expiry = $("key-filter-expiry").value;
    const now = Date.now();
    return keys.filter((k) => {
      const text = `${k.name} ${k.id} ${k.prefix} ${k.team_id || ""} ${(k.models || []).join(" ")}`.toLowerCase();
      if (words && !text.includes(words)) return false;
      if (team === "-" ? k.team_id : team && k.team_id !== team) return false;
      if (status && k.status !== status) return false;
      return expiryMatches(k, expiry, now);
    });
  }

  function limits(k) {
    const parts = [];
    if (k.rpm_limit) parts.push(`${C.fmtInt(k.rpm_limit)} rpm`);
    if (k.tpm_limit) parts.push(`${C.fmtInt(k.tpm_limit)} tpm`);
    if (k.max_parallel_requests) parts.push(`${k.max_parallel_requests} at once`);
    return parts.join(" · ") || "none";
  }

  function budget(k) {
    const spent = C.fmtUsd(k.spend_usd || 0);
    return k.budget_usd === null ? `${spent} (no budget)` : `${spent} of ${C.fmtUsd(k.budget_usd)} ${k.budget_period}`;
  }

  function row(k) {
    const gone = k.status === "revoked";
    const buttons = el(
      "div",
      { class: "actions" },
      el("button", { type: "button", class: "act-edit", text: "Change…", disabled: gone, "aria-label": `Change ${k.name}`, onclick: () => window.edgeproxyKeyForm.openEdit(k, changed) }),
      el("button", { type: "button", class: "act-rotate", text: "Rotate…", disabled: gone, "aria-label": `Rotate ${k.name}`, onclick: () => rotate(k) }),
      el("button", { type: "button", class: "act-revoke danger", text: "Revoke…", disabled: gone, "aria-label": `Revoke ${k.name}`, onclick: () => revoke(k) }),
    );
    return el(
      "tr",
      { "data-key": k.id, "data-status": k.status },
      cell(k.name, "name"),
      cell(k.prefix, "mono"),
      cell(k.team_id || "-"),
      cell(k.role),
      el("td", {}, el("span", { class: "state state-key-" + k.status, text: k.status })),
      cell(k.models ? k.models.join(", ") : "every model"),
      cell(limits(k)),
      cell(budget(k)),
      cell(C.fmtTime(k.expires_at)),
      cell(C.fmtTime(k.last_used_at)),
      el("td", {}, buttons),
    );
  }

  function draw() {
    const shown = matching();
    const columns = ["Name", "Prefix", "Team", "Role", "Status", "Models", "Limits", "Spend", "Expires", "Last used", ""];
    const list = $("keys-list");
    list.replaceChildren(C.table(columns, shown.map(row), "grid keys-table"));
    if (!shown.length) list.append(el("p", { class: "muted", text: keys.length ? "No key matches these filters." : "No keys yet." }));
    $("keys-count").textContent = `${shown.length} of ${keys.length} keys`;
  }

  // -- the secret, shown once --------------------------------------------------------

  function showSecret(title, answer) {
    $("key-secret-title").textContent = title;
    $("key-secret-value").value = answer.key;
    $("key-secret-copied").textContent = "";
    $("key-secret").hidden = false;
    $("key-secret-value").focus();
    $("key-secret-value").select();
  }

  function forgetSecret() {
    $("key-secret-value").value = "";
    $("key-secret").hidden = true;
  }

  async function copySecret() {
    const box = $("key-secret-value");
    box.select();
    let done = false;
    try {
      await navigator.clipboard.writeText(box.value);
      done = true;
    } catch (_) {
      done = document.execCommand && document.execCommand("copy");
    }
    $("key-secret-copied").textContent = done ? "Copied." : "Select the key and copy it by hand.";
  }

  // -- rotate and revoke, each asked first ------------------------------------------------

  function ask(title, text, withGrace, run) {
    $("key-action-title").textContent = title;
    $("key-action-text").textContent = text;
    $("key-action-grace").hidden = !withGrace;
    $("key-action-error").hidden = true;
    action = run;
    $("key-action").showModal();
  }

  async function confirmed(event) {
    event.preventDefault();
    if (!action) return;
    $("key-action-ok").disabled = true;
    try {
      await action();
      action = null;
      $("key-action").close();
    } catch (failure) {
      $("key-action-error").textContent = failure.message || String(failure);
      $("key-action-error").hidden = false;
    } finally {
      $("key-action-ok").disabled = false;
    }
  }

  function rotate(k) {
    $("key-grace-hours").value = "24";
    ask("Rotate the key", `A new secret for ${k.name} (${k.prefix}); the current one is accepted for the grace period, then refused.`, true, async () => {
      const hours = Number($("key-grace-hours").value);
      if (!(hours >= 0)) throw new Error("The grace period is a number of hours (0: refuse the old secret at once).");
      const answer = await C.api("POST", `keys/${encodeURIComponent(k.id)}/rotate`, { body: { grace_seconds: hours * 3600 } });
      showSecret(`New secret for ${answer.name}`, answer);
      await load();
    });
  }

  function revoke(k) {
    ask("Revoke the key", `Revoke ${k.name} (${k.prefix}): refused at once here, everywhere within the key cache's TTL. This cannot be undone.`, false, async () => {
      await C.api("POST", `keys/${encodeURIComponent(k.id)}/revoke`);
      await load();
    });
  }

  function created(answer) {
    showSecret(`Key ${answer.name} created`, answer);
    load();
  }

  function changed() {
    load();
  }

  // The same dialog asks before the teams view's deletions.
  window.edgeproxyActions = { ask: (title, text, run) => ask(title, text, false, run) };

  document.addEventListener("DOMContentLoaded", () => {
    C.onShow("keys", load);
    for (const id of ["key-search", "key-filter-team", "key-filter-status", "key-filter-expiry"]) $(id).addEventListener("input", draw);
    $("key-filters").addEventListener("submit", (event) => event.preventDefault());
    $("key-new").addEventListener("click", () => window.edgeproxyKeyForm.openCreate(teams, created));
    $("key-secret-copy").addEventListener("click", copySecret);
    $("key-secret-done").addEventListener("click", forgetSecret);
    $("key-action-form").addEventListener("submit", confirmed);
    $("key-action-cancel").addEventListener("click", () => {
      action = null;
      $("key-action").close();
    });
    // Leaving the view forgets a secret still shown.
    window.addEventListener("hashchange", () => {
      if (C.current() !== "keys") forgetSecret();
    });
  });
})();
