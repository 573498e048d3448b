/// The cab view's page: one HTML document, one style sheet, one script. Kept in the binary so that the
/// page always matches the API it talks to; Leaflet itself comes from the system (libjs-leaflet).
enum CabPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agrigps</title>
<link rel="stylesheet" href="/leaflet/leaflet.css">
<link rel="stylesheet" href="/app.css">
</head>
<body>
<header id="bar">
  <span id="sharing" data-state="unknown" role="status">…</span>
  <nav id="tabs">
    <button data-tab="map" class="active">Map</button>
    <button data-tab="nearby">Nearby</button>
    <button data-tab="records">Records</button>
    <button data-tab="settings">Settings</button>
  </nav>
</header>
<div id="banner" hidden></div>
<main>
  <section id="tab-map" class="tab active">
    <div id="map"></div>
    <div id="map-buttons">
      <button id="pause" type="button">Pause sharing</button>
      <button id="follow" type="button" aria-pressed="true">Follow me</button>
      <button id="fit" type="button">Fit all</button>
      <button id="trails" type="button" aria-pressed="false">Trails</button>
    </div>
    <div id="own-info"></div>
  </section>
  <section id="tab-nearby" class="tab">
    <p id="last-update">Last update: never</p>
    <table id="nearby">
      <thead><tr><th>Machine</th><th>Distance</th><th>Fix</th><th>Age</th><th>State</th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="nearby-empty">No other machine seen yet.</p>
  </section>
  <section id="tab-records" class="tab">
    <div id="records-controls">
      <label>Day <input id="records-day" type="date"></label>
      <button id="records-show" type="button">Show on map</button>
      <a id="records-gpx" class="download" href="#">GPX</a>
      <a id="records-geojson" class="download" href="#">GeoJSON</a>
    </div>
    <p id="records-day-figures"></p>
    <p id="records-empty" hidden>No track recorded yet: the gateway keeps one from its first sample, onboarded or not.</p>
    <h3 id="records-week-title">Week</h3>
    <div id="records-week" class="chart" role="img"></div>
    <h3 id="records-year-title">Year</h3>
    <div id="records-year" class="chart" role="img"></div>
    <div id="records-legend" class="legend"></div>
  </section>
  <section id="tab-settings" class="tab">
    <div id="login" hidden>
      <h2>Log in</h2>
      <input id="password" type="password" autocomplete="current-password" placeholder="Password">
      <button id="login-button" type="button">Log in</button>
    </div>
    <div id="account">
      <h2>agrirouter</h2>
      <p id="endpoint">Not onboarded.</p>
      <p id="certificate"></p>
      <label>Environment <select id="environment"></select></label>
      <label>TAN <input id="tan" type="text" autocomplete="off" spellcheck="false" maxlength="64" placeholder="registration code"></label>
      <button id="onboard" type="button">Onboard</button>
      <button id="disconnect" type="button" hidden>Disconnect</button>
    </div>
  </section>
</main>
<div id="toasts"></div>
<div id="dialog" hidden>
  <div class="box">
    <p id="dialog-text"></p>
    <div class="buttons">
      <button id="dialog-cancel" type="button">Cancel</button>
      <button id="dialog-ok" type="button">OK</button>
    </div>
  </div>
