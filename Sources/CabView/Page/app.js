"use strict";
const cab = { session: null, state: null, map: null, own: null, ownLook: "", others: {}, trails: {}, follow: true, showTrails: true, fitted: false,
              fieldsVersion: 0, fieldsLayer: null, fieldsFitted: false,
              records: null, dayTrack: null, fieldDay: null };
window.cab = cab;

function $(id) { return document.getElementById(id); }
function text(element, value) { element.textContent = value == null ? "" : String(value); }

// The page's words: the catalogue of the language chosen in Settings (kept in this browser), else
// of the browser's first language the box has one for, else English. Times, dates and numbers
// follow the same language: a 24-hour clock and a decimal comma in German.
const languageKey = "agrigps.language";
const languages = { de: "Deutsch", en: "English" };
const i18n = { language: "en", locale: "en-GB", strings: {}, plurals: new Intl.PluralRules("en") };

function chosenLanguage() {
  try {
    const chosen = localStorage.getItem(languageKey);
    if (languages[chosen]) { return chosen; }
  } catch (error) { /* storage refused: the browser's languages */ }
  return browserLanguage();
}

function browserLanguage() {
  for (const tag of navigator.languages || [navigator.language || "en"]) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (languages[base]) { return base; }
  }
  return "en";
}

async function loadLanguage(language) {
  const response = await fetch("/lang/" + language + ".json", { credentials: "same-origin" });
  if (!response.ok) { throw new Error("HTTP " + response.status); }
  const catalogue = await response.json();
  i18n.language = language;
  // English as written in Europe: day before month, a 24-hour clock.
  i18n.locale = language === "en" ? "en-GB" : language;
  i18n.strings = catalogue.strings || {};
  i18n.plurals = new Intl.PluralRules(language);
  document.documentElement.lang = language;
  translateStatic();
}

// t("key", { name: value }): the key's words with each {name} filled in, numbers as the language
// writes them; given a count, the key's ".one" or ".other" form by the language's plural rules.
// A key the catalogue lacks shows as itself, where a test and a person see it.
function t(key, values) {
  let chosen = key;
  if (values && typeof values.count === "number" && i18n.strings[key] === undefined) {
    const form = key + "." + i18n.plurals.select(values.count);
    chosen = i18n.strings[form] !== undefined ? form : key + ".other";
  }
  const template = i18n.strings[chosen];
  if (template === undefined) { return key; }
  return template.replace(/\{(\w+)\}/g, (whole, name) => {
    const value = values ? values[name] : undefined;
    return value == null ? whole : typeof value === "number" ? number(value) : String(value);
  });
}

// A length as the driver typed it: up to one decimal, none when whole (6 m, 6,5 m).
function metresWords(value) {
  return new Intl.NumberFormat(i18n.locale, { maximumFractionDigits: 1 }).format(value);
}

function number(value, digits) {
  return new Intl.NumberFormat(i18n.locale, { minimumFractionDigits: digits || 0, maximumFractionDigits: digits || 0 }).format(value);
}

function translateStatic() {
  for (const element of document.querySelectorAll("[data-i18n]")) { text(element, t(element.dataset.i18n)); }
  for (const element of document.querySelectorAll("[data-i18n-label]")) {
    const words = t(element.dataset.i18nLabel);
    element.setAttribute("aria-label", words);
    element.title = words;
  }
  for (const element of document.querySelectorAll("[data-i18n-placeholder]")) { element.placeholder = t(element.dataset.i18nPlaceholder); }
}

// A time span in words: "45 s", "12 min", "2 h 5 min", "3 days".
function duration(seconds) {
  const whole = Math.max(0, Math.round(Number(seconds) || 0));
  if (whole < 60) { return t("unit.seconds", { count: whole }); }
  if (whole < 3600) { return t("unit.minutes", { count: Math.floor(whole / 60) }); }
  if (whole < 86400) { return t("unit.hours", { hours: Math.floor(whole / 3600), minutes: Math.floor(whole % 3600 / 60) }); }
  return t("unit.days", { count: Math.floor(whole / 86400) });
}

function distanceWords(metres) {
  return metres < 1000 ? t("unit.m", { count: Math.round(metres) }) : t("unit.km", { count: number(metres / 1000, 1) });
}

// "NE 52°" (German "NO 52°"): eight points of the compass and the bearing in degrees.
function directionWords(bearing) {
  const points = ["N", "NE", "E", "SE", "S", "SW", "W", "NW"];
  const degrees = ((Math.round(bearing) % 360) + 360) % 360;
  return t("compass." + points[Math.round(degrees / 45) % 8]) + " " + degrees + "\u00b0";
}

