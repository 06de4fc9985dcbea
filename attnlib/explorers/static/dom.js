// The explorers' DOM: elements, matrix tables on colour, sliders, the live region, the panel and its
// layout, the "copy link" control. No math (compute.js), no number formatting (format.js), no link
// codec (link.js) here.
import { countOf, formatValue, parseShown } from "./format.js";
import { encodeState } from "./link.js";

/** Create an element: el("td", {class: "x", "aria-label": "..."}, child, "text", ...). */
export function el(tag, attrs, ...children) {
  const node = tag === "svg" || tag in SVG_TAGS ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  // JupyterLab (lumino) runs a notebook shortcut for a key unless the focused element itself says not to
  if (tag in CONTROL_TAGS) node.setAttribute("data-lm-suppress-shortcuts", "true");
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}
const CONTROL_TAGS = { input: 1, select: 1, button: 1 };
const SVG_TAGS = { line: 1, circle: 1, text: 1, g: 1, title: 1, desc: 1, polyline: 1, path: 1, rect: 1 };

/** Index 0..255 into the colour table for v in [lo, hi] (128 when the range is empty). */
export function colourIndex(v, lo, hi) {
  const span = hi - lo;
  if (!(span > 0)) return 128;
  return Math.max(0, Math.min(255, Math.round((255 * (v - lo)) / span)));
}

