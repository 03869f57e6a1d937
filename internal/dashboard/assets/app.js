// berth dashboard: one page, three views (#/ the releases, #/r/CONTEXT/NAMESPACE/NAME a
// release, #/o/CONTEXT/NAMESPACE/NAME a Release object), each read from the server's JSON API and
// read again when the server's stream of events says something it shows changed.
"use strict";

const token = document.querySelector('meta[name="berth-token"]').content;
const main = document.getElementById("main");
const state = { result: null, config: null, context: "", events: null, eventsKey: "", refresh: null, timer: 0, list: { q: "", namespace: "", status: [], offset: 0, sort: "name", tab: "helm" }, rel: { tab: "objects", from: 0, to: "", what: "manifest" } };

// h builds an element: h("td", {class: "x"}, "text", child…). Text is always text, never HTML.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fill replaces the children of el with children, leaving out what is null, undefined or false.
function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
}

async function api(path, params) {
  const u = new URL(path, location.origin);
  u.searchParams.set("context", state.context);
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => u.searchParams.append(k, x));
    else if (v !== undefined && v !== "") u.searchParams.set(k, v);
  }
  const res = await fetch(u);
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw Object.assign(new Error(body.error || res.statusText), body, { status: res.status });
  return body;
}

async function post(path, body) {
  const u = new URL(path, location.origin);
  u.searchParams.set("context", state.context);
  const res = await fetch(u, { method: "POST", headers: { "Content-Type": "application/json", "X-Berth-Token": token }, body: JSON.stringify(body) });
  const out = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw Object.assign(new Error(out.error || res.statusText), out, { status: res.status });
  return out;
}

// tone is the colour of a status; the badge also says it in words and a sign.
function tone(s) {
  switch (String(s).toLowerCase()) {
    case "deployed": case "ready": case "true": case "succeeded": return "ok";
    case "failed": case "missing": case "false": case "blocked": return "bad";
    case "superseded": case "uninstalled": case "unknown": case "not run": case "skipped": return "none";
    default: return "warn";
  }
}
const badge = (s, cls) => h("span", { class: "badge " + tone(s) + (cls ? " " + cls : "") }, s || "unknown");
// readyBadge says whether a Release object is Ready, from its Ready condition's status.
const readyBadge = (o) => o.suspended ? badge("suspended") : h("span", { class: "badge " + (o.ready === "True" ? "ok" : o.ready === "False" ? "bad" : "none") },
  o.ready === "True" ? "Ready" : o.ready === "False" ? "Not ready" : "Unknown");
const when = (t) => (t ? new Date(t).toLocaleString() : "-");
const errorBox = (e) => h("div", { class: "error", role: "alert" }, (e.reason ? e.reason + ": " : "") + e.message);

function blockerBox(b) {
  const lines = [];
  if (b.webhook) {
    const w = b.webhook;
    lines.push(h("div", {}, `webhook "${w.name}" of ${w.configurationKind} "${w.configuration}": operation ${w.operation}, failurePolicy ${w.failurePolicy}, backend ${w.backend}${w.detail ? ": " + w.detail : ""}`));
  }
  for (const f of b.finalizers || []) lines.push(h("div", {}, `finalizer ${f.name}, removed by ${f.domain || f.holder}`, (f.waitsFor || []).map((x) => h("div", {}, `waits for ${objName(x.object)}: ${x.state}`))));
  for (const d of b.dependents || []) lines.push(h("div", {}, `dependent ${objName(d.object)}: ${d.state}`));
  return h("div", { class: "blocker", "data-kind": b.kind },
    h("div", { class: "kind" }, b.kind), h("div", {}, (b.object ? objName(b.object) + ": " : "") + b.message), lines,
    b.next ? h("div", { class: "next" }, "next: " + b.next) : null);
}
function objName(o) {
  if (typeof o === "string") return o;
  const gk = o.group ? `${o.kind}.${o.group}` : o.kind;
  return o.namespace ? `${gk}/${o.namespace}/${o.name}` : `${gk}/${o.name}`;
}

function diffBlock(text) {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
    pre.append(cls ? h("span", { class: cls }, line) : document.createTextNode(line + "\n"));
  }
  return pre;
}

