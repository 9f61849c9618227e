// The garlicfarm console: polls the JSON API of this node and draws the farm; no libraries.
"use strict";

const REFRESH_MS = 3000;
const HOUR = 3600;
const COLOURS = { ok: "#2e9d4f", lagging: "#d9a400", stale: "#e06c00", down: "#c62828" };
let session = null;
let sessionLoaded = 0; // Date.now() when the session (and its CSRF token) was fetched
let cluster = null;
let levels = ["ok", "lagging", "stale", "down"];
let timer = null;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

async function api(path, body) {
  const options = { headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.headers[session.csrf_header] = session.csrf;
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = { error: `HTTP ${response.status}` }; }
  if (!response.ok) {
    const error = new Error(data.error || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function say(text, isError) {
  const box = $("message");
  box.textContent = text;
  box.className = isError ? "error" : "";
  box.hidden = false;
}

// A CSRF token lives one to two of the server's windows: fetch a fresh one well before it expires.
async function freshSession() {
  const every = 1000 * ((session && session.csrf_refresh_s) || 1800);
  if (!session || Date.now() - sessionLoaded >= every) await loadSession();
}

async function act(action, body, question) {
  if (question && !window.confirm(question)) return null;
  try {
    await freshSession();
    const answer = await api(`/api/farms/${encodeURIComponent(cluster)}/${action}`, body);
    say(`${action}: done — ${JSON.stringify(answer.result)}`, false);
    await refresh();
    return answer;
  } catch (e) {
    // the node restarted or the token expired: fetch a fresh one for the next try
    if (e.status === 403 && /CSRF/.test(e.message)) await loadSession().catch(() => {});
    say(`${action}: ${e.message}`, true);
    return null;
  }
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  if (seconds < 90) return `${Math.round(seconds)} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${(seconds / 3600).toFixed(1)} h ago`;
}

function chart(samples, now) {
  const ns = "http://www.w3.org/2000/svg";
  const width = 120, height = 18;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  const bad = samples.filter((s) => s[1] > 0).length;
  svg.setAttribute("aria-label", `${samples.length} samples in the last hour, ${bad} not ok`);
  const back = document.createElementNS(ns, "rect");
  back.setAttribute("width", width); back.setAttribute("height", height); back.setAttribute("fill", "#eee");
  svg.append(back);
  for (let i = 0; i < samples.length; i++) {
    const [t, level] = samples[i];
    const next = i + 1 < samples.length ? samples[i + 1][0] : now;
    const x0 = Math.max(0, ((t - (now - HOUR)) / HOUR) * width);
    const x1 = Math.min(width, ((next - (now - HOUR)) / HOUR) * width);
    if (x1 <= 0) continue;
    const bar = document.createElementNS(ns, "rect");
    const h = height * (1 - level / 4);
    bar.setAttribute("x", x0.toFixed(2)); bar.setAttribute("width", Math.max(0.8, x1 - x0).toFixed(2));
    bar.setAttribute("y", (height - h).toFixed(2)); bar.setAttribute("height", h.toFixed(2));
    bar.setAttribute("fill", COLOURS[levels[level]] || "#999");
    svg.append(bar);
  }
  return svg;
}

function drawMembers(view, history) {
  const body = $("members").querySelector("tbody");
  body.replaceChildren();
  for (const m of view.members) {
    const roles = el("td", { class: "role" });
    if (m.role === "leader") roles.append(el("span", { class: "badge leader" }, "leader"));
    else roles.append(el("span", { class: "badge" }, "follower"));
    if (m.publisher) roles.append(el("span", { class: "badge publisher" }, "publisher"));
    if (m.self) roles.append(el("span", { class: "badge self" }, "this node"));
    const router = m.router ? `${m.router.netStatus}, job lag ${m.router.jobLag} ms` : "–";
    const tunnels = m.router ? `${m.router.exploratoryTunnels} expl / ${m.router.participatingTunnels} part` : "–";
    const remove = el("button", {
      class: "danger", type: "button", "data-action": "remove",
      onclick: () => act("remove-member", { id: m.id },
        `Remove server ${m.id} (${m.endpoint}) from farm ${cluster}` +
        (m.role === "leader" ? " — it is the LEADER; the farm will elect another" : "") + "?"),
    }, "Remove");
    const row = el("tr", { "data-member-id": m.id, "data-role": m.role, "data-health": m.health,
                           class: m.role === "leader" ? "leader" : "" },
      el("td", {}, m.id),
      el("td", { class: "endpoint", title: m.endpoint }, m.endpoint),
      roles,
      el("td", { class: `health ${m.health}` }, m.health),
      el("td", {}, chart((history.members || {})[String(m.id)] || [], view.time)),
      el("td", {}, m.match_index ?? "–"),
      el("td", {}, m.lag ?? "–"),
      el("td", {}, age(m.last_status_age)),
      el("td", {}, router),
      el("td", {}, tunnels),
      el("td", {}, remove));
    body.append(row);
  }
  $("lagnote").textContent = view.node.role === "leader" ? "" :
    "match index and lag are known on the leader only: open the leader's console for them.";
}

function drawMetaLS(view) {
  const body = $("metals").querySelector("tbody");
  body.replaceChildren();
  for (const lease of view.meta_ls) {
    body.append(el("tr", {},
      el("td", { class: "dest", title: lease.destination }, lease.destination),
      el("td", {}, lease.weight),
      el("td", {}, el("button", { type: "button", onclick: () => act("exclude", { destination: lease.destination },
        `Exclude ${lease.destination} from the Meta LS2?`) }, "Exclude"))));
  }
  if (!view.meta_ls.length) body.append(el("tr", {}, el("td", { colspan: 3, class: "muted" }, "empty")));
  drawSignedMetaLS(view.signed_metals);
  const list = $("excluded");
  list.replaceChildren();
  for (const d of view.excluded) {
    list.append(el("li", {}, d, " ",
      el("button", { type: "button", onclick: () => act("include", { destination: d }, `Include ${d} again?`) },
        "Include")));
  }
  $("step-down").disabled = view.node.role !== "leader";
  $("step-down").title = view.node.role === "leader" ? "hand the leadership to another member now" :
    "only the leader's console can step down";
  $("publish").disabled = !view.publishing_here;
  $("publish").title = view.publishing_here ? "publish the Meta LS2 again now" :
    "only the publisher's console can force publishing";
}

// What this node's signing publisher last made: master, dates, offline expiry, leases by cost.
function drawSignedMetaLS(m) {
  const p = $("signed-metals");
  p.replaceChildren();
  if (!m) return;
  const when = (s) => s ? new Date(s * 1000).toISOString().replace(".000", "") : "–";
  const parts = [`master ${m.master}`];
  if (m.state) parts.push(`${m.state}${m.router ? ` (${m.router})` : ""}`);
  if (m.published) {
    parts.push(`published ${when(m.published)}, ${m.secondsLeft} s left`);
    parts.push(`leases: ${m.leases.map((l) => `${l.hash} cost ${l.cost}`).join(", ") || "none"}`);
  }
  if (m.offlineExpires) parts.push(`offline signature expires ${when(m.offlineExpires)}`);
  p.append(el("span", {}, `Signed here: ${parts.join(" · ")}`));
  for (const text of [m.warning, m.error]) {
    if (text) p.append(el("br"), el("strong", { class: "warn" }, text));
  }
}

// What this node has seen go wrong in the farm: two leaders of one term, members whose logs differ.
function drawAlarms(alarms) {
  const list = $("alarms");
  list.replaceChildren(...(alarms || []).map((text) => el("li", {}, `ALARM: ${text}`)));
  list.hidden = !list.childElementCount;
}

function name(id) { return id === null || id === undefined ? "none" : `server ${id}`; }

async function refresh() {
  if (!cluster) return;
  try {
    await freshSession();
    const base = `/api/farms/${encodeURIComponent(cluster)}`;
    const [view, history] = await Promise.all([api(base), api(`${base}/history`)]);
    levels = history.levels || levels;
    $("leader").textContent = name(view.leader);
    $("publisher").textContent = name(view.publisher);
    $("term").textContent = view.term;
    $("self").textContent = `${view.node.id} (${view.node.role})`;
    $("commit").textContent = view.node.commit_index;
    $("clock-warning").textContent = view.node.clock_warning || "";
    $("clock-warning").hidden = !view.node.clock_warning;
    drawMembers(view, history);
    drawMetaLS(view);
    drawAlarms(view.alarms);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    $("updated").textContent = `update failed: ${e.message}`;
  }
}

async function loadSession() {
  session = await api("/api/session");
  sessionLoaded = Date.now();
  $("whoami").textContent = `signed in as ${session.user}`;
  const select = $("farm");
  select.replaceChildren(...session.farms.map((f) =>
    el("option", { value: f.cluster }, `${f.cluster} (node ${f.node}, ${f.members} members)`)));
  const wanted = new URLSearchParams(location.search).get("farm");
  if (!cluster || !session.farms.some((f) => f.cluster === cluster)) {
    cluster = session.farms.some((f) => f.cluster === wanted) ? wanted : (session.farms[0] || {}).cluster;
  }
  select.value = cluster;
}

function wire() {
  $("farm").addEventListener("change", (e) => { cluster = e.target.value; refresh(); });
  $("publish").addEventListener("click", () => act("publish", {}, "Publish the Meta LS2 again now?"));
  $("step-down").addEventListener("click", () =>
    act("step-down", {}, "Hand the leadership to another member now?"));
  $("exclude-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const d = $("exclude-input").value.trim();
    act("exclude", { destination: d }, `Exclude ${d} from the Meta LS2?`).then((ok) => { if (ok) $("exclude-input").value = ""; });
  });
  $("add-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const id = Number($("add-id").value), endpoint = $("add-endpoint").value.trim();
    act("add-member", { id, endpoint }, `Add server ${id} at ${endpoint} to farm ${cluster}?`);
  });
  $("export").addEventListener("click", async () => {
    try {
      const config = await api(`/api/farms/${encodeURIComponent(cluster)}/config`);
      const text = JSON.stringify(config, null, 2);
      $("config-text").value = text;
      const link = $("download");
      link.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      link.download = `${cluster}-config.json`;
      link.hidden = false;
      say("configuration exported below", false);
    } catch (e) { say(`export: ${e.message}`, true); }
  });
  const importing = (dry) => () => {
    let config;
    try { config = JSON.parse($("config-text").value); } catch (e) { say(`import: not JSON: ${e.message}`, true); return; }
    act("import", { config, dry_run: dry }, dry ? null : `Import this configuration into farm ${cluster}?`);
  };
  $("import-dry").addEventListener("click", importing(true));
  $("import").addEventListener("click", importing(false));
}

async function start() {
  wire();
  try { await loadSession(); } catch (e) { say(`cannot load the session: ${e.message}`, true); return; }
  await refresh();
  timer = setInterval(refresh, REFRESH_MS);
}

document.addEventListener("DOMContentLoaded", start);