/** The lowest and highest finite value of the rows that are shown (0 and 1 when there is none). */
function finiteRange(M, messages) {
  let lo = Infinity, hi = -Infinity;
  M.forEach((row, i) => {
    if (row === null || i in messages) return;
    for (const v of row) if (Number.isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
  });
  return [lo === Infinity ? 0 : lo, hi === -Infinity ? 1 : hi];
}

/** A value cell's class: [shown on a colour, masked][unchanged, went up, went down]. */
const CELL_CLASSES = [
  ["", "attnlib-changed attnlib-up", "attnlib-changed attnlib-down"],
  ["attnlib-masked", "attnlib-masked attnlib-changed attnlib-up", "attnlib-masked attnlib-changed attnlib-down"],
];

/** How long the screen-reader text of the changed cells waits for the reader to pause (as statusArea's). */
const SPOKEN_DELAY_MS = 250;

/**
 * A matrix as an accessible table whose cells carry their value on a cividis colour (style.lut).
 * update() rebuilds the table only when its shape or message rows change (new labels are written in
 * place); otherwise it rewrites the cells and outlines those whose shown value changed, with an arrow (drawn by
 * the stylesheet from the class attnlib-up or attnlib-down, hidden from screen readers). A key press
 * writes only what the eye sees: the cell's colour (a custom property), its class and its text, each
 * only when it differs from what the view last wrote. The screen-reader text of a changed cell
 * ("changed from 0.2500, now ") is written once the reader pauses, as the status line's live region is.
 */
export class MatrixView {
  constructor(name, style) {
    this.name = name;
    this.style = style;
    this.table = el("table", { class: "attnlib-view", "data-view": name });
    this.caption = el("caption");
    this.table.append(this.caption);
    this.key = "";
    this.previous = null;
    this.cells = [];
    this.sumCells = [];
    this.highlighted = null;
    this.spokenTimer = null;
  }

  /**
   * opts: {rows, cols, caption, vmin, vmax, rowSums (array or null), messages {i: text}, highlightRow, decimals}.
   * Returns how many shown values changed, or null when the table was built now (nothing shown before).
   */
  update(M, opts) {
    const style = opts.decimals === undefined ? this.style : { ...this.style, decimals: opts.decimals };
    const messages = opts.messages || {};
    const sums = opts.rowSums || null;
    // the table is built again only when its shape changes; new labels on the same shape are written in place
    const key = `${opts.rows.length}|${opts.cols.length}|${Object.keys(messages).join(",")}|${!!sums}`;
    if (this.caption.textContent !== opts.caption) this.caption.textContent = opts.caption;
    const fresh = key !== this.key;
    if (fresh) this.build(opts, messages, !!sums, key);
    else this.relabel(opts);
    let [lo, hi] = [opts.vmin, opts.vmax];
    if (lo === undefined || hi === undefined) {
      const [a, b] = finiteRange(M, messages);
      if (lo === undefined) lo = a;
      if (hi === undefined) hi = b;
    }
    const texts = [];
    let changed = 0;
    M.forEach((row, i) => {
      if (row === null || i in messages) { texts.push(null); return; }
      const prev = this.previous && this.previous[i];
      texts.push(row.map((v, j) => {
        const text = formatValue(v, style);
        if (this.writeCell(this.cells[i][j], v, text, prev ? prev[j] : null, lo, hi, style)) changed += 1;
        return text;
      }));
      if (sums) {
        const t = formatValue(sums[i], style), s = this.sumCells[i];
        if (s.shown !== t) { s.shown = t; s.td.textContent = t; }
      }
    });
    this.highlight(opts.highlightRow);
    this.previous = texts;
    clearTimeout(this.spokenTimer);
    this.spokenTimer = setTimeout(() => this.speak(), SPOKEN_DELAY_MS);
    return fresh ? null : changed;
  }

  /** Row and column labels of a table of the same shape. */
  relabel(opts) {
    opts.cols.forEach((c, j) => { if (this.colHeads[j].textContent !== c) this.colHeads[j].textContent = c; });
    opts.rows.forEach((r, i) => { if (this.rowHeads[i].textContent !== r) this.rowHeads[i].textContent = r; });
  }

  /** One cell: its colour, class (changed, up or down, masked) and text; returns whether its shown value changed. */
  writeCell(cell, v, text, old, lo, hi, style) {
    const k = Number.isFinite(v) ? colourIndex(v, lo, hi) : -1;
    if (k !== cell.k) {
      cell.k = k;
      const ink = k >= 0 ? style.text[k] : "";
      if (k >= 0) cell.td.style.setProperty("--attnlib-cell", style.lut[k]); else cell.td.style.removeProperty("--attnlib-cell");
      if (ink !== cell.ink) { cell.ink = ink; cell.td.style.color = ink; }
    }
    const moved = old !== null && old !== undefined && old !== text;
    const cls = CELL_CLASSES[k >= 0 ? 0 : 1][moved ? (parseShown(text, style) > parseShown(old, style) ? 1 : 2) : 0];
    cell.old = moved ? old : null;
    if (cell.cls !== cls) { cell.cls = cls; cell.td.className = cls; }
    if (cell.shown !== text) { cell.shown = text; cell.value.data = text; }
    return moved;
  }

  /** Outline row i (undefined: none). */
  highlight(i) {
    const tr = i === undefined ? null : this.rowsEls[i] || null;
    if (tr === this.highlighted) return;
    if (this.highlighted) this.highlighted.classList.remove("attnlib-highlight");
    if (tr) tr.classList.add("attnlib-highlight");
    this.highlighted = tr;
  }

  /** Write the screen-reader text of every cell that differs from what it says now. */
  speak() {
    for (const row of this.cells) for (const cell of row) {
      const spoken = cell.old === null ? "" : `changed from ${cell.old}, now `;
      if (cell.said !== spoken) { cell.said = spoken; cell.sr.textContent = spoken; }
    }
  }

  build(opts, messages, withSums, key) {
    this.key = key;
    this.previous = null;
    this.highlighted = null;
    const head = el("tr", {}, el("td", { class: "attnlib-corner" }));
    this.colHeads = opts.cols.map((c) => el("th", { scope: "col", text: c }));
    head.append(...this.colHeads);
    if (withSums) head.append(el("th", { scope: "col", class: "attnlib-rowsum", title: "sum of the row", text: "row sum" }));
    const body = el("tbody");
    this.cells = [];
    this.sumCells = [];
    this.rowsEls = [];
    this.rowHeads = [];
    opts.rows.forEach((label, i) => {
      const th = el("th", { scope: "row", text: label });
      this.rowHeads.push(th);
      const tr = el("tr", { "data-i": i }, th);
      const rowCells = [];
      if (i in messages) {
        tr.append(el("td", { colspan: opts.cols.length + (withSums ? 1 : 0), class: "attnlib-message", "data-i": i, role: "note", text: messages[i] }));
      } else {
        opts.cols.forEach((_, j) => {
          // "changed from ..." (screen readers only), then the value; the arrow is the stylesheet's
          const sr = el("span", { class: "attnlib-sr" });
          const value = document.createTextNode("");
          const td = el("td", { "data-i": i, "data-j": j }, sr, value);
          rowCells.push({ td, sr, value, k: null, ink: null, cls: null, shown: null, old: null, said: "" });
          tr.append(td);
        });
        if (withSums) {
          const s = el("td", { class: "attnlib-rowsum", "data-i": i });
          this.sumCells[i] = { td: s, shown: null };
          tr.append(s);
        }
      }
      this.cells.push(rowCells);
      this.rowsEls.push(tr);
      body.append(tr);
    });
    this.table.replaceChildren(this.caption, el("thead", {}, head), body);
  }
}

/** A fresh id for a control and its label. */
export function uid(prefix = "attnlib") {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}

/** A labelled range input with a readout (aria-hidden: the input itself is labelled); show(v) writes the readout. */
function rangeControl({ label, name, min, max, step, value, cls, title, readoutText, choice }) {
  const id = uid();
  const input = el("input", { type: "range", id, min, max, step, value, "aria-label": label, class: `attnlib-range ${cls || ""}`.trim(), title, "data-name": choice ? null : name });
  const readout = el("output", { for: id, class: `attnlib-readout${choice ? " attnlib-choice-readout" : ""}`, "aria-hidden": "true" });
  const text = el("label", { for: id, class: `attnlib-slider-label${choice ? " attnlib-choice-label" : ""}`, text: name, "aria-hidden": "true" });
  const show = (v) => {
    const t = readoutText(v);
    if (readout.textContent !== t) readout.textContent = t;
    if (choice && input.getAttribute("aria-valuetext") !== t) input.setAttribute("aria-valuetext", t);
  };
  return { el: el("div", { class: `attnlib-slider${choice ? " attnlib-choice" : ""}` }, text, input, readout), input, show };
}

/** A compact labelled range slider with a readout; onInput(value) on every move. */
export function slider({ label, name, value, min, max, step, onInput, describe, digits = 2 }) {
  const c = rangeControl({ label, name: name || label, min, max, step, value, title: describe || label, readoutText: (v) => Number(v).toFixed(digits) });
  c.show(value);
  c.input.addEventListener("input", () => {
    c.show(c.input.value);
    onInput(Number(c.input.value));
  });
  return {
    el: c.el,
    input: c.input,
    set(v) {
      if (Number(c.input.value) !== v) c.input.value = String(v);
      c.show(v);
    },
  };
}

/** A polite live region (visually hidden) plus a visible status line. */
export function statusArea() {
  const visible = el("div", { class: "attnlib-status", "aria-hidden": "true" });
  const live = el("div", { class: "attnlib-sr attnlib-live-region", role: "status", "aria-live": "polite" });
  const box = el("div", { class: "attnlib-status-box" }, visible, live);
  let timer = null;
  return {
    el: box,
    /** shown: the visible line; spoken: the text for the live region, or a function that makes it. */
    say(shown, spoken) {
      if (visible.textContent !== shown) visible.textContent = shown;
      // announce once the reader pauses (a held arrow key would otherwise queue every step)
      clearTimeout(timer);
      timer = setTimeout(() => { live.textContent = typeof spoken === "function" ? spoken() : spoken; }, SPOKEN_DELAY_MS);
    },
    dispose() { clearTimeout(timer); },
  };
}

/** A box for a message about the whole panel (overflow, a refused change, a bad link). */
export function messageBox() {
  const box = el("div", { class: "attnlib-error", role: "alert", hidden: true });
  return {
    el: box,
    show(text) {
      if (text) { box.textContent = text; box.hidden = false; } else { box.textContent = ""; box.hidden = true; }
    },
  };
}

/** The explorer's root: a themed container with a title. */
export function panel(el0, title, kind) {
  el0.classList.add("attnlib-live");
  const root = el("div", { class: `attnlib-panel attnlib-kind-${kind}`, role: "group", "aria-label": title });
  root.append(el("p", { class: "attnlib-title", text: title }));
  el0.replaceChildren(root);
  return root;
}

/**
 * The "copy link" control, shown only on the web page (the host marks el with data-host="page"
 * and sets el.dataset.linkId). It writes the keys' values into the page URL's fragment and copies the URL.
 */
export function copyLink(hostEl, model, keys) {
  if (!hostEl.dataset || hostEl.dataset.host !== "page") return null;
  const note = el("span", { class: "attnlib-link-note", role: "status" });
  const button = el("button", { type: "button", class: "attnlib-button attnlib-copy-link", text: "copy link" });
  button.title = "Put this setting into the page address and copy it: opening the link restores the setting";
  button.addEventListener("click", () => {
    const state = {};
    for (const k of keys) state[k] = model.get(k);
    const id = hostEl.dataset.linkId;
    const params = new URLSearchParams(location.hash.slice(1));
    params.set(id, encodeState(state));
    const url = `${location.href.split("#")[0]}#${params.toString()}`;
    history.replaceState(null, "", url);
    const done = () => { note.textContent = "Link copied: this setting is in the page address."; };
    const fallback = () => { note.textContent = "This setting is in the page address: copy it from the address bar."; };
    try {
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).then(done, fallback);
      else fallback();
    } catch (e) {
      fallback();
    }
  });
  return el("div", { class: "attnlib-share" }, button, note);
}

