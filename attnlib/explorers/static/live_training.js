// The live training explorer (kind "live_training", chapter 17): attnlib.induction's attention-only model trained in
// the page in float64, a batch at a time in arrays made once (Arena). The trainer's functions use no import, so a Web
// Worker runs their text (trainerSource, in a blob made in the page: nothing is fetched). Held to train_induction by
// tests/explorers/test_live_training_golden.py (every step's loss) and to live_views by the kind's golden cases.
import { el, MatrixView, read, choiceSetting, focusedLayout, listen, saveSoon } from "./dom.js";
import { countOf, formatValue } from "./format.js";
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
    const x = Math.imul(s[1], 5), r = Math.imul((x << 7) | (x >>> 25), 9) >>> 0, t = s[1] << 9;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t;
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
  /** A half length T from low to high with chance proportional to 1 / T. */
  halfLength(low, high) {
    let acc = 0;
    const cumulative = [];
    for (let T = low; T <= high; T++) cumulative.push((acc += 1 / T));
    const target = this.random() * acc, k = cumulative.findIndex((c) => target < c);
    return k < 0 ? high : low + k;
  }
}

/** attnlib.induction.repeated_tokens from a PortableRandom: half lengths, then first halves, then starts. */
function drawRepeats(rng, nSequences, vocab, low, high, nPositions) {
  const halves = Array.from({ length: nSequences }, () => rng.halfLength(low, high));
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
  let at = 0;
  return Object.fromEntries(shapesOf(m).map(([name, r, c]) => [name, flat.subarray(at, (at += r * c))]));
}

/** InductionModel.init(PortableRandom(seed)): normal entries of standard deviation 1 / sqrt(d_model), one flat array. */
function initParams(m, rng) {
  const std = 1 / Math.sqrt(m.dModel);
  const flat = new Float64Array(shapesOf(m).reduce((s, [, r, c]) => s + r * c, 0));
  for (let i = 0; i < flat.length; i++) flat[i] = std * rng.normal();
  return viewsOf(m, flat);
}

/**
 * C[c + i m + j] (+)= A row i . B row j for the n rows of A (from a, length k) and the m rows of B (from b): A B^T,
 * added to C if acc. Blocks of 2 x 4 keep eight sums in registers; every matrix product of a step is this one.
 */
function dotRows(A, a, B, b, n, k, m, C, c, acc) {
  if (!acc) C.fill(0, c, c + n * m);
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
      C[c0 + j] += s00; C[c0 + j + 1] += s01; C[c0 + j + 2] += s02; C[c0 + j + 3] += s03;
      if (two) { C[c1 + j] += s10; C[c1 + j + 1] += s11; C[c1 + j + 2] += s12; C[c1 + j + 3] += s13; }
    }
    for (; j < m; j++) {
      const bj = b + j * k;
      let s0 = 0, s1 = 0;
      for (let t = 0; t < k; t++) {
        s0 += A[a0 + t] * B[bj + t];
        s1 += A[a1 + t] * B[bj + t];
      }
      C[c0 + j] += s0;
      if (two) C[c1 + j] += s1;
    }
  }
}

