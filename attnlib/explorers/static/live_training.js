// The live training explorer (kind "live_training", chapter 17): the attention-only model of attnlib.induction
// trained in the page, forward, backward and Adam in float64. The trainer's functions use no import, so that a Web
// Worker runs the same text (trainerSource, handed to it as a blob made in the page: nothing is fetched).
// Held to attnlib.induction.train_induction by tests/explorers/test_live_training_golden.py (every step's loss, from
// the same attnlib.induction.PortableRandom seed) and to live_views by the kind's golden cases.
import { el, MatrixView, read, choiceSetting, focusedLayout, listen, saveSoon } from "./dom.js";
import { formatValue } from "./format.js";
import { checkChoice } from "./link.js";


function mix32(z) {
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** attnlib.induction.PortableRandom for a seed below 2**32: xoshiro128** seeded by splitmix32. */
class PortableRandom {
  constructor(seed) {
    let h = mix32(((0 ^ (seed >>> 0)) + 0x9e3779b9) >>> 0);
    this.s = new Uint32Array(4);
    for (let i = 0; i < 4; i++) {
      h = (h + 0x9e3779b9) >>> 0;
      this.s[i] = mix32(h);
    }
  }
  uint32() {
    const s = this.s;
    const x = Math.imul(s[1], 5);
    const r = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 11) | (s[3] >>> 21);
    return r;
  }
  random() {
    const a = this.uint32() >>> 5, b = this.uint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }
  below(n) {
    return Math.floor(this.random() * n);
  }
  normal() {
    const u1 = 1 - this.random(), u2 = this.random();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }
  permutation(n) {
    const out = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = this.below(i + 1);
      const t = out[i];
      out[i] = out[j];
      out[j] = t;
    }
    return out;
  }
  halfLength(low, high) {
    const cumulative = [];
    let acc = 0;
    for (let T = low; T <= high; T++) {
      acc += 1 / T;
      cumulative.push(acc);
    }
    const target = this.random() * acc;
    for (let k = 0; k < cumulative.length; k++) if (target < cumulative[k]) return low + k;
    return high;
  }
}

/** attnlib.induction.repeated_tokens from a PortableRandom: half lengths, then first halves, then starts. */
function drawRepeats(rng, nSequences, vocab, low, high, nPositions) {
  const halves = [];
  for (let k = 0; k < nSequences; k++) halves.push(rng.halfLength(low, high));
  const tokens = halves.map((h) => {
    const first = rng.permutation(vocab).slice(0, h);
    return first.concat(first);
  });
  const starts = halves.map((h) => (nPositions == null ? 0 : rng.below(nPositions - 2 * h + 1)));
  return { tokens, halves, starts };
}

/** The parameters' names and shapes in attnlib.induction.InductionModel.shapes order. */
function shapesOf(m) {
  const d = m.dModel, out = [["E", m.vocab, d], ["P", m.nPositions, d]];
  for (let l = 1; l <= m.nLayers; l++) for (const w of ["W_Q", "W_K", "W_V", "W_O"]) out.push([w + l, d, d]);
  out.push(["W_U", d, m.vocab]);
  return out;
}

/** InductionModel.init(PortableRandom(seed)): normal entries of standard deviation 1 / sqrt(d_model). */
function initParams(m, rng) {
  const std = 1 / Math.sqrt(m.dModel), p = {};
  for (const [name, r, c] of shapesOf(m)) {
    const a = new Float64Array(r * c);
    for (let i = 0; i < a.length; i++) a[i] = std * rng.normal();
    p[name] = a;
  }
  return p;
}