// The time of day on a 24-hour clock, and a day as the language writes it.
function clockTime(iso) {
  const time = new Date(iso);
  return isNaN(time) ? "" : time.toLocaleTimeString(i18n.locale, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
}

function dayWords(day, weekday) {
  const time = new Date(day + "T12:00:00Z");
  const form = { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" };
  if (weekday) { form.weekday = "long"; }
  return isNaN(time) ? day : time.toLocaleDateString(i18n.locale, form);
}

// The day `step` days from `day`, both as YYYY-MM-DD.
function dayAfter(day, step) {
  const time = new Date(day + "T12:00:00Z");
  if (isNaN(time)) { return day; }
  time.setUTCDate(time.getUTCDate() + step);
  return time.toISOString().slice(0, 10);
}

// A fix in words, by its code; a code the catalogue lacks as the box wrote it.
function fixWords(code, fallback) {
  return i18n.strings["fix." + code] !== undefined ? t("fix." + code) : (fallback || code || t("fix.unknown"));
}

// The night theme: the driver's choice (the switch in the header, kept in this browser), else the
// system's, followed as it changes. The style sheet keys every colour on <html data-theme>.
const themeKey = "agrigps.theme";
const systemDark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

function chosenTheme() {
  try {
    const theme = localStorage.getItem(themeKey);
    return theme === "dark" || theme === "light" ? theme : null;
  } catch (error) { return null; }  // storage refused: the system's theme, and no memory
}

function applyTheme(theme) {
  const dark = theme === "dark";
  document.documentElement.dataset.theme = dark ? "dark" : "light";
  const button = $("theme");
  button.setAttribute("aria-pressed", String(dark));
  text(button, dark ? "\u2600\uFE0E" : "\u263E\uFE0E");  // a sun to go back to day, a moon to go to night
}

function toggleTheme() {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  try { localStorage.setItem(themeKey, next); } catch (error) { /* kept for this page only */ }
  applyTheme(next);
}

applyTheme(chosenTheme() || (systemDark && systemDark.matches ? "dark" : "light"));
if (systemDark && systemDark.addEventListener) {
  systemDark.addEventListener("change", event => { if (!chosenTheme()) applyTheme(event.matches ? "dark" : "light"); });
}

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

// A notice takes the strip's message line for 8 s, in place of the one before: the strip keeps its
// height, so nothing on the page moves and nothing is covered.
function toast(message) {
  const item = document.createElement("div");
  item.className = "toast";
  text(item, message);
  item.title = message;
  $("toasts").replaceChildren(item);
  setTimeout(() => item.remove(), 8000);
}

// A message that waits for OK (and Cancel, when asked): `options.details` is a smaller second line
// (agrirouter's code, for whoever helps); `options.link` an [address, words] to go on from there;
// `options.danger` marks OK as the step that cannot be undone.
function dialog(message, withCancel, okLabel, options) {
  const extra = options || {};
  return new Promise(resolve => {
    text($("dialog-text"), message);
    text($("dialog-details"), extra.details || "");
    $("dialog-details").hidden = !extra.details;
    $("dialog-link").hidden = !extra.link;
    if (extra.link) {
      const link = $("dialog-link").firstElementChild;
      link.href = extra.link[0];
      text(link, extra.link[1]);
    }
    $("dialog-cancel").hidden = !withCancel;
    text($("dialog-ok"), okLabel || t("dialog.ok"));
    $("dialog-ok").classList.toggle("danger", !!extra.danger);
    $("dialog").classList.toggle("danger", !!extra.danger);  // Cancel then sits where OK always does
    $("dialog").hidden = false;
    const done = answer => { $("dialog").hidden = true; $("dialog-ok").onclick = null; $("dialog-cancel").onclick = null; resolve(answer); };
    $("dialog-ok").onclick = () => done(true);
    $("dialog-cancel").onclick = () => done(false);
  });
}

const fixColours = { rtk_fixed: "#1a7f37", rtk_float: "#1f6fb2", dgps: "#6a3fb5", autonomous: "#d97a00", none: "#888888" };

// Leaflet puts an attribution in as HTML; the basemap's comes from a file the box was given.
function escapeHTML(value) {
  const element = document.createElement("span");
  element.textContent = value;
  return element.innerHTML;
}

function setUpMap() {
  const session = cab.session;
  cab.map = L.map("map", { zoomControl: true, attributionControl: true }).setView([51.0, 10.0], 5);
  if (session.tiles && session.tiles !== "none") {
    // An offline basemap made to zoom 14 is still drawn, enlarged, at the zoom a field needs.
    L.tileLayer(session.tiles, { maxNativeZoom: session.maxZoom || 19, maxZoom: 19,
                                 attribution: session.attribution ? escapeHTML(session.attribution) : "" }).addTo(cab.map);
  }
  labelMapKind();
  if (session.basemapProblem) toast(session.basemapProblem);
  L.control.scale({ metric: true, imperial: false }).addTo(cab.map);
  cab.map.on("dragstart", () => setFollow(false));
  // After Leaflet's own handlers (bound when the tooltips were), which place the names anew.
  cab.map.on("zoomend moveend", declutterLabels);
  // The map is told whenever its box changes (a tab opened beside it, the phone turned), so that
  // its centre, "Fit all" and "Follow me" are those of the map that shows, not of the window.
  if (window.ResizeObserver) { new ResizeObserver(() => cab.map.invalidateSize()).observe($("map")); }
  // Above the others' markers (the overlay pane) and their labels: this machine is never hidden.
  cab.map.createPane("own").style.zIndex = 660;
  if (cab.showTrails) { loadTrails(); }
}

// Which map this is, in the attribution's corner: the one kept on the box works with no internet;
// a live one needs it.
function labelMapKind() {
  cab.map.attributionControl.setPrefix({ offline: t("map.offline"), live: t("map.live"), none: t("map.none") }[cab.session.map] || "");
}

// Centres a place in the part of the map the controls leave free (on a phone the buttons take a
// third of its width), not under them.
function centreInView(latLng, zoom) {
  const room = clearOfControls();
  const shift = L.point((room.paddingBottomRight[0] - room.paddingTopLeft[0]) / 2, 0);
  cab.map.setView(cab.map.unproject(cab.map.project(latLng, zoom).add(shift), zoom), zoom);
}

// The room the controls on the map take at its edges: what is framed is framed inside it.
function clearOfControls() {
  const map = $("map").getBoundingClientRect();
  const buttons = $("map-buttons").getBoundingClientRect();
  const zoom = document.querySelector("#map .leaflet-control-zoom");
  const left = zoom ? zoom.getBoundingClientRect().right - map.left : 0;
  return { paddingTopLeft: [Math.max(40, left + 16), 40], paddingBottomRight: [Math.max(40, map.right - buttons.left + 16), 40] };
}

// This machine's marker: a disc with a ring in the fix's colour and the fix's letter in it (the
// letter tells the fix apart without its colour), an arrow for the heading when moving, dashed
// when the position is an old one. Every part comes from these tables and numbers, never from text.
const fixLetters = { rtk_fixed: "R", rtk_float: "F", dgps: "D", autonomous: "G", none: "?" };

function ownIcon(own) {
  const fix = fixColours[own.fix] ? own.fix : "none";
  const heading = Number(own.heading);
  const arrow = own.heading != null && Number.isFinite(heading)
    ? '<path class="heading" d="M24 0 L33 13 L15 13 Z" transform="rotate(' + heading.toFixed(0) + ' 24 24)"/>' : "";
  const html = '<svg viewBox="0 0 48 48" width="48" height="48" aria-hidden="true">' + arrow
    + '<circle class="disc" cx="24" cy="24" r="14" stroke="' + fixColours[fix] + '"' + (own.old ? ' stroke-dasharray="5 4"' : "") + '/>'
    + '<text x="24" y="29.5" text-anchor="middle">' + fixLetters[fix] + "</text></svg>";
  return L.divIcon({ className: "own-marker" + (own.old ? " old" : ""), html: html, iconSize: [48, 48], iconAnchor: [24, 24], tooltipAnchor: [0, -18] });
}

// This machine's fix in words: its quality, satellites and speed; or why the position is an old one.
function ownWords(own) {
  const stopped = cab.state && cab.state.sharing.state === "daemon_stopped";
  const speed = Number(own.speed);
  const fix = own.old ? t(stopped ? "own.stopped" : "own.old") : fixWords(own.fix, own.fixText);
  return [fix, own.satellites != null && !own.old ? t("own.satellites", { count: own.satellites }) : "",
          !own.old && Number.isFinite(speed) && speed >= 0.5 ? t("own.speed", { speed: Math.round(speed * 3.6) }) : ""].filter(Boolean).join(" \u00b7 ");
}

function drawOwn(own) {
  if (!own) { if (cab.own) { cab.own.remove(); cab.own = null; } text($("own-info"), t("own.none")); return; }
  const look = [own.fix, own.old, own.heading].join(" ");
  if (!cab.own) {
    cab.own = L.marker([own.latitude, own.longitude], { icon: ownIcon(own), pane: "own", keyboard: false }).addTo(cab.map);
    cab.own.bindTooltip(t("own.label"), { permanent: true, direction: "top", className: "own-label", pane: "own" });
    cab.own.bindPopup(ownDetails, { className: "machine-popup", autoPanPaddingTopLeft: [60, 20], autoPanPaddingBottomRight: [160, 20] });
  } else {
    cab.own.setLatLng([own.latitude, own.longitude]);
    if (look !== cab.ownLook) { cab.own.setIcon(ownIcon(own)); }
  }
  cab.ownLook = look;
  cab.own.options.fix = own.fix;
  cab.own.options.old = own.old;
  cab.own.setTooltipContent(t("own.label"));
  text($("own-info"), ownWords(own));
  if (cab.follow) { centreInView(L.latLng(own.latitude, own.longitude), Math.max(cab.map.getZoom(), 15)); }
  if (cab.showTrails) {
    extendTrail("own", [own.latitude, own.longitude]);
    extendWorkTrail([own.latitude, own.longitude], !own.old && cab.state && cab.state.work && cab.state.work.state === "working");
  }
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
      const id = other.id;
      marker.bindPopup(() => machineDetails(id), { className: "machine-popup", autoPanPaddingTopLeft: [60, 20], autoPanPaddingBottomRight: [160, 20] });
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

// Machines' names must not cover one another or this machine: where they would, the name of less
// weight is hidden (this machine's first, then those still sending, then the stale ones), and comes
// back as soon as there is room, after a zoom or a move. A tap on a machine still shows who it is.
function declutterLabels() {
  if (!cab.map) { return; }
  const element = marker => { const tip = marker && marker.getTooltip(); return tip && tip.getElement(); };
  const others = Object.values(cab.others).sort((a, b) => Number(!!a.options.stale) - Number(!!b.options.stale)).map(element);
  const own = element(cab.own);
  for (const label of [own].concat(others)) { if (label) { label.classList.remove("crowded"); } }
  const taken = [];
  const place = label => {
    const box = label && label.getBoundingClientRect();
    if (!box || box.width === 0) { return; }
    const covers = taken.some(other => box.left < other.right && other.left < box.right && box.top < other.bottom && other.top < box.bottom);
    if (covers) { label.classList.add("crowded"); } else { taken.push(box); }
  };
  place(own);  // its own marker does not count against it: the name sits just above
  if (cab.own && cab.own.getElement()) { taken.push(cab.own.getElement().getBoundingClientRect()); }
  others.forEach(place);
}

// A trail is broken where two positions lie more than this far apart: a jump (a receiver moved to
// another machine, a recorded log, a long gap) is no road driven.
const trailBreakMetres = 1000;

// Points in order → runs of points, each run drawn as one line.
function trailRuns(points) {
  const runs = [];
  for (const point of points) {
    const run = runs[runs.length - 1];
    const last = run && run[run.length - 1];
    if (!last || cab.map.distance(last, point) > trailBreakMetres) { runs.push([point]); } else { run.push(point); }
  }
  return runs;
}

function extendTrail(id, point) {
  const trail = cab.trails[id];
  if (!trail) { return; }
  const runs = trail.getLatLngs();
  const run = runs[runs.length - 1];
  const last = run && run[run.length - 1];
  if (last && last.lat === point[0] && last.lng === point[1]) { return; }
  if (!last || cab.map.distance(last, point) > trailBreakMetres) { runs.push([L.latLng(point)]); } else { run.push(L.latLng(point)); }
  trail.setLatLngs(runs);
}

// The stretches driven working, drawn broad beneath the trail: runs of points the box marked
// working (a third element of 1), each run broken where work stopped or the trail jumps.
function workRuns(points) {
  const runs = [];
  let previous = null;
  for (const point of points) {
    const working = point[2] === 1;
    const joined = previous && previous[2] === 1 && working && cab.map.distance(previous.slice(0, 2), point.slice(0, 2)) <= trailBreakMetres;
    if (working) { if (joined) { runs[runs.length - 1].push(point.slice(0, 2)); } else { runs.push([point.slice(0, 2)]); } }
    previous = point;
  }
  return runs;
}

function extendWorkTrail(point, working) {
  const trail = cab.trails.ownWork;
  if (!trail) { return; }
  const runs = trail.getLatLngs();
  const run = runs[runs.length - 1];
  const last = run && run[run.length - 1];
  if (working) {
    const joined = cab.wasWorking && last && cab.map.distance(last, point) <= trailBreakMetres;
    if (last && last.lat === point[0] && last.lng === point[1]) { return; }
    if (joined) { run.push(L.latLng(point)); } else { runs.push([L.latLng(point)]); }
    trail.setLatLngs(runs);
  }
  cab.wasWorking = working;
}

async function toggleTrails() {
  cab.showTrails = !cab.showTrails;
  loadTrails();
}

// The trails: this machine's and the others' recent positions, drawn from the server's memory and
// then extended with each new position.
async function loadTrails() {
  $("trails").setAttribute("aria-pressed", String(cab.showTrails));
  for (const id of Object.keys(cab.trails)) { cab.trails[id].remove(); }
  cab.trails = {};
  if (!cab.showTrails) { return; }
  try {
    const trails = await api("/api/track");
    // Working stretches broad and amber beneath the green trail: the two styles tell work from the rest.
    const own = trails.own.map(point => point.slice(0, 2));
    cab.trails.ownWork = L.polyline(workRuns(trails.own), { color: "#e08600", weight: 9, opacity: 0.55 }).addTo(cab.map);
    cab.wasWorking = trails.own.length > 0 && trails.own[trails.own.length - 1][2] === 1;
    cab.trails.own = L.polyline(trailRuns(own), { color: "#1a7f37", weight: 3, opacity: 0.7 }).addTo(cab.map);
    for (const id of Object.keys(trails.others)) {
      cab.trails[id] = L.polyline(trailRuns(trails.others[id]), { color: "#1565c0", weight: 2, opacity: 0.6 }).addTo(cab.map);
    }
  } catch (error) { toast(t("notice.trailsFailed", { error: error.message })); }
}

function fitAll() {
  const points = [];
  if (cab.own) { points.push(cab.own.getLatLng()); }
  for (const id of Object.keys(cab.others)) { points.push(cab.others[id].getLatLng()); }
  if (points.length === 1) { centreInView(points[0], 15); }
  if (points.length > 1) { cab.map.fitBounds(L.latLngBounds(points), Object.assign({ maxZoom: 17 }, clearOfControls())); }
  setFollow(false);
}

// Whether the map keeps this machine in view; the button shows it.
function setFollow(on) {
  cab.follow = on;
  $("follow").setAttribute("aria-pressed", String(on));
}

// On a phone the map is a tab of its own, opened here (which tells the map its size); on a wide
// screen it is beside every tab already.
function showMapTab() {
  if ($("tab-map").offsetWidth === 0) { document.querySelector('#tabs button[data-tab="map"]').click(); }
}

// Centres the map on another machine and shows what is known of it.
function centreOn(id) {
  const marker = cab.others[id];
  if (!marker) { return; }
  showMapTab();
  setFollow(false);
  centreInView(marker.getLatLng(), Math.max(cab.map.getZoom(), 16));
  marker.openPopup();
}

// What is known of another machine, for its popup: every value set as text.
function machineDetails(id) {
  const other = cab.state && cab.state.others.find(entry => entry.id === id);
  if (!other) { return detailsBox([]); }
  return detailsBox([[other.name, "name"], [stateWords(other), ""], [t("nearby.fix", { fix: fixWords(other.fix, other.fixText) }), ""],
                     [other.distanceMetres != null ? t("nearby.from", { distance: distanceWords(other.distanceMetres), direction: otherDirection(other) }).trim() : "", ""],
                     [other.field ? t("field.in", { field: other.field }) : "", ""],
                     [other.ageSeconds != null ? t("nearby.lastPosition", { age: duration(other.ageSeconds) }) : "", ""]]);
}

// This machine's popup: the fix in words, and where it is.
function ownDetails() {
  const own = cab.state && cab.state.own;
  return detailsBox([[t("own.label"), "name"], [own ? ownWords(own) : t("own.none"), ""],
                     [cab.state && cab.state.field ? t("field.in", { field: cab.state.field }) : "", ""],
                     [own ? number(own.latitude, 6) + " / " + number(own.longitude, 6) : "", ""]]);
}

// A popup's lines, each [text, class]; empty ones are left out, and every value is set as text.
function detailsBox(lines) {
  const box = document.createElement("div");
  box.className = "details";
  for (const [value, kind] of lines) {
    if (!value) { continue; }
    const line = document.createElement("div");
    if (kind) { line.className = kind; }
    text(line, value);
    box.appendChild(line);
  }
  return box;
}

// The strip's standing message: what the sharing state means and what to do, in the page's words.
// The gateway's own reasons (for the fitter, in English, with file paths and codes) are kept under
// Settings, technical details.
function drawBanner(state) {
  const banner = $("banner");
  const sharing = state.sharing.state;
  const advice = i18n.strings["advice." + sharing] ? t("advice." + sharing) : "";
  // The states `agrigps status` calls CRITICAL (SharingIndicator.State.health), and the box not heard.
  const alarm = ["daemon_stopped", "no_receiver", "gpsd_unreachable", "lost"].includes(sharing);
  banner.hidden = !advice;
  banner.className = alarm ? "" : "warning";
  text(banner, advice ? t(alarm ? "problem.critical" : "problem.warning", { words: advice }) : "");
  text($("reasons"), state.reasons.length ? state.health + ": " + state.reasons.join("; ") : state.health);
}

// A machine's state in words: whether its position is live, old, or none at all.
function stateWords(other) {
  switch (other.state) {
  case "active": return t("nearby.live");
  case "stale": return t("nearby.stale", { age: duration(other.ageSeconds) });
  case "gone": return t("nearby.gone");
  default: return t("nearby.silent");
  }
}

function otherDirection(other) {
  return other.bearing != null && Number.isFinite(Number(other.bearing)) ? directionWords(Number(other.bearing)) : "";
}

// Nearby: one card per machine, a button as large as the card; a tap centres the map on it.
function drawNearby(state) {
  const list = $("nearby");
  list.replaceChildren();
  const rows = state.others;
  for (const other of rows) {
    const item = document.createElement("li");
    item.className = other.state;
    const card = document.createElement("button");
    card.type = "button";
    card.className = "machine";
    card.dataset.id = other.id;
    const name = document.createElement("span");
    name.className = "name";
    text(name, other.name);  // from another machine: text, never HTML
    const where = document.createElement("span");
    where.className = "where";
    if (other.bearing != null && Number.isFinite(Number(other.bearing))) {
      const arrow = document.createElement("span");
      arrow.className = "arrow";
      arrow.setAttribute("aria-hidden", "true");
      text(arrow, "\u2191");
      arrow.style.transform = "rotate(" + Number(other.bearing).toFixed(0) + "deg)";
      where.appendChild(arrow);
    }
    where.appendChild(document.createTextNode(other.distanceMetres != null
      ? (distanceWords(other.distanceMetres) + " " + otherDirection(other)).trim() : t("nearby.distanceUnknown")));
    const facts = document.createElement("span");
    facts.className = "facts";
    text(facts, [other.fix ? fixWords(other.fix, other.fixText) : t("fix.unknown"), stateWords(other)].join(" \u00b7 "));
    card.append(name, where, facts);
    const placed = other.latitude != null && other.longitude != null && other.state !== "gone";
    card.disabled = !placed;
    card.onclick = () => centreOn(other.id);
    item.appendChild(card);
    list.appendChild(item);
  }
  $("nearby-empty").hidden = rows.length > 0;
  text($("last-update"), state.lastUpdate ? t("nearby.lastUpdate", { time: new Date(state.lastUpdate).toLocaleString(i18n.locale, { hourCycle: "h23" }) })
                                          : t("nearby.never"));
}

function environmentWords(name) {
  return i18n.strings["env." + name] !== undefined ? t("env." + name) : name;
}

// Settings: whether this machine is connected, and the form to connect it. No environment is chosen
// for the driver: production and QA are different accounts, and a TAN works only in its own.
// What the tractor's bus gives, for the fitter and the driver: its controllers, each signal with
// its newest value and age, and what was not heard. Signal names are the page's; values the box's.
function drawMachine(state) {
  const bus = state.work && state.work.bus;
  const summary = !bus ? t("settings.machineNone")
    : [bus.tractorECU !== undefined ? t("settings.tractorAt", { address: String(bus.tractorECU) }) : null,
       bus.engine !== undefined ? t("settings.engineAt", { address: String(bus.engine) }) : null,
       bus.busProblem ? t("settings.busProblem", { problem: bus.busProblem }) : null].filter(Boolean).join(" · ") || t("settings.machineHeard");
  text($("machine-summary"), summary);
  const list = $("machine-signals");
  list.replaceChildren();
  for (const signal of (bus && bus.signals) || []) {
    const item = document.createElement("li");
    text(item, t("settings.signal", { signal: signalWords(signal.signal), value: signal.value, source: String(signal.source),
                                       age: number(signal.ageSeconds, 1) }));
    list.appendChild(item);
  }
  const missing = (bus && bus.notHeard) || [];
  $("machine-missing").hidden = !missing.length;
  text($("machine-missing"), missing.length ? t("settings.notHeard", { signals: missing.map(signalWords).join(", ") }) : "");
  drawWidth(state.work || {});
}

// The implement's working width, for the area in Records: asked here once, unless the fitter set it
// in the configuration file, which then stands and is only shown. A field being typed in is left alone.
function drawWidth(work) {
  const input = $("working-width");
  const fixed = work.widthConfigured === true;
  if (document.activeElement !== input || fixed) { input.value = typeof work.width === "number" ? String(work.width) : ""; }
  input.disabled = fixed;
  $("working-width-save").hidden = fixed;
  text($("working-width-note"), fixed ? t("settings.widthConfigured")
    : typeof work.width === "number" ? t("settings.widthSet", { metres: metresWords(work.width) }) : t("settings.widthHelp"));
}

async function saveWidth() {
  const typed = $("working-width").value.trim().replace(",", ".");
  const metres = typed === "" ? null : Number(typed);
  if (metres !== null && !(metres >= 0.1 && metres <= 60)) { await dialog(t("settings.widthRange"), false); return; }
  await act("/api/working-width", { metres }, () => {
    $("working-width").blur();
    toast(metres === null ? t("settings.widthForgotten") : t("settings.widthSet", { metres: metresWords(metres) }));
  });
}

function signalWords(name) {
  return i18n.strings["signal." + name] !== undefined ? t("signal." + name) : name;
}

function drawSettings(state) {
  drawMachine(state);
  const settings = state.settings;
  const select = $("environment");
  const names = [""].concat(settings.environments);
  if (select.options.length !== names.length || select.dataset.language !== i18n.language) {
    const was = select.value;
    select.replaceChildren();
    for (const name of names) {
      const option = document.createElement("option");
      option.value = name;
      text(option, name ? environmentWords(name) : t("settings.chooseEnvironment"));
      select.appendChild(option);
    }
    select.value = names.includes(was) ? was : "";
    select.dataset.language = i18n.language;
  }
  if (settings.onboarded) {
    const values = { environment: environmentWords(settings.environment), name: settings.endpointName };
    const said = settings.waitingForGateway ? "settings.notTaken" : settings.endpointName ? "settings.connectedAs" : "settings.connected";
    text($("endpoint"), t(said, values));
    text($("certificate"), settings.certificateValidUntil ? t("settings.certificate", { date: dayWords(settings.certificateValidUntil) }) : "");
    select.value = settings.environment;
    select.disabled = true;
    text($("onboard"), t("settings.reconnect"));
    $("disconnect").hidden = false;
  } else {
    text($("endpoint"), t("settings.notConnected"));
    text($("certificate"), "");
    if (select.disabled) { select.value = ""; }
    select.disabled = false;
    text($("onboard"), t("settings.connect"));
    $("disconnect").hidden = true;
  }
}

// The language switch: the browser's languages first, then a choice kept in this browser.
function drawLanguages() {
  const select = $("language");
  select.replaceChildren();
  for (const [code, name] of [["", t("settings.language.auto")]].concat(Object.entries(languages))) {
    const option = document.createElement("option");
    option.value = code;
    text(option, name);
    select.appendChild(option);
  }
  let kept = "";
  try { kept = localStorage.getItem(languageKey) || ""; } catch (error) { kept = ""; }
  select.value = languages[kept] ? kept : "";
}

async function chooseLanguage() {
  const choice = $("language").value;
  try {
    if (choice) { localStorage.setItem(languageKey, choice); } else { localStorage.removeItem(languageKey); }
  } catch (error) { /* kept for this page only */ }
  try { await loadLanguage(choice || browserLanguage()); } catch (error) { toast(error.message); return; }
  drawLanguages();
  if (cab.map) { labelMapKind(); }
  if (cab.state) { draw(cab.state); }
  if (cab.records) { loadRecords(cab.records.day); }
}

// The farm's fields, under everything else: outlines with their names, in a pane of their own.
async function loadFields(version) {
  cab.fieldsVersion = version;
  let collection;
  try { collection = await api("/api/fields"); } catch (error) { cab.fieldsVersion = -1; return; }  // asked again with the next state
  if (cab.fieldsLayer) cab.fieldsLayer.remove();
  if (!cab.map.getPane("fields")) { cab.map.createPane("fields").style.zIndex = 350; }
  cab.fieldsLayer = L.geoJSON(collection, {
    pane: "fields",
    style: { color: "#2e6b1f", weight: 2, fillColor: "#8fcf6a", fillOpacity: 0.18 },
    onEachFeature: (feature, layer) => {
      // A field's name comes from the farm software's export: set as text, never as HTML (a string
      // given to bindTooltip would be).
      const label = document.createElement("span");
      text(label, feature.properties.name);
      layer.bindTooltip(label, { permanent: true, direction: "center", className: "field-name", pane: "fields" });
    },
  }).addTo(cab.map);
  // The first time fields come, show the farm: the fields within 20 km of this machine, and it;
  // without a position, all of them. (An export may hold a field far away, a test or an outlier.)
  if (!cab.fieldsFitted && cab.fieldsLayer.getLayers().length) {
    cab.fieldsFitted = true;
    const here = cab.own && cab.own.getLatLng();
    const near = cab.fieldsLayer.getLayers().filter(layer => !here || cab.map.distance(here, layer.getBounds().getCenter()) < 20000);
    if (near.length) {
      const bounds = L.latLngBounds(near.map(layer => layer.getBounds()));
      if (here) bounds.extend(here);
      cab.map.fitBounds(bounds.pad(0.05));
    }
  }
}

// The header says which field this machine is in, once the box knows any.
// The chip of where the machine is and what it does: "In: Nordacker · Working", "On the road".
// Work is said only when the tractor's bus or the work switch tells it.
function drawFieldName(state) {
  const place = state.fieldsKnown && state.own ? (state.field ? t("field.in", { field: state.field }) : t("field.road")) : null;
  const work = state.work && state.work.state;
  const known = work === "working" || work === "not-working" || (work === "road" && !place);
  const words = [place, known ? t("work." + work) : null].filter(Boolean).join(" · ");
  for (const element of [$("field"), $("field-here")]) {
    element.hidden = !words;
    element.dataset.work = known || work === "road" ? work : "";
    text(element, words);
    element.title = words;
  }
}

// The driver's work switch, offered while [machine] work_signals counts it: it shows its position.
function drawWorkSwitch(state) {
  const button = $("work-switch");
  const work = state.work || {};
  button.hidden = work.switchCounts === false;
  button.setAttribute("aria-pressed", work.switchOn ? "true" : "false");
  text(button, t(work.switchOn ? "map.working" : "map.notWorking"));
  button.disabled = false;
}

// The sharing label's words. A pause says since when and what happens to the positions taken
// meanwhile: kept on this box, never sent.
// Any other trouble says how long it has lasted, by the box's clock ("Gateway stopped · 12 min").
function sharingText(state) {
  const sharing = state.sharing;
  if (sharing.state === "paused" && sharing.pausedSince) {
    return t("sharing.pausedSince", { time: clockTime(sharing.pausedSince), count: Math.max(0, Number(sharing.kept) || 0) });
  }
  const words = sharing.state === "offline" ? t("sharing.offline", { count: Math.max(0, Number(sharing.waiting) || 0) })
    : i18n.strings["sharing." + sharing.state] !== undefined ? t("sharing." + sharing.state) : sharing.text;
  const lasted = (new Date(state.takenAt) - new Date(sharing.since)) / 1000;
  return sharing.since && Number.isFinite(lasted) && lasted >= 0
    ? t("sharing.since", { state: words, age: duration(lasted) }) : words;
}

function draw(state) {
  cab.state = state;
  const sharing = $("sharing");
  sharing.dataset.state = state.sharing.state;
  const words = sharingText(state);
  text(sharing, words);
  sharing.title = words;
  const paused = state.sharing.state === "paused";
  text($("pause"), t(paused ? "map.resume" : "map.pause"));
  // With the gateway stopped, a pause would change nothing anyone can see: the button waits for it.
  $("pause").disabled = !state.settings.onboarded || state.sharing.state === "daemon_stopped";
  drawBanner(state);
  drawFieldName(state);
  drawWorkSwitch(state);
  if (state.fieldsVersion !== cab.fieldsVersion) loadFields(state.fieldsVersion);
  drawOwn(state.own);
  drawOthers(state.others);
  declutterLabels();
  drawNearby(state);
  drawSettings(state);
  // The first view: our own position, or everyone when we have none.
  if (!cab.fitted && (state.own || state.others.length)) { cab.fitted = true; if (!state.own) { fitAll(); } }
  // Drawn again while the box is not heard (the language changed): what it last said stays marked old.
  if (link.lost) { drawLost(); }
}

// Records: the machine's own figures, a week and a year as bar charts of hours with a fix by quality.
const qualityColours = { rtk_fixed: fixColours.rtk_fixed, rtk_float: fixColours.rtk_float, dgps: fixColours.dgps, autonomous: fixColours.autonomous, other: "#999999" };

// Hours as a person says them: "45 min", "3 h 10 min", never "0.1 h"; to the minute, so no "0 s".
function hoursWords(hours) {
  const minutes = Math.round(Math.max(0, Number(hours) || 0) * 60);
  return minutes < 60 ? t("unit.minutes", { count: minutes }) : duration(minutes * 60);
}

// What the machine did, when its bus or the work switch said: hours working and not, the area
// with a working width, engine hours and fuel where the bus gave them. Empty otherwise.
function machineText(machine) {
  if (!machine) { return ""; }
  const parts = [t("records.machineDay", { working: hoursWords(machine.workingHours), notWorking: hoursWords(machine.notWorkingHours) })];
  if (typeof machine.hectares === "number") { parts.push(t("records.hectares", { count: number(machine.hectares, 2) })); }
  if (machine.engineHours > 0) { parts.push(t("records.engine", { hours: hoursWords(machine.engineHours) })); }
  if (machine.fuelLitres > 0) { parts.push(t("records.fuel", { count: number(machine.fuelLitres, 1) })); }
  return parts.join(" · ");
}

function workText(day, figures) {
  return t("records.work", { date: dayWords(day), fix: hoursWords(figures.fixHours), moving: hoursWords(figures.movingHours),
                             km: t("unit.km", { count: number(figures.kilometres, 1) }), noFix: hoursWords(figures.noFixMinutes / 60),
                             noReceiver: hoursWords(figures.noReceiverMinutes / 60) });
}

// What became of the day's positions: sent, kept on the box (paused, not connected, or still to
// go), and lost, if any were.
function deliveryText(figures) {
  const samples = Math.max(0, figures.samples || 0), sent = Math.max(0, figures.sent || 0), lost = Math.max(0, figures.lost || 0);
  const words = t("records.delivery", { samples: samples, sent: sent, kept: Math.max(0, samples - sent - lost) });
  return lost ? words + " \u00b7 " + t("records.lost", { count: lost }) : words;
}

// A bar's label: the weekday and day for a day, the month's short name for a month.
function barLabel(key) {
  if (/^\d{4}-\d{2}-\d{2}$/.test(key)) {
    const day = new Date(key + "T12:00:00Z");
    return day.toLocaleDateString(i18n.locale, { weekday: "short", timeZone: "UTC" }) + " " + day.getUTCDate();
  }
  return new Date(key + "-15T12:00:00Z").toLocaleDateString(i18n.locale, { month: "short", timeZone: "UTC" });
}

function drawChart(element, bars, selectedKey, onPick) {
  element.replaceChildren();
  const most = Math.max(0.001, ...bars.map(bar => bar.figures.fixHours));
  for (const bar of bars) {
    const column = document.createElement("div");
    column.className = "column" + (bar.key === selectedKey ? " selected" : "");
    column.dataset.key = bar.key;
    column.dataset.hours = String(bar.figures.fixHours);
    column.title = workText(bar.key, bar.figures);
    const value = document.createElement("div");
    value.className = "value";
    text(value, bar.figures.fixHours > 0 ? hoursWords(bar.figures.fixHours) : "");
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
    text(label, barLabel(bar.key));
    column.append(value, stack, label);
    if (onPick) { column.style.cursor = "pointer"; column.onclick = () => onPick(bar.key); }
    element.appendChild(column);
  }
}

function drawLegend() {
  const legend = $("records-legend");
  legend.replaceChildren();
  for (const quality of Object.keys(qualityColours)) {
    const item = document.createElement("span");
    item.style.setProperty("--swatch", qualityColours[quality]);
    text(item, t("quality." + quality));
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
    text($("records-day-button"), dayWords(records.day, true));
    $("records-previous").disabled = !records.firstDay || records.day <= records.firstDay;
    $("records-next").disabled = records.day >= records.today;
    $("records-empty").hidden = !!records.firstDay;
    text($("records-day-figures"), workText(records.day, records.dayFigures));
    text($("records-delivery"), deliveryText(records.dayFigures));
    text($("records-machine"), machineText(records.dayFigures.machine));
    $("records-machine").hidden = !records.dayFigures.machine;
    const monday = records.weekDays.length ? records.weekDays[0].key : records.day;
    text($("records-week-title"), t("records.week", { date: dayWords(monday) }));
    text($("records-year-title"), t("records.year", { year: String(records.year) }));
    drawChart($("records-week"), records.weekDays, records.day, key => loadRecords(key));
    drawChart($("records-year"), records.months, records.day.slice(0, 7), null);
    drawLegend();
    for (const format of ["gpx", "geojson"]) {
      const link = $("records-" + format);
      link.href = "/api/records/export?date=" + records.day + "&format=" + format;
      link.setAttribute("download", "agrigps-" + records.day + "." + format);
    }
  } catch (error) { await dialog(t("records.failed", { error: error.message }), false); return; }
  loadFieldDay(cab.records.day);
}

// The day split by the farm's fields: where the work was done, and each field's track to download.
async function loadFieldDay(day) {
  let answer;
  try {
    answer = await api("/api/records/fields?date=" + encodeURIComponent(day));
  } catch (error) {
    answer = { day: day, fieldsKnown: true, fields: [], elsewhere: null, error: error.message };
  }
  if (!cab.records || cab.records.day !== day) { return; }  // another day was picked meanwhile
  cab.fieldDay = answer;
  drawFieldDay(answer);
}

function drawFieldDay(answer) {
  const note = answer.error ? t("records.fieldsFailed", { error: answer.error })
    : !answer.fieldsKnown ? t("records.noFields")
    : !answer.fields.length ? t("records.noField", { date: dayWords(answer.day) }) : "";
  text($("records-fields-note"), note);
  $("records-fields-note").hidden = !note;
  $("records-fields-box").hidden = !answer.fields.length;
  const body = document.querySelector("#records-fields tbody");
  body.replaceChildren();
  for (const field of answer.fields) {
    const href = "/api/records/export?date=" + encodeURIComponent(answer.day) + "&format=gpx&field=" + encodeURIComponent(field.id);
    body.appendChild(fieldRow(field.name, field, href, String(field.id)));
  }
  if (answer.fields.length && answer.elsewhere) { body.appendChild(fieldRow(t("records.offFields"), answer.elsewhere, null, null)); }
}

function fieldWorkText(share) {
  const machine = share.machine;
  if (!machine) { return ""; }
  const parts = [t("records.fieldWork", { working: hoursWords(machine.workingHours) })];
  if (typeof machine.hectares === "number" && machine.hectares > 0) { parts.push(t("records.hectares", { count: number(machine.hectares, 2) })); }
  if (typeof machine.roadHours === "number") { parts.push(t("records.road", { road: hoursWords(machine.roadHours) })); }
  return parts.join(" · ");
}

// One row of the fields' table; the name is set as text (it comes from the farm software's export).
function fieldRow(name, share, href, id) {
  const row = document.createElement("tr");
  if (id) { row.dataset.field = id; } else { row.className = "elsewhere"; }
  const cells = [[name, "name"], [hoursWords(share.hours), "number"], [hoursWords(share.movingHours), "number"], [number(share.kilometres, 1), "number"]];
  for (const [value, kind] of cells) {
    const cell = document.createElement("td");
    cell.className = kind;
    text(cell, value);
    row.appendChild(cell);
  }
  // Under the name, what the machine did there: its work in a field, the road off them.
  const work = fieldWorkText(share);
  if (work) {
    const line = document.createElement("div");
    line.className = "work";
    text(line, work);
    row.firstChild.appendChild(line);
  }
  const last = document.createElement("td");
  if (href) {
    // The box names the file after the day and the field (made safe for a file name).
    const link = document.createElement("a");
    link.className = "download";
    link.href = href;
    link.setAttribute("download", "");
    link.setAttribute("aria-label", t("records.trackIn", { field: name }));
    text(link, "GPX");
    last.appendChild(link);
  }
  row.appendChild(last);
  return row;
}

// The browser's own calendar, from the day's button; where a browser cannot open it from script,
// the field itself takes the tap.
function openDayPicker() {
  const input = $("records-day");
  try { input.showPicker(); } catch (error) { input.style.pointerEvents = "auto"; input.focus(); }
}

async function showDay() {
  const day = $("records-day").value;
  if (!day) { return; }
  try {
    const track = await api("/api/records/day?date=" + encodeURIComponent(day));
    if (cab.dayTrack) { cab.dayTrack.remove(); cab.dayTrack = null; }
    showMapTab();
    if (!track.drawn) { toast(t("records.noPosition", { date: dayWords(day) })); return; }
    cab.dayTrack = L.polyline(track.segments, { color: "#b5179e", weight: 4, opacity: 0.85 }).addTo(cab.map);
    cab.dayTrack.options.day = track.day;
    setFollow(false);
    cab.map.fitBounds(cab.dayTrack.getBounds(), { padding: [30, 30], maxZoom: 18 });
    toast(t("records.trackShown", { date: dayWords(day), count: track.segments.length }));
  } catch (error) { await dialog(t("records.dayFailed", { error: error.message }), false); }
}

function listen() {
  const source = new EventSource("/api/events");
  link.heard = performance.now();
  source.addEventListener("state", event => { heard(); draw(JSON.parse(event.data)); });
  source.addEventListener("notice", event => { heard(); toast(noticeText(JSON.parse(event.data))); });
  // A stream closed is tried again by the browser at once; the watch below turns it red if nothing comes.
  source.onerror = () => { if (!link.lost) { text($("sharing"), t("sharing.lost")); $("sharing").dataset.state = "unknown"; } };
  if (!link.watch) { link.watch = setInterval(watchLink, 1000); }
}

// The box sends the state at each of its looks, every 5 s at least (each look has a time of its
// own, so none is left out as unchanged). Silence longer than this means the page no longer hears
// the box: its Wi-Fi dropped without a word, or its page process froze, and the connection stays
// open with nothing on it. What the page shows is then the box's last word, and it says so, red,
// within 10 s of the loss: the last state came at most 5 s before it, and the watch looks every second.
const quietLimit = 8000;
const link = { heard: 0, heardAt: null, lost: false, tick: 0, watch: null };

function heard() {
  link.heard = performance.now();
  link.heardAt = new Date();
  link.lost = false;  // the state drawn next puts the label, the fix words and the banner right
}

function watchLink() {
  const now = performance.now();
  // A page that did not run meanwhile (a tablet asleep, a tab in the background) heard nothing for
  // it listened to nothing: the box has its full time again from here.
  if (link.tick && now - link.tick > 3000) { link.heard = Math.max(link.heard, now); }
  link.tick = now;
  if (!link.lost && now - link.heard > quietLimit) {
    link.lost = true;
    drawLost();
  }
}

// The label red with since when the page last heard the box, by this device's clock; the fix words
// taken away and the marker drawn as an old position (they were the box's last word, not the
// machine now); the banner says what to check; Pause waits, for the box would not hear it.
function drawLost() {
  const sharing = $("sharing");
  const words = link.heardAt ? t("sharing.lostSince", { time: clockTime(link.heardAt) }) : t("sharing.lost");
  sharing.dataset.state = "lost";
  text(sharing, words);
  sharing.title = words;
  text($("own-info"), "");
  if (cab.own && cab.state && cab.state.own) {
    cab.own.setIcon(ownIcon(Object.assign({}, cab.state.own, { fix: "none", old: true, heading: null })));
    cab.own.options.fix = "none";
    cab.own.options.old = true;
    cab.ownLook = "";  // the next state draws it as the box says
  }
  $("pause").disabled = true;
  $("work-switch").disabled = true;
  const banner = $("banner");
  banner.hidden = false;
  banner.className = "";
  text(banner, t("problem.critical", { words: t("advice.lost") }));
}

// A notice in the page's words when the catalogue has its kind and the box sent its values; else
// as the box wrote it.
function noticeText(notice) {
  const key = typeof notice.key === "string" ? notice.key : "";
  if (!key.startsWith("notice.") || (i18n.strings[key] === undefined && i18n.strings[key + ".other"] === undefined)) { return notice.text; }
  const values = Object.assign({}, notice.values || {});
  if (values.own) { values.machine = t("own.label"); }
  if (typeof notice.count === "number") { values.count = notice.count; }
  if (typeof notice.seconds === "number") { values.age = duration(notice.seconds); }
  if (typeof notice.at === "string") { values.time = clockTime(notice.at); }
  return t(key, values);
}

// Sends a chosen file as it is, with the session's CSRF token; the answer's error is shown as it is.
async function sendFile(path, file) {
  const response = await fetch(path, {
    method: "POST", credentials: "same-origin", body: file,
    headers: { "Content-Type": "application/octet-stream", "X-CSRF-Token": cab.session && cab.session.csrfToken || "" },
  });
  let answer = {};
  try { answer = await response.json(); } catch (e) { answer = {}; }
  if (!response.ok) throw new Error(answer.error || ("HTTP " + response.status));
  return answer;
}

// The TaskData file, read by the server as `agrigps fields import` would.
async function importFields() {
  const file = $("fields-file").files[0];
  if (!file) { await dialog(t("fields.choose"), false); return; }
  $("fields-import").disabled = true;
  try {
    const answer = await sendFile("/api/fields/import?name=" + encodeURIComponent(file.name), file);
    toast(t("fields.imported", { count: answer.imported })
          + (answer.skipped.length ? " (" + t("fields.skipped", { count: answer.skipped.length }) + ")" : ""));
    $("fields-file").value = "";
  } catch (error) {
    await dialog(error.message, false);
  } finally {
    $("fields-import").disabled = false;
  }
}

// The offline map: once the box has checked it, the page starts again on it.
async function uploadBasemap() {
  const file = $("basemap-file").files[0];
  if (!file) { await dialog(t("basemap.choose"), false); return; }
  $("basemap-upload").disabled = true;
  try {
    await sendFile("/api/basemap", file);
    location.reload();
  } catch (error) {
    await dialog(error.message, false);
  } finally {
    $("basemap-upload").disabled = false;
  }
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

// The agrirouter web page of an environment, where a TAN is made and a machine removed: the
// address and words of its link under the TAN field.
function agrirouterLink(environment) {
  const link = environment === "qa" ? $("tan-link-qa") : environment === "production" ? $("tan-link-production") : null;
  return link ? [link.href, link.textContent] : null;
}

// Connects with the TAN typed. A refused TAN stays in its field to be checked or corrected; one
// that worked is cleared, for it cannot be used again.
async function connect() {
  const tan = $("tan").value.trim();
  const environment = $("environment").value;
  if (!environment) { await dialog(t("connect.chooseEnvironment"), false); $("environment").focus(); return; }
  if (!tan) { await dialog(t("connect.typeTan"), false); $("tan").focus(); return; }
  $("onboard").disabled = true;
  try {
    const answer = await api("/api/onboard", { tan: tan, environment: environment });
    $("tan").value = "";
    toast(t("connect.done", { environment: environmentWords(answer.environment) }));
  } catch (error) {
    const refused = /\b04\d\d\b|TAN/.test(error.message);
    await dialog(t(refused ? "connect.refused" : "connect.failed"), false, null,
                 { details: t("connect.details", { details: error.message }), link: agrirouterLink(environment) });
  } finally {
    $("onboard").disabled = false;
  }
}

async function disconnect() {
  const environment = cab.state && cab.state.settings.environment;
  if (!(await dialog(t("disconnect.ask"), true, t("settings.disconnect"), { danger: true }))) { return; }
  await act("/api/disconnect", { confirm: true }, () => dialog(t("disconnect.done"), false, null, { link: agrirouterLink(environment) }));
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
  $("theme").onclick = toggleTheme;
  $("pause").onclick = () => act("/api/sharing", { paused: cab.state && cab.state.sharing.state !== "paused" });
  $("work-switch").onclick = () => act("/api/work", { on: !(cab.state && cab.state.work && cab.state.work.switchOn) });
  $("follow").onclick = () => { setFollow(!cab.follow); if (cab.follow && cab.state) { drawOwn(cab.state.own); } };
  $("fit").onclick = fitAll;
  $("trails").onclick = toggleTrails;
  $("records-day").onchange = () => loadRecords($("records-day").value);
  $("records-previous").onclick = () => loadRecords(dayAfter($("records-day").value, -1));
  $("records-next").onclick = () => loadRecords(dayAfter($("records-day").value, 1));
  $("records-day-button").onclick = openDayPicker;
  $("records-show").onclick = showDay;
  $("onboard").onclick = connect;
  $("disconnect").onclick = disconnect;
  $("language").onchange = chooseLanguage;
  $("fields-import").onclick = importFields;
  $("basemap-upload").onclick = uploadBasemap;
  $("working-width-save").onclick = saveWidth;
  $("login-button").onclick = async () => {
    await act("/api/login", { password: $("password").value }, answer => { cab.session = answer; $("password").value = ""; start(); });
  };
}

async function start() {
  try {
    cab.session = await api("/api/session");
  } catch (error) { await dialog(t("gateway.unreachable", { error: error.message }), false); return; }
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

// The words first, so that the page never shows one language and then another.
async function begin() {
  try { await loadLanguage(chosenLanguage()); } catch (error) { /* the page's own English stays */ }
  drawLanguages();
  wire();
  start();
}

begin();
