// The attention explorer (kind "attention"): the full one, and the focused value-projection and
// mask explorers (fewer controls and views). State through model.get/set/on/off/save_changes only.
import { attentionViews, maskPattern, causalCells, allCells, divisorFor, snap } from "./compute.js";
import { el, MatrixView, slider, focusedLayout, changeLine, countChanged, tokenColour, read, listen, uid } from "./dom.js";
import { formatValue } from "./format.js";
import { checkMatrix, checkChoice, checkCells } from "./link.js";

const W_NAMES = ["W_Q", "W_K", "W_V"];
// what a move changes, first: the weights (a heatmap), then the outputs and the scores beside them, the plane, the rest
const VIEW_ORDER = ["weights", "output", "scores", "plane", "scaled", "Q", "K", "V"];
const STATE_KEYS = ["W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells"];

function copyMatrix(M) {
  return M.map((row) => row.slice());
}

function dkText(dk) {
  return dk ? `scores divided by \u221a${dk} = ${formatValue(divisorFor(dk))}` : "no scaling: scores divided by 1";
}

/**
 * What every part of the panel shares: the model, the data it does not change, and commit(), the one
 * way a control changes the setting (the layout's change: it names the change for the status line and saves soon).
 */
function context(model, L) {
  const X = read(model, "X", []);
  return {
    model, X, n: X.length, d: X.length ? X[0].length : 0, tokens: read(model, "tokens", []), style: L.style,
    range: read(model, "slider", { min: -3, max: 3, step: 0.05 }), commit: L.change, L,
  };
}

/** One slider per entry of each moved matrix (W_Q, W_K, W_V), in a (row, column) grid. */
function weightControls(ctx, name) {
  const { model, d, range } = ctx;
  const grid = el("div", { class: "attnlib-wgrid", style: `grid-template-columns:repeat(${d},minmax(0,1fr))` });
  const sliders = [];
  for (let i = 0; i < d; i++) {
    sliders.push([]);
    for (let j = 0; j < d; j++) {
      const label = `${name}[${i + 1},${j + 1}]`;
      const s = slider({
        label, name: `${i + 1},${j + 1}`, value: read(model, name)[i][j], ...range,
        describe: `${name}, row ${i + 1}, column ${j + 1}`,
        onInput: (v) => {
          const M = copyMatrix(read(model, name));
          const old = M[i][j];
          M[i][j] = snap(v, range);
          ctx.commit({ [name]: M }, `${label} moved from ${old.toFixed(2)} to ${M[i][j].toFixed(2)}`);
        },
      });
      s.input.classList.add(`attnlib-${name}-${i}-${j}`);
      sliders[i].push(s);
      grid.append(s.el);
    }
  }
  return {
    el: el("fieldset", { class: "attnlib-matrix-control" }, el("legend", { text: `${name} (row, column)` }), grid),
    sync() {
      const M = read(model, name);
      sliders.forEach((row, i) => row.forEach((s, j) => s.set(M[i][j])));
    },
  };
}

/** The preset buttons: each preset of the model, the seeded random draws, and reset. */
function presetControls(ctx) {
  const { model } = ctx;
  const bar = el("div", { class: "attnlib-presets", role: "group", "aria-label": "presets" });
  const button = (id, text, title, onclick) => el("button", { type: "button", class: "attnlib-button", "data-preset": id, title, text, onclick });
  for (const p of read(model, "presets", [])) {
    const values = () => Object.fromEntries(Object.entries(p.values).map(([k, v]) => [k, copyMatrix(v)]));
    bar.append(button(p.id, p.label, p.tooltip || p.label, () => ctx.commit(values(), `preset ${p.label}`)));
  }
  const draws = read(model, "random_draws", []);
  let randomIndex = 0;
  if (draws.length) {
    bar.append(button("random", "seeded random", "matrices drawn by a seeded generator (each press shows the next draw)", () => {
      const draw = draws[randomIndex % draws.length];
      randomIndex += 1;
      const values = {};
      for (const k of W_NAMES) if (draw[k]) values[k] = copyMatrix(draw[k]);
      ctx.commit(values, `seeded random matrices (draw ${randomIndex})`);
    }));
  }
  bar.append(button("reset", "reset", "back to the starting setting", () => {
    const init = read(model, "initial", {});
    const values = {};
    for (const k of W_NAMES) if (init[k]) values[k] = copyMatrix(init[k]);
    if ("dk" in init) values.dk = init.dk;
    if (init.mask_mode) values.mask_mode = init.mask_mode;
    if (init.mask_cells) values.mask_cells = copyMatrix(init.mask_cells);
    ctx.commit(values, "reset");
  }));
  return { el: bar, sync() {} };
}

