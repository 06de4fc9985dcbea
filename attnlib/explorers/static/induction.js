// The induction explorer (kind "induction", chapter 17): the two-layer attention-only model the chapter
// trained (its weights come from attnlib as data), run in the page on the reader's own text. The forward
// pass below is attnlib.induction.InductionModel.forward written again in JavaScript on compute.js's
// attention and softmax, held to it by the golden cases of attnlib/explorers/kinds/induction.py.
import { causalCells, matmul, multiHead, softmaxRows } from "./compute.js";
import { el, read, focusedLayout, listen } from "./dom.js";
import { formatValue } from "./format.js";

const MODES = ["letters", "words"];
const MAX_TEXT = 2000;
// attnlib.explorers.kinds.induction.SEPARATORS and NAMED_DROPPED
const SEPARATORS = " \t\n\r\f\v" + "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const NAMED_DROPPED = 12;

/** The characters of the lowered text the model cannot read (not a to z, not a separator), each once, in order. */
function droppedOf(text) {
  const seen = [];
  for (const c of text.toLowerCase()) if (!(c >= "a" && c <= "z") && !SEPARATORS.includes(c) && !seen.includes(c)) seen.push(c);
  return seen;
}

function droppedNote(dropped, mode) {
  if (!dropped.length) return "";
  const named = dropped.slice(0, NAMED_DROPPED).join(" ") + (dropped.length > NAMED_DROPPED ? ` and ${dropped.length - NAMED_DROPPED} more` : "");
  const split = mode === "words" ? ", and they split words" : "";
  return `Left out: ${named}. The model reads only the letters a to z (capitals as small letters): accented`
    + ` letters, digits, emoji and other symbols are skipped${split}.`;
}

function predictedNote(predicted, labels, mode, vocab) {
  const unknown = [...new Set(predicted.filter((t, i) => labels[i].startsWith("#")))].sort((a, b) => a - b);
  if (!unknown.length) return "";
  const names = unknown.map((t) => `#${t}`).join(", ");
  if (mode === "letters") {
    return `${names}: a token id that no letter has. The model knows ${vocab} token ids; a to z are 0 to 25,`
      + " so a prediction above 25 is a token you cannot type.";
  }
  return `${names}: a token id that no word of your text has. Words get the ids 0, 1, 2, ... in the order they first`
    + ` appear (the model knows ${vocab} ids), so the model predicts a word that is not in your text.`;
}

/** Say when two different words (or letters) of the shown text share a token id, because the ids wrapped. */
function wrappedNote(ids, labels, mode, vocab) {
  const first = new Map(), distinct = [], shared = [];
  ids.forEach((t, i) => {
    const lab = labels[i];
    if (!distinct.includes(lab)) distinct.push(lab);
    if (!first.has(t)) first.set(t, lab);
    const earlier = first.get(t);
    if (earlier !== lab && shared.every((s) => s[0] !== lab)) shared.push([lab, earlier, t]);
  });
  if (!shared.length) return "";
  const [later, earlier, t] = shared[0];
  const unit = mode === "words" ? "words" : "letters";
  const more = shared.length > 1 ? ` (and ${shared.length - 1} more such pairs)` : "";
  return `Your text has ${distinct.length} distinct ${unit}, but the model knows only ${vocab} token ids, so the ids start`
    + ` again from 0: "${later}" and "${earlier}" are the same token (id ${t}) to the model${more}, and it predicts`
    + " as if the later one repeated the earlier.";
}

/** Token ids and their texts, as attnlib.induction.letters_to_tokens / words_to_tokens make them. */
export function inductionTokens(text, mode, vocab) {
  const ids = [], labels = [];
  const lower = text.toLowerCase();
  const isLetter = (c) => c >= "a" && c <= "z";
  if (mode === "letters") {
    for (const c of lower) if (isLetter(c)) { ids.push((c.charCodeAt(0) - 97) % vocab); labels.push(c); }
    return { ids, labels };
  }
  const seen = new Map();
  let current = "";
  const flush = () => {
    if (!current) return;
    if (!seen.has(current)) seen.set(current, seen.size % vocab);
    ids.push(seen.get(current));
    labels.push(current);
    current = "";
  };
  for (const c of lower + " ") { if (isLetter(c)) current += c; else flush(); }
  return { ids, labels };
}

