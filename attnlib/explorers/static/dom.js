// The explorers' DOM: elements, matrix tables on colour, sliders, the live region, the panel and its
// layout, the "copy link" control. No math (compute.js), no number formatting (format.js), no link
// codec (link.js) here.
import { formatValue, parseShown } from "./format.js";
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

const ARROW_UP = "\u25b2", ARROW_DOWN = "\u25bc";

/**
 * A matrix as an accessible table whose cells carry their value on a cividis colour (style.lut).
 * update() rebuilds the table only when its shape, labels or message rows change; otherwise it
 * rewrites the cells in place and outlines those whose shown value changed (arrow + screen-reader text).
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
  }

  /** opts: {rows, cols, caption, vmin, vmax, rowSums (array or null), messages {i: text}, highlightRow, decimals} */
  update(M, opts) {
    const style = opts.decimals === undefined ? this.style : { ...this.style, decimals: opts.decimals };
    const messages = opts.messages || {};
    const sums = opts.rowSums || null;
    const key = `${opts.rows.join("\u0000")}|${opts.cols.join("\u0000")}|${Object.keys(messages).join(",")}|${!!sums}`;
    if (this.caption.textContent !== opts.caption) this.caption.textContent = opts.caption;
    if (key !== this.key) this.build(opts, messages, !!sums, key);
    let lo = opts.vmin, hi = opts.vmax;
    if (lo === undefined || hi === undefined) {
      let a = Infinity, b = -Infinity;
      M.forEach((row, i) => {
        if (row === null || i in messages) return;
        for (const v of row) if (Number.isFinite(v)) { if (v < a) a = v; if (v > b) b = v; }
      });
      if (lo === undefined) lo = a === Infinity ? 0 : a;
      if (hi === undefined) hi = b === -Infinity ? 1 : b;
    }
    const texts = [];
    let changed = 0;
    M.forEach((row, i) => {
      if (row === null || i in messages) { texts.push(null); return; }
      const prev = this.previous && this.previous[i];
      const rowTexts = [];
      row.forEach((v, j) => {
        const cell = this.cells[i][j];
        const text = formatValue(v, style);
        rowTexts.push(text);
        const k = Number.isFinite(v) ? colourIndex(v, lo, hi) : -1;
        if (k !== cell.k) {
          cell.k = k;
          cell.td.style.background = k >= 0 ? style.lut[k] : "";
          cell.td.style.color = k >= 0 ? style.text[k] : "";
        }
        const old = prev ? prev[j] : null;
        const moved = old !== null && old !== undefined && old !== text;
        let cls = k >= 0 ? "" : "attnlib-masked";
        let arrow = "", spoken = "";
        if (moved) {
          changed += 1;
          cls += " attnlib-changed";
          arrow = parseShown(text, style) > parseShown(old, style) ? ARROW_UP : ARROW_DOWN;
          spoken = `changed from ${old}, now `;
        }
        cls = cls.trim();
        if (cell.cls !== cls) { cell.cls = cls; cell.td.className = cls; }
        if (cell.arrow.textContent !== arrow) cell.arrow.textContent = arrow;
        if (cell.sr.textContent !== spoken) cell.sr.textContent = spoken;
        if (cell.value.data !== text) cell.value.data = text;
      });
      if (sums) {
        const t = formatValue(sums[i], style);
        if (this.sumCells[i].textContent !== t) this.sumCells[i].textContent = t;
      }
      texts.push(rowTexts);
    });
    this.table.querySelectorAll("tr.attnlib-highlight").forEach((tr) => tr.classList.remove("attnlib-highlight"));
    if (opts.highlightRow !== undefined && this.rowsEls[opts.highlightRow]) this.rowsEls[opts.highlightRow].classList.add("attnlib-highlight");
    this.previous = texts;
    return changed;
  }

  build(opts, messages, withSums, key) {
    this.key = key;
    this.previous = null;
    const head = el("tr", {}, el("td", { class: "attnlib-corner" }));
    for (const c of opts.cols) head.append(el("th", { scope: "col", text: c }));
    if (withSums) head.append(el("th", { scope: "col", title: "sum of the row", text: "row sum" }));
    const body = el("tbody");
    this.cells = [];
    this.sumCells = [];
    this.rowsEls = [];
    opts.rows.forEach((label, i) => {
      const tr = el("tr", { "data-i": i }, el("th", { scope: "row", text: label }));
      const rowCells = [];
      if (i in messages) {
        tr.append(el("td", { colspan: opts.cols.length + (withSums ? 1 : 0), class: "attnlib-message", "data-i": i, role: "note", text: messages[i] }));
      } else {
        opts.cols.forEach((_, j) => {
          // arrow (hidden from screen readers), "changed from ..." (screen readers only), the value
          const arrow = el("span", { class: "attnlib-arrow", "aria-hidden": "true" });
          const sr = el("span", { class: "attnlib-sr" });
          const value = document.createTextNode("");
          const td = el("td", { "data-i": i, "data-j": j }, arrow, sr, value);
          rowCells.push({ td, arrow, sr, value, k: null, cls: null });
          tr.append(td);
        });
        if (withSums) {
          const s = el("td", { class: "attnlib-rowsum", "data-i": i });
          this.sumCells[i] = s;
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

/** A compact labelled range slider with a readout; onInput(value) on every move. */
export function slider({ label, name, value, min, max, step, onInput, describe, digits = 2 }) {
  const id = `attnlib-${Math.random().toString(36).slice(2, 10)}`;
  const input = el("input", {
    type: "range", id, min, max, step, value, "aria-label": label, "data-name": name || label, class: "attnlib-range",
    title: describe || label,
  });
  const readout = el("output", { for: id, class: "attnlib-readout", text: Number(value).toFixed(digits), "aria-hidden": "true" });
  const wrap = el("div", { class: "attnlib-slider" }, el("label", { for: id, class: "attnlib-slider-label", text: name || label, "aria-hidden": "true" }), input, readout);
  input.addEventListener("input", () => {
    readout.textContent = Number(input.value).toFixed(digits);
    onInput(Number(input.value));
  });
  return {
    el: wrap,
    input,
    set(v) {
      if (Number(input.value) !== v) input.value = String(v);
      const t = Number(v).toFixed(digits);
      if (readout.textContent !== t) readout.textContent = t;
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
    say(shown, spoken) {
      if (visible.textContent !== shown) visible.textContent = shown;
      // announce once the reader pauses (a held arrow key would otherwise queue every step)
      clearTimeout(timer);
      timer = setTimeout(() => { live.textContent = spoken; }, 250);
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

/**
 * Send the model's changes to the kernel after this turn's views are drawn: the draw was queued as a
 * microtask by the change event, so queueing the send behind it puts the page's update first.
 */
export function saveSoon(model) {
  queueMicrotask(() => model.save_changes());
}

/** Read a trait with a default (the static host and anywidget both return undefined for a missing key). */
export function read(model, key, fallback) {
  const v = model.get(key);
  return v === undefined || v === null ? fallback : v;
}

/** A slider over a list of choices (index steps), named `label`, its value text the choice itself. */
export function choiceSlider({ label, choices, value, format = String, onChange, cls }) {
  const id = `attnlib-${Math.random().toString(36).slice(2, 10)}`;
  const index = Math.max(0, choices.indexOf(value));
  const input = el("input", { type: "range", id, min: 0, max: choices.length - 1, step: 1, value: index, "aria-label": label, class: `attnlib-range ${cls || ""}`.trim() });
  const readout = el("output", { for: id, class: "attnlib-readout attnlib-choice-readout", "aria-hidden": "true" });
  const show = (v) => {
    const t = format(v);
    if (readout.textContent !== t) readout.textContent = t;
    if (input.getAttribute("aria-valuetext") !== t) input.setAttribute("aria-valuetext", t);
  };
  show(choices[index]);
  input.addEventListener("input", () => {
    const v = choices[Number(input.value)];
    show(v);
    onChange(v);
  });
  const wrap = el("div", { class: "attnlib-slider attnlib-choice" }, el("label", { for: id, class: "attnlib-slider-label attnlib-choice-label", text: label, "aria-hidden": "true" }), input, readout);
  return {
    el: wrap,
    input,
    set(v) {
      const k = choices.indexOf(v);
      if (k >= 0 && Number(input.value) !== k) input.value = String(k);
      show(v);
    },
  };
}

/** Skeleton of a focused explorer: panel, controls column, facts line, views, status, link, message. */
export function focusedLayout(host, model, title, kind, linkKeys) {
  const style = read(model, "look", {});
  const root = panel(host, title, kind);
  if (style.changed) root.style.setProperty("--attnlib-changed", style.changed);
  if (style.accent) root.style.setProperty("--attnlib-accent", style.accent);
  const controls = el("div", { class: "attnlib-controls" });
  const facts = el("p", { class: "attnlib-facts" });
  const views = el("div", { class: "attnlib-views", role: "region", "aria-label": `${title}: views`, tabindex: "0" });
  const message = messageBox();
  const status = statusArea();
  const share = copyLink(host, model, linkKeys);
  controls.append(status.el);
  if (share) controls.append(share);
  root.append(el("div", { class: "attnlib-layout" }, controls, el("div", { class: "attnlib-main" }, message.el, facts, views)));
  return { style, root, controls, facts, views, message, status };
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
