// The live training explorer (kind "live_training", chapter 17): the attention-only model of attnlib.induction
// trained in the page, forward, backward and Adam in float64, a whole batch at a time in arrays made once (Arena). The
// trainer's functions use no import, so that a Web Worker runs the same text (trainerSource, handed to it as a blob
// made in the page: nothing is fetched).
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

/** Named row-major views (p.E, p.W_Q1, ...) into one flat array of every parameter, in shapesOf order. */
function viewsOf(m, flat) {
  const p = {};
  let at = 0;
  for (const [name, r, c] of shapesOf(m)) {
    p[name] = flat.subarray(at, at + r * c);
    at += r * c;
  }
  return p;
}

/** InductionModel.init(PortableRandom(seed)): normal entries of standard deviation 1 / sqrt(d_model), one flat array. */
function initParams(m, rng) {
  const std = 1 / Math.sqrt(m.dModel);
  const flat = new Float64Array(shapesOf(m).reduce((s, [, r, c]) => s + r * c, 0));
  for (let i = 0; i < flat.length; i++) flat[i] = std * rng.normal();
  return viewsOf(m, flat);
}

/**
 * C[c + i m + j] = (C's entry if acc, else 0) + A row i . B row j, for the n rows of A (from a, length k) and the
 * m rows of B (from b, length k): every product of a row of A and a row of B, so A B^T. Blocks of 2 x 4 keep eight
 * sums in registers; every matrix product of the step is this one (with transposed copies where needed).
 */
function dotRows(A, a, B, b, n, k, m, C, c, acc) {
  for (let i = 0; i < n; i += 2) {
    const a0 = a + i * k, two = i + 1 < n, a1 = two ? a0 + k : a0, c0 = c + i * m, c1 = c0 + m;
    let j = 0;
    for (; j + 4 <= m; j += 4) {
      const b0 = b + j * k, b1 = b0 + k, b2 = b1 + k, b3 = b2 + k;
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      for (let t = 0; t < k; t++) {
        const x = A[a0 + t], y = A[a1 + t], w0 = B[b0 + t], w1 = B[b1 + t], w2 = B[b2 + t], w3 = B[b3 + t];
        s00 += x * w0; s01 += x * w1; s02 += x * w2; s03 += x * w3;
        s10 += y * w0; s11 += y * w1; s12 += y * w2; s13 += y * w3;
      }
      if (acc) {
        C[c0 + j] += s00; C[c0 + j + 1] += s01; C[c0 + j + 2] += s02; C[c0 + j + 3] += s03;
        if (two) { C[c1 + j] += s10; C[c1 + j + 1] += s11; C[c1 + j + 2] += s12; C[c1 + j + 3] += s13; }
      } else {
        C[c0 + j] = s00; C[c0 + j + 1] = s01; C[c0 + j + 2] = s02; C[c0 + j + 3] = s03;
        if (two) { C[c1 + j] = s10; C[c1 + j + 1] = s11; C[c1 + j + 2] = s12; C[c1 + j + 3] = s13; }
      }
    }
    for (; j < m; j++) {
      const bj = b + j * k;
      let s0 = 0, s1 = 0;
      for (let t = 0; t < k; t++) {
        s0 += A[a0 + t] * B[bj + t];
        s1 += A[a1 + t] * B[bj + t];
      }
      C[c0 + j] = acc ? C[c0 + j] + s0 : s0;
      if (two) C[c1 + j] = acc ? C[c1 + j] + s1 : s1;
    }
  }
}

/**
 * O[o + i os + t] = the sum over j of M[m + i mi + j mj] Y[y + j ys + t], for t < width and i < n, j from 0 to i
 * (lower) or from i to n - 1: causal weights times rows, four columns at a time in registers, each output written once.
 */
function mix(M, m, mi, mj, n, lower, Y, y, ys, O, o, os, width) {
  const w4 = width - (width % 4);
  for (let i = 0; i < n; i++) {
    const lo = lower ? 0 : i, hi = lower ? i : n - 1, mr = m + i * mi, oi = o + i * os;
    for (let t = 0; t < w4; t += 4) {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let j = lo; j <= hi; j++) {
        const c = M[mr + j * mj], yj = y + j * ys + t;
        s0 += c * Y[yj];
        s1 += c * Y[yj + 1];
        s2 += c * Y[yj + 2];
        s3 += c * Y[yj + 3];
      }
      O[oi + t] = s0;
      O[oi + t + 1] = s1;
      O[oi + t + 2] = s2;
      O[oi + t + 3] = s3;
    }
    for (let t = w4; t < width; t++) {
      let s = 0;
      for (let j = lo; j <= hi; j++) s += M[mr + j * mj] * Y[y + j * ys + t];
      O[oi + t] = s;
    }
  }
}