// C (n x c) = A (n x k) B (k x c), row-major flat arrays; acc adds to C.
function mm(A, B, n, k, c, C, acc) {
  if (!acc) C.fill(0, 0, n * c);
  for (let i = 0; i < n; i++) {
    const ci = i * c;
    for (let t = 0; t < k; t++) {
      const a = A[i * k + t];
      if (a === 0) continue;
      const bt = t * c;
      for (let j = 0; j < c; j++) C[ci + j] += a * B[bt + j];
    }
  }
  return C;
}
// C (n x c) = A (n x k) B^T with B (c x k); acc adds.
function mmT(A, B, n, k, c, C, acc) {
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < c; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += A[i * k + t] * B[j * k + t];
      C[i * c + j] = acc ? C[i * c + j] + s : s;
    }
  }
  return C;
}
// C (k x c) += A^T B with A (n x k), B (n x c).
function mTm(A, B, n, k, c, C) {
  for (let i = 0; i < n; i++) {
    for (let t = 0; t < k; t++) {
      const a = A[i * k + t];
      if (a === 0) continue;
      const ct = t * c, bi = i * c;
      for (let j = 0; j < c; j++) C[ct + j] += a * B[bi + j];
    }
  }
  return C;
}

/** The forward pass of one sequence: residual streams, every layer's Q, K, V, weights and concat, the logits. */
function forward(m, p, tokens, start) {
  const n = tokens.length, D = m.dModel, H = m.nHeads, dh = D / H, div = Math.sqrt(dh);
  let x = new Float64Array(n * D);
  for (let i = 0; i < n; i++) {
    const e = tokens[i] * D, q = (start + i) * D;
    for (let j = 0; j < D; j++) x[i * D + j] = p.E[e + j] + p.P[q + j];
  }
  const layers = [], xs = [x];
  for (let l = 1; l <= m.nLayers; l++) {
    const Q = mm(x, p["W_Q" + l], n, D, D, new Float64Array(n * D));
    const K = mm(x, p["W_K" + l], n, D, D, new Float64Array(n * D));
    const V = mm(x, p["W_V" + l], n, D, D, new Float64Array(n * D));
    const A = new Float64Array(H * n * n), concat = new Float64Array(n * D);
    for (let h = 0; h < H; h++) {
      const off = h * dh, base = h * n * n;
      for (let i = 0; i < n; i++) {
        let top = -Infinity;
        for (let j = 0; j <= i; j++) {
          let s = 0;
          for (let t = 0; t < dh; t++) s += Q[i * D + off + t] * K[j * D + off + t];
          s /= div;
          A[base + i * n + j] = s;
          if (s > top) top = s;
        }
        let sum = 0;
        for (let j = 0; j <= i; j++) {
          const e = Math.exp(A[base + i * n + j] - top);
          A[base + i * n + j] = e;
          sum += e;
        }
        for (let j = 0; j <= i; j++) A[base + i * n + j] /= sum;
        for (let j = 0; j <= i; j++) {
          const a = A[base + i * n + j];
          for (let t = 0; t < dh; t++) concat[i * D + off + t] += a * V[j * D + off + t];
        }
      }
    }
    const out = mm(concat, p["W_O" + l], n, D, D, new Float64Array(n * D));
    const next = new Float64Array(n * D);
    for (let i = 0; i < n * D; i++) next[i] = x[i] + out[i];
    layers.push({ Q, K, V, A, concat });
    x = next;
    xs.push(x);
  }
  const logits = mm(x, p.W_U, n, D, m.vocab, new Float64Array(n * m.vocab));
  return { n, xs, layers, logits };
}

/** Cross-entropy of every row with a next token (rows 0 .. n-2) and its gradient, scaled by 1 / total, into dlogits. */
function crossEntropy(logits, tokens, Vn, scale, dlogits) {
  const n = tokens.length, losses = new Float64Array(n);
  for (let i = 0; i < n - 1; i++) {
    const r = i * Vn;
    let top = -Infinity;
    for (let v = 0; v < Vn; v++) if (logits[r + v] > top) top = logits[r + v];
    let sum = 0;
    for (let v = 0; v < Vn; v++) sum += Math.exp(logits[r + v] - top);
    const logNorm = Math.log(sum);
    losses[i] = logNorm - (logits[r + tokens[i + 1]] - top);
    if (dlogits) {
      for (let v = 0; v < Vn; v++) dlogits[r + v] = Math.exp(logits[r + v] - top - logNorm) * scale;
      dlogits[r + tokens[i + 1]] -= scale;
    }
  }
  return losses;
}