/** A lookup of the Okabe-Ito colour for token i (the style's palette, else a fixed one). */
export function tokenColour(style, i) {
  const palette = (style && style.palette) || ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000"];
  return palette[i % palette.length];
}

/** The kernel hears of a drag at most this often (ms); the last change of a burst is always sent. */
export const SEND_INTERVAL_MS = 250;
const sends = new WeakMap();  // model -> {last: time of the last send, timer}

/**
 * Send the model's changes to the kernel: in a task after this one, so that the views are drawn (a microtask
 * the change event queued) and painted before the message is built; and at most once every SEND_INTERVAL_MS,
 * so that a held arrow key does not send a message for every step. In JupyterLab each message makes the
 * kernel busy and then idle, and JupyterLab answers each of those with work of its own (the toolbar measures
 * its items, the table of contents reads the headings again) that competed with the next key press.
 * The changes made meanwhile go in the next message (the model collects them); the last one is never lost.
 */
export function saveSoon(model) {
  const state = sends.get(model) || { last: -Infinity, timer: null };
  sends.set(model, state);
  if (state.timer !== null) return;
  const wait = Math.max(0, state.last + SEND_INTERVAL_MS - performance.now());
  state.timer = setTimeout(() => {
    state.timer = null;
    state.last = performance.now();
    model.save_changes();
  }, wait);
}

