// Pure math of the explorers' views: no DOM, no state. Held to attnlib by tests/explorers/test_explorer_golden.py.
// Matrices are arrays of rows (arrays of numbers).

export const NEG_INF = -Infinity;

export function matmul(A, B) {
  const n = A.length, m = B.length ? B[0].length : 0, k = B.length;
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const row = new Array(m).fill(0), a = A[i];
    for (let j = 0; j < m; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += a[t] * B[t][j];
      row[j] = s;
    }
    out[i] = row;
  }
  return out;
}

export function transpose(A) {
  if (!A.length) return [];
  return A[0].map((_, j) => A.map((row) => row[j]));
}

/** Projection X W of token rows. */
export const project = (X, W) => matmul(X, W);

/** Scores Q K^T (rows: queries, columns: keys). */
export const scores = (Q, K) => matmul(Q, transpose(K));

/** What the scores are divided by: sqrt(d_k), or 1 for "no scaling" (d_k = 0). */
export function divisorFor(dk) {
  return dk ? Math.sqrt(dk) : 1;
}

export function scale(S, divisor) {
  return S.map((row) => row.map((v) => v / divisor));
}

/** -inf where the mask forbids attending (cells[i][j] false). */
export function applyMask(S, cells) {
  return S.map((row, i) => row.map((v, j) => (cells && cells[i] && cells[i][j] === false ? NEG_INF : v)));
}

/** Row-wise softmax with the row maximum subtracted; a row that is all -inf gives null (undefined). */
export function softmaxRows(S) {
  return S.map((row) => {
    let top = NEG_INF;
    for (const v of row) if (v > top) top = v;
    if (top === NEG_INF) return null;
    const e = row.map((v) => Math.exp(v - top));
    let sum = 0;
    for (const v of e) sum += v;
    return e.map((v) => v / sum);
  });
}

/** Outputs weights V; a null weight row stays null. */
export function outputs(weights, V) {
  const d = V.length ? V[0].length : 0;
  return weights.map((w) => {
    if (w === null) return null;
    const row = new Array(d).fill(0);
    for (let j = 0; j < d; j++) {
      let s = 0;
      for (let t = 0; t < w.length; t++) s += w[t] * V[t][j];
      row[j] = s;
    }
    return row;
  });
}

export function rowSums(M) {
  return M.map((row) => (row === null ? null : row.reduce((a, b) => a + b, 0)));
}

/** The message shown instead of numbers for a query row with no allowed key (the same text as attnlib.explorers). */
export function noKeyMessage(token) {
  return `${token} may attend to no key, so its softmax is undefined: no weights and no output for this row.`;
}

export function causalCells(n) {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => j <= i));
}

export function allCells(n) {
  return Array.from({ length: n }, () => new Array(n).fill(true));
}

/** The effective mask pattern of a mode: all true, lower-triangular, or the custom grid. */
export function maskPattern(mode, cells, n) {
  if (mode === "causal") return causalCells(n);
  if (mode === "custom") return cells;
  return allCells(n);
}

function finiteMatrix(M) {
  return M.every((row) => row === null || row.every((v) => Number.isFinite(v)));
}

function firstNonFinite(named) {
  for (const [name, M] of named) if (!finiteMatrix(M)) return name;
  return null;
}

/** The message for values that cannot be shown (overflow to infinity or NaN). */
export function overflowMessage(what) {
  return `The ${what} overflow (a value is infinite or not a number), so nothing can be shown for this setting.`;
}

/**
 * Every view of self-attention for one setting: X, W_Q, W_K, W_V, dk (0 = no scaling), mask cells, tokens.
 * Returns {Q, K, V, scores, divisor, scaled, weights, output, sums, messages: {row: text}, error}.
 */