// ---- the stream of events -------------------------------------------------------------------

function follow(namespace) {
  const key = state.context + "|" + namespace;
  if (state.events && state.eventsKey === key) return;
  if (state.events) state.events.close();
  const live = document.getElementById("live");
  const u = new URL("/api/events", location.origin);
  u.searchParams.set("context", state.context);
  if (namespace) u.searchParams.set("namespace", namespace);
  const es = new EventSource(u);
  state.events = es; state.eventsKey = key;
  live.textContent = "connecting…"; live.className = "live off";
  es.addEventListener("ready", () => { live.textContent = "live"; live.className = "live on"; });
  es.addEventListener("status", (e) => { live.title = "not followed: " + JSON.parse(e.data).unwatched; });
  es.addEventListener("change", () => {
    clearTimeout(state.timer);
    state.timer = setTimeout(() => state.refresh && state.refresh(), 250);
  });
  es.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
}

// ---- the releases ---------------------------------------------------------------------------

const STATUSES = ["deployed", "failed", "pending-install", "pending-upgrade", "pending-rollback", "uninstalling", "uninstalled", "superseded"];

async function showReleases() {
  const L = state.list;
  follow("");
  const search = h("input", { type: "search", id: "search", placeholder: "search name, namespace or chart", value: L.q, "aria-label": "search" });
  const nsInput = h("input", { type: "text", id: "namespace-filter", placeholder: "all namespaces", value: L.namespace, "aria-label": "namespace" });
  const sort = h("select", { id: "sort", "aria-label": "sort" }, h("option", { value: "name" }, "by name"), h("option", { value: "updated" }, "newest first"));
  sort.value = L.sort;
  const chips = h("div", { class: "chips", id: "status-filter" });
  const body = h("div", { id: "release-list" }, h("p", { class: "spinner" }, "reading releases…"));
  const tabs = h("div", { class: "tabs" },
    h("button", { id: "tab-helm", class: L.tab === "helm" ? "active" : "", onclick: () => { L.tab = "helm"; showReleases(); } }, "Releases"),
    h("button", { id: "tab-controller", class: L.tab === "controller" ? "active" : "", onclick: () => { L.tab = "controller"; showReleases(); } }, "Release objects (controller)"));
  fill(main, h("h1", {}, "Releases"), tabs, h("div", { class: "panel" }, h("div", { class: "toolbar" }, search, nsInput, sort), chips, body));
  let t = 0;
  const again = () => { L.offset = 0; clearTimeout(t); t = setTimeout(load, 200); };
  search.addEventListener("input", () => { L.q = search.value; again(); });
  nsInput.addEventListener("input", () => { L.namespace = nsInput.value.trim(); again(); });
  sort.addEventListener("change", () => { L.sort = sort.value; again(); });
  async function load() {
    try {
      if (L.tab === "controller") return renderObjects(body, chips, await api("/api/controller/releases", { namespace: L.namespace }));
      const page = await api("/api/releases", { q: L.q, namespace: L.namespace, status: L.status.join(","), offset: L.offset, sort: L.sort });
      renderChips(chips, page.statuses, load);
      renderReleases(body, page, load);
    } catch (e) {
      fill(body, errorBox(e));
    }
  }
  state.refresh = load;
  await load();
}

function renderChips(chips, counts, load) {
  const L = state.list;
  fill(chips, ...STATUSES.filter((s) => counts[s] || L.status.includes(s)).map((s) =>
    h("button", { class: "chip" + (L.status.includes(s) ? " active" : ""), "data-status": s, onclick: () => {
      L.status = L.status.includes(s) ? L.status.filter((x) => x !== s) : [...L.status, s];
      L.offset = 0; load();
    } }, `${s} (${counts[s] || 0})`)));
}