/** T (c x r, from 0) = the transpose of the r x c block of S that starts at s. */
function transposeInto(S, s, r, c, T) {
  for (let i = 0; i < r; i++) {
    const si = s + i * c;
    for (let j = 0; j < c; j++) T[j * r + i] = S[si + j];
  }
}

/**
 * Every array a step needs, made once: views into one Float64Array for batches of up to `rows` tokens in sequences
 * of up to `longest` tokens. Per layer l: X[l] its input (X[L] feeds the unembedding), QKV[l] (rows of Q | K | V),
 * A[l] (each sequence's heads' n x n weights, causal half only), Cc[l] (the heads' outputs side by side); the
 * weights' transposed copies; the gradients' scratch rows. Nothing is allocated while training.
 */
class Arena {
  constructor(m, rows, longest) {
    const D = m.dModel, V = m.vocab, L = m.nLayers, H = m.nHeads, D3 = 3 * D, wide = Math.max(D3, V);
    const size = (L + 1) * rows * D + L * (rows * D3 + H * rows * longest + rows * D + D3 * D + D * D3 + D * D)
      + V * D + rows * V + 2 * rows * D + rows * D3 + D * rows + wide * rows + longest * longest;
    const all = new Float64Array(size);
    let at = 0;
    const take = (n) => all.subarray(at, (at += n));
    const each = (n) => Array.from({ length: L }, () => take(n));
    this.rows = rows;
    this.longest = longest;
    this.X = Array.from({ length: L + 1 }, () => take(rows * D));
    this.QKV = each(rows * D3);
    this.A = each(H * rows * longest);
    this.Cc = each(rows * D);
    this.WqkvT = each(D3 * D);  // W_Q^T; W_K^T; W_V^T stacked: 3D x D
    this.Wcat = each(D * D3);  // [W_Q | W_K | W_V]: D x 3D
    this.WoT = each(D * D);
    this.WuT = take(V * D);
    this.logits = take(rows * V);  // the logits, then (in place) their gradient
    this.dx = take(rows * D);
    this.dc = take(rows * D);
    this.dqkv = take(rows * D3);
    this.T1 = take(D * rows);
    this.T2 = take(wide * rows);
    this.dS = take(longest * longest);
    this.loss = new Float64Array(rows);
    this.off = new Int32Array(rows + 1);  // sequence k's rows start at off[k] (at most one sequence per row)
    this.aOff = new Int32Array(rows + 1);  // and its weights at aOff[k] of every A[l]
    this.tok = new Int32Array(rows);
    this.pos = new Int32Array(rows);
    this.N = 0;
    this.S = 0;
  }
}

/** An arena that holds these sequences: `arena` if it is large enough, else a new one. */
function arenaFor(arena, m, seqs) {
  let rows = 0, longest = 0;
  for (const s of seqs) {
    rows += s.length;
    longest = Math.max(longest, s.length);
  }
  return arena && arena.rows >= rows && arena.longest >= longest ? arena : new Arena(m, Math.max(rows, arena ? arena.rows : 0),
    Math.max(longest, arena ? arena.longest : 0));
}

/** The transposed and side-by-side copies of the weights that the products read (once per step). */
function layoutWeights(m, p, w) {
  const D = m.dModel, D3 = 3 * D;
  for (let l = 0; l < m.nLayers; l++) {
    const mats = [p["W_Q" + (l + 1)], p["W_K" + (l + 1)], p["W_V" + (l + 1)]], T = w.WqkvT[l], C = w.Wcat[l];
    for (let q = 0; q < 3; q++) {
      const W = mats[q];
      for (let r = 0; r < D; r++) for (let c = 0; c < D; c++) {
        T[(q * D + c) * D + r] = W[r * D + c];
        C[r * D3 + q * D + c] = W[r * D + c];
      }
    }
    transposeInto(p["W_O" + (l + 1)], 0, D, D, w.WoT[l]);
  }
  transposeInto(p.W_U, 0, D, m.vocab, w.WuT);
}

/**
 * The forward pass of a batch of sequences (token lists, the first at position starts[k]) into the arena: every
 * layer's Q, K, V, causal weights and heads' outputs, the residual streams, the logits. The weights are read from
 * the arena (layoutWeights first).
 */