/** Adds one sequence's gradients (of the loss scaled by 1 / total) to g. */
function backward(m, p, f, tokens, start, dlogits, g) {
  const n = f.n, D = m.dModel, H = m.nHeads, dh = D / H, div = Math.sqrt(dh);
  mTm(f.xs[m.nLayers], dlogits, n, D, m.vocab, g.W_U);
  let dx = mmT(dlogits, p.W_U, n, m.vocab, D, new Float64Array(n * D));
  for (let l = m.nLayers; l >= 1; l--) {
    const { Q, K, V, A, concat } = f.layers[l - 1], x = f.xs[l - 1];
    mTm(concat, dx, n, D, D, g["W_O" + l]);
    const dc = mmT(dx, p["W_O" + l], n, D, D, new Float64Array(n * D));
    const dQ = new Float64Array(n * D), dK = new Float64Array(n * D), dV = new Float64Array(n * D);
    const dA = new Float64Array(n);
    for (let h = 0; h < H; h++) {
      const off = h * dh, base = h * n * n;
      for (let i = 0; i < n; i++) {
        let inner = 0;
        for (let j = 0; j <= i; j++) {
          let s = 0;
          for (let t = 0; t < dh; t++) s += dc[i * D + off + t] * V[j * D + off + t];
          dA[j] = s;
          inner += s * A[base + i * n + j];
        }
        for (let j = 0; j <= i; j++) {
          const a = A[base + i * n + j];
          for (let t = 0; t < dh; t++) dV[j * D + off + t] += a * dc[i * D + off + t];
          const ds = (a * (dA[j] - inner)) / div;
          if (ds === 0) continue;
          for (let t = 0; t < dh; t++) {
            dQ[i * D + off + t] += ds * K[j * D + off + t];
            dK[j * D + off + t] += ds * Q[i * D + off + t];
          }
        }
      }
    }
    mTm(x, dQ, n, D, D, g["W_Q" + l]);
    mTm(x, dK, n, D, D, g["W_K" + l]);
    mTm(x, dV, n, D, D, g["W_V" + l]);
    const dxIn = mmT(dQ, p["W_Q" + l], n, D, D, new Float64Array(n * D));
    mmT(dK, p["W_K" + l], n, D, D, dxIn, true);
    mmT(dV, p["W_V" + l], n, D, D, dxIn, true);
    for (let i = 0; i < n * D; i++) dx[i] += dxIn[i];
  }
  for (let i = 0; i < n; i++) {
    const e = tokens[i] * D, q = (start + i) * D;
    for (let j = 0; j < D; j++) {
      g.E[e + j] += dx[i * D + j];
      g.P[q + j] += dx[i * D + j];
    }
  }
}

/** Mean loss, first- and second-half loss and gradients of a batch (attnlib's train_induction, one step). */
function lossAndGradients(m, p, batch) {
  const g = {};
  for (const [name, r, c] of shapesOf(m)) g[name] = new Float64Array(r * c);
  let total = 0;
  for (const t of batch.tokens) total += t.length - 1;
  let sum = 0, firstSum = 0, firstN = 0, secondSum = 0, secondN = 0;
  for (let k = 0; k < batch.tokens.length; k++) {
    const tokens = batch.tokens[k], start = batch.starts[k], T = batch.halves[k];
    const f = forward(m, p, tokens, start);
    const dlogits = new Float64Array(f.n * m.vocab);
    const losses = crossEntropy(f.logits, tokens, m.vocab, 1 / total, dlogits);
    for (let i = 0; i < tokens.length - 1; i++) {
      sum += losses[i];
      if (i < T) {
        firstSum += losses[i];
        firstN++;
      } else if (i <= 2 * T - 2) {
        secondSum += losses[i];
        secondN++;
      }
    }
    backward(m, p, f, tokens, start, dlogits, g);
  }
  return { loss: sum / total, first: firstSum / firstN, second: secondSum / secondN, grads: g };
}