function renderReleases(body, page, load) {
  const L = state.list;
  if (page.total === 0) return fill(body, h("p", { class: "note", id: "no-releases" }, "No release matches."));
  const rows = page.items.map((r) => {
    const key = r.namespace + "/" + r.name;
    return h("tr", { class: "clickable", "data-release": key, onclick: () => { location.hash = `#/r/${enc(state.context)}/${enc(r.namespace)}/${enc(r.name)}`; } },
      h("td", {}, h("a", { href: `#/r/${enc(state.context)}/${enc(r.namespace)}/${enc(r.name)}`, class: "name" }, r.name)),
      h("td", { class: "namespace" }, r.namespace), h("td", { class: "revision" }, r.revision), h("td", {}, when(r.updated)),
      h("td", { class: "status" }, badge(r.status)), h("td", { class: "chart" }, r.chart), h("td", { class: "app-version" }, r.appVersion),
      h("td", { class: "health", "data-health": key }, h("span", { class: "spinner" }, "…")));
  });
  const table = h("table", { id: "release-table" },
    h("thead", {}, h("tr", {}, ["Name", "Namespace", "Revision", "Updated", "Status", "Chart", "App version", "Health"].map((c) => h("th", {}, c)))),
    h("tbody", {}, rows));
  const last = page.offset + page.items.length;
  const pager = h("div", { class: "pager" },
    h("span", { id: "page-info" }, `${page.offset + 1}–${last} of ${page.total}`),
    h("button", { id: "prev", disabled: page.offset === 0, onclick: () => { L.offset = Math.max(0, L.offset - page.limit); load(); } }, "Previous"),
    h("button", { id: "next", disabled: last >= page.total, onclick: () => { L.offset += page.limit; load(); } }, "Next"));
  fill(body, table, pager);
  loadHealth(page.items.map((r) => r.namespace + "/" + r.name));
}

async function loadHealth(keys) {
  if (keys.length === 0) return;
  try {
    const health = await api("/api/health", { r: keys });
    for (const [key, v] of Object.entries(health)) {
      const cell = document.querySelector(`td[data-health="${CSS.escape(key)}"]`);
      if (!cell) continue;
      const label = v.state === "Ready" || v.total === 0 ? v.state : `${v.state} ${v.ready}/${v.total}`;
      fill(cell, badge(label));
      cell.firstChild.className = "badge " + tone(v.state);
      if (v.message) cell.title = v.message;
    }
  } catch (e) {
    document.querySelectorAll("td[data-health] .spinner").forEach((s) => { s.textContent = "?"; s.title = e.message; });
  }
}

function renderObjects(body, chips, list) {
  fill(chips);
  if (!list.served) return fill(body, h("p", { class: "note" }, "This cluster serves no Release objects: berth's controller and CRDs are not installed."));
  if (list.items.length === 0) return fill(body, h("p", { class: "note" }, "No Release object."));
  fill(body, h("table", { id: "object-table" },
    h("thead", {}, h("tr", {}, ["Name", "Namespace", "Ready", "Reason", "Release", "Revision", "Chart", "Blockers"].map((c) => h("th", {}, c)))),
    h("tbody", {}, list.items.map((o) => h("tr", { class: "clickable", "data-object": o.namespace + "/" + o.name, onclick: () => { location.hash = `#/o/${enc(state.context)}/${enc(o.namespace)}/${enc(o.name)}`; } },
      h("td", {}, h("a", { href: `#/o/${enc(state.context)}/${enc(o.namespace)}/${enc(o.name)}` }, o.name)), h("td", {}, o.namespace),
      h("td", {}, readyBadge(o)), h("td", { class: "msg", title: o.message }, o.reason),
      h("td", {}, o.targetNamespace + "/" + o.releaseName), h("td", {}, o.revision || "-"), h("td", {}, o.chart || "-"), h("td", {}, o.blockers))))));
}

// ---- one release ----------------------------------------------------------------------------

