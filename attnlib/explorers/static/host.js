// The static web book's host for the explorers: no kernel, no server, nothing from another host.
// For every <div class="attnlib-explorer" data-attnlib-kind="..."> it reads the state embedded by the
// notebook cell (<script type="application/json" class="attnlib-state">), builds a model that keeps the
// state in the page (the anywidget model interface: get/set/on/off/save_changes, "change:<name>" events),
// imports the kind's module next to this file and renders it. The static snapshot stays in the page for
// print and for readers without JavaScript; it is hidden once the live explorer is drawn.
// A setting shared with "copy link" comes back from the URL fragment (#e1=<base64url JSON>) and is checked
// by the module's acceptLink before it is used; what does not pass is ignored with a message.
import { decodeState } from "./ui.js";

const KINDS = []; // written by attnlib.explorers.frontend.write_modules from the registry
const LIVE_NOTE = "Live explorer: it computes in your browser as you move the controls (no kernel, nothing sent anywhere). "
  + "\u201ccopy link\u201d puts the setting into the page address, to share it.";

function same(a, b) {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** The anywidget model interface, with the state kept in the page. */
export class PageModel {
  constructor(state) {
    this.state = { ...state };
    this.handlers = new Map();
  }
  get(key) {
    return this.state[key];
  }
  set(key, value) {
    const old = this.state[key];
    this.state[key] = value;
    if (!same(old, value)) this.emit(`change:${key}`, value);
  }
  emit(name, value) {
    for (const fn of [...(this.handlers.get(name) || [])]) fn(this, value);
    if (name.startsWith("change:")) for (const fn of [...(this.handlers.get("change") || [])]) fn(this);
  }
  on(name, fn) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(fn);
  }
  off(name, fn) {
    if (!name) { this.handlers.clear(); return; }
    if (!fn) { this.handlers.delete(name); return; }
    const set = this.handlers.get(name);
    if (set) set.delete(fn);
  }
  save_changes() {}
  send() {}
}

function loadStyles() {
  if (document.querySelector("link[data-attnlib-css]")) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = new URL("./explorer.css", import.meta.url).href;
  link.dataset.attnlibCss = "";
  document.head.append(link);
}

function linkedSetting(id) {
  const params = new URLSearchParams(location.hash.slice(1));
  return params.has(id) ? params.get(id) : null;
}

async function mount(div, index, mounted) {
  const kind = div.dataset.attnlibKind;
  const script = div.querySelector("script.attnlib-state");
  if (!KINDS.includes(kind) || !script) return;
  const model = new PageModel(JSON.parse(script.textContent));
  const module = await import(new URL(`./${kind}.js`, import.meta.url).href);
  const id = `e${index + 1}`;
  const notes = [];
  const encoded = linkedSetting(id);
  if (encoded !== null) {
    let problems;
    try {
      const [values, found] = module.acceptLink(model, decodeState(encoded));
      for (const [k, v] of Object.entries(values)) model.set(k, v);
      problems = found;
    } catch (e) {
      problems = ["it could not be read"];
    }
    if (problems.length) notes.push(`The setting in this page's address was not fully used: ${problems.join("; ")}. The rest is shown.`);
  }
  const live = document.createElement("div");
  live.className = "attnlib-live-host";
  live.dataset.host = "page";
  live.dataset.linkId = id;
  const note = document.createElement("p");
  note.className = "attnlib-live-note";
  note.textContent = LIVE_NOTE;
  div.append(note);
  for (const text of notes) {
    const p = document.createElement("p");
    p.className = "attnlib-link-problem";
    p.setAttribute("role", "status");
    p.textContent = text;
    div.append(p);
  }
  div.append(live);
  const widget = module.default;
  const cleanup = widget.render({ model, el: live });
  div.classList.add("attnlib-mounted");
  mounted.push({ kind, model, el: live, div, cleanup });
}

async function start() {
  loadStyles();
  const mounted = [];
  window.attnlibExplorers = mounted;
  const divs = [...document.querySelectorAll("div.attnlib-explorer")];
  for (const [i, div] of divs.entries()) {
    await mount(div, i, mounted);
    if (mounted.length === 1 && i === 0) performance.mark("attnlib-first-live");
  }
  performance.mark("attnlib-live");
  document.dispatchEvent(new CustomEvent("attnlib:live", { detail: { count: mounted.length } }));
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
