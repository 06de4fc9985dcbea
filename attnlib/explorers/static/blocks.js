// The long-sequence explorer (kind "blocks", chapter 15): the memory of the n x n score matrix against the
// working set of the blocked computation (both computed by attnlib in Python and passed in `table`), and
// the strip of scores that exists at a chosen step of the blocked loop.
import { el, read, choiceSetting, slider, focusedLayout, listen } from "./dom.js";
import { checkChoice } from "./link.js";

/** Step `step` (1-based) of the blocked loop: key columns [k0, k1) and query rows [r0, r1), as attnlib.blocked.key_block. */
export function keyBlock(n, blockSize, step, causal) {
  const k0 = (step - 1) * blockSize;
  return { keys: [k0, Math.min(k0 + blockSize, n)], rows: [causal ? k0 : 0, n] };
}

/** How many blocks of `blockSize` keys cover n keys (attnlib.blocked.block_count). */
export function blockCount(n, blockSize) {
  return Math.ceil(n / blockSize);
}

const SIZE = 220;
const MAX_STAIRS = 200;

/** The region of the blocks before `step` as an SVG path: a rectangle, or a staircase with a causal mask. */
function donePath(n, blockSize, step, causal, scale) {
  const k0 = (step - 1) * blockSize;
  if (k0 <= 0) return "";
  if (!causal) return `M0 0H${k0 * scale}V${n * scale}H0Z`;
  let d = "M0 0";
  if (step - 1 <= MAX_STAIRS) {
    for (let t = 0; t < step - 1; t++) d += `H${(t + 1) * blockSize * scale}V${(t + 1) * blockSize * scale}`;
    d += `V${n * scale}`;
  } else {
    d += `H${blockSize * scale}L${k0 * scale} ${(k0 - blockSize) * scale}V${n * scale}`;
  }
  return `${d}H0Z`;
}

/** The n x n score matrix as an SVG: the current strip coloured, the blocks before it grey, the diagonal if causal. */
function blockPicture(style) {
  const svg = el("svg", { width: SIZE + 40, height: SIZE + 40, viewBox: `-30 -10 ${SIZE + 40} ${SIZE + 40}`, role: "img", class: "attnlib-blocks-picture" });
  const title = el("title", {});
  const frame = el("rect", { x: 0, y: 0, width: SIZE, height: SIZE, fill: "white", stroke: "black" });
  const done = el("path", { d: "", fill: "#dddddd", stroke: "#555555", "stroke-width": 0.5 });
  const current = el("rect", { x: 0, y: 0, width: 1, height: SIZE, fill: style.accent || "#0072B2" });
  const diagonal = el("line", { x1: 0, y1: 0, x2: SIZE, y2: SIZE, stroke: "black", "stroke-dasharray": "4 3" });
  const keyLabel = el("text", { x: SIZE / 2, y: SIZE + 22, "text-anchor": "middle", "font-size": 12, text: "keys" });
  const queryLabel = el("text", { x: -12, y: SIZE / 2, "text-anchor": "middle", "font-size": 12, transform: `rotate(-90 -12 ${SIZE / 2})`, text: "queries" });
  svg.append(title, frame, done, current, diagonal, keyLabel, queryLabel);
  return {
    el: svg,
    /** Draw `step` of `steps`; returns the sentence that says where the strip is. */
    update(n, b, step, steps, causal) {
      const blk = keyBlock(n, b, step, causal);
      const scale = SIZE / n;
      current.setAttribute("x", blk.keys[0] * scale);
      current.setAttribute("width", Math.max(1, (blk.keys[1] - blk.keys[0]) * scale));
      current.setAttribute("y", blk.rows[0] * scale);
      current.setAttribute("height", Math.max(1, (blk.rows[1] - blk.rows[0]) * scale));
      done.setAttribute("d", donePath(n, b, step, causal, scale));
      diagonal.style.display = causal ? "" : "none";
      const where = `step ${step} of ${steps}: keys ${blk.keys[0] + 1} to ${blk.keys[1]}, queries ${blk.rows[0] + 1} to ${blk.rows[1]}`;
      title.textContent = `The ${n} x ${n} score matrix at ${where}; earlier blocks are grey (already folded into the running sums).`;
      return where;
    },
  };
}