export function attentionViews({ X, W_Q, W_K, W_V, dk, cells, tokens }) {
  const Q = project(X, W_Q), K = project(X, W_K), V = project(X, W_V);
  const S = scores(Q, K);
  const divisor = divisorFor(dk);
  const scaled = applyMask(scale(S, divisor), cells);
  const bad = firstNonFinite([["queries Q", Q], ["keys K", K], ["values V", V], ["scores", S]]);
  if (bad) return { Q, K, V, scores: S, divisor, scaled, weights: null, output: null, sums: null, messages: {}, error: overflowMessage(bad) };
  const weights = softmaxRows(scaled);
  const messages = {};
  weights.forEach((w, i) => {
    if (w === null) messages[i] = noKeyMessage(tokens[i]);
  });
  const output = outputs(weights, V);
  if (!finiteMatrix(output)) {
    return { Q, K, V, scores: S, divisor, scaled, weights: null, output: null, sums: null, messages: {}, error: overflowMessage("outputs") };
  }
  return { Q, K, V, scores: S, divisor, scaled, weights, output, sums: rowSums(weights), messages, error: "" };
}

/** Attention of Q, K, V with a divisor and, if given, mask cells (-inf where false): scores, scaled, weights, output. */
export function attend(Q, K, V, divisor, cells) {
  const S = scores(Q, K);
  const scaled = cells ? applyMask(scale(S, divisor), cells) : scale(S, divisor);
  const weights = softmaxRows(scaled);
  return { scores: S, scaled, weights, output: outputs(weights, V) };
}

/** Columns from..to-1 of every row. */
export function columns(M, from, to) {
  return M.map((row) => row.slice(from, to));
}

/** Multi-head split: head r takes columns r*d_head..(r+1)*d_head of Q, K, V; scaled by sqrt(d_head); mask cells optional. */
export function multiHead(X, W_Q, W_K, W_V, W_O, nHeads, cells) {
  const d = X[0].length, dHead = d / nHeads;
  const Q = project(X, W_Q), K = project(X, W_K), V = project(X, W_V);
  const heads = [];
  const concat = X.map(() => []);
  for (let r = 0; r < nHeads; r++) {
    const c0 = r * dHead, c1 = (r + 1) * dHead;
    const h = attend(columns(Q, c0, c1), columns(K, c0, c1), columns(V, c0, c1), Math.sqrt(dHead), cells);
    heads.push(h.weights);
    h.output.forEach((row, i) => concat[i].push(...row));
  }
  return { output: matmul(concat, W_O), weights: heads, dHead };
}

/** The scaling explorer: one query's raw scores against the keys, divided by sqrt(d_k), and both softmaxes. */
export function scalingViews(rawScores, dk) {
  const divisor = Math.sqrt(dk);
  const scaledScores = rawScores.map((v) => v / divisor);
  const [wRaw, wScaled] = softmaxRows([rawScores, scaledScores]);
  return { divisor, raw: rawScores, scaled: scaledScores, weightsRaw: wRaw, weightsScaled: wScaled };
}

/** The scale-comparison explorer: c X attending to itself, unscaled and divided by sqrt(d). */
export function scaleComparisonViews(X, length) {
  const Xc = X.map((row) => row.map((v) => v * length));
  const d = X[0].length;
  const raw = attend(Xc, Xc, Xc, 1);
  const scaled = attend(Xc, Xc, Xc, Math.sqrt(d));
  return { X: Xc, divisor: Math.sqrt(d), raw, scaled };
}

/** The positional explorer: the dot product of PE(t) with every row of the table. */
export function positionalViews(table, position) {
  const pe = table[position];
  return { pe, similarity: table.map((row) => row.reduce((s, v, j) => s + v * pe[j], 0)) };
}

/** Round to the slider grid (multiples of step from min), clamped to [min, max]. */
export function snap(value, { min, max, step }) {
  const k = Math.round((value - min) / step);
  const v = min + k * step;
  return Math.min(max, Math.max(min, Number(v.toFixed(10))));
}

/** The training explorer: the recorded state at `step` (null if that step was not recorded). Python computed
 * every number (attnlib.training.explorer_steps); the page only picks the step. */
export function trainingView({ steps, losses, previous, weights, bilinear }, step) {
  const k = steps.indexOf(step);
  if (k < 0) return null;
  return { step, loss: losses[k], previous: previous[k], weights: weights[k], bilinear: bilinear[k] };
}