/** The d_k choice (0 = no scaling) and the divisor it gives. */
function dkControl(ctx) {
  const { model, d } = ctx;
  const trueDk = read(model, "true_dk", d);
  const select = el("select", { class: "attnlib-dk", "aria-label": "d_k", id: uid("attnlib-dk") });
  for (const k of read(model, "dk_choices", [0, d])) {
    select.append(el("option", { value: k, text: k === 0 ? "no scaling" : k === trueDk ? `${k} (true d_k)` : String(k) }));
  }
  select.value = String(read(model, "dk", trueDk));
  select.addEventListener("change", () => {
    const old = read(model, "dk", 0), v = Number(select.value);
    ctx.commit({ dk: v }, `d_k changed from ${old || "no scaling"} to ${v || "no scaling"}`);
  });
  const label = el("span", { class: "attnlib-divisor" });
  return {
    el: el("div", { class: "attnlib-dk-row" }, el("label", { for: select.id, text: "d_k ", "aria-hidden": "true" }), select, label),
    sync() {
      const dk = read(model, "dk", 0);
      if (select.value !== String(dk)) select.value = String(dk);
      const t = dkText(dk);
      if (label.textContent !== t) label.textContent = t;
    },
  };
}

/** The mask: a mode (none, causal, custom) and a grid of checkboxes, rows queries and columns keys. */
function maskControl(ctx) {
  const { model, n, tokens } = ctx;
  const group = uid("attnlib-mask");
  const modeInputs = {};
  const modes = el("div", { class: "attnlib-mask-modes", role: "radiogroup", "aria-label": "mask" });
  for (const mode of ["none", "causal", "custom"]) {
    const input = el("input", { type: "radio", name: group, value: mode, "aria-label": `mask ${mode}`, class: `attnlib-mask-mode-${mode}` });
    input.addEventListener("change", () => {
      if (!input.checked) return;
      const cells = mode === "causal" ? causalCells(n) : mode === "none" ? allCells(n) : copyMatrix(read(model, "mask_cells", allCells(n)));
      ctx.commit({ mask_mode: mode, mask_cells: cells }, `mask changed to ${mode}`);
    });
    modeInputs[mode] = input;
    modes.append(el("label", { class: "attnlib-mode" }, input, ` ${mode}`));
  }
  const grid = el("table", { class: "attnlib-mask-grid" });
  grid.append(el("caption", { class: "attnlib-sr", text: "mask: rows are queries, columns are keys; ticked = may attend" }));
  const head = el("tr", {}, el("td"));
  tokens.forEach((t) => head.append(el("th", { scope: "col", text: t })));
  const body = el("tbody");
  const cellInputs = tokens.map((ti, i) => {
    const tr = el("tr", {}, el("th", { scope: "row", text: ti }));
    body.append(tr);
    return tokens.map((tj, j) => {
      const cb = el("input", { type: "checkbox", class: `attnlib-mask-${i}-${j}`, "aria-label": `mask cell ${i + 1},${j + 1}`, title: `${ti} may attend to ${tj}` });
      cb.addEventListener("change", () => {
        const cells = copyMatrix(read(model, "mask_cells", allCells(n)));
        cells[i][j] = cb.checked;
        ctx.commit({ mask_mode: "custom", mask_cells: cells }, `${ti} ${cb.checked ? "may" : "may no longer"} attend to ${tj}`);
      });
      tr.append(el("td", {}, cb));
      return cb;
    });
  });
  grid.append(el("thead", {}, head), body);
  return {
    el: el("fieldset", { class: "attnlib-mask-control" }, el("legend", { text: "mask (rows: queries, columns: keys)" }), modes, grid),
    sync() {
      const mode = read(model, "mask_mode", "none");
      for (const [m, input] of Object.entries(modeInputs)) if (input.checked !== (m === mode)) input.checked = m === mode;
      const cells = maskPattern(mode, read(model, "mask_cells", allCells(n)), n);
      cellInputs.forEach((row, i) => row.forEach((cb, j) => { if (cb.checked !== !!cells[i][j]) cb.checked = !!cells[i][j]; }));
    },
  };
}