/** attnlib.training.Adam with its defaults (beta1 0.9, beta2 0.999, eps 1e-8), in place. */
function adamStep(state, p, g, lr) {
  const b1 = 0.9, b2 = 0.999, eps = 1e-8;
  state.t += 1;
  const c1 = 1 - b1 ** state.t, c2 = 1 - b2 ** state.t;
  for (const name of Object.keys(p)) {
    if (!state.m[name]) {
      state.m[name] = new Float64Array(p[name].length);
      state.v[name] = new Float64Array(p[name].length);
    }
    const w = p[name], gr = g[name], mm1 = state.m[name], vv = state.v[name];
    for (let i = 0; i < w.length; i++) {
      mm1[i] = b1 * mm1[i] + (1 - b1) * gr[i];
      vv[i] = b2 * vv[i] + (1 - b2) * gr[i] * gr[i];
      const mHat = mm1[i] / c1, vHat = vv[i] / c2;
      w[i] = w[i] - (lr * mHat) / (Math.sqrt(vHat) + eps);
    }
  }
}

/**
 * A training run in the order of attnlib.induction.train_induction: params from PortableRandom(seed), batches
 * from another PortableRandom(seed); the learning rate falls linearly from lr to finalLr over nSteps.
 */
class Trainer {
  constructor(settings) {
    const s = settings;
    this.m = { vocab: s.vocab, nPositions: s.nPositions, dModel: s.dModel, nHeads: s.nHeads, nLayers: s.nLayers };
    this.s = s;
    this.p = initParams(this.m, new PortableRandom(s.seed));
    this.rng = new PortableRandom(s.seed);
    this.adam = { t: 0, m: {}, v: {} };
    this.step = 0;
    this.losses = [];
    this.first = [];
    this.second = [];
  }
  learningRate(step) {
    const s = this.s, end = s.finalLr == null ? s.lr : s.finalLr;
    const done = step / Math.max(s.nSteps - 1, 1);
    return s.lr * (1 - done) + end * done;
  }
  trainStep() {
    const s = this.s;
    const batch = drawRepeats(this.rng, s.nSequences, s.vocab, s.halfLengths[0], s.halfLengths[1], s.nPositions);
    const r = lossAndGradients(this.m, this.p, batch);
    this.losses.push(r.loss);
    this.first.push(r.first);
    this.second.push(r.second);
    adamStep(this.adam, this.p, r.grads, this.learningRate(Math.min(this.step, Math.max(s.nSteps - 1, 0))));
    this.step += 1;
    return r;
  }
}

/** The letter of a token id (attnlib.induction.token_letters): a to z, then #26, #27, ... */
function letter(t) {
  return t < 26 ? String.fromCharCode(97 + t) : `#${t}`;
}

/** attnlib.induction.drop_step(second, ln vocab, ratio 0.5, window 20): the first step whose running mean is below half. */
function dropStep(second, reference, window = 20) {
  let sum = 0;
  for (let s = 0; s < second.length; s++) {
    sum += second[s];
    if (s >= window) sum -= second[s - window];
    if (s >= window - 1 && sum / window < 0.5 * reference) return s;
  }
  return -1;
}

/**
 * What the page shows of a trainer (attnlib.explorers.kinds.live_training.live_views): held-out losses of both halves,
 * layer 1's previous-token and the last layer's prefix-matching score of every head, the copying score of the last
 * layer's head 1, every layer's attention maps on one sequence, the step of the drop.
 */