function forwardBatch(m, w, seqs, starts) {
  const D = m.dModel, D3 = 3 * D, H = m.nHeads, dh = D / H, div = Math.sqrt(dh), L = m.nLayers, V = m.vocab;
  const { off, aOff, tok, pos } = w;
  let N = 0, NA = 0;
  for (let k = 0; k < seqs.length; k++) {
    const s = seqs[k], n = s.length;
    off[k] = N;
    aOff[k] = NA;
    for (let i = 0; i < n; i++) {
      tok[N + i] = s[i];
      pos[N + i] = starts[k] + i;
    }
    N += n;
    NA += H * n * n;
  }
  off[seqs.length] = N;
  w.N = N;
  w.S = seqs.length;
  const X0 = w.X[0];
  for (let i = 0; i < N; i++) {
    const e = tok[i] * D, q = pos[i] * D, r = i * D;
    for (let j = 0; j < D; j++) X0[r + j] = w.E[e + j] + w.P[q + j];
  }
  for (let l = 0; l < L; l++) {
    const X = w.X[l], QKV = w.QKV[l], A = w.A[l], Cc = w.Cc[l], next = w.X[l + 1];
    dotRows(X, 0, w.WqkvT[l], 0, N, D, D3, QKV, 0, false);
    for (let k = 0; k < seqs.length; k++) {
      const o = off[k], n = off[k + 1] - o;
      for (let h = 0; h < H; h++) {
        const base = aOff[k] + h * n * n, qo = h * dh, ko = D + h * dh, vo = 2 * D + h * dh;
        for (let i = 0; i < n; i++) {
          const qi = (o + i) * D3 + qo, row = base + i * n;
          let top = -Infinity;
          for (let j = 0; j <= i; j++) {
            const kj = (o + j) * D3 + ko;
            let s = 0;
            for (let t = 0; t < dh; t++) s += QKV[qi + t] * QKV[kj + t];
            s /= div;
            A[row + j] = s;
            if (s > top) top = s;
          }
          let sum = 0;
          for (let j = 0; j <= i; j++) {
            const e = Math.exp(A[row + j] - top);
            A[row + j] = e;
            sum += e;
          }
          for (let j = 0; j <= i; j++) A[row + j] /= sum;
        }
        mix(A, base, n, 1, n, true, QKV, o * D3 + vo, D3, Cc, o * D + h * dh, D, dh);
      }
    }
    next.set(X.subarray(0, N * D));
    dotRows(Cc, 0, w.WoT[l], 0, N, D, D, next, 0, true);
  }
  dotRows(w.X[L], 0, w.WuT, 0, N, D, V, w.logits, 0, false);
}

/**
 * Every row's cross-entropy with its next token into w.loss (a sequence's last row has none); with `scale`, the
 * gradient of the loss times scale replaces the logits (zero for the last rows).
 */
function crossEntropy(m, w, seqs, scale) {
  const V = m.vocab, logits = w.logits, loss = w.loss;
  for (let k = 0; k < seqs.length; k++) {
    const s = seqs[k], o = w.off[k], n = s.length;
    for (let i = 0; i < n - 1; i++) {
      const r = (o + i) * V;
      let top = -Infinity;
      for (let v = 0; v < V; v++) if (logits[r + v] > top) top = logits[r + v];
      const target = s[i + 1], shifted = logits[r + target] - top;
      let sum = 0;
      for (let v = 0; v < V; v++) {
        const e = Math.exp(logits[r + v] - top);
        if (scale) logits[r + v] = e;
        sum += e;
      }
      loss[o + i] = Math.log(sum) - shifted;
      if (scale) {
        const f = scale / sum;
        for (let v = 0; v < V; v++) logits[r + v] *= f;
        logits[r + target] -= scale;
      }
    }
    loss[o + n - 1] = 0;
    if (scale) logits.fill(0, (o + n - 1) * V, (o + n) * V);
  }
}