/** The views the model asks for, in VIEW_ORDER: a MatrixView per table, the plane for d = 2. */
function buildViews(ctx, names, viewBox) {
  const tables = {};
  let plane = null;
  for (const v of VIEW_ORDER) {
    if (!names.includes(v)) continue;
    if (v === "plane") {
      const figure = el("figure", { class: "attnlib-plane" });
      plane = new Plane(figure, ctx.tokens, ctx.style);
      viewBox.append(figure);
    } else {
      tables[v] = new MatrixView(v, ctx.style);
      viewBox.append(el("div", { class: "attnlib-cell" }, tables[v].table));
    }
  }
  return { tables, plane };
}

/** Every table's matrix, labels and caption for one result of attentionViews. */
function tableSpecs(ctx, r, dk) {
  const { tokens, d, style } = ctx;
  const dims = Array.from({ length: d }, (_, j) => `d${j + 1}`);
  const named = (p) => tokens.map((_, i) => `${p}${i + 1}`);
  return {
    Q: [r.Q, named("q"), dims, "Q = X W_Q"],
    K: [r.K, named("k"), dims, "K = X W_K"],
    V: [r.V, named("v"), dims, "V = X W_V"],
    scores: [r.scores, tokens, tokens, "scores Q K\u1d40 (rows: queries, columns: keys)"],
    scaled: [r.scaled, tokens, tokens, `scaled and masked scores (${dkText(dk)}; ${style.neg_inf || "\u2212\u221e"} = masked)`],
    weights: [r.weights, tokens, tokens, "softmax weights (each row sums to 1)"],
    output: [r.output, named("o"), dims, "outputs O = weights \u00b7 V"],
  };
}

/** Recompute the views from the model (compute.js) and update the tables, the plane and the status line. */
function drawAttention(ctx, parts) {
  const { model, X, n, tokens, style } = ctx;
  for (const c of parts.controls) c.sync();
  const dk = read(model, "dk", 0);
  const cells = maskPattern(read(model, "mask_mode", "none"), read(model, "mask_cells", allCells(n)), n);
  const r = attentionViews({ X, W_Q: read(model, "W_Q"), W_K: read(model, "W_K"), W_V: read(model, "W_V"), dk, cells, tokens });
  parts.message.show(r.error || read(model, "error", ""));
  parts.root.classList.toggle("attnlib-has-error", !!r.error);
  if (r.error) {
    parts.status.say(`${changeLine(ctx.L.lastChange)}. ${r.error}`, `${r.error}`);
    return;
  }
  const spec = tableSpecs(ctx, r, dk);
  const changed = countChanged(...Object.entries(parts.tables).map(([v, view]) => {
    const [M, rows, cols, caption] = spec[v];
    const opts = { rows, cols, caption };
    if (v === "weights") Object.assign(opts, { vmin: 0, vmax: 1, rowSums: r.sums, messages: r.messages });
    if (v === "output") opts.messages = r.messages;
    return view.update(M, opts);
  }));
  if (parts.plane) parts.plane.update(X, r.output);
  const empty = Object.keys(r.messages).map((i) => tokens[i]);
  const extra = empty.length ? ` ${empty.length === 1 ? "Query row" : "Query rows"} ${empty.join(", ")} may attend to no key.` : "";
  const lastChange = ctx.L.lastChange;
  parts.status.say(
    `${changeLine(lastChange, changed)}${changed === null ? "" : " (outlined, \u25b2 up / \u25bc down)"}.${extra}`,
    () => {  // what a screen reader hears once the reader pauses (built then: a held key does not build it at every step)
      const rowsText = tokens.map((t, i) => (r.weights[i] === null ? `${t}: no allowed key` : `${t}: ${r.weights[i].map((v) => formatValue(v, style)).join(", ")}`));
      return `Last change: ${lastChange}. Weights by query row: ${rowsText.join("; ")}.${extra}`;
    },
  );
}