/** Read a trait with a default (the static host and anywidget both return undefined for a missing key). */
export function read(model, key, fallback) {
  const v = model.get(key);
  return v === undefined || v === null ? fallback : v;
}

/** A slider over a list of choices (index steps), named `label`, its value text the choice itself. */
export function choiceSlider({ label, choices, value, format = String, onChange, cls }) {
  const index = Math.max(0, choices.indexOf(value));
  const c = rangeControl({ label, name: label, min: 0, max: choices.length - 1, step: 1, value: index, cls, readoutText: format, choice: true });
  c.show(choices[index]);
  c.input.addEventListener("input", () => {
    const v = choices[Number(c.input.value)];
    c.show(v);
    onChange(v);
  });
  return {
    el: c.el,
    input: c.input,
    set(v) {
      const k = choices.indexOf(v);
      if (k >= 0 && Number(c.input.value) !== k) c.input.value = String(k);
      c.show(v);
    },
  };
}

/** How many shown values a redraw changed, from each view's update(): null when a view was built anew (nothing to compare). */
export function countChanged(...counts) {
  return counts.some((c) => c === null) ? null : counts.reduce((a, b) => a + b, 0);
}

/** The visible status line's start: "Last change: <what>", and " \u2014 3 values changed" when `changed` is a number. */
export function changeLine(what, changed) {
  return `Last change: ${what}${typeof changed === "number" ? ` \u2014 ${countOf(changed, "value")} changed` : ""}`;
}