async function showRelease(ns, name) {
  const R = state.rel;
  if (R.key !== state.context + "/" + ns + "/" + name) Object.assign(R, { key: state.context + "/" + ns + "/" + name, tab: "objects", from: 0, to: "", what: "manifest" });
  follow(ns);
  const head = h("div", { id: "release-head" }, h("p", { class: "spinner" }, "reading the release…"));
  const tabNames = [["objects", "Objects"], ["history", "History"], ["diff", "Diff"], ["hooks", "Hooks"], ["operation", "Operation"], ["doctor", "Doctor"]];
  const tabs = h("div", { class: "tabs", id: "release-tabs" }, tabNames.map(([id, label]) =>
    h("button", { id: "tab-" + id, class: R.tab === id ? "active" : "", onclick: () => { R.tab = id; showRelease(ns, name); } }, label)));
  const body = h("div", { id: "tab-body", class: "panel" }, h("p", { class: "spinner" }, "reading…"));
  fill(main, h("p", {}, h("a", { href: "#/" }, "← Releases")), head, tabs, body);
  async function load() {
    let rel;
    try {
      rel = await api("/api/release", { namespace: ns, name });
    } catch (e) {
      fill(head, h("h1", {}, name), errorBox(e));
      fill(body);
      return;
    }
    renderHead(head, rel);
    try {
      switch (R.tab) {
        case "objects": return renderLive(body, await api("/api/live", { namespace: ns, name }));
        case "history": return renderHistory(body, rel);
        case "diff": return renderDiff(body, rel, ns, name);
        case "hooks": return renderHooks(body, rel);
        case "operation": return renderOperation(body, rel);
        case "doctor": return renderDoctor(body, await api("/api/doctor", { namespace: ns, name }));
      }
    } catch (e) {
      fill(body, errorBox(e));
    }
  }
  state.refresh = load;
  await load();
}

function renderHead(head, rel) {
  const actions = h("div", { class: "actions" });
  if (state.config.allowActions) {
    const prev = rel.history.find((r) => r.revision < rel.revision);
    if (prev) actions.append(h("button", { id: "action-rollback", onclick: () => confirmAction({ action: "rollback", namespace: rel.namespace, name: rel.name, revision: prev.revision }) }, `Roll back to ${prev.revision}`));
    if (rel.status !== "uninstalled") actions.append(h("button", { id: "action-uninstall", class: "danger", onclick: () => confirmAction({ action: "uninstall", namespace: rel.namespace, name: rel.name }) }, "Uninstall"));
  }
  const op = rel.operation;
  fill(head, 
    h("h1", {}, h("span", { id: "release-name" }, rel.name), badge(rel.status, "release-status"), actions),
    h("div", { class: "panel facts" },
      h("div", {}, h("span", {}, "namespace"), rel.namespace), h("div", {}, h("span", {}, "revision"), h("b", { id: "release-revision" }, rel.revision)),
      h("div", {}, h("span", {}, "chart"), rel.chart), h("div", {}, h("span", {}, "app version"), rel.appVersion),
      h("div", {}, h("span", {}, "updated"), when(rel.updated)), h("div", {}, h("span", {}, "description"), rel.description)),
    op ? h("div", { class: "blocker", id: "operation-banner" }, h("div", { class: "kind" }, op.live ? "operation in progress" : "interrupted operation"),
      op.live ? `${op.holder}, since ${when(op.since)}` : op.interrupted, op.next ? h("div", { class: "next" }, `berth recover ${rel.name} will ${op.next} (with --rollback: ${op.nextRollback})`) : null) : null,
    h("div", { id: "action-result" }, state.result));
}