/** The gradient of every parameter (flat, in shapesOf order, overwritten) from the logits' gradient in the arena. */
function backwardBatch(m, p, w, g) {
  const D = m.dModel, D3 = 3 * D, H = m.nHeads, dh = D / H, div = Math.sqrt(dh), L = m.nLayers, V = m.vocab, N = w.N;
  const { dx, dc, dqkv, T1, T2, off, aOff, dS } = w;
  transposeInto(w.X[L], 0, N, D, T1);
  transposeInto(w.logits, 0, N, V, T2);
  dotRows(T1, 0, T2, 0, D, N, V, g.W_U, 0, false);
  dotRows(w.logits, 0, p.W_U, 0, N, V, D, dx, 0, false);
  for (let l = L - 1; l >= 0; l--) {
    const QKV = w.QKV[l], A = w.A[l], name = l + 1;
    transposeInto(w.Cc[l], 0, N, D, T1);
    transposeInto(dx, 0, N, D, T2);
    dotRows(T1, 0, T2, 0, D, N, D, g["W_O" + name], 0, false);
    dotRows(dx, 0, p["W_O" + name], 0, N, D, D, dc, 0, false);
    for (let k = 0; k < w.S; k++) {
      const o = off[k], n = off[k + 1] - o;
      for (let h = 0; h < H; h++) {
        const base = aOff[k] + h * n * n, qo = h * dh, ko = D + h * dh, vo = 2 * D + h * dh, co = o * D + h * dh;
        // the scores' gradient dS (n x n, causal half) from the weights' gradient dA = dc V^T
        for (let i = 0; i < n; i++) {
          const ci = co + i * D, row = i * n;
          let inner = 0;
          for (let j = 0; j <= i; j++) {
            const vj = (o + j) * D3 + vo;
            let s = 0;
            for (let t = 0; t < dh; t++) s += dc[ci + t] * QKV[vj + t];
            dS[row + j] = s;
            inner += s * A[base + row + j];
          }
          for (let j = 0; j <= i; j++) dS[row + j] = (A[base + row + j] * (dS[row + j] - inner)) / div;
        }
        mix(A, base, 1, n, n, false, dc, co, D, dqkv, o * D3 + vo, D3, dh);  // dV = A^T dc
        mix(dS, 0, n, 1, n, true, QKV, o * D3 + ko, D3, dqkv, o * D3 + qo, D3, dh);  // dQ = dS K
        mix(dS, 0, 1, n, n, false, QKV, o * D3 + qo, D3, dqkv, o * D3 + ko, D3, dh);  // dK = dS^T Q
      }
    }
    transposeInto(w.X[l], 0, N, D, T1);
    transposeInto(dqkv, 0, N, D3, T2);
    dotRows(T1, 0, T2, 0, D, N, D, g["W_Q" + name], 0, false);
    dotRows(T1, 0, T2, D * N, D, N, D, g["W_K" + name], 0, false);
    dotRows(T1, 0, T2, 2 * D * N, D, N, D, g["W_V" + name], 0, false);
    dotRows(dqkv, 0, w.Wcat[l], 0, N, D3, D, dx, 0, true);
  }
  g.E.fill(0);
  g.P.fill(0);
  for (let i = 0; i < N; i++) {
    const e = w.tok[i] * D, q = w.pos[i] * D, r = i * D;
    for (let j = 0; j < D; j++) {
      g.E[e + j] += dx[r + j];
      g.P[q + j] += dx[r + j];
    }
  }
}

/** Mean loss and first- and second-half loss of a batch, its gradient into g (attnlib's train_induction, one step). */
function lossAndGradients(m, p, w, batch, g) {
  const seqs = batch.tokens;
  let total = 0;
  for (const t of seqs) total += t.length - 1;
  forwardBatch(m, w, seqs, batch.starts);
  crossEntropy(m, w, seqs, 1 / total);
  let sum = 0, firstSum = 0, firstN = 0, secondSum = 0, secondN = 0;
  for (let k = 0; k < seqs.length; k++) {
    const o = w.off[k], T = batch.halves[k], n = seqs[k].length;
    for (let i = 0; i < n - 1; i++) {
      const v = w.loss[o + i];
      sum += v;
      if (i < T) {
        firstSum += v;
        firstN++;
      } else if (i <= 2 * T - 2) {
        secondSum += v;
        secondN++;
      }
    }
  }
  backwardBatch(m, p, w, g);
  return { loss: sum / total, first: firstSum / firstN, second: secondSum / secondN };
}