function liveViews(t, data, curves) {
  const m = t.m, H = m.nHeads, L = m.nLayers;
  let firstSum = 0, firstN = 0, secondSum = 0, secondN = 0;
  const prev = new Array(H).fill(0), prefix = new Array(H).fill(0);
  let prevN = 0, prefixN = 0;
  data.probe.tokens.forEach((tokens, k) => {
    const T = data.probe.halves[k], n = tokens.length;
    const f = forward(m, t.p, tokens, 0);
    const losses = crossEntropy(f.logits, tokens, m.vocab, 1, null);
    for (let i = 0; i < n - 1; i++) {
      if (i < T) { firstSum += losses[i]; firstN++; } else if (i <= 2 * T - 2) { secondSum += losses[i]; secondN++; }
    }
    const A1 = f.layers[0].A, AL = f.layers[L - 1].A;
    for (let h = 0; h < H; h++) {
      for (let i = 1; i < n; i++) prev[h] += A1[h * n * n + i * n + i - 1];
      for (let i = T; i < n; i++) prefix[h] += AL[h * n * n + i * n + i - T + 1];
    }
    prevN += n - 1;
    prefixN += n - T;
  });
  // copying: E W_V W_O W_U of the last layer's head 1 (its columns of W_V, its rows of W_O)
  const D = m.dModel, dh = D / H, V = m.vocab;
  const WV = t.p["W_V" + L], WO = t.p["W_O" + L];
  const ov = new Float64Array(D * D);
  for (let i = 0; i < D; i++) for (let j = 0; j < D; j++) {
    let s = 0;
    for (let c = 0; c < dh; c++) s += WV[i * D + c] * WO[c * D + j];
    ov[i * D + j] = s;
  }
  const EOV = mm(t.p.E, ov, V, D, D, new Float64Array(V * D));
  const C = mm(EOV, t.p.W_U, V, D, V, new Float64Array(V * V));
  let wins = 0;
  for (let a = 0; a < V; a++) {
    let off = -Infinity;
    for (let b = 0; b < V; b++) if (b !== a && C[a * V + b] > off) off = C[a * V + b];
    if (C[a * V + a] > off) wins++;
  }
  const mapTokens = data.map.tokens;
  const fm = forward(m, t.p, mapTokens, 0), n = mapTokens.length;
  const maps = fm.layers.map((layer) => Array.from({ length: H }, (_, h) =>
    Array.from({ length: n }, (_, i) => Array.from(layer.A.subarray(h * n * n + i * n, h * n * n + (i + 1) * n)))));
  const out = {
    step: t.step, first: firstSum / firstN, second: secondSum / secondN,
    previous: prev.map((v) => v / prevN), prefix: prefix.map((v) => v / prefixN), copying: wins / V,
    maps, tokens: mapTokens.map(letter), drop: dropStep(t.second, Math.log(V)),
  };
  if (curves) Object.assign(out, { losses: t.losses.slice(), first_curve: t.first.slice(), second_curve: t.second.slice() });
  return out;
}

/** A trainer for the explorer's settings on the page's data (the learning rate falls to data.final_lr over data.n_steps). */
function trainerFor(data, settings) {
  return new Trainer({
    vocab: data.vocab, nPositions: data.n_positions, halfLengths: data.half_lengths, nSequences: data.n_sequences,
    dModel: settings.d_model, nHeads: settings.n_heads, nLayers: settings.n_layers, seed: settings.seed,
    lr: settings.lr, finalLr: data.final_lr, nSteps: data.n_steps,
  });
}


/** Everything the trainer is made of, in an order in which each part only uses earlier ones (or later functions). */
const PARTS = [mix32, PortableRandom, drawRepeats, shapesOf, initParams, mm, mmT, mTm, forward, crossEntropy, backward,
  lossAndGradients, adamStep, Trainer, letter, dropStep, liveViews, trainerFor];

/** The trainer's source text, for a worker: every part's own text (none uses an import). */
export function trainerSource() {
  return PARTS.map(String).join("\n");
}

/** The trainer's math (the worker runs the same functions' text). */
export const kit = { PortableRandom, drawRepeats, shapesOf, initParams, forward, crossEntropy, lossAndGradients, adamStep, Trainer,
  dropStep, liveViews, trainerFor };

/** The page's views after `steps` steps from `settings` (the golden cases: attnlib's live_views). */
export function liveViewsAfter(data, settings, steps) {
  const t = kit.trainerFor(data, settings);
  for (let s = 0; s < steps; s++) t.trainStep();
  return kit.liveViews(t, data, true);
}

// ---- the worker: trains in slices of about 250 ms, reports after each, takes messages in between ----