/** Both layers' attention weights [layer][head][query][key] and the logits [position][token] for token ids:
 * each layer is compute.js's multi-head attention under the causal mask, added to the residual stream. */
export function inductionForward(data, ids) {
  const cells = causalCells(ids.length);
  let x = ids.map((t, i) => data.E[t].map((v, c) => v + data.P[i][c]));
  const weights = [];
  for (const layer of [1, 2]) {
    const W = (name) => data[`${name}${layer}`];
    const r = multiHead(x, W("W_Q"), W("W_K"), W("W_V"), W("W_O"), data.n_heads, cells);
    weights.push(r.weights);
    x = x.map((row, i) => row.map((v, c) => v + r.output[i][c]));
  }
  return { weights, logits: matmul(x, data.W_U) };
}

function labelOf(token, ids, labels, mode) {
  if (mode === "letters" && token < 26) return String.fromCharCode(97 + token);
  if (mode === "words") { const k = ids.indexOf(token); if (k >= 0) return labels[k]; }
  return `#${token}`;
}

/** What the page shows for a text: attnlib.explorers.kinds.induction.induction_view. */
export function inductionView(data, text, mode) {
  const t = inductionTokens(text, mode, data.vocab_size);
  const cut = Math.max(0, t.ids.length - data.n_positions);
  const ids = t.ids.slice(0, data.n_positions), labels = t.labels.slice(0, data.n_positions);
  const dropped = droppedOf(text), dropped_note = droppedNote(dropped, mode);
  const wrapped_note = wrappedNote(ids, labels, mode, data.vocab_size);
  if (!ids.length) return { ids, labels, cut, dropped, dropped_note, wrapped_note, layers: [], predicted: [], probability: [], predicted_labels: [], predicted_note: "" };
  const f = inductionForward(data, ids);
  const predicted = [], probability = [];
  for (const p of softmaxRows(f.logits)) {  // the most likely next token (the first if tied) and its probability
    let arg = 0;
    p.forEach((v, k) => { if (v > p[arg]) arg = k; });
    predicted.push(arg);
    probability.push(p[arg]);
  }
  const predicted_labels = predicted.map((p) => labelOf(p, ids, labels, mode));
  const predicted_note = predictedNote(predicted, predicted_labels, mode, data.vocab_size);
  return { ids, labels, cut, dropped, dropped_note, wrapped_note, layers: f.weights, predicted, probability, predicted_labels, predicted_note };
}

const SIZE = 360, GUTTER = 56, MAX_CELL = 22, FONT = 10, LABEL_GAP = 2;

/** The side (CSS px) of the map of n tokens and the n + 1 edges of its rows and columns: cells of MAX_CELL px
 * while they fit, then the whole SIZE shared out in whole pixels (so 48 tokens fill it, and the side stops changing).
 * The GUTTER on the left and at the top holds the tokens' labels. */
function mapGeometry(n) {
  const span = Math.min(MAX_CELL * n, SIZE - GUTTER);
  const edges = Array.from({ length: n + 1 }, (_, k) => GUTTER + Math.round((k * span) / Math.max(n, 1)));
  return { side: GUTTER + span, cell: span / Math.max(n, 1), edges };
}

/** Every how many tokens a label fits (FONT px text needs FONT + 1 px across): 1 up to 27 tokens, 2 at 48. */
export function labelStep(n) {
  const { cell } = mapGeometry(n);
  return Math.max(1, Math.ceil((FONT + 1) / Math.max(cell, 1e-9)));
}

/** `text` cut to `width` px in ctx's font, with an ellipsis when cut (the whole token is on hover and focus). */
function fitted(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let t = text;
  while (t.length > 1 && ctx.measureText(`${t}\u2026`).width > width) t = t.slice(0, -1);
  return `${t}\u2026`;
}

/** One attention map on a canvas sized to its tokens (cividis colours from the style): up to 13 tokens the map grows,
 * then its cells shrink; 48 x 48 still fit. The tokens are written in full (up to the gutter's width) along the rows
 * and, turned upright, along the columns, at FONT px: every one while they fit, every second one at more than 27
 * tokens. Pointing at a cell, or moving over the map with the arrow keys once it has the focus, names its query and
 * key tokens in full and gives the weight. */