/** O[o + i os + t] = sum over j <= i (lower) or j >= i of M[m + i mi + j mj] Y[y + j ys + t], t < width: causal mixing. */
function mix(M, m, mi, mj, n, lower, Y, y, ys, O, o, os, width) {
  const w4 = width - (width % 4);
  for (let i = 0; i < n; i++) {
    const lo = lower ? 0 : i, hi = lower ? i : n - 1, mr = m + i * mi, oi = o + i * os;
    for (let t = 0; t < w4; t += 4) {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let j = lo; j <= hi; j++) {
        const c = M[mr + j * mj], yj = y + j * ys + t;
        s0 += c * Y[yj]; s1 += c * Y[yj + 1]; s2 += c * Y[yj + 2]; s3 += c * Y[yj + 3];
      }
      O[oi + t] = s0; O[oi + t + 1] = s1; O[oi + t + 2] = s2; O[oi + t + 3] = s3;
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
 * Every array a step needs, for up to `rows` tokens in sequences of up to `longest`. Per layer: X its input (X[L] feeds
 * the unembedding), QKV (rows of Q | K | V), A (each sequence's heads' n x n weights), Cc (the heads' outputs).
 */
class Arena {
  constructor(m, rows, longest) {
    const D = m.dModel, V = m.vocab, L = m.nLayers, H = m.nHeads, D3 = 3 * D;
    const take = (n) => new Float64Array(n);
    const each = (n) => Array.from({ length: L }, () => take(n));
    Object.assign(this, { rows, longest });
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
    this.T2 = take(Math.max(D3, V) * rows);
    this.dS = take(longest * longest);
    this.loss = take(rows);
    this.off = new Int32Array(rows + 1);  // sequence k's rows start at off[k] (at most one sequence per row)
    this.aOff = new Int32Array(rows + 1);  // and its weights at aOff[k] of every A[l]
    this.tok = new Int32Array(rows);
    this.pos = new Int32Array(rows);
  }
}

/** The copies of the weights that the products read (once per step). */
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

/** The forward pass of sequences (sequence k from position starts[k]) into the arena. */
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

/** Each row's cross-entropy with the next token into w.loss; with `scale`, the logits become scale times its gradient. */
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

/** Every parameter's gradient into g from the logits' gradient in the arena. */
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
        // the scores' gradient dS from the weights' gradient dA = dc V^T
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

/** Mean of w.loss over every row, the first halves and the repeated halves (rows T to 2T - 2). */
function halfMeans(w, seqs, halves) {
  let all = 0, nAll = 0, a = 0, na = 0, b = 0, nb = 0;
  seqs.forEach((s, k) => {
    const o = w.off[k], T = halves[k];
    for (let i = 0; i < s.length - 1; i++) {
      const v = w.loss[o + i];
      all += v;
      nAll++;
      if (i < T) { a += v; na++; } else if (i <= 2 * T - 2) { b += v; nb++; }
    }
  });
  return { loss: all / nAll, first: a / na, second: b / nb };
}

/** A batch's mean losses (halfMeans) and its gradient into g. */
function lossAndGradients(m, p, w, batch, g) {
  const seqs = batch.tokens;
  forwardBatch(m, w, seqs, batch.starts);
  crossEntropy(m, w, seqs, 1 / seqs.reduce((n, t) => n + t.length - 1, 0));
  const r = halfMeans(w, seqs, batch.halves);
  backwardBatch(m, p, w, g);
  return r;
}

/** attnlib.training.Adam with its defaults, in place. */
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

/** attnlib.induction.train_induction's run; the learning rate falls linearly from lr to finalLr over nSteps, then stays. */
class Trainer {
  constructor(s) {
    this.m = { vocab: s.vocab, nPositions: s.nPositions, dModel: s.dModel, nHeads: s.nHeads, nLayers: s.nLayers };
    this.s = s;
    this.p = initParams(this.m, new PortableRandom(s.seed));
    this.flat = new Float64Array(this.p.E.buffer);  // every parameter (p's views are parts of it)
    this.gradFlat = new Float64Array(this.flat.length);
    this.g = viewsOf(this.m, this.gradFlat);
    this.rng = new PortableRandom(s.seed);
    this.adam = { t: 0, m: new Float64Array(this.flat.length), v: new Float64Array(this.flat.length) };
    this.arena = null;
    this.step = 0;
    [this.losses, this.first, this.second] = [[], [], []];
  }
  learningRate(step) {
    const s = this.s, end = s.finalLr == null ? s.lr : s.finalLr, last = Math.max(s.nSteps - 1, 0);
    const done = Math.min(step, last) / Math.max(last, 1);
    return s.lr * (1 - done) + end * done;
  }
  /** The arena, made larger if these sequences need it, with the current weights laid out. */
  arenaFor(seqs) {
    const rows = seqs.reduce((n, s) => n + s.length, 0), longest = Math.max(...seqs.map((s) => s.length)), a = this.arena;
    if (!a || a.rows < rows || a.longest < longest) this.arena = new Arena(this.m, Math.max(rows, a?.rows ?? 0), Math.max(longest, a?.longest ?? 0));
    const w = this.arena;
    w.E = this.p.E;
    w.P = this.p.P;
    layoutWeights(this.m, this.p, w);
    return w;
  }
  trainStep() {
    const s = this.s, batch = drawRepeats(this.rng, s.nSequences, s.vocab, ...s.halfLengths, s.nPositions);
    const r = lossAndGradients(this.m, this.p, this.arenaFor(batch.tokens), batch, this.g);
    this.losses.push(r.loss);
    this.first.push(r.first);
    this.second.push(r.second);
    adamStep(this.adam, this.flat, this.gradFlat, this.learningRate(this.step));
    this.step += 1;
    return r;
  }
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

/** The share of the V rows of E W_V W_O W_U (the last layer's head 1) whose largest entry is on the diagonal. */
function diagonalShare(t, w) {
  const m = t.m, L = m.nLayers, D = m.dModel, dh = D / m.nHeads, V = m.vocab, WV = t.p["W_V" + L], WO = t.p["W_O" + L];
  const ovT = new Float64Array(D * D), EOV = new Float64Array(V * D), C = new Float64Array(V * V);
  for (let i = 0; i < D; i++) for (let j = 0; j < D; j++) {
    let s = 0;
    for (let c = 0; c < dh; c++) s += WV[i * D + c] * WO[c * D + j];
    ovT[j * D + i] = s;
  }
  dotRows(t.p.E, 0, ovT, 0, V, D, D, EOV, 0, false);
  dotRows(EOV, 0, w.WuT, 0, V, D, V, C, 0, false);
  let wins = 0;
  for (let a = 0; a < V; a++) {
    let off = -Infinity;
    for (let b = 0; b < V; b++) if (b !== a && C[a * V + b] > off) off = C[a * V + b];
    if (C[a * V + a] > off) wins++;
  }
  return wins / V;
}

/** What the page shows: attnlib.explorers.kinds.live_training.live_views. */
function liveViews(t, data, curves) {
  const m = t.m, H = m.nHeads, L = m.nLayers, probe = data.probe.tokens, w = t.arenaFor(probe);
  const prev = new Array(H).fill(0), prefix = new Array(H).fill(0);
  let prevN = 0, prefixN = 0;
  forwardBatch(m, w, probe, probe.map(() => 0));
  crossEntropy(m, w, probe, 0);
  const { first, second } = halfMeans(w, probe, data.probe.halves);
  probe.forEach((tokens, k) => {
    const T = data.probe.halves[k], n = tokens.length, A1 = w.A[0], AL = w.A[L - 1];
    for (let h = 0; h < H; h++) {
      const b = w.aOff[k] + h * n * n;
      for (let i = 1; i < n; i++) prev[h] += A1[b + i * n + i - 1];
      for (let i = T; i < n; i++) prefix[h] += AL[b + i * n + i - T + 1];
    }
    prevN += n - 1;
    prefixN += n - T;
  });
  const copying = diagonalShare(t, w);  // w's weights were laid out for the probe
  const tokens = data.map.tokens, n = tokens.length, wm = t.arenaFor([tokens]);
  forwardBatch(m, wm, [tokens], [0]);
  const maps = wm.A.slice(0, L).map((A) => Array.from({ length: H }, (_, h) =>  // zeros above the causal half
    Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (j <= i ? A[h * n * n + i * n + j] : 0)))));
  const out = {
    step: t.step, first, second, previous: prev.map((v) => v / prevN), prefix: prefix.map((v) => v / prefixN), copying,
    maps, tokens: tokens.map((x) => (x < 26 ? String.fromCharCode(97 + x) : `#${x}`)), drop: dropStep(t.second, Math.log(m.vocab)),
  };
  if (curves) Object.assign(out, { losses: t.losses.slice(), first_curve: t.first.slice(), second_curve: t.second.slice() });
  return out;
}

/** Whether the induction head has formed: held-out repeated-half loss below goal ln V, both scores above head_score. */
function formed(v, data) {
  return v.second < data.goal * Math.log(data.vocab) && Math.max(...v.previous) > data.head_score && Math.max(...v.prefix) > data.head_score;
}

/**
 * One step, then (from the drop on, until it holds) the formed rule on this step's views, kept in t.formed: tested at
 * every step, not at the worker's reports, so the step it names does not depend on the machine's speed.
 */
function stepAndWatch(t, data) {
  t.trainStep();
  if (t.formed || !(t.dropped = t.dropped || dropStep(t.second, Math.log(t.m.vocab)) >= 0)) return;
  const v = liveViews(t, data, false);
  if (formed(v, data)) t.formed = v;
}

/** A trainer for the explorer's settings on the page's data. */
function trainerFor(data, settings) {
  return new Trainer({
    vocab: data.vocab, nPositions: data.n_positions, halfLengths: data.half_lengths, nSequences: data.n_sequences,
    dModel: settings.d_model, nHeads: settings.n_heads, nLayers: settings.n_layers, seed: settings.seed,
    lr: settings.lr, finalLr: data.final_lr, nSteps: data.n_steps,
  });
}

/** Every part of the trainer, each using only earlier parts (or functions). */
const PARTS = [mix32, PortableRandom, drawRepeats, shapesOf, viewsOf, initParams, dotRows, mix, transposeInto, Arena,
  layoutWeights, forwardBatch, crossEntropy, backwardBatch, halfMeans, lossAndGradients, adamStep, Trainer, dropStep,
  diagonalShare, liveViews, formed, stepAndWatch, trainerFor];

/** The trainer's source text, for a worker. */
export function trainerSource() {
  return PARTS.map(String).join("\n");
}

/** For the node tests and the benchmark. */
export const kit = { shapesOf, Trainer, liveViews, formed, stepAndWatch, trainerFor };

/** The views after `steps` steps (the golden cases). */
export function liveViewsAfter(data, settings, steps) {
  const t = trainerFor(data, settings);
  for (let s = 0; s < steps; s++) t.trainStep();
  return liveViews(t, data, true);
}

// ---- the worker: trains in slices of 250 ms, reports after each ----

function workerMain() {
  // its global scope holds trainerSource()'s functions, nothing else of this module
  let t = null, data = null, running = false, timer = null;
  const report = (params, ended = false) => postMessage({ views: liveViews(t, data, false), formed: t.formed,
    curves: { first: t.first, second: t.second }, running, ended, shapes: shapesOf(t.m), params });
  const slice = () => {
    timer = null;
    if (!running) return;
    const end = performance.now() + 250, last = t.s.nSteps;
    do stepAndWatch(t, data); while (performance.now() < end && t.step !== last);
    if (t.step !== last) {
      report();
      timer = setTimeout(slice, 0);
      return;
    }
    running = false;  // the end of the schedule: the run pauses itself (train again goes on at the final rate)
    report(t.p, true);
  };
  onmessage = ({ data: msg }) => {
    if (msg.type === "reset") {
      data = msg.data;
      t = trainerFor(data, msg.settings);
    } else if (t === null) {
      return;  // nothing to train before the first reset
    } else if (msg.type === "run") {
      running = true;
      if (timer === null) timer = setTimeout(slice, 0);
      return;
    } else if (msg.type === "step") {
      stepAndWatch(t, data);
    }
    running = false;
    report(msg.type === "reset" ? undefined : t.p);
  };
}

/** A Web Worker running trainerSource() and workerMain, from a blob made in the page. */
export function startWorker() {
  const url = URL.createObjectURL(new Blob([`${trainerSource()}\n(${workerMain})();\n`], { type: "text/javascript" }));
  const worker = new Worker(url);
  URL.revokeObjectURL(url);
  return worker;
}

// ---- the panel ----

/**
 * Running means of 20 steps of both halves' training loss (the colours and dashes of fig-induction-loss), with axis
 * ends, a line at ln V and the step of the drop.
 */
function chart(curves, vocab, drop) {
  const W = 340, H = 150, x0 = 30, y1 = 128, ref = Math.log(vocab), top = ref * 1.3;
  const mean = (a) => a.slice(19).map((_, i) => a.slice(i, i + 20).reduce((s, v) => s + v, 0) / 20);
  const n = Math.max(curves.first.length, 40), x = (i) => x0 + ((i + 19) / n) * (W - x0 - 4);
  const y = (v) => y1 - (Math.min(v, top) / top) * (y1 - 22);
  const line = (a, cls) => {
    const pts = mean(a), every = Math.max(1, Math.floor(pts.length / 200)), xy = [];
    for (let i = 0; i < pts.length; i += every) xy.push(`${x(i).toFixed(1)},${y(pts[i]).toFixed(1)}`);
    return el("polyline", { points: xy.join(" "), class: cls, fill: "none" });
  };
  const text = (tx, ty, words, anchor = "start") => el("text", { x: tx, y: ty, "text-anchor": anchor, class: "attnlib-chart-text", text: words });
  const key = (kx, cls, words) => [el("line", { x1: kx, x2: kx + 22, y1: 9, y2: 9, class: cls }), text(kx + 26, 13, words)];
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "attnlib-live-chart", role: "img",
    "aria-label": `training loss of the first halves (orange, solid) and the repeated halves (blue, dashed), running mean of 20 steps, steps 0 to ${n}` });
  svg.append(el("line", { x1: x0, x2: x0, y1: 22, y2: y1, class: "attnlib-chart-axis" }),
    el("line", { x1: x0, x2: W - 4, y1, y2: y1, class: "attnlib-chart-axis" }),
    el("line", { x1: x0, x2: W - 4, y1: y(ref), y2: y(ref), class: "attnlib-chart-ref" }),
    text(x0 - 3, y(ref) + 4, `ln ${vocab}`, "end"), text(x0 - 3, y1 + 4, "0", "end"), text(x0 - 3, 30, "loss", "end"),
    text(x0, H - 4, "step 0"), text(W - 4, H - 4, `step ${n}`, "end"),
    ...key(x0, "attnlib-chart-first", "first halves"), ...key(x0 + 130, "attnlib-chart-second", "repeated halves"));
  const xd = x(drop - 19), right = xd + 30 > W;  // near the right end the label goes left of its line
  if (drop >= 0) svg.append(el("line", { x1: xd, x2: xd, y1: 22, y2: y1, class: "attnlib-chart-drop" }), text(right ? xd - 3 : xd + 3, 32, "drop", right ? "end" : "start"));
  svg.append(line(curves.first, "attnlib-chart-first"), line(curves.second, "attnlib-chart-second"));
  return svg;
}

