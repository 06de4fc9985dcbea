// The induction explorer (kind "induction", chapter 17): the two-layer attention-only model the chapter
// trained (its weights come from attnlib as data), run in the page on the reader's own text. The forward
// pass below is attnlib.induction.InductionModel.forward written again in JavaScript, held to it by the
// golden cases of attnlib/explorers/kinds/induction.py.
import { matmul } from "./compute.js";
import { el, MatrixView, read, focusedLayout, listen, formatValue, saveSoon } from "./ui.js";

const MODES = ["letters", "words"];
const MAX_TEXT = 2000;

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

/** Both layers' attention weights [layer][head][query][key] and the logits [position][token] for token ids. */
export function inductionForward(data, ids) {
  const n = ids.length, d = data.d_model, H = data.n_heads, dh = d / H, divisor = Math.sqrt(dh);
  let x = ids.map((t, i) => data.E[t].map((v, c) => v + data.P[i][c]));
  const weights = [];
  for (const layer of [1, 2]) {
    const Q = matmul(x, data[`W_Q${layer}`]), K = matmul(x, data[`W_K${layer}`]), V = matmul(x, data[`W_V${layer}`]);
    const concat = Array.from({ length: n }, () => new Array(d).fill(0));
    const heads = [];
    for (let h = 0; h < H; h++) {
      const c0 = h * dh, A = [];
      for (let i = 0; i < n; i++) {
        const s = new Array(n).fill(-Infinity);
        let top = -Infinity;
        for (let j = 0; j <= i; j++) {
          let dot = 0;
          for (let c = c0; c < c0 + dh; c++) dot += Q[i][c] * K[j][c];
          s[j] = dot / divisor;
          if (s[j] > top) top = s[j];
        }
        let sum = 0;
        const e = s.map((v) => { const w = v === -Infinity ? 0 : Math.exp(v - top); sum += w; return w; });
        const row = e.map((w) => w / sum);
        A.push(row);
        for (let j = 0; j <= i; j++) {
          const w = row[j];
          if (w === 0) continue;
          for (let c = c0; c < c0 + dh; c++) concat[i][c] += w * V[j][c];
        }
      }
      heads.push(A);
    }
    weights.push(heads);
    const out = matmul(concat, data[`W_O${layer}`]);
    x = x.map((row, i) => row.map((v, c) => v + out[i][c]));
  }
  const logits = matmul(x, data.W_U);
  return { weights, logits };
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
  if (!ids.length) return { ids, labels, cut, layers: [], predicted: [], probability: [], predicted_labels: [] };
  const f = inductionForward(data, ids);
  const predicted = [], probability = [];
  for (const z of f.logits) {
    let top = -Infinity, arg = 0;
    z.forEach((v, k) => { if (v > top) { top = v; arg = k; } });
    let sum = 0;
    for (const v of z) sum += Math.exp(v - top);
    predicted.push(arg);
    probability.push(1 / sum);
  }
  return { ids, labels, cut, layers: f.weights, predicted, probability, predicted_labels: predicted.map((p) => labelOf(p, ids, labels, mode)) };
}

function renderInduction({ model, el: host }) {
  const title = read(model, "title", "Induction heads on your own text");
  const L = focusedLayout(host, model, title, "induction", ["text", "mode"]);
  const data = read(model, "weights", {});
  const mapStyle = { ...L.style, decimals: 2 };
  const input = el("input", { type: "text", class: "attnlib-text", "aria-label": "your text", value: read(model, "text", ""), maxlength: MAX_TEXT, size: 28 });
  const select = el("select", { class: "attnlib-mode", "aria-label": "read the text as" },
    ...MODES.map((m) => el("option", { value: m, text: m })));
  select.value = read(model, "mode", "words");
  let lastChange = "initial setting";
  input.addEventListener("input", () => { lastChange = "text changed"; model.set("text", input.value); saveSoon(model); });
  select.addEventListener("change", () => { lastChange = `mode changed to ${select.value}`; model.set("mode", select.value); saveSoon(model); });
  L.controls.prepend(
    el("label", { class: "attnlib-slider-label" }, "your text ", input),
    el("label", { class: "attnlib-slider-label" }, "read as ", select),
  );
  const maps = [];
  for (let layer = 0; layer < 2; layer++) {
    for (let h = 0; h < (data.n_heads || 1); h++) {
      const view = new MatrixView(`layer${layer + 1}-head${h}`, mapStyle);
      maps.push({ layer, h, view });
      L.views.append(el("div", { class: "attnlib-cell" }, view.table));
    }
  }
  const predView = new MatrixView("predictions", mapStyle);
  L.views.append(el("div", { class: "attnlib-cell" }, predView.table));

  function draw() {
    const text = read(model, "text", ""), mode = read(model, "mode", "words");
    if (input.value !== text) input.value = text;
    if (select.value !== mode) select.value = mode;
    const r = inductionView(data, text, mode);
    L.message.show(read(model, "error", "") || (r.ids.length ? (r.cut ? `the model reads ${data.n_positions} tokens; the last ${r.cut} were left out` : "") : `no ${mode} in the text`));
    const labels = r.labels.map((t, i) => `${i}:${t}`);
    let changed = 0;
    for (const m of maps) {
      const M = r.ids.length ? r.layers[m.layer][m.h] : [];
      changed += m.view.update(M, { rows: labels, cols: labels, caption: `layer ${m.layer + 1}, head ${m.h}: attention weights`, vmin: 0, vmax: 1 });
    }
    const rows = labels.map((lab, i) => `${lab} \u2192 ${r.predicted_labels[i]}`);
    changed += predView.update(r.probability.map((p) => [p]), { rows, cols: ["probability"], caption: "next token predicted at each position", vmin: 0, vmax: 1 });
    const f = (v) => formatValue(v, L.style);
    const last = r.ids.length - 1;
    L.facts.textContent = r.ids.length
      ? `${r.ids.length} tokens. After \u201c${r.labels[last]}\u201d the model predicts \u201c${r.predicted_labels[last]}\u201d with probability ${f(r.probability[last])}.`
      : "No tokens.";
    L.status.say(`Last change: ${lastChange} \u2014 ${changed} value(s) changed.`, L.facts.textContent);
  }
  draw();
  return listen(model, ["text", "mode", "error"], draw, () => L.status.dispose());
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