class MapView {
  constructor(name, caption, style) {
    this.style = style;
    this.canvas = el("canvas", { class: "attnlib-map", "data-view": name, role: "img", tabindex: 0 });
    this.caption = el("p", { class: "attnlib-map-caption", text: caption });
    this.detail = el("p", { class: "attnlib-map-detail", "aria-live": "polite" });
    this.box = el("figure", { class: "attnlib-map-box" }, this.caption, this.canvas, this.detail);
    this.shape = "";
    this.cursor = null;  // [query, key] pointed at or chosen with the keys; null: the last row is described
    this.M = []; this.labels = [];
    this.canvas.addEventListener("mousemove", (e) => this.point(e));
    this.canvas.addEventListener("mouseleave", () => { if (document.activeElement !== this.canvas) this.choose(null); });
    this.canvas.addEventListener("focus", () => { if (!this.cursor && this.M.length) this.choose([this.M.length - 1, 0]); });
    this.canvas.addEventListener("blur", () => this.choose(null));
    this.canvas.addEventListener("keydown", (e) => this.key(e));
  }

  /** The canvas at `side` CSS pixels; its backing store is reallocated only when the side or the pixel ratio changes. */
  resize(side) {
    const c = this.canvas, ratio = window.devicePixelRatio || 1, shape = `${side}@${ratio}`;
    if (shape === this.shape) return;
    this.shape = shape;
    c.width = Math.round(side * ratio); c.height = Math.round(side * ratio);
    c.style.width = `${side}px`; c.style.height = `${side}px`;
    this.ctx = c.getContext("2d");
    this.ctx.setTransform(ratio, 0, 0, ratio, 0, 0);  // setting the size reset the transform
  }

  point(e) {
    const n = this.M.length;
    if (!n) return;
    const r = this.canvas.getBoundingClientRect(), { edges } = mapGeometry(n);
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const find = (v) => { for (let k = 0; k < n; k++) if (v >= edges[k] && v < edges[k + 1]) return k; return -1; };
    const i = find(y), j = find(x);
    this.choose(i >= 0 && j >= 0 ? [i, j] : null);
  }

  key(e) {
    const n = this.M.length, moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1], Home: [0, -n], End: [0, n] };
    if (!n || !(e.key in moves)) return;
    e.preventDefault();
    const [i, j] = this.cursor || [n - 1, 0], [di, dj] = moves[e.key];
    this.choose([Math.max(0, Math.min(n - 1, i + di)), Math.max(0, Math.min(n - 1, j + dj))]);
  }

  choose(cursor) {
    const same = (this.cursor === cursor) || (this.cursor && cursor && this.cursor[0] === cursor[0] && this.cursor[1] === cursor[1]);
    this.cursor = cursor;
    if (!same) this.draw();
  }

  /** What the line under the map says: the pointed cell, or the last row's three largest weights. */
  describe() {
    const { M, labels } = this, n = M.length;
    if (!n) return "no tokens";
    if (!this.cursor) return describeRow(M[n - 1], labels, n - 1, this.style);
    const [i, j] = this.cursor;
    const pair = `query ${i}:\u201c${labels[i]}\u201d, key ${j}:\u201c${labels[j]}\u201d`;
    return j <= i ? `${pair}: weight ${formatValue(M[i][j], this.style)}.` : `${pair}: none (a token attends only to itself and the tokens before it).`;
  }

  update(M, labels, what) {
    this.M = M; this.labels = labels; this.what = what;
    if (this.cursor && (this.cursor[0] >= M.length || this.cursor[1] >= M.length)) this.cursor = null;
    this.draw();
  }

  draw() {
    const { M, labels, what } = this, n = M.length, c = this.canvas, { side, edges: e } = mapGeometry(n);
    this.resize(side);
    this.ink = this.ink || getComputedStyle(this.box).color || "#000";  // read again after a theme switch (renderInduction)
    const ctx = this.ctx, lut = this.style.lut || [];
    ctx.clearRect(0, 0, side, side);
    ctx.fillStyle = "#dddddd";
    ctx.fillRect(GUTTER, GUTTER, side - GUTTER, side - GUTTER);
    for (let i = 0; i < n; i++) {
      const row = M[i];
      for (let j = 0; j <= i; j++) {
        ctx.fillStyle = lut[Math.max(0, Math.min(255, Math.round(255 * row[j])))] || "#000";
        ctx.fillRect(e[j], e[i], e[j + 1] - e[j], e[i + 1] - e[i]);
      }
    }
    ctx.fillStyle = this.ink;
    ctx.font = `${FONT}px sans-serif`;
    ctx.textBaseline = "middle";
    const step = labelStep(n), room = GUTTER - 2 * LABEL_GAP, shown = [];
    const [ci, cj] = this.cursor || [-1, -1];
    for (let i = 0; i < n; i++) {
      const rowLabel = i % step === 0 || i === ci, colLabel = i % step === 0 || i === cj;
      if (!rowLabel && !colLabel) continue;
      const t = fitted(ctx, labels[i], room), mid = (e[i] + e[i + 1]) / 2;
      if (rowLabel) {  // along the rows, right-aligned against the map
        ctx.textAlign = "right";
        ctx.fillText(t, GUTTER - LABEL_GAP, mid);
      }
      if (colLabel) {  // along the columns, turned to read upwards, ending at the map
        ctx.save();
        ctx.translate(mid, GUTTER - LABEL_GAP);
        ctx.rotate(-Math.PI / 2);
        ctx.textAlign = "left";
        ctx.fillText(t, 0, 0);
        ctx.restore();
      }
      shown.push(i);
    }
    if (this.cursor) {  // the pointed cell, outlined in the text colour
      ctx.strokeStyle = this.ink;
      ctx.lineWidth = 2;
      ctx.strokeRect(e[cj] + 1, e[ci] + 1, e[cj + 1] - e[cj] - 2, e[ci + 1] - e[ci] - 2);
    }
    c.attnlibValues = M;  // the numbers drawn (read by the browser tests)
    c.attnlibInk = this.ink;  // and the colour of the labels
    c.attnlibLabels = { font: FONT, step, shown };  // and which labels, at what size
    const text = this.describe();
    const tokens = labels.map((t, k) => `${k}:${t}`).join(", ");
    c.setAttribute("aria-label", `${what}: ${n} by ${n} attention weights, rows are queries, columns keys. ${describeRow0(M, labels, this.style)} Tokens: ${tokens || "none"}. Arrow keys move over the cells.`);
    if (this.detail.textContent !== text) this.detail.textContent = text;
  }
}