const seedChoices = (model) => Array.from({ length: read(model, "max_seed", 99) + 1 }, (_, i) => i);

/** Each setting: key, label, the model's list of choices (or a function) and fallback. */
const CONTROLS = [["lr", "learning rate", "lr_choices", 0.015], ["n_layers", "layers", "layer_choices", 2],
  ["n_heads", "heads per layer", "head_choices", 1], ["d_model", "width d_model", "width_choices", 32], ["seed", "seed", seedChoices, 0]];
const SETTINGS = CONTROLS.map((c) => c[0]);
const choicesOf = (model, list, fallback) => (typeof list === "function" ? list(model) : read(model, list, fallback));

/** The buttons, the settings, the chart and the two maps. */
function buildPanel(L, model, on) {
  const controls = CONTROLS.map(([key, label, list, fallback]) => choiceSetting(L, { key, label, fallback,
    choices: choicesOf(model, list, [fallback]), cls: `attnlib-${{ n_layers: "layers", n_heads: "heads", d_model: "width" }[key] || key}` }));
  const button = (text, cls, onclick) => el("button", { type: "button", class: `attnlib-button attnlib-${cls}`, text, onclick });
  const train = button("train", "train", on.toggle);
  train.setAttribute("aria-pressed", "false");
  L.controls.prepend(el("div", { class: "attnlib-train-buttons" }, train, button("one step", "one-step", on.step), button("reset", "reset", on.reset)),
    ...controls.map((c) => c.el));
  const milestones = el("div", { class: "attnlib-sr attnlib-milestones", role: "status", "aria-live": "polite" });
  const progress = el("p", { class: "attnlib-train-progress" });
  L.root.append(milestones);
  const chartBox = el("div", { class: "attnlib-cell attnlib-chart-box" });
  const maps = ["map1", "map2"].map((name) => new MatrixView(name, L.style));
  L.views.append(chartBox, ...maps.map((v) => el("div", { class: "attnlib-cell attnlib-live-map" }, v.table)));
  L.facts.after(progress);
  return { controls, train, milestones, progress, chartBox, maps };
}