</div>
<script src="/leaflet/leaflet.js"></script>
<script src="/app.js"></script>
</body>
</html>
"""#

    static let style = #"""
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; font-family: system-ui, sans-serif; font-size: 16px; background: #f4f4f0; color: #222; }
body { display: flex; flex-direction: column; }
#bar { display: flex; align-items: center; justify-content: space-between; gap: 8px; padding: 6px 8px; background: #1f3b2d; color: #fff; flex-wrap: wrap; }
#sharing { padding: 6px 10px; border-radius: 14px; font-weight: 600; background: #777; }
#sharing[data-state="sharing"] { background: #2e8b3a; }
#sharing[data-state="paused"] { background: #c77c00; }
#sharing[data-state="offline"], #sharing[data-state="daemon_stopped"] { background: #b3261e; }
#sharing[data-state="not_onboarded"] { background: #5c5c8a; }
#sharing[data-state="no_fix"], #sharing[data-state="no_receiver"], #sharing[data-state="gpsd_unreachable"] { background: #8a5c00; }
#tabs button { background: none; border: 0; color: #cfe; padding: 8px 10px; font-size: 16px; }
#tabs button.active { color: #fff; border-bottom: 3px solid #9fd; }
#banner { background: #fde2e1; color: #7a1510; padding: 8px 10px; border-bottom: 1px solid #e8a39e; }
#banner.warning { background: #fff4d6; color: #6a4b00; border-color: #e9cf80; }
main { flex: 1; position: relative; min-height: 0; }
.tab { display: none; height: 100%; overflow: auto; padding: 8px; }
.tab.active { display: block; }
#tab-map { padding: 0; position: relative; }
#map { position: absolute; inset: 0; background: #e6e4dc; }
#map-buttons { position: absolute; right: 8px; top: 8px; z-index: 1000; display: flex; flex-direction: column; gap: 6px; }
#map-buttons button, #account button, #login button { padding: 10px 12px; font-size: 16px; border-radius: 6px; border: 1px solid #888; background: #fff; }
#map-buttons button[aria-pressed="true"] { background: #d8efe0; }
#pause { font-weight: 600; }
#own-info { position: absolute; left: 8px; bottom: 28px; z-index: 1000; background: rgba(255,255,255,0.9); padding: 4px 8px; border-radius: 4px; font-size: 14px; }
.other-label, .own-label { font-weight: 600; }
.other-label.stale { color: #888; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px; border-bottom: 1px solid #ddd; }
tr.stale td, tr.gone td { color: #888; }
#account label { display: block; margin: 10px 0; }
#account input, #account select, #login input { font-size: 16px; padding: 8px; width: 100%; max-width: 320px; display: block; }
#disconnect { color: #b3261e; }
#toasts { position: fixed; bottom: 8px; left: 8px; right: 8px; z-index: 2000; display: flex; flex-direction: column; gap: 4px; pointer-events: none; }
.toast { background: #333; color: #fff; padding: 8px 10px; border-radius: 6px; opacity: 0.95; }
#dialog { position: fixed; inset: 0; background: rgba(0,0,0,0.45); z-index: 3000; display: flex; align-items: center; justify-content: center; }
#dialog[hidden] { display: none; }
#dialog .box { background: #fff; padding: 16px; border-radius: 8px; max-width: 90vw; width: 420px; }
#dialog .buttons { display: flex; justify-content: flex-end; gap: 8px; }
#dialog button { padding: 10px 14px; font-size: 16px; }
#records-controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
#records-controls input { font-size: 16px; padding: 6px; }
#records-controls button, .download { padding: 8px 12px; font-size: 16px; border-radius: 6px; border: 1px solid #888; background: #fff; color: #222; text-decoration: none; }
#tab-records h3 { margin: 14px 0 4px; font-size: 16px; }
.chart { display: flex; align-items: flex-end; gap: 4px; height: 170px; padding: 18px 2px 0; background: #fff; border: 1px solid #ddd; }
.chart .column { flex: 1; display: flex; flex-direction: column; align-items: stretch; justify-content: flex-end; height: 100%; min-width: 0; cursor: default; }
.chart .column.selected .label { font-weight: 700; }
.chart .stack { display: flex; flex-direction: column-reverse; }
.chart .part { min-height: 0; }
.chart .value { font-size: 11px; text-align: center; color: #444; white-space: nowrap; overflow: hidden; }
.chart .label { font-size: 12px; text-align: center; border-top: 1px solid #bbb; padding: 2px 0; white-space: nowrap; overflow: hidden; }
.legend { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 8px; font-size: 13px; }
.legend span::before { content: ""; display: inline-block; width: 10px; height: 10px; margin-right: 4px; background: var(--swatch); }
@media (orientation: landscape) and (min-width: 900px) {
  main { display: flex; }
  #tab-map { display: block; flex: 2; }
  #tab-nearby.active, #tab-records.active, #tab-settings.active { flex: 1; max-width: 460px; border-left: 1px solid #ccc; }
  #tabs button[data-tab="map"] { display: none; }
}
"""#

    static let script = #"""
"use strict";
const cab = { session: null, state: null, map: null, own: null, others: {}, trails: {}, follow: true, showTrails: false, fitted: false,
              records: null, dayTrack: null };
window.cab = cab;

function $(id) { return document.getElementById(id); }
function text(element, value) { element.textContent = value == null ? "" : String(value); }

async function api(path, body) {
  const options = { method: body === undefined ? "GET" : "POST", credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.headers["X-CSRF-Token"] = cab.session && cab.session.csrfToken || "";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let answer = {};
  try { answer = await response.json(); } catch (e) { answer = {}; }
  if (!response.ok) { throw new Error(answer.error || ("HTTP " + response.status)); }
  return answer;
}

function toast(message) {
  const item = document.createElement("div");
  item.className = "toast";
  text(item, message);
  $("toasts").appendChild(item);
  setTimeout(() => item.remove(), 8000);
}

function dialog(message, withCancel, okLabel) {
  return new Promise(resolve => {
    text($("dialog-text"), message);
    $("dialog-cancel").hidden = !withCancel;
    text($("dialog-ok"), okLabel || "OK");
    $("dialog").hidden = false;
    const done = answer => { $("dialog").hidden = true; $("dialog-ok").onclick = null; $("dialog-cancel").onclick = null; resolve(answer); };
    $("dialog-ok").onclick = () => done(true);
    $("dialog-cancel").onclick = () => done(false);
  });
}

const fixColours = { rtk_fixed: "#1a7f37", rtk_float: "#1f6fb2", dgps: "#6a3fb5", autonomous: "#d97a00", none: "#888888" };

function setUpMap() {
  cab.map = L.map("map", { zoomControl: true, attributionControl: true }).setView([51.0, 10.0], 5);
  if (cab.session.tiles && cab.session.tiles !== "none") {
    L.tileLayer(cab.session.tiles, { maxZoom: 19, attribution: "&copy; OpenStreetMap contributors" }).addTo(cab.map);
  }
  L.control.scale({ metric: true, imperial: false }).addTo(cab.map);
  cab.map.on("dragstart", () => { cab.follow = false; $("follow").setAttribute("aria-pressed", "false"); });
}

function drawOwn(own) {
  if (!own) { if (cab.own) { cab.own.remove(); cab.own = null; } text($("own-info"), "No position yet"); return; }
  const colour = fixColours[own.fix] || fixColours.none;
  const style = { radius: 10, color: "#ffffff", weight: 3, fillColor: colour, fillOpacity: own.old ? 0.35 : 1, dashArray: own.old ? "4 4" : null };
  if (!cab.own) {
    cab.own = L.circleMarker([own.latitude, own.longitude], style).addTo(cab.map);
    cab.own.bindTooltip("This machine", { permanent: true, direction: "top", className: "own-label" });
  } else {
    cab.own.setLatLng([own.latitude, own.longitude]);
    cab.own.setStyle(style);
  }
  cab.own.options.fix = own.fix;
  cab.own.options.old = own.old;
  text($("own-info"), (own.old ? "OLD – " : "") + own.fixText + (own.satellites != null ? " · " + own.satellites + " sat" : ""));
  if (cab.follow) { cab.map.setView([own.latitude, own.longitude], Math.max(cab.map.getZoom(), 15)); }
  if (cab.showTrails) { extendTrail("own", [own.latitude, own.longitude]); }
}

function drawOthers(others) {
  const present = {};
  for (const other of others) {
    if (other.state === "gone" || other.latitude == null || other.longitude == null) { continue; }
    present[other.id] = true;
    const stale = other.state !== "active";
    const style = { radius: 8, color: "#ffffff", weight: 2, fillColor: stale ? "#9a9a9a" : "#1565c0", fillOpacity: stale ? 0.6 : 1 };
    let marker = cab.others[other.id];
    if (!marker) {
      marker = L.circleMarker([other.latitude, other.longitude], style).addTo(cab.map);
      marker.bindTooltip("", { permanent: true, direction: "right", className: "other-label" });
      cab.others[other.id] = marker;
    } else {
      marker.setLatLng([other.latitude, other.longitude]);
      marker.setStyle(style);
    }
    marker.options.name = other.name;
    marker.options.stale = stale;
    // A name comes from another machine: set as text, never as HTML.
    const label = document.createElement("span");
    text(label, other.name);
    marker.setTooltipContent(label);
    const element = marker.getTooltip().getElement();
    if (element) { element.classList.toggle("stale", stale); }
    if (cab.showTrails) { extendTrail(other.id, [other.latitude, other.longitude]); }
  }
  for (const id of Object.keys(cab.others)) {
    if (!present[id]) { cab.others[id].remove(); delete cab.others[id]; }
  }
}

function extendTrail(id, point) {
  const trail = cab.trails[id];
  if (!trail) { return; }
  const points = trail.getLatLngs();
  const last = points[points.length - 1];
  if (!last || last.lat !== point[0] || last.lng !== point[1]) { trail.addLatLng(point); }
}

async function toggleTrails() {
  cab.showTrails = !cab.showTrails;
  $("trails").setAttribute("aria-pressed", String(cab.showTrails));
  for (const id of Object.keys(cab.trails)) { cab.trails[id].remove(); }
  cab.trails = {};
  if (!cab.showTrails) { return; }
  try {
    const trails = await api("/api/track");
    cab.trails.own = L.polyline(trails.own, { color: "#1a7f37", weight: 3, opacity: 0.7 }).addTo(cab.map);
    for (const id of Object.keys(trails.others)) {
      cab.trails[id] = L.polyline(trails.others[id], { color: "#1565c0", weight: 2, opacity: 0.6 }).addTo(cab.map);
    }
  } catch (error) { dialog("Trails could not be loaded: " + error.message, false); }
}

function fitAll() {
  const points = [];
  if (cab.own) { points.push(cab.own.getLatLng()); }
  for (const id of Object.keys(cab.others)) { points.push(cab.others[id].getLatLng()); }
  if (points.length === 1) { cab.map.setView(points[0], 15); }
  if (points.length > 1) { cab.map.fitBounds(L.latLngBounds(points), { padding: [40, 40], maxZoom: 17 }); }
  cab.follow = false;
  $("follow").setAttribute("aria-pressed", "false");
}

function drawBanner(state) {
  const banner = $("banner");
  const reasons = state.health === "OK" ? [] : state.reasons;
  banner.hidden = reasons.length === 0;
  banner.className = state.health === "WARNING" ? "warning" : "";
  text(banner, reasons.length ? state.health + ": " + reasons.join("; ") : "");
}

function drawNearby(state) {
  const body = document.querySelector("#nearby tbody");
  body.replaceChildren();
  const rows = state.others;
  for (const other of rows) {
    const row = document.createElement("tr");
    row.className = other.state;
    for (const value of [other.name, other.distance || "unknown", other.fix || "–", other.age, other.state]) {
      const cell = document.createElement("td");
      text(cell, value);
      row.appendChild(cell);
    }
    body.appendChild(row);
  }
  $("nearby-empty").hidden = rows.length > 0;
  text($("last-update"), "Last update: " + (state.lastUpdate ? new Date(state.lastUpdate).toLocaleString() : "never"));
}

function drawSettings(state) {
  const settings = state.settings;
  const select = $("environment");
  if (select.options.length !== settings.environments.length) {
    select.replaceChildren();
    for (const name of settings.environments) {
      const option = document.createElement("option");
      option.value = name;
      text(option, name === "qa" ? "QA" : name === "production" ? "Production" : name);
      select.appendChild(option);
    }
  }
  if (settings.onboarded) {
    text($("endpoint"), "Onboarded to agrirouter " + settings.environment + (settings.endpointName ? " as \u201c" + settings.endpointName + "\u201d" : "") + ".");
    text($("certificate"), settings.certificateValidUntil ? "Certificate valid until " + settings.certificateValidUntil + "." : "");
    select.value = settings.environment;
    select.disabled = true;
    text($("onboard"), "Re-onboard");
    $("disconnect").hidden = false;
  } else {
    text($("endpoint"), "Not onboarded: positions stay on this machine.");
    text($("certificate"), "");
    select.disabled = false;
    text($("onboard"), "Onboard");
    $("disconnect").hidden = true;
  }
}

function draw(state) {
  cab.state = state;
  const sharing = $("sharing");
  sharing.dataset.state = state.sharing.state;
  text(sharing, state.sharing.text);
  const paused = state.sharing.state === "paused";
  text($("pause"), paused ? "Resume sharing" : "Pause sharing");
  $("pause").disabled = !state.settings.onboarded;
  drawBanner(state);
  drawOwn(state.own);
  drawOthers(state.others);
  drawNearby(state);
  drawSettings(state);
  // The first view: our own position, or everyone when we have none.
  if (!cab.fitted && (state.own || state.others.length)) { cab.fitted = true; if (!state.own) { fitAll(); } }
}

// Records: the machine's own figures, a week and a year as bar charts of hours with a fix by quality.
const qualityNames = { rtk_fixed: "RTK fixed", rtk_float: "RTK float", dgps: "DGPS", autonomous: "Autonomous", other: "Other" };
const qualityColours = { rtk_fixed: fixColours.rtk_fixed, rtk_float: fixColours.rtk_float, dgps: fixColours.dgps, autonomous: fixColours.autonomous, other: "#999999" };

function figuresText(figures) {
  return figures.fixHours.toFixed(1) + " h with a fix · " + figures.movingHours.toFixed(1) + " h moving · " + figures.kilometres.toFixed(1) + " km · "
    + Math.round(figures.noFixMinutes) + " min without a fix · " + Math.round(figures.noReceiverMinutes) + " min without a receiver · " + figures.samples + " samples, "
    + figures.sent + " sent, " + figures.acknowledged + " acknowledged" + (figures.lost ? ", " + figures.lost + " LOST" : "");
}

function drawChart(element, bars, selectedKey, onPick) {
  element.replaceChildren();
  const most = Math.max(0.001, ...bars.map(bar => bar.figures.fixHours));
  for (const bar of bars) {
    const column = document.createElement("div");
    column.className = "column" + (bar.key === selectedKey ? " selected" : "");
    column.dataset.key = bar.key;
    column.dataset.hours = String(bar.figures.fixHours);
    column.title = bar.key + ": " + figuresText(bar.figures);
    const value = document.createElement("div");
    value.className = "value";
    text(value, bar.figures.fixHours > 0 ? bar.figures.fixHours.toFixed(1) + " h" : "");
    const stack = document.createElement("div");
    stack.className = "stack";
    stack.style.height = (100 * bar.figures.fixHours / most * 0.85).toFixed(2) + "%";
    for (const quality of Object.keys(qualityColours)) {
      const hours = bar.figures.hoursByQuality[quality] || 0;
      if (hours <= 0) { continue; }
      const part = document.createElement("div");
      part.className = "part";
      part.dataset.quality = quality;
      part.style.background = qualityColours[quality];
      part.style.height = (100 * hours / bar.figures.fixHours).toFixed(2) + "%";
      stack.appendChild(part);
    }
    const label = document.createElement("div");
    label.className = "label";
    text(label, bar.label);
    column.append(value, stack, label);
    if (onPick) { column.style.cursor = "pointer"; column.onclick = () => onPick(bar.key); }
    element.appendChild(column);
  }
}

function drawLegend() {
  const legend = $("records-legend");
  if (legend.childElementCount) { return; }
  for (const quality of Object.keys(qualityColours)) {
    const item = document.createElement("span");
    item.style.setProperty("--swatch", qualityColours[quality]);
    text(item, qualityNames[quality]);
    legend.appendChild(item);
  }
}

async function loadRecords(day) {
  try {
    const records = await api("/api/records" + (day ? "?date=" + encodeURIComponent(day) : ""));
    cab.records = records;
    $("records-day").value = records.day;
    $("records-day").max = records.today;
    if (records.firstDay) { $("records-day").min = records.firstDay; }
    $("records-empty").hidden = !!records.firstDay;
    text($("records-day-figures"), records.day + ": " + figuresText(records.dayFigures));
    text($("records-week-title"), "Week " + records.week + " · hours with a fix");
    text($("records-year-title"), records.year + " by month · hours with a fix");
    drawChart($("records-week"), records.weekDays, records.day, key => loadRecords(key));
    drawChart($("records-year"), records.months, records.day.slice(0, 7), null);
    drawLegend();
    for (const format of ["gpx", "geojson"]) {
      const link = $("records-" + format);
      link.href = "/api/records/export?date=" + records.day + "&format=" + format;
      link.setAttribute("download", "agrigps-" + records.day + "." + format);
    }
  } catch (error) { await dialog("Records could not be loaded: " + error.message, false); }
}

async function showDay() {
  const day = $("records-day").value;
  if (!day) { return; }
  try {
    const track = await api("/api/records/day?date=" + encodeURIComponent(day));
    if (cab.dayTrack) { cab.dayTrack.remove(); cab.dayTrack = null; }
    // On a phone the map is a tab of its own; on a wide screen it is beside the records already.
    if ($("tab-map").offsetWidth === 0) { document.querySelector('#tabs button[data-tab="map"]').click(); }
    if (!track.drawn) { toast("No position was recorded on " + day + "."); return; }
    cab.dayTrack = L.polyline(track.segments, { color: "#b5179e", weight: 4, opacity: 0.85 }).addTo(cab.map);
    cab.dayTrack.options.day = track.day;
    cab.follow = false;
    $("follow").setAttribute("aria-pressed", "false");
    cab.map.fitBounds(cab.dayTrack.getBounds(), { padding: [30, 30], maxZoom: 18 });
    toast("Track of " + day + ": " + track.segments.length + " stretch" + (track.segments.length === 1 ? "" : "es") + " with a fix");
  } catch (error) { await dialog("The day's track could not be loaded: " + error.message, false); }
}

function listen() {
  const source = new EventSource("/api/events");
  source.addEventListener("state", event => draw(JSON.parse(event.data)));
  source.addEventListener("notice", event => toast(JSON.parse(event.data).text));
  source.onerror = () => { text($("sharing"), "Connection to the gateway lost; retrying…"); $("sharing").dataset.state = "unknown"; };
}

async function act(path, body, success) {
  try {
    const answer = await api(path, body);
    if (success) { success(answer); }
    return true;
  } catch (error) {
    await dialog(error.message, false);
    return false;
  }
}

function wire() {
  for (const button of document.querySelectorAll("#tabs button")) {
    button.onclick = () => {
      for (const other of document.querySelectorAll("#tabs button")) { other.classList.toggle("active", other === button); }
      for (const tab of document.querySelectorAll(".tab")) { tab.classList.toggle("active", tab.id === "tab-" + button.dataset.tab); }
      if (button.dataset.tab === "map") { cab.map.invalidateSize(); }
      if (button.dataset.tab === "records") { loadRecords($("records-day").value); }
    };
  }
  $("pause").onclick = () => act("/api/sharing", { paused: cab.state && cab.state.sharing.state !== "paused" });
  $("follow").onclick = () => { cab.follow = !cab.follow; $("follow").setAttribute("aria-pressed", String(cab.follow)); if (cab.follow && cab.state) { drawOwn(cab.state.own); } };
  $("fit").onclick = fitAll;
  $("trails").onclick = toggleTrails;
  $("records-day").onchange = () => loadRecords($("records-day").value);
  $("records-show").onclick = showDay;
  $("onboard").onclick = async () => {
    const tan = $("tan").value.trim();
    if (!tan) { await dialog("Type the TAN (registration code) from the agrirouter UI first.", false); return; }
    $("onboard").disabled = true;
    await act("/api/onboard", { tan: tan, environment: $("environment").value }, answer => toast("Onboarded to agrirouter " + answer.environment));
    $("tan").value = "";
    $("onboard").disabled = false;
  };
  $("disconnect").onclick = async () => {
    if (!(await dialog("Disconnect this machine from agrirouter? Its credentials are removed; onboarding again needs a new TAN.", true, "Disconnect"))) { return; }
    await act("/api/disconnect", { confirm: true }, answer => dialog(answer.advice, false));
  };
  $("login-button").onclick = async () => {
    await act("/api/login", { password: $("password").value }, answer => { cab.session = answer; $("password").value = ""; start(); });
  };
}

async function start() {
  try {
    cab.session = await api("/api/session");
  } catch (error) { await dialog("The gateway cannot be reached: " + error.message, false); return; }
  if (!cab.session.loggedIn) {
    $("login").hidden = false;
    $("account").hidden = true;
    document.querySelector('#tabs button[data-tab="settings"]').click();
    return;
  }
  $("login").hidden = true;
  $("account").hidden = false;
  if (!cab.map) { setUpMap(); }
  listen();
}

wire();
start();
"""#
}