function describeRow0(M, labels, style) {
  return M.length ? describeRow(M[M.length - 1], labels, M.length - 1, style) : "no tokens";
}

function describeRow(row, labels, i, style) {
  const order = row.map((w, j) => [w, j]).sort((a, b) => b[0] - a[0]).slice(0, 3);
  return `The last token (${i}:${labels[i]}) attends to ` + order.map(([w, j]) => `${j}:${labels[j]} ${formatValue(w, style)}`).join(", ") + ".";
}

/** The predictions: one row per position (built once for the most tokens the model reads), rewritten in place. */
class PredictionTable {
  constructor(rows, style) {
    this.style = style;
    this.table = el("table", { class: "attnlib-view attnlib-predictions", "data-view": "predictions" });
    const head = el("tr", {}, el("th", { scope: "col", text: "position: token" }), el("th", { scope: "col", text: "predicted next" }), el("th", { scope: "col", text: "probability" }));
    const body = el("tbody");
    this.rows = [];
    for (let i = 0; i < rows; i++) {
      const th = el("th", { scope: "row" }), pred = el("td", { "data-j": 0 }), prob = el("td", { "data-j": 1 });
      const tr = el("tr", { "data-i": i, hidden: true }, th, pred, prob);
      this.rows.push({ tr, th, pred, prob, k: -2 });
      body.append(tr);
    }
    this.table.append(el("caption", { text: "next token predicted at each position" }), el("thead", {}, head), body);
  }

  update(r) {
    const style = this.style;
    this.rows.forEach((row, i) => {
      const on = i < r.ids.length;
      if (row.tr.hidden === on) row.tr.hidden = !on;
      if (!on) return;
      const head = `${i}:${r.labels[i]}`, pred = r.predicted_labels[i], prob = formatValue(r.probability[i], style);
      if (row.th.textContent !== head) row.th.textContent = head;
      if (row.pred.textContent !== pred) row.pred.textContent = pred;
      if (row.prob.textContent !== prob) row.prob.textContent = prob;
      const k = Math.max(0, Math.min(255, Math.round(255 * r.probability[i])));
      if (k !== row.k) { row.k = k; row.prob.style.background = style.lut[k]; row.prob.style.color = style.text[k]; }
    });
  }
}