/**
 * A choice slider for the setting `key` of a focused explorer (fallback: its value when the model has none);
 * a move changes it through `change` (L.change unless given) and the status line says "<what> changed from <old> to <new>".
 */
export function choiceSetting(L, { key, label, choices, fallback, cls, format = String, what = label, change = L.change }) {
  const { model } = L;
  return choiceSlider({
    label, choices, value: read(model, key, fallback), cls, format,
    onChange: (v) => change({ [key]: v }, `${what} changed from ${format(read(model, key, fallback))} to ${format(v)}`),
  });
}

/**
 * Skeleton of a focused explorer: panel, controls column, facts line, views, status, link, message. It also
 * gives the kind its one way to change the setting, change(values, what) (the status line names the change,
 * the model saves soon), say(changed, spoken) for the status line, and show(...tables) to add views.
 */
export function focusedLayout(host, model, title, kind, linkKeys) {
  const style = read(model, "look", {});
  const root = panel(host, title, kind);
  for (const [prop, key] of [["--attnlib-changed", "changed"], ["--attnlib-masked", "masked_bg"], ["--attnlib-accent", "accent"]]) {
    if (style[key]) root.style.setProperty(prop, style[key]);
  }
  const controls = el("div", { class: "attnlib-controls" });
  const facts = el("p", { class: "attnlib-facts" });
  const views = el("div", { class: "attnlib-views", role: "region", "aria-label": `${title}: views`, tabindex: "0" });
  const message = messageBox();
  const status = statusArea();
  const share = copyLink(host, model, linkKeys);
  controls.append(status.el);
  if (share) controls.append(share);
  root.append(el("div", { class: "attnlib-layout" }, controls, el("div", { class: "attnlib-main" }, message.el, facts, views)));
  keepInSight(root, controls, views);
  const L = { model, style, root, controls, facts, views, message, status, lastChange: "initial setting" };
  L.change = (values, what) => {
    L.lastChange = what;
    for (const [k, v] of Object.entries(values)) model.set(k, v);
    saveSoon(model);
  };
  /** The status line: the last change and, if `changed` is a number, how many values it changed; then `spoken`. */
  L.say = (changed, spoken) => {
    status.say(`${changeLine(L.lastChange, changed)}.`, typeof spoken === "function" ? () => `${L.lastChange}. ${spoken()}` : `${L.lastChange}. ${spoken}`);
  };
  L.show = (...tables) => views.append(...tables.map((t) => el("div", { class: "attnlib-cell" }, t)));
  return L;
}

/**
 * The keyboard path: when a key (Tab, a skip link) brings the focus into the controls from outside the panel
 * and the views are not in sight, the panel is scrolled to the top of the screen, so that the reader sees the
 * views change as they move the control (a pointer's focus never scrolls: it would move the page under the pointer).
 */
function keepInSight(root, controls, views) {
  controls.addEventListener("focusin", (e) => {
    if (root.contains(e.relatedTarget) || !e.target.matches(":focus-visible")) return;
    const r = views.getBoundingClientRect(), h = window.innerHeight;
    if (r.top < 0 || r.top > h * 0.5 || r.bottom > h && r.height < h * 0.9) root.scrollIntoView({ block: "start" });
  });
}

/** Register model listeners that schedule one draw per microtask; returns the cleanup. */
export function listen(model, keys, draw, dispose) {
  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => { pending = false; draw(); });
  };
  for (const k of keys) model.on(`change:${k}`, schedule);
  return () => {
    for (const k of keys) model.off(`change:${k}`, schedule);
    if (dispose) dispose();
  };
}
