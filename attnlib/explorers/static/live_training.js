// The live training explorer (chapter 17): the attention-only model of attnlib.induction trained in the page,
// forward, backward and Adam in float64. trainerKit holds all the math in one self-contained function, so that
// a Web Worker can run the same text (its source is handed to the worker as a blob, from the page's own origin).
// Held to attnlib.induction.train_induction by tests/explorers/test_live_training_golden.py: from the same
// attnlib.induction.PortableRandom seed, the same batches and the same loss at every step.

export function trainerKit() {
  const MASK_GOLDEN = 0x9e3779b9;

  function mix32(z) {
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  }

  /** attnlib.induction.PortableRandom for a seed below 2**32: xoshiro128** seeded by splitmix32. */
  class PortableRandom {
    constructor(seed) {
      let h = mix32(((0 ^ (seed >>> 0)) + MASK_GOLDEN) >>> 0);
      this.s = new Uint32Array(4);
      for (let i = 0; i < 4; i++) {
        h = (h + MASK_GOLDEN) >>> 0;
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
      adamStep(this.adam, this.p, r.grads, this.learningRate(Math.min(this.step, s.nSteps - 1)));
      this.step += 1;
      return r;
    }
  }

  return { PortableRandom, drawRepeats, shapesOf, initParams, forward, crossEntropy, lossAndGradients, adamStep, Trainer };
}

/** The trainer's math for this page (the worker runs the same function's text). */
export const kit = trainerKit();