/** attnlib.training.Adam with its defaults (beta1 0.9, beta2 0.999, eps 1e-8), in place, in one pass over flat arrays. */
function adamStep(state, w, g, lr) {
  const b1 = 0.9, b2 = 0.999, eps = 1e-8;
  state.t += 1;
  const c1 = 1 / (1 - b1 ** state.t), c2 = 1 / (1 - b2 ** state.t), m1 = state.m, v2 = state.v;
  for (let i = 0; i < w.length; i++) {
    const gi = g[i], mi = b1 * m1[i] + (1 - b1) * gi, vi = b2 * v2[i] + (1 - b2) * gi * gi;
    m1[i] = mi;
    v2[i] = vi;
    w[i] -= (lr * mi * c1) / (Math.sqrt(vi * c2) + eps);
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
    this.flat = new Float64Array(this.p.E.buffer);  // every parameter (p's views are parts of it)
    this.gradFlat = new Float64Array(this.flat.length);
    this.g = viewsOf(this.m, this.gradFlat);
    this.rng = new PortableRandom(s.seed);
    this.adam = { t: 0, m: new Float64Array(this.flat.length), v: new Float64Array(this.flat.length) };
    const longest = 2 * s.halfLengths[1];
    this.arena = new Arena(this.m, s.nSequences * longest, longest);
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
  /** The arena for these sequences, its weights laid out from the current parameters. */
  arenaFor(seqs) {
    const w = (this.arena = arenaFor(this.arena, this.m, seqs));
    w.E = this.p.E;
    w.P = this.p.P;
    layoutWeights(this.m, this.p, w);
    return w;
  }
  trainStep() {
    const s = this.s;
    const batch = drawRepeats(this.rng, s.nSequences, s.vocab, s.halfLengths[0], s.halfLengths[1], s.nPositions);
    const r = lossAndGradients(this.m, this.p, this.arenaFor(batch.tokens), batch, this.g);
    this.losses.push(r.loss);
    this.first.push(r.first);
    this.second.push(r.second);
    adamStep(this.adam, this.flat, this.gradFlat, this.learningRate(Math.min(this.step, Math.max(s.nSteps - 1, 0))));
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
  const m = t.m, H = m.nHeads, L = m.nLayers, probe = data.probe.tokens;
  let firstSum = 0, firstN = 0, secondSum = 0, secondN = 0;
  const prev = new Array(H).fill(0), prefix = new Array(H).fill(0);
  let prevN = 0, prefixN = 0;
  const w = t.arenaFor(probe);
  forwardBatch(m, w, probe, probe.map(() => 0));
  crossEntropy(m, w, probe, 0);
  probe.forEach((tokens, k) => {
    const T = data.probe.halves[k], n = tokens.length, o = w.off[k], base = w.aOff[k];
    for (let i = 0; i < n - 1; i++) {
      const v = w.loss[o + i];
      if (i < T) { firstSum += v; firstN++; } else if (i <= 2 * T - 2) { secondSum += v; secondN++; }
    }
    const A1 = w.A[0], AL = w.A[L - 1];
    for (let h = 0; h < H; h++) {
      const b = base + h * n * n;
      for (let i = 1; i < n; i++) prev[h] += A1[b + i * n + i - 1];
      for (let i = T; i < n; i++) prefix[h] += AL[b + i * n + i - T + 1];
    }
    prevN += n - 1;
    prefixN += n - T;
  });
  // copying: E W_V W_O W_U of the last layer's head 1 (its columns of W_V, its rows of W_O)
  const D = m.dModel, dh = D / H, V = m.vocab;
  const WV = t.p["W_V" + L], WO = t.p["W_O" + L];
  const ovT = new Float64Array(D * D), EOV = new Float64Array(V * D), C = new Float64Array(V * V);
  for (let i = 0; i < D; i++) for (let j = 0; j < D; j++) {
    let s = 0;
    for (let c = 0; c < dh; c++) s += WV[i * D + c] * WO[c * D + j];
    ovT[j * D + i] = s;
  }
  dotRows(t.p.E, 0, ovT, 0, V, D, D, EOV, 0, false);
  dotRows(EOV, 0, w.WuT, 0, V, D, V, C, 0, false);  // w's weights were laid out for the probe
  let wins = 0;
  for (let a = 0; a < V; a++) {
    let off = -Infinity;
    for (let b = 0; b < V; b++) if (b !== a && C[a * V + b] > off) off = C[a * V + b];
    if (C[a * V + a] > off) wins++;
  }
  const mapTokens = data.map.tokens;
  const wm = t.arenaFor([mapTokens]), n = mapTokens.length;
  forwardBatch(m, wm, [mapTokens], [0]);
  // the causal half of every row, zeros above it
  const maps = wm.A.slice(0, L).map((A) => Array.from({ length: H }, (_, h) =>
    Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (j <= i ? A[h * n * n + i * n + j] : 0)))));
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
const PARTS = [mix32, PortableRandom, drawRepeats, shapesOf, viewsOf, initParams, dotRows, mix, transposeInto, Arena, arenaFor,
  layoutWeights, forwardBatch, crossEntropy, backwardBatch, lossAndGradients, adamStep, Trainer, letter, dropStep, liveViews,
  trainerFor];

/** The trainer's source text, for a worker: every part's own text (none uses an import). */
export function trainerSource() {
  return PARTS.map(String).join("\n");
}

/** The trainer's math (the worker runs the same functions' text). */
export const kit = { PortableRandom, drawRepeats, shapesOf, initParams, dotRows, forwardBatch, crossEntropy, lossAndGradients, adamStep,
  Trainer, dropStep, liveViews, trainerFor };

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