function renderInduction({ model, el: host }) {
  const title = read(model, "title", "Induction heads on your own text");
  const L = focusedLayout(host, model, title, "induction", ["text", "mode"]);
  const data = read(model, "weights", {});
  const style = { ...L.style, decimals: 2 };
  const input = el("input", { type: "text", class: "attnlib-text", "aria-label": "your text", value: read(model, "text", ""), maxlength: MAX_TEXT, size: 28 });
  const select = el("select", { class: "attnlib-mode", "aria-label": "read the text as" },
    ...MODES.map((m) => el("option", { value: m, text: m })));
  select.value = read(model, "mode", "words");
  input.addEventListener("input", () => L.change({ text: input.value }, "text changed"));
  select.addEventListener("change", () => L.change({ mode: select.value }, `mode changed to ${select.value}`));
  L.controls.prepend(
    el("label", { class: "attnlib-slider-label" }, "your text ", input),
    el("label", { class: "attnlib-slider-label" }, "read as ", select),
  );
  const maps = [];
  for (let layer = 0; layer < 2; layer++) {
    for (let h = 0; h < (data.n_heads || 1); h++) {
      const what = `layer ${layer + 1}, head ${h + 1}`;  // counted from 1, as the trainer and the prose count
      const view = new MapView(`layer${layer + 1}-head${h}`, `${what}: attention (row = query, column = key)`, style);
      maps.push({ layer, h, what, view });
      L.views.append(view.box);
    }
  }
  const predictions = new PredictionTable(data.n_positions || 48, style);
  // what the model could not read, under the text box; what a "#k" prediction is, under the predictions
  const droppedNote = el("p", { class: "attnlib-induction-note", "data-note": "dropped", hidden: true });
  const predictedNote = el("p", { class: "attnlib-induction-note", "data-note": "predicted", hidden: true });
  const wrappedNoteP = el("p", { class: "attnlib-induction-note", "data-note": "wrapped", hidden: true });
  L.controls.append(droppedNote);
  L.views.append(el("div", { class: "attnlib-cell" }, predictions.table, predictedNote, wrappedNoteP));
  const note = (p, text) => { if (p.textContent !== text) p.textContent = text; if (p.hidden === !!text) p.hidden = !text; };

  function draw() {
    const text = read(model, "text", ""), mode = read(model, "mode", "words");
    if (input.value !== text) input.value = text;
    if (select.value !== mode) select.value = mode;
    const r = inductionView(data, text, mode);
    L.message.show(read(model, "error", "") || (r.ids.length ? (r.cut ? `the model reads ${data.n_positions} tokens; the last ${r.cut} were left out` : "") : `no ${mode} in the text`));
    for (const m of maps) m.view.update(r.ids.length ? r.layers[m.layer][m.h] : [], r.labels, m.what);
    predictions.update(r);
    note(droppedNote, r.dropped_note);
    note(predictedNote, r.predicted_note);
    note(wrappedNoteP, r.wrapped_note);
    const f = (v) => formatValue(v, L.style);
    const last = r.ids.length - 1;
    L.facts.textContent = r.ids.length
      ? `${r.ids.length} tokens. After \u201c${r.labels[last]}\u201d the model predicts \u201c${r.predicted_labels[last]}\u201d with probability ${f(r.probability[last])}.`
      : "No tokens.";
    L.say(null, L.facts.textContent);
  }
  draw();
  // the map labels are drawn in the text colour of the page's theme: draw again when the reader switches it
  const retheme = new MutationObserver(() => { for (const m of maps) m.view.ink = null; draw(); });
  const themeFilter = { attributes: true, attributeFilter: ["data-theme", "data-jp-theme-light"] };
  retheme.observe(document.documentElement, themeFilter);
  if (document.body) retheme.observe(document.body, themeFilter);
  return listen(model, ["text", "mode", "error"], draw, () => { retheme.disconnect(); L.status.dispose(); });
}

export function acceptLink(model, obj) {
  const values = {}, problems = [];
  if ("text" in obj) {
    if (typeof obj.text === "string" && obj.text.length <= MAX_TEXT) values.text = obj.text;
    else problems.push(`text must be a text of at most ${MAX_TEXT} characters`);
  }
  if ("mode" in obj) {
    const p = MODES.includes(obj.mode) ? "" : `mode must be one of ${MODES.join(", ")}`;
    if (p) problems.push(p); else values.mode = obj.mode;
  }
  return [values, problems];
}

export default { render: renderInduction };
