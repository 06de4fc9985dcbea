// The static web book's host for the explorers: no kernel, no server, nothing from another host.
// For every <div class="attnlib-explorer" data-attnlib-kind="..."> it reads the state embedded by the
// notebook cell (<script type="application/json" class="attnlib-state">), builds a model that keeps the
// state in the page (the anywidget model interface: get/set/on/off/save_changes, "change:<name>" events),
// imports the kind's module next to this file and renders it. The static snapshot stays in the page for
// print and for readers without JavaScript; it is hidden once the live explorer is drawn.
// A setting shared with "copy link" comes back from the URL fragment (#e1=<base64url JSON>) and is checked
// by the module's acceptLink before it is used; what does not pass is ignored with a message.
import { decodeState } from "./link.js";

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

async function mount(div, index, mounted, modules) {
  const kind = div.dataset.attnlibKind;
  const script = div.querySelector("script.attnlib-state");
  if (!KINDS.includes(kind) || !script) return;
  const model = new PageModel(JSON.parse(script.textContent));
  // a module the page's entry script handed over is used at once (no await: the mount stays in this turn)
  const module = modules[kind] || await import(new URL(`./${kind}.js`, import.meta.url).href);
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
  if (index === 0) document.body.prepend(skipLink(live));
  const widget = module.default;
  const cleanup = widget.render({ model, el: live });
  div.classList.add("attnlib-mounted");
  mounted.push({ kind, model, el: live, div, cleanup });
}

/** What sticks in an explorer (its views, its control bar) sticks below the page's own sticky header, at any width. */
function stickBelowHeader() {
  const header = document.querySelector(".bd-header-article");
  const measure = () => {
    const h = header && getComputedStyle(header).position === "sticky" ? header.getBoundingClientRect().height : 0;
    document.documentElement.style.setProperty("--attnlib-sticky-top", `${Math.ceil(h)}px`);
  };
  measure();
  window.addEventListener("resize", measure);
}

/** The page's first stop for the keyboard: a link (shown when focused) that takes the focus to the first explorer's first control. */
function skipLink(live) {
  const a = document.createElement("a");
  a.className = "attnlib-skip";
  if (!live.id) live.id = `attnlib-${live.dataset.linkId}`;
  a.href = `#${live.id}`;
  a.textContent = "Skip to the explorer’s controls";
  a.addEventListener("click", (e) => {
    e.preventDefault();
    const first = live.querySelector("input, select, button, textarea");
    if (first) first.focus();
  });
  return a;
}

/**
 * Mount every explorer of the page, each as soon as it is there. The web book's pages load an entry module
 * that imports this host and the page's kinds and calls start(modules), twice: async (it may run while the
 * page is parsed) and deferred (at the latest when parsing ends); the first to run starts the host. With the
 * modules in hand it mounts without waiting for another task, before the theme's scripts and MathJax run.
 * If it runs while the page is still being parsed, an explorer is taken once its snapshot has been parsed (its state, which
 * comes first, is then complete); a MutationObserver takes the later ones as the parser adds them, and
 * DOMContentLoaded the rest. They are mounted one after another in page order, so their link ids (e1,
 * e2, ...) follow the page. A page that loads host.js itself gets start() with dynamic imports.
 */
let started = null;
export function start(modules = {}) {
  if (!started) started = run(modules);
  return started;
}

async function run(modules) {
  performance.mark("attnlib-host-start");
  loadStyles();
  const mounted = [];
  window.attnlibExplorers = mounted;
  const taken = new Set();
  let chain = Promise.resolve();
  const take = (all) => {
    for (const div of document.querySelectorAll("div.attnlib-explorer")) {
      if (taken.has(div)) continue;
      if (!all && !div.querySelector(":scope > .attnlib-snapshot")) break;  // still being parsed: it and the rest later
      taken.add(div);
      const index = taken.size - 1;
      chain = chain.then(() => mount(div, index, mounted, modules)).then(() => {
        if (mounted.length === 1 && !performance.getEntriesByName("attnlib-first-live").length) performance.mark("attnlib-first-live");
      });
    }
  };
  take(false);
  if (document.readyState === "loading") {
    const observer = new MutationObserver(() => take(false));
    observer.observe(document.documentElement, { childList: true, subtree: true });
    await new Promise((done) => document.addEventListener("DOMContentLoaded", done, { once: true }));
    observer.disconnect();
  }
  take(true);
  await chain;
  if (mounted.length) stickBelowHeader();
  performance.mark("attnlib-live");
  document.dispatchEvent(new CustomEvent("attnlib:live", { detail: { count: mounted.length } }));
}

// an entry module that imports this one calls start(modules) in the same evaluation, before this microtask
queueMicrotask(() => start());