function renderAttention({ model, el: host }) {
  const title = read(model, "title", "Attention explorer");
  const L = focusedLayout(host, model, title, "attention", STATE_KEYS);
  const ctx = context(model, L);
  const asked = read(model, "controls", []);
  const controls = [
    ...W_NAMES.filter((name) => asked.includes(name)).map((name) => weightControls(ctx, name)),
    ...(asked.includes("presets") ? [presetControls(ctx)] : []),
    ...(asked.includes("d_k") ? [dkControl(ctx)] : []),
    ...(asked.includes("mask") ? [maskControl(ctx)] : []),
  ];
  L.controls.prepend(...controls.map((c) => c.el));
  const { tables, plane } = buildViews(ctx, read(model, "views", []).filter((v) => v !== "plane" || ctx.d === 2), L.views);
  const parts = { controls, tables, plane, status: L.status, message: L.message, root: L.root };
  const draw = () => drawAttention(ctx, parts);
  draw();
  return listen(model, [...STATE_KEYS, "error"], draw, () => L.status.dispose());
}

/** Label font size in the plane (px: the SVG is drawn at its own size) and the candidate offsets of a label from its point. */
const LABEL_PX = 13;
const SPOTS = [[1, -1], [1, 1], [-1, -1], [-1, 1], [1, 0], [-1, 0], [0, -1], [0, 1]];

/** Whether two boxes [x, y, w, h] meet. */
function meets(a, b) {
  return a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
}

/**
 * Tokens (solid) and outputs (dashed) as arrows in the noun/verb plane; built once, then moved. Every label is
 * placed where its box meets no other label's (nor an axis label's): the first free spot around its point, farther out if need be.
 */