function workerMain(kit) {
  // runs in the worker, whose global scope holds trainerSource()'s functions (and nothing else of this module)
  const SLICE_MS = 250;
  let t = null, data = null, running = false, timer = null;
  const report = (extra) => {
    const v = kit.liveViews(t, data, false);
    postMessage({ ...extra, views: v, curves: { first: t.first, second: t.second }, running, shapes: shapesOf(t.m) });
  };
  const slice = () => {
    timer = null;
    if (!running) return;
    const end = performance.now() + SLICE_MS;
    do t.trainStep(); while (performance.now() < end);
    report({ type: "progress" });
    timer = setTimeout(slice, 0);
  };
  onmessage = (e) => {
    const msg = e.data;
    if (msg.type !== "reset" && t === null) return;  // nothing to train before the first reset
    if (msg.type === "reset") {
      data = msg.data;
      t = kit.trainerFor(data, msg.settings);
      running = false;
      report({ type: "progress" });
    } else if (msg.type === "run") {
      running = true;
      if (timer === null) timer = setTimeout(slice, 0);
    } else if (msg.type === "pause") {
      running = false;
      report({ type: "progress", params: t.p });
    } else if (msg.type === "step") {
      running = false;
      t.trainStep();
      report({ type: "progress", params: t.p });
    }
  };
}

/** A Web Worker running trainerSource() and workerMain, from a blob made in the page (its own origin; nothing fetched). */
export function startWorker() {
  const src = `${trainerSource()}\n(${workerMain.toString()})({ trainerFor, liveViews });\n`;
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const worker = new Worker(url);
  URL.revokeObjectURL(url);
  return worker;
}

// ---- the panel ----
const SETTINGS = ["lr", "n_layers", "n_heads", "d_model", "seed"];

function chart(curves, vocab, drop) {
  // running means of 20 steps of both halves' training loss, against ln vocab and the step of the drop
  const W = 320, Hh = 120, ref = Math.log(vocab), top = ref * 1.3;
  const smooth = (a) => {
    const out = [];
    let sum = 0;
    for (let i = 0; i < a.length; i++) {
      sum += a[i];
      if (i >= 20) sum -= a[i - 20];
      if (i >= 19) out.push(sum / 20);
    }
    return out;
  };
  const n = Math.max(curves.first.length, 40);
  const x = (i) => ((i + 19) / n) * W, y = (v) => Hh - (Math.min(v, top) / top) * Hh;
  const line = (a, cls) => {
    const pts = smooth(a), every = Math.max(1, Math.floor(pts.length / 200)), xy = [];
    for (let i = 0; i < pts.length; i += every) xy.push(`${x(i).toFixed(1)},${y(pts[i]).toFixed(1)}`);
    return el("polyline", { points: xy.join(" "), class: cls, fill: "none" });
  };
  const svg = el("svg", { viewBox: `0 0 ${W} ${Hh}`, class: "attnlib-live-chart", role: "img",
    "aria-label": "training loss of both halves, running mean of 20 steps" });
  svg.append(el("line", { x1: 0, x2: W, y1: y(ref), y2: y(ref), class: "attnlib-chart-ref" }));
  if (drop >= 0) svg.append(el("line", { x1: x(drop - 19), x2: x(drop - 19), y1: 0, y2: Hh, class: "attnlib-chart-drop" }));
  svg.append(line(curves.first, "attnlib-chart-first"), line(curves.second, "attnlib-chart-second"));
  return svg;
}

function seedChoices(model) {
  return Array.from({ length: read(model, "max_seed", 99) + 1 }, (_, i) => i);
}