function renderBlocks({ model, el: host }) {
  const title = read(model, "title", "Dense against blocked: memory and the scores that exist");
  const L = focusedLayout(host, model, title, "blocks", ["n", "block_size", "dtype", "causal", "step"]);
  const style = L.style;
  // one change, and the step moved back to the last block when the new setting has fewer blocks
  const change = (values, what) => {
    const count = blockCount(values.n ?? read(model, "n", 4096), values.block_size ?? read(model, "block_size", 128));
    L.change(read(model, "step", 1) > count ? { ...values, step: count } : values, what);
  };
  const nControl = choiceSetting(L, {
    key: "n", label: "sequence length n", what: "n", choices: read(model, "n_choices", [4096]), fallback: 4096, cls: "attnlib-n",
    format: (v) => v.toLocaleString("en-US"), change,
  });
  const bControl = choiceSetting(L, {
    key: "block_size", label: "block size (keys per step)", what: "block size", choices: read(model, "block_choices", [128]), fallback: 128, cls: "attnlib-block", change,
  });
  const dControl = choiceSetting(L, {
    key: "dtype", label: "number format", choices: read(model, "dtypes", ["float32"]), fallback: "float32", cls: "attnlib-dtype", change,
  });
  const causalBox = el("input", { type: "checkbox", class: "attnlib-causal", "aria-label": "causal mask" });
  causalBox.addEventListener("change", () => change({ causal: causalBox.checked }, `causal mask turned ${causalBox.checked ? "on" : "off"}`));
  const causalLabel = el("label", { class: "attnlib-checkbox" }, causalBox, " causal mask (skip the rows a block cannot reach)");
  const stepControl = slider({
    label: "step", name: "step", value: 1, min: 1, max: 1, step: 1, digits: 0,
    onInput: (v) => change({ step: v }, `step moved to ${v}`),
  });
  stepControl.input.classList.add("attnlib-step");
  L.controls.prepend(nControl.el, bControl.el, dControl.el, causalLabel, stepControl.el);

  const picture = blockPicture(style);
  const memory = el("table", { class: "attnlib-view", "data-view": "memory" });
  L.show(picture.el, memory);

  function draw() {
    const n = read(model, "n", 4096), b = read(model, "block_size", 128), dtype = read(model, "dtype", "float32");
    const causal = Boolean(read(model, "causal", false));
    nControl.set(n); bControl.set(b); dControl.set(dtype);
    if (causalBox.checked !== causal) causalBox.checked = causal;
    const row = read(model, "table", {})[`${n}/${b}/${dtype}`];
    L.message.show(read(model, "error", "") || (row ? "" : `no memory figures for n = ${n}, block size ${b}, ${dtype}`));
    if (!row) return;
    const steps = blockCount(n, b);
    const step = Math.min(Math.max(1, read(model, "step", 1)), steps);
    stepControl.input.max = String(steps);
    stepControl.set(step);
    const where = picture.update(n, b, step, steps, causal);
    memory.replaceChildren(
      el("caption", { text: `memory of one head, ${dtype}, d_k = ${read(model, "d_k", 64)}` }),
      el("tbody", {},
        el("tr", {}, el("th", { scope: "row", text: "n \u00d7 n score matrix" }), el("td", { "data-j": 0, text: row.dense })),
        el("tr", {}, el("th", { scope: "row", text: `blocked working set (${b} keys per step)` }), el("td", { "data-j": 0, text: row.blocked })),
        el("tr", {}, el("th", { scope: "row", text: "ratio" }), el("td", { "data-j": 0, text: `${row.ratio}\u00d7 less` }))),
    );
    L.facts.textContent = `The dense computation holds all ${n.toLocaleString("en-US")}\u00b2 scores at once (${row.dense}); `
      + `the blocked one holds one strip of at most ${Math.min(b, n)} key columns (${row.blocked} in all). Shown: ${where}.`;
    L.say(null, `Score matrix ${row.dense}, blocked working set ${row.blocked}; ${where}.`);
  }
  draw();
  return listen(model, ["n", "block_size", "dtype", "causal", "step", "table", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const problems = [];
  const values = {};
  const choices = { n: read(model, "n_choices", []), block_size: read(model, "block_choices", []), dtype: read(model, "dtypes", []) };
  for (const [key, list] of Object.entries(choices)) {
    if (!(key in obj)) continue;
    const p = checkChoice(key, obj[key], list);
    if (p) problems.push(p); else values[key] = obj[key];
  }
  if ("causal" in obj) {
    if (typeof obj.causal === "boolean") values.causal = obj.causal; else problems.push("causal must be true or false");
  }
  if ("step" in obj) {
    const count = blockCount(values.n ?? read(model, "n", 4096), values.block_size ?? read(model, "block_size", 128));
    if (Number.isInteger(obj.step) && obj.step >= 1 && obj.step <= count) values.step = obj.step;
    else problems.push(`step must be a whole number from 1 to ${count}`);
  }
  return [values, problems];
}

export default { render: renderBlocks };
