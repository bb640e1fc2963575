// edgeproxy console, shared pieces: the admin API call (the admin key from this tab's session
// storage, sent only as "Authorization: Bearer", never a cookie), text-only DOM helpers and
// the view switcher (#status, #keys, #log, #teams, #deployments, #usage in the address). Loaded before the views'
// scripts, which find these as window.edgeproxyConsole. Nothing from the API is ever parsed
// as HTML: every value is set as text or as an attribute.
"use strict";

(() => {
  const KEY = "edgeproxy.adminKey";
  const VIEWS = ["status", "keys", "log", "teams", "deployments", "usage"];
  const $ = (id) => document.getElementById(id);
  const shownHooks = new Map(); // view -> functions run each time it is shown

  class ApiError extends Error {
    constructor(status, message, param) {
      super(message);
      this.status = status;
      this.param = param || null;
    }
  }

  async function api(method, path, options = {}) {
    const headers = {
      accept: "application/json",
      authorization: "Bearer " + window.sessionStorage.getItem(KEY),
    };
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
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const error = (data && data.error) || {};
      throw new ApiError(response.status, error.message || response.statusText || "request failed", error.param);
    }
    return data;
  }

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "onclick") node.addEventListener("click", value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  // A labelled control: <label>Text <input ...></label> (the label names the control).
  function field(label, control, hint) {
    const box = el("label", { class: "field" }, el("span", { text: label }), control);
    if (hint) box.append(el("small", { class: "muted", text: hint }));
    return box;
  }

  // A table from column names and rows of cells (strings or nodes).
  function table(columns, rows, cls) {
    const head = el("tr", {}, ...columns.map((c) => el("th", { scope: "col", text: c })));
    // Each cell names its column (data-label): a phone shows a row as a list of labelled lines.
    for (const row of rows) [...row.children].forEach((td, i) => td.setAttribute("data-label", columns[i] || ""));
    const body = el("tbody", {}, ...rows);
    return el("div", { class: "scroll" }, el("table", { class: cls || "grid" }, el("thead", {}, head), body));
  }

  const cell = (value, cls) => el("td", { class: cls, text: value === null || value === undefined ? "-" : value });
  const fmtInt = (n) => (n === null || n === undefined ? "-" : Math.round(n).toLocaleString("en"));
  const fmtUsd = (x) => (x === null || x === undefined ? "-" : "$" + Number(x).toFixed(x >= 100 ? 2 : 4));
  const fmtTime = (iso) => (iso ? String(iso).replace("T", " ").slice(0, 16) + " UTC" : "-");
  const fmtEpoch = (at) => new Date(at * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";

  const signedIn = () => Boolean(window.sessionStorage.getItem(KEY)) && !$("board").hidden;

  function current() {
    const name = window.location.hash.replace(/^#/, "").split("?")[0];
    return VIEWS.includes(name) ? name : "status";
  }

  // A parameter of the address after the view (#teams?team=red): one object to open.
  const param = (name) => new URLSearchParams(window.location.hash.split("?")[1] || "").get(name);

  // Show the view the address names; run its hooks (each view loads when it is shown).
  function route() {
    const name = current();
    for (const view of VIEWS) {
      const node = $(view + "-views");
      if (node) node.hidden = view !== name;
      const link = document.querySelector(`#nav a[href="#${view}"]`);
      if (link) {
        if (view === name) link.setAttribute("aria-current", "page");
        else link.removeAttribute("aria-current");
      }
    }
    if (signedIn()) for (const hook of shownHooks.get(name) || []) hook();
  }

  function onShow(view, hook) {
    if (!shownHooks.has(view)) shownHooks.set(view, []);
    shownHooks.get(view).push(hook);
  }

  // An error shown where it belongs: on the field the API named, or in the form's banner.
  function showError(form, banner, error) {
    for (const node of form.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
    const target = error.param && form.querySelector(`[name="${CSS.escape(error.param)}"]`);
    if (target) {
      target.setAttribute("aria-invalid", "true");
      target.focus();
    }
    banner.textContent = error.message || String(error);
    banner.hidden = false;
  }

  // After the status view refused the key (403): whether it is a scoped admin's, which the
  // keys listing accepts; then the status view says so and the keys view is shown instead.
  async function scoped() {
    try {
      await api("GET", "keys");
    } catch (_) {
      return false;
    }
    $("status-views").classList.add("scoped");
    $("status-scoped").hidden = false;
    if (current() === "status") window.location.hash = "#keys";
    return true;
  }

  window.edgeproxyConsole = { api, ApiError, el, field, table, cell, fmtInt, fmtUsd, fmtTime, fmtEpoch, onShow, route, current, param, showError, scoped, $ };

  document.addEventListener("DOMContentLoaded", () => {
    window.addEventListener("hashchange", route);
    const board = $("board");
    // The board is shown on sign-in (app.js): then the view in the address loads.
    new MutationObserver(() => {
      if (!board.hidden) return route();
      $("status-views").classList.remove("scoped"); // signed out: the next key is read afresh
      $("status-scoped").hidden = true;
    }).observe(board, { attributes: true, attributeFilter: ["hidden"] });
    route();
  });
})();