const describe = (s) => `learning rate ${s.lr}, ${countOf(s.n_layers, "layer")}, ${countOf(s.n_heads, "head")} per layer, width ${s.d_model}, seed ${s.seed}`;

function factsText(v, data, f) {
  const layers = v.maps.length, V = data.vocab;
  return `Step ${v.step}. Held-out loss: first halves ${f(v.first)}, repeated halves ${f(v.second)} `
    + `(${f(v.second / Math.log(V))} of ln ${V}). Previous-token score (layer 1): ${v.previous.map(f).join(", ")}; `
    + `prefix-matching score (layer ${layers}): ${v.prefix.map(f).join(", ")}; copying (layer ${layers}, head 1): `
    + `diagonal largest in ${Math.round(v.copying * V)} of ${V} rows. `
    + (v.drop >= 0 ? `The drop: step ${v.drop}.` : "No drop yet.") + (formed(v, data) ? " The induction head has formed." : "");
}

/** The milestone line (a polite live region): the drop, then the head, each said once per run. */
function milestone(P, msg, data, said, f) {
  const v = msg.views, head = msg.formed;
  if (v.drop >= 0 && !said.drop) {
    said.drop = true;
    P.milestones.textContent = `Step ${v.drop}: the repeated half's training loss fell below half of ln ${data.vocab} (the drop).`;
  }
  if (head && !said.formed) {
    said.formed = head;
    P.milestones.textContent = `Step ${head.step}: the induction head has formed: repeated-half loss ${f(head.second)}, `
      + `below ${data.goal} of ln ${data.vocab} = ${f(data.goal * Math.log(data.vocab))}.`;
  }
}