function renderLive(body, v) {
  const rows = v.objects.map((o) => h("tr", { "data-object": objName(o) },
    h("td", {}, o.related ? "Pod (related)" : o.kind), h("td", { class: "object-name" }, o.namespace ? o.namespace + "/" + o.name : o.name),
    h("td", { class: "state" }, badge(o.terminating ? "Terminating" : o.state)), h("td", { class: "msg" }, o.message || "", o.blocker ? blockerBox(o.blocker) : null)));
  fill(body, h("h2", {}, `Objects of revision ${v.revision}`), v.error ? errorBox({ message: v.error }) : null,
    rows.length ? h("table", { id: "objects" }, h("thead", {}, h("tr", {}, ["Kind", "Name", "State", "Message"].map((c) => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", { class: "note" }, "The revision has no objects in the cluster."));
}

function renderHistory(body, rel) {
  fill(body, h("h2", {}, "History"), h("ol", { class: "timeline", id: "history" }, rel.history.map((r) => h("li", { "data-revision": r.revision },
    h("div", { class: "rev" }, "#" + r.revision), h("div", {}, badge(r.status), h("div", { class: "when" }, when(r.updated))),
    h("div", { class: "desc" }, h("div", {}, r.description), h("div", { class: "note" }, `${r.chart} (app ${r.appVersion})`, r.valuesChanged ? h("span", { class: "tag" }, "values changed") : null),
      r.revision > 1 && rel.history.some((x) => x.revision < r.revision) ? h("a", { href: "#", onclick: (e) => { e.preventDefault(); Object.assign(state.rel, { tab: "diff", from: rel.history.find((x) => x.revision < r.revision).revision, to: String(r.revision) }); showRelease(rel.namespace, rel.name); } }, "diff with the revision before") : null)))));
}

async function renderDiff(body, rel, ns, name) {
  const R = state.rel;
  const revs = rel.history.map((r) => r.revision);
  if (!R.from) R.from = revs.length > 1 ? revs[1] : revs[0];
  if (!R.to) R.to = String(revs[0]);
  const from = h("select", { id: "diff-from", "aria-label": "from revision" }, revs.map((r) => h("option", { value: r }, "revision " + r)));
  const to = h("select", { id: "diff-to", "aria-label": "to revision" }, revs.map((r) => h("option", { value: r }, "revision " + r)), h("option", { value: "live" }, "live objects"));
  const what = h("select", { id: "diff-what", "aria-label": "what to compare" }, h("option", { value: "manifest" }, "manifest"), h("option", { value: "values" }, "values"));
  from.value = R.from; to.value = R.to; what.value = R.what;
  const out = h("div", { id: "diff-output" }, h("p", { class: "spinner" }, "comparing…"));
  const go = () => { R.from = Number(from.value); R.to = to.value; R.what = what.value; draw(); };
  [from, to, what].forEach((s) => s.addEventListener("change", go));
  fill(body, h("div", { class: "toolbar" }, "compare", from, "with", to, "on", what), out);
  async function draw() {
    try {
      const d = await api("/api/diff", { namespace: ns, name, from: R.from, to: R.to, what: R.what });
      const changed = d.files.filter((f) => f.change !== "unchanged");
      fill(out, 
        h("p", { class: "note" }, `${changed.length} of ${d.files.length} ${d.what === "values" ? "" : "object(s) "}differ` + (d.masked ? "; Secrets and encrypted values are masked (berth dashboard --reveal-secrets shows them)" : "")),
        ...changed.map((f) => h("div", { class: "file", "data-file": f.name }, h("h2", {}, f.name, " ", badge(f.change)), f.diff ? diffBlock(f.diff) : null)));
    } catch (e) {
      fill(out, errorBox(e));
    }
  }
  await draw();
}

function renderHooks(body, rel) {
  if (!rel.hooks.length) return fill(body, h("p", { class: "note" }, "The release has no hooks."));
  fill(body, h("h2", {}, "Hooks of revision " + rel.revision), h("table", { id: "hooks" },
    h("thead", {}, h("tr", {}, ["Hook", "Events", "Weight", "Last run", "Started", "Completed", "Logs"].map((c) => h("th", {}, c)))),
    h("tbody", {}, rel.hooks.map((k) => h("tr", { "data-hook": k.name },
      h("td", {}, `${k.kind}/${k.name}`), h("td", {}, (k.events || []).join(", ")), h("td", {}, k.weight),
      h("td", { class: "phase" }, badge(k.phase)), h("td", {}, when(k.started)), h("td", {}, when(k.completed)),
      h("td", {}, Object.keys(k.logs || {}).length ? Object.entries(k.logs).map(([c, text]) => h("div", {}, h("div", { class: "note" }, c), h("pre", { class: "log" }, text))) : h("span", { class: "note" }, (k.deletePolicies || []).length ? "deleted (" + k.deletePolicies.join(", ") + ")" : "no Pod left")))))));
}

function renderOperation(body, rel) {
  const op = rel.operation;
  if (!op) return fill(body, h("p", { class: "note", id: "no-operation" }, "No operation is under way on this release, and none was left unfinished."));
  const j = op.journal;
  fill(body, h("h2", {}, op.live ? "Operation in progress" : "Interrupted operation"), op.error ? errorBox({ message: op.error }) : null,
    op.live ? h("p", {}, `${op.holder}, since ${when(op.since)}`) : h("p", {}, op.interrupted),
    op.next ? h("p", {}, `berth recover ${rel.name} will ${op.next}; with --rollback: ${op.nextRollback}`) : null,
    j ? h("div", { id: "journal" }, h("p", {}, `Journal: ${j.operation} of revision ${j.revision}, ${j.state}, started ${when(j.started)}, updated ${when(j.updated)}`),
      h("ul", { class: "steps" }, j.steps.map((s) => h("li", { class: s.done ? "done" : "" }, s.id)))) : null,
    op.window ? h("p", { id: "window" }, `Watch window: revision ${op.window.revision}, ${op.window.objects} object(s) for ${op.window.for}` + (op.window.done ? ", over with no regression" : op.window.started ? `, started ${when(op.window.started)}, ${Math.round(op.window.leftSeconds)} s left` : ", starts once they are ready")) : null);
}

function renderDoctor(body, rep) {
  if (!rep.findings.length) return fill(body, h("p", { class: "ok-note", id: "doctor-clean" }, `berth doctor found nothing (${rep.scope}).`));
  fill(body, h("h2", {}, `berth doctor: ${rep.scope}`), h("div", { id: "doctor" }, rep.findings.map((f) => h("div", { class: "blocker finding " + f.severity, "data-check": f.check },
    h("div", { class: "kind" }, `${f.severity}: ${f.check}`), h("div", {}, objName(f.object) + ": " + f.problem), h("div", {}, f.breaks), h("div", { class: "next" }, "fix: " + f.fix)))));
}

// ---- actions --------------------------------------------------------------------------------

async function confirmAction(a) {
  const dlg = document.getElementById("confirm-dialog");
  const title = document.getElementById("confirm-title");
  const planBox = document.getElementById("confirm-plan");
  const blockers = document.getElementById("confirm-blockers");
  const note = document.getElementById("confirm-note");
  const ok = document.getElementById("confirm-button");
  title.textContent = a.action === "rollback" ? `Roll ${a.name} back to revision ${a.revision}?` : a.action === "retry" ? `Retry Release ${a.name}?` : `Uninstall ${a.name}?`;
  note.textContent = a.action === "retry" ? "The controller tries the Release again once, its failures counted anew." : "The plan, from the API server's dry run (nothing changed yet):";
  fill(planBox); fill(blockers);
  ok.disabled = a.action !== "retry";
  dlg.showModal();
  document.getElementById("confirm-cancel").onclick = () => dlg.close();
  ok.onclick = async () => {
    ok.disabled = true;
    dlg.close();
    // The result stays on the page when it is drawn anew (the cluster changes as the action goes).
    const show = (el) => { state.result = el; const box = document.getElementById("action-result"); if (box) fill(box, el); };
    show(h("p", { class: "spinner" }, `${a.action} under way…`));
    try {
      const r = await post("/api/" + a.action, a);
      show(h("div", { class: "ok-note", id: "action-done" }, r.message));
    } catch (e) {
      show(h("div", { id: "action-error" }, errorBox(e), (e.blockers || []).map(blockerBox)));
    }
    state.refresh && state.refresh().then(() => {}, () => {});
  };
  if (a.action === "retry") return;
  fill(planBox, h("span", { class: "spinner" }, "planning…"));
  try {
    const p = await post("/api/plan", a);
    fill(planBox, diffBlock(p.text));
    if (p.blocked) fill(blockers, h("div", { class: "error", id: "plan-blocked" }, "This would be blocked: " + p.blocked.split("\n")[0]), ...(p.blockers || []).map(blockerBox));
    ok.disabled = false;
  } catch (e) {
    fill(planBox);
    fill(blockers, errorBox(e), ...(e.blockers || []).map(blockerBox));
  }
}

// ---- a Release object -----------------------------------------------------------------------

async function showObject(ns, name) {
  follow(ns);
  async function load() {
    let o;
    try {
      o = await api("/api/controller/release", { namespace: ns, name });
    } catch (e) {
      fill(main, h("p", {}, h("a", { href: "#/" }, "← Releases")), h("h1", {}, "Release " + name), errorBox(e));
      return;
    }
    const actions = h("div", { class: "actions" });
    if (state.config.allowActions) actions.append(h("button", { id: "action-retry", onclick: () => confirmAction({ action: "retry", namespace: ns, name }) }, "Retry"));
    fill(main, h("p", {}, h("a", { href: "#/" }, "← Releases")),
      h("h1", {}, "Release ", h("span", { id: "object-name" }, name), readyBadge(o), actions),
      h("div", { id: "action-result" }, state.result),
      h("div", { class: "panel facts" }, h("div", {}, h("span", {}, "namespace"), ns),
        h("div", {}, h("span", {}, "release"), h("a", { href: `#/r/${enc(state.context)}/${enc(o.targetNamespace)}/${enc(o.releaseName)}`, id: "produced" }, `${o.targetNamespace}/${o.releaseName}`), o.revision ? ` revision ${o.revision}` : ""),
        h("div", {}, h("span", {}, "chart"), o.chart || "-"), h("div", {}, h("span", {}, "generation"), `${o.observedGeneration} of ${o.generation}`),
        h("div", {}, h("span", {}, "failures"), o.failures), h("div", {}, h("span", {}, "step"), o.currentStep || "-")),
      h("div", { class: "grid2" },
        h("div", { class: "panel" }, h("h2", {}, "Conditions"), h("table", { id: "conditions" }, h("tbody", {}, (o.conditions || []).map((c) => h("tr", { "data-condition": c.type }, h("td", {}, c.type), h("td", {}, badge(c.status)), h("td", {}, c.reason), h("td", { class: "msg" }, c.message)))))),
        h("div", { class: "panel" }, h("h2", {}, "Blockers"), (o.blockerList || []).length ? h("div", { id: "object-blockers" }, o.blockerList.map((b) => blockerBox({ kind: b.kind, object: b.object, message: b.message, next: b.next }))) : h("p", { class: "note" }, "Nothing blocks it."),
          h("h2", {}, "Depends on"), o.dependencies.length ? h("ul", {}, o.dependencies.map((d) => h("li", {}, h("a", { href: `#/o/${enc(state.context)}/${enc(d.namespace)}/${enc(d.name)}` }, d.name), " ", readyBadge(d), " ", d.reason || ""))) : h("p", { class: "note" }, "No dependency."))),
      h("div", { class: "panel" }, h("h2", {}, "Events"), o.eventsError ? errorBox({ message: o.eventsError }) : null,
        o.events.length ? h("table", { id: "events" }, h("tbody", {}, o.events.map((e) => h("tr", {}, h("td", {}, when(e.last)), h("td", {}, badge(e.type === "Warning" ? "Warning" : "Normal")), h("td", {}, e.reason), h("td", { class: "msg" }, e.message), h("td", {}, "×" + e.count))))) : h("p", { class: "note" }, "No events.")),
      h("div", { class: "panel" }, h("h2", {}, "Operations"), (o.history || []).length ? h("table", {}, h("tbody", {}, o.history.map((op) => h("tr", {}, h("td", {}, op.operation), h("td", {}, badge(op.outcome)), h("td", {}, op.revision || "-"), h("td", {}, op.chartVersion || ""), h("td", {}, when(op.startedAt)))))) : h("p", { class: "note" }, "None yet.")));
  }
  state.refresh = load;
  await load();
}

// ---- routing --------------------------------------------------------------------------------

const enc = encodeURIComponent;

async function route() {
  state.result = null;
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if ((parts[0] === "r" || parts[0] === "o") && parts.length === 4) {
    if (state.config.contexts.includes(parts[1])) setContext(parts[1]);
    return parts[0] === "r" ? showRelease(parts[2], parts[3]) : showObject(parts[2], parts[3]);
  }
  return showReleases();
}

function setContext(name) {
  state.context = name;
  document.getElementById("context").value = name;
}

async function start() {
  const res = await fetch("/api/config");
  state.config = await res.json();
  const sel = document.getElementById("context");
  fill(sel, ...state.config.contexts.map((c) => h("option", { value: c }, c || "(no context)")));
  setContext(state.config.current);
  sel.addEventListener("change", () => { setContext(sel.value); state.list.offset = 0; location.hash = "#/"; route(); });
  document.getElementById("mode").textContent = (state.config.allowActions ? "actions allowed" : "read only") + (state.config.revealSecrets ? " · secrets revealed" : " · secrets masked");
  window.addEventListener("hashchange", route);
  await route();
}

start();