class Plane {
  constructor(figure, tokens, style) {
    const size = (this.size = 260);
    this.pad = 22;
    this.svg = el("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img", class: "attnlib-plane-svg" });
    this.axes = [el("line", { class: "attnlib-axis" }), el("line", { class: "attnlib-axis" })];
    this.axisLabels = ["noun \u2192", "verb \u2191"].map((text) => el("text", { "font-size": LABEL_PX, class: "attnlib-axis-label", text }));
    this.svg.append(...this.axes, ...this.axisLabels);
    this.arrows = tokens.map((t, i) => {
      const colour = tokenColour(style, i);
      return [[t, false], [`o${i + 1}`, true]].map(([label, dashed]) => {
        const parts = {
          label,
          dashed,
          line: el("line", { stroke: colour, "stroke-width": 2.5, "stroke-dasharray": dashed ? "5,3" : null }),
          dot: el("circle", { r: 3.5, fill: colour }),
          text: el("text", { "font-size": LABEL_PX, class: "attnlib-point-label", text: label }),
        };
        this.svg.append(parts.line, parts.dot, parts.text);
        return parts;
      });
    });
    this.widths = null;
    figure.replaceChildren(this.svg, el("figcaption", { text: "tokens (solid) and outputs (dashed)" }));
  }

  /** A label's width: measured once the plane is on the page (then kept), else estimated from its length. */
  width(node, index) {
    if (!this.widths && this.svg.isConnected) {
      const all = [...this.axisLabels, ...this.arrows.flat().map((a) => a.text)];
      const measured = all.map((t) => t.getComputedTextLength());
      if (measured.every((w) => w > 0)) this.widths = new Map(all.map((t, k) => [t, measured[k]]));
    }
    return (this.widths ? this.widths.get(node) : 0.62 * LABEL_PX * index.length) + 3;
  }

  update(X, output) {
    const { size, pad } = this;
    let lim = 1.2;
    for (const p of X) lim = Math.max(lim, Math.abs(p[0]) * 1.15, Math.abs(p[1]) * 1.15);
    for (const p of output) if (p) lim = Math.max(lim, Math.abs(p[0]) * 1.15, Math.abs(p[1]) * 1.15);
    const xy = (p) => [pad + ((p[0] + lim) / (2 * lim)) * (size - 2 * pad), size - pad - ((p[1] + lim) / (2 * lim)) * (size - 2 * pad)];
    const [ox, oy] = xy([0, 0]);
    const set = (node, attrs) => {  // an attribute is written only when its text changes (one press moves a few arrows)
      const shown = (node.attnlibShown = node.attnlibShown || {});
      for (const [k, v] of Object.entries(attrs)) {
        const t = typeof v === "number" ? v.toFixed(1) : v;
        if (shown[k] !== t) { shown[k] = t; node.setAttribute(k, t); }
      }
    };
    set(this.axes[0], { x1: pad, y1: oy, x2: size - pad, y2: oy });
    set(this.axes[1], { x1: ox, y1: pad, x2: ox, y2: size - pad });
    // boxes are [x, y, w, h] with y the top; a text's y attribute is its baseline (about 0.8 of the size below the top)
    // (the height and the width keep a margin: a drawn glyph box reaches above the ascent and past the advance)
    const h = 1.3 * LABEL_PX, base = 0.98 * LABEL_PX;
    const taken = [];
    const nounW = this.width(this.axisLabels[0], "noun \u2192"), verbW = this.width(this.axisLabels[1], "verb \u2191");
    const noun = [size - nounW, Math.min(size - h, oy + 3), nounW, h];
    const verb = [Math.max(0, ox - 4 - verbW), 2, verbW, h];
    for (const [node, b] of [[this.axisLabels[0], noun], [this.axisLabels[1], verb]]) {
      taken.push(b);
      set(node, { x: b[0], y: b[1] + base });
    }
    const desc = [];
    const placed = [];
    this.arrows.forEach((pair, i) => {
      pair.forEach((a) => {
        const vec = a.dashed ? output[i] : X[i];
        if (a.hidden !== !vec) {
          a.hidden = !vec;
          for (const node of [a.line, a.dot, a.text]) node.setAttribute("visibility", vec ? "visible" : "hidden");
        }
        if (!vec) return;
        const [x, y] = xy(vec);
        set(a.line, { x1: ox, y1: oy, x2: x, y2: y });
        set(a.dot, { cx: x, cy: y });
        placed.push([a, x, y]);
        desc.push(`${a.label} at (${vec[0].toFixed(2)}, ${vec[1].toFixed(2)})`);
      });
    });
    for (const [a, x, y] of placed) {
      const w = this.width(a.text, a.label);
      let box = null;
      for (let r = 5; r <= 60 && !box; r += 9) {
        for (const [dx, dy] of SPOTS) {
          const bx = dx > 0 ? x + r : dx < 0 ? x - r - w : x - w / 2;
          const by = dy > 0 ? y + r - 2 : dy < 0 ? y - r - h + 2 : y - h / 2;
          const b = [bx, by, w, h];
          if (bx < 0 || by < 0 || bx + w > size || by + h > size || taken.some((t) => meets(t, b))) continue;
          box = b;
          break;
        }
      }
      // no free spot within reach (many tokens on one point): the next free line down the right-hand edge
      if (!box) {
        let by = 0;
        box = [size - w, by, w, h];
        while (taken.some((t) => meets(t, box)) && by + h < size) { by += h; box = [size - w, by, w, h]; }
      }
      taken.push(box);
      set(a.text, { x: box[0], y: box[1] + base });
    }
    this.svg.setAttribute("aria-label", `Noun/verb plane: tokens as solid arrows, outputs as dashed arrows; ${desc.join("; ")}`);
  }
}

/** Check a setting that comes from a link against the explorer's data; returns [values, problems]. */
export function acceptLink(model, obj) {
  const X = read(model, "X", []), n = X.length, d = n ? X[0].length : 0;
  const range = read(model, "slider", { min: -3, max: 3, step: 0.05 });
  const values = {}, problems = [];
  for (const k of W_NAMES) {
    if (!(k in obj)) continue;
    const p = checkMatrix(k, obj[k], d, d, range.min, range.max);
    if (p) problems.push(p); else values[k] = obj[k].map((row) => row.map((v) => snap(v, range)));
  }
  if ("dk" in obj) {
    const p = checkChoice("d_k", obj.dk, read(model, "dk_choices", []));
    if (p) problems.push(p); else values.dk = obj.dk;
  }
  if ("mask_mode" in obj || "mask_cells" in obj) {
    const p = checkChoice("mask mode", obj.mask_mode, ["none", "causal", "custom"]) || checkCells("mask", obj.mask_cells, n);
    if (p) problems.push(p);
    else { values.mask_mode = obj.mask_mode; values.mask_cells = maskPattern(obj.mask_mode, obj.mask_cells, n); }
  }
  return [values, problems];
}

export default { render: renderAttention };