function drawViews(P, L, msg, data, f) {
  const v = msg.views, layers = v.maps.length, labels = v.tokens.map((t, i) => `${i}:${t}`);
  L.facts.textContent = factsText(v, data, f);
  P.progress.textContent = msg.running ? "training\u2026" : `paused at step ${v.step}${msg.ended ? ", the end of the schedule (train goes on at the last rate)" : ""}`;
  P.chartBox.replaceChildren(chart(msg.curves, data.vocab, v.drop));
  P.maps.forEach((view, k) => {
    view.table.parentNode.hidden = k >= layers;
    if (k >= layers) return;
    const scores = k === 0 ? v.previous : v.prefix, h = scores.indexOf(Math.max(...scores));
    view.update(v.maps[k][h], { rows: labels, cols: v.tokens, caption: `layer ${k + 1}, head ${h + 1}: weights`, vmin: 0, vmax: 1, decimals: 2 });
  });
  L.say(null, `Step ${v.step}: repeated-half loss ${f(v.second)}.`);
}

/** In a notebook: the paused run's weights go to Python (LiveTrainingExplorer.trained_model). */
function sendTrained(model, msg) {
  const params = {};
  for (const [name, rows, cols] of msg.shapes) {
    params[name] = Array.from({ length: rows }, (_, i) => Array.from(msg.params[name].subarray(i * cols, (i + 1) * cols)));
  }
  model.set("trained", { step: msg.views.step, params });
  saveSoon(model);
}

function renderLiveTraining({ model, el: host }) {
  const L = focusedLayout(host, model, read(model, "title", "Train it yourself"), "live_training", SETTINGS);
  const data = read(model, "data", {}), f = (v) => formatValue(v, L.style);
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
    if (msg.ended) setRunning(false, false);
    if (msg.params && host.dataset.host !== "page") sendTrained(model, msg);
    milestone(P, msg, data, said, f);
    if (msg.ended) P.milestones.textContent = `Step ${msg.views.step}: the end of the schedule; training paused.`;
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
  const values = {}, problems = [];
  for (const [k, , list] of CONTROLS) {
    if (!(k in obj)) continue;
    const p = checkChoice(k, obj[k], choicesOf(model, list, []));
    if (p) problems.push(p);
    else values[k] = obj[k];
  }
  return problems.length ? [{}, problems] : [values, []];
}

export default { render: renderLiveTraining };