/** The controls (five settings, then train/pause, one step, reset), the chart and the two maps. */
function buildPanel(L, model, on) {
  const controls = [
    choiceSetting(L, { key: "lr", label: "learning rate", choices: read(model, "lr_choices", [0.015]), fallback: 0.015, cls: "attnlib-lr" }),
    choiceSetting(L, { key: "n_layers", label: "layers", choices: read(model, "layer_choices", [1, 2]), fallback: 2, cls: "attnlib-layers" }),
    choiceSetting(L, { key: "n_heads", label: "heads per layer", choices: read(model, "head_choices", [1]), fallback: 1, cls: "attnlib-heads" }),
    choiceSetting(L, { key: "d_model", label: "width d_model", choices: read(model, "width_choices", [32]), fallback: 32, cls: "attnlib-width" }),
    choiceSetting(L, { key: "seed", label: "seed", choices: seedChoices(model), fallback: 0, cls: "attnlib-seed" }),
  ];
  const button = (text, cls, onclick) => el("button", { type: "button", class: `attnlib-button ${cls}`, text, onclick });
  const train = button("train", "attnlib-train", on.toggle);
  train.setAttribute("aria-pressed", "false");
  const buttons = el("div", { class: "attnlib-train-buttons" }, train, button("one step", "attnlib-one-step", on.step),
    button("reset", "attnlib-reset", on.reset));
  L.controls.prepend(buttons, ...controls.map((c) => c.el));
  const milestones = el("div", { class: "attnlib-sr attnlib-milestones", role: "status", "aria-live": "polite" });
  const progress = el("p", { class: "attnlib-train-progress" });
  L.root.append(milestones);
  const chartBox = el("div", { class: "attnlib-cell attnlib-chart-box" });
  const maps = [new MatrixView("map1", L.style), new MatrixView("map2", L.style)];
  L.views.append(chartBox, ...maps.map((v) => el("div", { class: "attnlib-cell" }, v.table)));
  L.facts.after(progress);
  return { controls, train, milestones, progress, chartBox, maps };
}

const describe = (s) => `learning rate ${s.lr}, ${s.n_layers} layer${s.n_layers > 1 ? "s" : ""}, `
  + `${s.n_heads} head${s.n_heads > 1 ? "s" : ""} per layer, width ${s.d_model}, seed ${s.seed}`;

/** Whether the induction head has formed: the repeated half's held-out loss below goal ln V, both scores above head_score. */
function formed(v, data) {
  return v.second < data.goal * Math.log(data.vocab) && Math.max(...v.previous) > data.head_score && Math.max(...v.prefix) > data.head_score;
}

function factsText(v, data, f) {
  const ref = Math.log(data.vocab), layers = v.maps.length;
  return `Step ${v.step}. Held-out loss: first halves ${f(v.first)}, repeated halves ${f(v.second)} `
    + `(${f(v.second / ref)} of ln ${data.vocab}). Previous-token score (layer 1): ${v.previous.map(f).join(", ")}; `
    + `prefix-matching score (layer ${layers}): ${v.prefix.map(f).join(", ")}; copying (layer ${layers}, head 1): ${f(v.copying)}. `
    + (v.drop >= 0 ? `The drop: step ${v.drop}.` : "No drop yet.") + (formed(v, data) ? " The induction head has formed." : "");
}

/** The milestone line (a polite live region): the drop, then the head, each said once per run. */
function milestone(P, v, data, said, f) {
  if (v.drop >= 0 && !said.drop) {
    said.drop = true;
    P.milestones.textContent = `Step ${v.drop}: the repeated half's training loss fell below half of ln ${data.vocab} (the drop).`;
  }
  if (formed(v, data) && !said.formed) {
    said.formed = v;  // the views at which the head was first seen formed
    P.milestones.textContent = `Step ${v.step}: the induction head has formed: repeated-half loss ${f(v.second)}, `
      + `below ${data.goal} of ln ${data.vocab} = ${f(data.goal * Math.log(data.vocab))}.`;
  }
}

function drawViews(P, L, msg, data, f) {
  const v = msg.views, layers = v.maps.length;
  const best = (scores) => scores.indexOf(Math.max(...scores));
  L.facts.textContent = factsText(v, data, f);
  P.progress.textContent = msg.running ? "training\u2026" : `paused at step ${v.step}`;
  P.chartBox.replaceChildren(chart(msg.curves, data.vocab, v.drop));
  const labels = v.tokens.map((t, i) => `${i}:${t}`);
  P.maps.forEach((view, k) => {
    view.table.parentNode.hidden = k >= layers;
    if (k >= layers) return;
    const h = k === 0 ? best(v.previous) : best(v.prefix);
    view.update(v.maps[k][h], { rows: labels, cols: labels, caption: `layer ${k + 1}, head ${h + 1}: weights`, vmin: 0, vmax: 1, decimals: 2 });
  });
  L.say(null, `Step ${v.step}: repeated-half loss ${f(v.second)}.`);
}

/** In a notebook (a kernel listens): the paused run's weights go back to Python (LiveTrainingExplorer.trained_model). */
function sendTrained(model, msg) {
  const params = {};
  for (const [name, w] of Object.entries(msg.params)) {
    const [, rows, cols] = msg.shapes.find((s) => s[0] === name);
    params[name] = Array.from({ length: rows }, (_, i) => Array.from(w.subarray(i * cols, (i + 1) * cols)));
  }
  model.set("trained", { step: msg.views.step, params });
  saveSoon(model);
}

function renderLiveTraining({ model, el: host }) {
  const L = focusedLayout(host, model, read(model, "title", "Train it yourself"), "live_training", SETTINGS);
  const data = read(model, "data", {});
  const f = (v) => formatValue(v, L.style);
  const reduced = typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
  let worker = null, running = false, last = null, said = {}, lastDraw = 0;
  const send = (msg) => worker && worker.postMessage(msg);
  const settings = () => Object.fromEntries(SETTINGS.map((k) => [k, read(model, k, null)]));
  const setRunning = (on, tell = true) => {
    running = on;
    P.train.textContent = on ? "pause" : "train";
    P.train.setAttribute("aria-pressed", String(on));
    if (tell) send({ type: on ? "run" : "pause" });
  };
  const reset = (why) => {
    setRunning(false, false);  // the worker stops on "reset" itself
    said = {};
    if (why) P.milestones.textContent = `Reset: step 0, ${describe(settings())}.`;
    send({ type: "reset", data, settings: settings() });
  };
  const P = buildPanel(L, model, { toggle: () => setRunning(!running), step: () => { setRunning(false); send({ type: "step" }); }, reset: () => reset("reset") });
  const onMessage = (e) => {
    const msg = e.data, now = performance.now();
    last = msg;
    if (msg.params && host.dataset.host !== "page") sendTrained(model, msg);
    milestone(P, msg.views, data, said, f);
    // reduced motion: while training, the views change at most once a second (every report when paused)
    if (reduced && msg.running && now - lastDraw < 1000) return;
    lastDraw = now;
    drawViews(P, L, msg, data, f);
  };
  try {
    worker = startWorker();
    worker.onmessage = onMessage;
  } catch (err) {
    L.message.show(`This browser could not start the trainer (a Web Worker): ${err.message}`);
  }
  if (!L.message.el.textContent) L.message.show(read(model, "error", ""));
  reset(null);
  const redo = () => {
    L.message.show(read(model, "error", ""));
    SETTINGS.forEach((k, i) => P.controls[i].set(read(model, k, null)));
    reset("settings");
  };
  host.attnlibTrainer = { run: () => setRunning(true), pause: () => setRunning(false), last: () => last, formed: () => said.formed, reduced };
  return listen(model, [...SETTINGS, "error"], redo, () => {
    L.status.dispose();
    if (worker) worker.terminate();
  });
}

export function acceptLink(model, obj) {
  const problems = [];
  const checks = {
    lr: read(model, "lr_choices", []), n_layers: read(model, "layer_choices", []), n_heads: read(model, "head_choices", []),
    d_model: read(model, "width_choices", []), seed: seedChoices(model),
  };
  const values = {};
  for (const [k, choices] of Object.entries(checks)) {
    if (!(k in obj)) continue;
    const p = checkChoice(k, obj[k], choices);
    if (p) problems.push(p);
    else values[k] = obj[k];
  }
  return problems.length ? [{}, problems] : [values, []];
}

export default { render: renderLiveTraining };
