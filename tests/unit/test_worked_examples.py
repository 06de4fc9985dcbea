"""Every field of every worked example and trace a chapter prints is asserted here, against plain numpy.

Issue 44 found a printed field no test looked at: chapter 15's online-softmax trace printed the
block's exponentials where it said "entries", after an in-place speed-up, while its unit test
checked the other fields. This module closes that class of bug.

* :data:`EXAMPLES` lists every attnlib function whose result (a record, a list of records, or an
  array of terms) a chapter prints as a worked example or a trace, with the chapter's own call and a
  second computation of **every field** written here in plain numpy (sympy only to build the
  expressions a proof is about, which are then compared with numpy at random points).
  :func:`test_every_field_of_every_worked_example` fails when a field is missing from the expected
  values, so a field added to a record must be asserted here before the test passes again.
* :data:`EXPERIMENTS` lists the record-returning functions whose results are experiments (training
  runs, timings, data): their printed numbers are held by ``support.expected_outputs`` and the
  prose-number test, and a second implementation here would retrain the models.
* :func:`test_every_record_a_chapter_prints_is_listed` reads every chapter's code and fails when it
  calls a record-returning public function of attnlib that neither list names.

Where a chapter prints a worked example, ``support.expected_outputs`` holds its printed lines, and
``tests/book/test_chapters.py`` finds them in the executed chapter.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import re
import typing
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import sympy as sp
from support.paths import CHAPTERS

from attnlib import (
    backward,
    blocked,
    compatibility,
    core,
    cost,
    exact,
    experiments,
    heads,
    induction,
    measure,
    paths,
    positional,
    retrieval,
    scaling,
    training,
    transformer,
    variants,
)

RNG_SEED = 44
TOL = 1e-12


# --- plain numpy, written here once ------------------------------------------------------------


def softmax_rows(Z: np.ndarray) -> np.ndarray:
    """Row softmax with -inf entries as 0 (a row has at least one finite entry)."""
    Z = np.asarray(Z, dtype=float)
    e = np.exp(Z - Z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_np(Q, K, V, allowed=None, divisor=None):
    """Every intermediate of attention, the plain way."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    divisor = math.sqrt(Q.shape[1]) if divisor is None else divisor
    S = Q @ K.T
    Z = S / divisor
    if allowed is not None:
        Z = np.where(allowed, Z, -np.inf)
    A = softmax_rows(Z)
    return {"scores": S, "scaled": Z, "weights": A, "output": A @ V, "divisor": divisor, "mask": allowed, "Q": Q, "K": K, "V": V}


def attention_backward_np(Q, K, V, G, allowed=None):
    """dQ, dK, dV of L = sum(G * O), through the explicit softmax Jacobian of every row."""
    fwd = attention_np(Q, K, V, allowed)
    A, c = fwd["weights"], fwd["divisor"]
    dA = G @ fwd["V"].T
    dZ = np.stack([(np.diag(a) - np.outer(a, a)) @ g for a, g in zip(A, dA)])
    dS = dZ / c
    return {"dQ": dS @ fwd["K"], "dK": dS.T @ fwd["Q"], "dV": A.T @ G}


def layer_norm_np(Z, gamma, beta, eps):
    mu = Z.mean(axis=1, keepdims=True)
    var = ((Z - mu) ** 2).mean(axis=1, keepdims=True)
    return gamma * (Z - mu) / np.sqrt(var + eps) + beta


def sym_to_float(M) -> np.ndarray:
    """A sympy matrix or number as floats (-oo becomes -inf)."""
    if isinstance(M, sp.MatrixBase):
        return np.array([[float(e) for e in row] for row in M.tolist()], dtype=float)
    return np.array(float(M))


def at_random_points(expr, symbols, want: Callable[[dict], float], n: int = 5) -> None:
    """``expr`` (sympy) evaluated at random real points equals ``want`` computed with numpy there."""
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(n):
        point = {s: float(rng.uniform(-2, 2)) for s in symbols}
        got = float(sp.N(expr.xreplace({s: sp.Float(v, 30) for s, v in point.items()}), 30))
        np.testing.assert_allclose(got, want(point), rtol=1e-12, atol=1e-12)


# --- comparing a record with its expected fields -----------------------------------------------


class Records(list):
    """Expected value of a field that holds records (one dict of fields per record)."""


def field_names(record: Any) -> list[str]:
    if dataclasses.is_dataclass(record):
        return [f.name for f in dataclasses.fields(record)]
    if isinstance(record, tuple) and hasattr(record, "_fields"):
        return list(record._fields)
    raise TypeError(f"not a record: {type(record).__name__}")


def assert_field(got: Any, want: Any, where: str) -> None:
    if isinstance(want, Records):
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            assert_field(g, w, f"{where}[{k}]")
    elif want is None or isinstance(want, (bool, str)):
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"
    elif isinstance(want, int):
        assert isinstance(got, (int, np.integer)) and not isinstance(got, bool) and got == want, f"{where}: {got!r} != {want}"
    elif isinstance(want, (sp.Basic, sp.MatrixBase)):
        assert got == want, f"{where}: {got} != {want}"
    elif isinstance(want, tuple) and want and all(isinstance(w, (str, sp.Basic)) or w is None for w in want):
        assert tuple(got) == want, f"{where}: {got!r} != {want!r}"
    elif isinstance(want, dict) and (dataclasses.is_dataclass(got) or hasattr(got, "_fields")):
        assert_record(got, want, where)
    elif isinstance(want, dict):
        assert set(got) == set(want), where
        for k in want:
            assert_field(got[k], want[k], f"{where}[{k!r}]")
    else:
        w = np.asarray(want)
        g = sym_to_float(got) if isinstance(got, (sp.Basic, sp.MatrixBase)) else np.asarray(got)
        assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
        if w.dtype == bool:
            assert np.array_equal(g, w), where
        else:
            np.testing.assert_allclose(g.astype(float), w.astype(float), rtol=1e-12, atol=TOL, err_msg=where)


def assert_record(record: Any, want: dict[str, Any], where: str) -> None:
    names = field_names(record)
    checks = {k: v for k, v in want.items() if not k.startswith("@")}
    assert set(names) <= set(checks), f"{where}: fields no test asserts: {sorted(set(names) - set(checks))}"
    for name, value in checks.items():
        got = getattr(record, name)  # a field, or a property the chapter prints
        if callable(value) and not isinstance(value, (sp.Basic, sp.MatrixBase, Records)):
            value(got)  # a check written out (sympy objects compared with numpy at random points)
        else:
            assert_field(got, value, f"{where}.{name}")


# --- the chapters' worked examples ---------------------------------------------------------------

X = core.running_example()
I2 = np.eye(2)


def _random(*shape, seed=0):
    return np.random.default_rng([RNG_SEED, seed]).normal(size=shape)


def case_attention():
    return core.attention(X, X, X), attention_np(X, X, X)


def case_attention_masked():
    allowed = np.tril(np.ones((3, 3), bool))
    return core.attention(X, X, X, mask=allowed), attention_np(X, X, X, allowed)


def case_attention_unscaled():
    return core.attention(X, X, X, scale=False), attention_np(X, X, X, divisor=1.0)


def case_self_attention():
    W = [_random(2, 3, seed=k) for k in range(3)]
    return core.self_attention(X, *W), attention_np(X @ W[0], X @ W[1], X @ W[2])


def case_cross_attention():
    Y = np.array([[1.0, 1.0], [0.0, 2.0]])
    return core.cross_attention(Y, X, I2, I2, I2), attention_np(Y, X, X)


def case_value_contributions():
    A = attention_np(X, X, X)["weights"]
    terms = np.array([[A[i, j] * X[j] for j in range(3)] for i in range(3)])
    return compatibility.value_contributions(A, X), terms


def case_exact_attention():
    r = attention_np(X, X, X)
    Z = r["scaled"]
    return exact.exact_attention(X), {
        **{k: r[k] for k in ("Q", "K", "V", "scores", "scaled", "weights", "output")},
        "divisor": sp.sqrt(2),
        "exponentials": np.exp(Z),
        "normalizers": np.exp(Z).sum(axis=1, keepdims=True),
        "mask": None,
    }


def case_exact_attention_masked():
    allowed = np.tril(np.ones((3, 3), bool))
    r = attention_np(X, X, X, allowed)
    E = np.where(allowed, np.exp(np.where(allowed, r["scaled"], 0.0)), 0.0)
    return exact.exact_attention(X, mask=allowed), {
        **{k: r[k] for k in ("Q", "K", "V", "scores", "scaled", "weights", "output", "mask")},
        "divisor": sp.sqrt(2),
        "exponentials": E,
        "normalizers": E.sum(axis=1, keepdims=True),
    }


def case_exact_attention_unscaled():
    r = attention_np(X, X, X, divisor=1.0)
    return exact.exact_attention(X, scale=False), {
        **{k: r[k] for k in ("Q", "K", "V", "scores", "scaled", "weights", "output")},
        "divisor": sp.Integer(1),
        "exponentials": np.exp(r["scaled"]),
        "normalizers": np.exp(r["scaled"]).sum(axis=1, keepdims=True),
        "mask": None,
    }


G14 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])  # chapter 14's upstream gradient


def case_attention_backward():
    return backward.attention_backward(X, X, X, G14), attention_backward_np(X, X, X, G14)


def case_attention_backward_masked():
    allowed = np.tril(np.ones((3, 3), bool))
    return backward.attention_backward(X, X, X, G14, mask=allowed), attention_backward_np(X, X, X, G14, allowed)


def case_softmax_backward():
    allowed = np.tril(np.ones((3, 3), bool))
    A = attention_np(X, X, X, allowed)["weights"]
    dA = G14 @ X.T
    dZ = np.stack([(np.diag(a) - np.outer(a, a)) @ g for a, g in zip(A, dA)])
    return backward.softmax_backward(A, dA), dZ


def case_exact_attention_gradients():
    return exact.exact_attention_gradients(X, X, X, G14), attention_backward_np(X, X, X, G14)


def case_cross_attention_backward():
    Xq, Xm = _random(3, 4, seed=1), _random(5, 4, seed=2)
    W = [_random(4, 4, seed=k) / 2 for k in (3, 4, 5)]
    G = _random(3, 4, seed=6)
    allowed = np.random.default_rng(7).random((3, 5)) < 0.7
    allowed[:, 0] = True
    g = attention_backward_np(Xq @ W[0], Xm @ W[1], Xm @ W[2], G, allowed)
    want = {"dW_Q": Xq.T @ g["dQ"], "dW_K": Xm.T @ g["dK"], "dW_V": Xm.T @ g["dV"]}
    return backward.cross_attention_backward(Xq, Xm, *W, G, mask=allowed), want


def case_multi_head_attention_backward():
    Xq, Xm = _random(3, 4, seed=8), _random(5, 4, seed=9)
    WQ, WK, WV, WO = (_random(4, 4, seed=k) / 2 for k in (10, 11, 12, 13))
    G = _random(3, 4, seed=14)
    dh = 2
    outs, grads = [], []
    for h in range(2):
        c = slice(h * dh, (h + 1) * dh)
        outs.append(attention_np(Xq @ WQ[:, c], Xm @ WK[:, c], Xm @ WV[:, c])["output"])
    C = np.concatenate(outs, axis=1)
    dC = G @ WO.T
    for h in range(2):
        c = slice(h * dh, (h + 1) * dh)
        grads.append(attention_backward_np(Xq @ WQ[:, c], Xm @ WK[:, c], Xm @ WV[:, c], dC[:, c]))
    want = {
        "dW_Q": np.concatenate([Xq.T @ g["dQ"] for g in grads], axis=1),
        "dW_K": np.concatenate([Xm.T @ g["dK"] for g in grads], axis=1),
        "dW_V": np.concatenate([Xm.T @ g["dV"] for g in grads], axis=1),
        "dW_O": C.T @ G,
    }
    return backward.multi_head_attention_backward(Xq, Xm, WQ, WK, WV, WO, 2, G), want


def case_flash_attention_backward():
    rng = np.random.default_rng(15)
    Q, K, V, G = (rng.standard_normal((9, 3)) for _ in range(4))
    out, lse = blocked.flash_attention(Q, K, V, mask="causal", return_lse=True, query_tile=2, key_tile=4)
    got = blocked.flash_attention_backward(Q, K, V, out, lse, G, mask="causal", query_tile=2, key_tile=4)
    return got, attention_backward_np(Q, K, V, G, np.tril(np.ones((9, 9), bool)))


def trace_by_prefixes(scores, bounds, values):
    """The fields of every step of the online softmax from prefix sums (no running update)."""
    s = np.asarray(scores, dtype=float)
    steps = Records()
    for start, stop in bounds:
        before, after = s[:start], s[:stop]
        m_before = before.max() if start else -np.inf
        m_after = after.max()
        shift_b = 0.0 if np.isneginf(m_before) else m_before
        shift_a = 0.0 if np.isneginf(m_after) else m_after
        steps.append(
            {
                "keys": (start, stop),
                "scores": s[start:stop],
                "m_before": m_before,
                "m_after": m_after,
                "rescale": np.exp(m_before - shift_a),
                "terms": np.exp(s[start:stop] - shift_a),
                "l_before": np.exp(before - shift_b).sum(),
                "l_after": np.exp(after - shift_a).sum(),
                "acc_after": None if values is None else np.exp(after - shift_a) @ values[:stop],
            }
        )
    return steps


def case_online_softmax_trace():
    row = attention_np(X, X, X)["scaled"][1]  # chapter 15: query x2, keys in blocks of 1 and 2
    return blocked.online_softmax_trace(row, [1, 2], values=X), trace_by_prefixes(row, [(0, 1), (1, 3)], X)


def case_online_softmax_trace_masked():
    row = np.array([-np.inf, -np.inf, 0.3, -1.0, -np.inf, 2.5, 0.1])
    return blocked.online_softmax_trace(row, [2, 3, 2]), trace_by_prefixes(row, [(0, 2), (2, 5), (5, 7)], None)


def case_key_blocks():
    want = Records()
    for start in range(0, 12, 4):
        want.append({"keys": (start, min(start + 4, 12)), "rows": (start, 12), "shape": (12 - start, 4)})
    return blocked.key_blocks(12, 12, 4, causal=True), want


def case_two_block_identity():
    proof = blocked.two_block_identity(2, 1)
    s1, s2, t1 = proof.scores
    u1, u2, w1 = proof.values
    m1, m2, m = proof.m1, proof.m2, proof.m
    symbols = (s1, s2, t1, u1, u2, w1, m1, m2, m)

    def numeric(fn):
        return lambda expr: at_random_points(expr, symbols, lambda p: fn(**{str(k): v for k, v in p.items()}))

    def l_merged(s1, s2, t1, m1, m2, m, **_):
        return (np.exp(s1 - m1) + np.exp(s2 - m1)) * np.exp(m1 - m) + np.exp(t1 - m2) * np.exp(m2 - m)

    def l_full(s1, s2, t1, m, **_):
        return np.exp(s1 - m) + np.exp(s2 - m) + np.exp(t1 - m)

    def o_merged(s1, s2, t1, u1, u2, w1, m1, m2, m):
        acc = (np.exp(s1 - m1) * u1 + np.exp(s2 - m1) * u2) * np.exp(m1 - m) + np.exp(t1 - m2) * w1 * np.exp(m2 - m)
        return acc / l_merged(s1, s2, t1, m1, m2, m)

    def o_softmax(s1, s2, t1, u1, u2, w1, **_):
        e = np.exp([s1, s2, t1])
        return e @ [u1, u2, w1] / e.sum()

    return proof, {
        "scores": tuple(sp.symbols("s1 s2 t1", real=True)),
        "values": tuple(sp.symbols("u1 u2 w1", real=True)),
        "m1": sp.Symbol("m1", real=True),
        "m2": sp.Symbol("m2", real=True),
        "m": sp.Symbol("m", real=True),
        "merged_normaliser": numeric(l_merged),
        "full_normaliser": numeric(l_full),
        "merged_output": numeric(o_merged),
        "softmax_output": numeric(o_softmax),
        "normaliser_difference": sp.Integer(0),
        "output_difference": sp.Integer(0),
        "holds": True,
    }


def case_attention_traffic():
    n, d, w, mib = 65536, 64, 8, 2**20
    square, inputs = n * n * w, (3 * n * d * w, n * d * w)
    blocks, tiles = n // 128, n // 256
    rows = Records()
    got = []
    for method, read, written in (
        ("dense", inputs[0] + 7 * square, inputs[1] + 5 * square),
        ("key_blocked", inputs[0] + 10 * square + 4 * blocks * n * d * w, inputs[1] + 5 * square + 3 * blocks * n * d * w),
        ("tiled", inputs[0] + (tiles - 1) * 2 * n * d * w + 5 * square, inputs[1] + 3 * square),
    ):
        got.append(cost.attention_traffic(method, n, d, mib))
        rows.append({"read": read, "written": written, "total": read + written})
    return got, rows


def case_attention_traffic_terms():
    """Chapter 15's split of the n = 65,536 row (1 MiB cache) by cause, in bytes."""
    n, d, w, mib = 65536, 64, 8, 2**20
    square, nd = n * n * w, n * d * w
    io = {"read": 3 * nd, "written": nd, "total": 4 * nd}
    want = Records(
        [
            {"inputs and output": io, "passes over the scores": {"read": 7 * square, "written": 5 * square, "total": 12 * square}},
            {
                "inputs and output": io,
                "passes over the scores": {"read": 10 * square, "written": 5 * square, "total": 15 * square},
                "queries and output, every key block": {
                    "read": 4 * (n // 128) * nd,
                    "written": 3 * (n // 128) * nd,
                    "total": 7 * (n // 128) * nd,
                },
            },
            {
                "inputs and output": io,
                "passes over the scores": {"read": 5 * square, "written": 3 * square, "total": 8 * square},
                "keys and values, every query tile": {"read": (n // 256 - 1) * 2 * nd, "written": 0, "total": (n // 256 - 1) * 2 * nd},
            },
        ]
    )
    got = [cost.attention_traffic_terms(m, n, d, mib) for m in ("dense", "key_blocked", "tiled")]
    for terms, total in zip(got, (cost.attention_traffic(m, n, d, mib) for m in ("dense", "key_blocked", "tiled"))):
        assert sum(t.total for t in terms.values()) == total.total  # the parts add up to the model's total
    return got, want


def case_pairwise_score_cost():
    got = [compatibility.pairwise_score_cost(kind, 3, 3, 2) for kind in ("additive", "dot")] + [
        compatibility.pairwise_score_cost(kind, 4096, 4096, 4) for kind in ("additive", "dot")
    ]
    want = Records()
    for n, d in ((3, 2), (4096, 4)):
        want.append(
            {
                "kind": "additive",
                "matrix_products": 0,
                "multiplications": n * n * d,
                "tanh_evaluations": n * n * d,
                "intermediate_floats": n * n * d,
                "additions": n * n * (2 * d - 1),
            }
        )
        want.append(
            {
                "kind": "dot",
                "matrix_products": 1,
                "multiplications": n * n * d,
                "tanh_evaluations": 0,
                "intermediate_floats": 0,
                "additions": n * n * (d - 1),
            }
        )
    return got, want


def case_bilinear_parameter_counts():
    got = [compatibility.bilinear_parameter_counts(512, d_k) for d_k in (300, 64)]
    want = Records(
        {"d_model": 512, "d_k": d_k, "full": 512 * 512, "factored": 2 * 512 * d_k, "factoring_saves": 2 * d_k < 512} for d_k in (300, 64)
    )
    return got, want


def case_symbolic_bilinear_regrouping():
    proof = compatibility.symbolic_bilinear_regrouping(2, 1)
    xi, xj = proof.x_i, proof.x_j
    symbols = sorted(set(xi) | set(xj) | set(proof.W_Q) | set(proof.W_K), key=str)

    def value(point, which):
        f = {str(k): v for k, v in point.items()}
        a = np.array([[f["x_i1"], f["x_i2"]]])
        b = np.array([[f["x_j1"], f["x_j2"]]])
        wq = np.array([[f["w^Q_11"]], [f["w^Q_21"]]])
        wk = np.array([[f["w^K_11"]], [f["w^K_21"]]])
        return float((a @ (wq @ wk.T) @ b.T)[0, 0]) if which == "bilinear" else float(((a @ wq) @ (b @ wk).T)[0, 0])

    def names(prefix, shape):
        return lambda M: None if (M.shape == shape and [str(e) for e in M] == prefix) else pytest.fail(f"{M} is not {prefix}")

    return proof, {
        "x_i": names(["x_i1", "x_i2"], (1, 2)),
        "x_j": names(["x_j1", "x_j2"], (1, 2)),
        "W_Q": names(["w^Q_11", "w^Q_21"], (2, 1)),  # entry (r, r') of W_Q is w^Q_rr', never a query's q
        "W_K": names(["w^K_11", "w^K_21"], (2, 1)),
        "bilinear": lambda e: at_random_points(e, symbols, lambda p: value(p, "bilinear")),
        "regrouped": lambda e: at_random_points(e, symbols, lambda p: value(p, "regrouped")),
        "difference": sp.Integer(0),
        "holds": True,
    }


def case_symbolic_parameter_count():
    got = [heads.symbolic_parameter_count(), heads.symbolic_parameter_count(bias=True)]
    d, H = sp.symbols("d_model H", positive=True, integer=True)
    want = Records()
    for bias in (False, True):
        b = 3 * d + d if bias else 0  # H heads of d/H biases each for Q, K and V, and d for W_O
        want.append(
            {
                "d_model": d,
                "h": H,
                "d_head": lambda e: at_random_points(e, (d, H), lambda p: p[d] / p[H]),
                "per_head": lambda e: at_random_points(e, (d, H), lambda p: 3 * p[d] * p[d] / p[H]),
                "all_heads": lambda e: at_random_points(e, (d, H), lambda p: 3 * p[d] * p[d]),
                "output": lambda e: at_random_points(e, (d, H), lambda p: p[d] * p[d]),
                "bias": sp.expand(sp.Integer(b) if not bias else 4 * d),
                "total": sp.expand(4 * d**2 + (4 * d if bias else 0)),
            }
        )
    return got, want


def case_layer_comparison():
    rows = Records()
    n, d = 50, 512
    for layer, ops, seq, path, order in (
        ("self-attention", n * n * d, 1, 1, ("O(n^2 d)", "O(1)", "O(1)")),
        ("recurrent", n * d * d, n, n - 1, ("O(n d^2)", "O(n)", "O(n)")),
        ("convolutional", 3 * n * d * d, 1, math.ceil((n - 1) / 2), ("O(k n d^2)", "O(1)", "O(n/k)")),
        ("convolutional (dilated)", 3 * n * d * d, 1, math.ceil(math.log(n, 3)), ("O(k n d^2)", "O(1)", "O(log_k n)")),
    ):
        rows.append({"layer": layer, "operations": ops, "sequential": seq, "max_path": path, "order": order})
    return paths.layer_comparison(n, d), rows


def case_symbolic_offset_rotation():
    proof = positional.symbolic_offset_rotation()
    t, k, w = sp.symbols("t Delta omega", real=True)

    def matrix_at_points(fn):
        def check(M):
            rng = np.random.default_rng(RNG_SEED)
            for _ in range(5):
                tv, kv, wv = rng.uniform(-3, 3, 3)
                got = sym_to_float(M.xreplace({t: tv, k: kv, w: wv}).evalf(30))
                np.testing.assert_allclose(got, fn(tv, kv, wv), atol=1e-12)

        return check

    return proof, {
        "t": t,
        "k": k,
        "w": w,
        # rows, as the book writes position codes: [sin w(t+D), cos w(t+D)] = [sin wt, cos wt] R(wD)^T
        "pair": matrix_at_points(lambda tv, kv, wv: np.array([[np.sin(wv * tv), np.cos(wv * tv)]])),
        "shifted": matrix_at_points(lambda tv, kv, wv: np.array([[np.sin(wv * (tv + kv)), np.cos(wv * (tv + kv))]])),
        "rotation": matrix_at_points(
            lambda tv, kv, wv: np.array([[np.cos(wv * kv), np.sin(wv * kv)], [-np.sin(wv * kv), np.cos(wv * kv)]])
        ),
        "difference": sp.zeros(1, 2),
        "holds": True,
        "rotation_depends_on_t": False,
        "rotation_is_orthogonal": True,
    }


def case_retrieval():
    # chapter 12: the same template for Bahdanau's additive scores and the Transformer's scaled dot products
    W_a, U_a, v_a = np.array([[1.0, 0.5], [0.0, 1.0]]), np.array([[0.5, -1.0], [1.0, 0.0]]), np.array([1.0, -0.5])
    S = np.array([[1.0, 0.0], [0.5, 0.5]])
    add = np.array([[v_a @ np.tanh(W_a @ s + U_a @ h) for h in X] for s in S])
    W_V = np.array([[1.0, 2.0], [0.0, 1.0]])
    dot = (X @ X.T) / math.sqrt(2)
    got = [
        retrieval.bahdanau_retrieval(S, X, W_a, U_a, v_a),
        retrieval.transformer_retrieval(X, X, I2, I2, W_V),
        retrieval.retrieve(dot, X),
    ]
    want = Records(
        [
            {"scores": add, "weights": softmax_rows(add), "values": X, "output": softmax_rows(add) @ X},
            {"scores": dot, "weights": softmax_rows(dot), "values": X @ W_V, "output": softmax_rows(dot) @ X @ W_V},
            {"scores": dot, "weights": softmax_rows(dot), "values": X, "output": softmax_rows(dot) @ X},
        ]
    )
    return got, want


def case_dot_product_variance_steps():
    d_k, beta = sp.Symbol("d_k", integer=True, positive=True), sp.Symbol("beta", positive=True)
    values = [0, 0, 1, 1, 1, 0, 2, 3, d_k, beta**2 * d_k, 1]
    claims = [
        "each component has mean zero",
        "independence: the mean of a product is the product of the means",
        "each component has unit variance and mean zero, so its second moment is 1",
        "second moment of one product term, E[q_r^2] E[k_r^2]",
        "variance of one product term: E[(q_r k_r)^2] - (E[q_r k_r])^2",
        "different terms are uncorrelated, so their variances add",
        "check with d_k = 2 separate variables",
        "check with d_k = 3 separate variables",
        "sum of d_k independent terms, each of variance 1",
        "scaling rule Var(β Y) = β^2 Var(Y), applied to the whole sum Y = q k^T",
        "so dividing by sqrt(d_k) brings the variance back to 1",
    ]
    lhs = [
        "E(q_r)",
        "E(k_r*q_r)",
        "E(q_r**2)",
        "E(k_r**2*q_r**2)",
        "Var(k_r*q_r)",
        "Cov(k_r*q_r, k_{r'}*q_{r'})",
        "Var(k_1*q_1 + k_2*q_2)",
        "Var(k_1*q_1 + k_2*q_2 + k_3*q_3)",
        "Var(Sum(k[r]*q[r], (r, 1, d_k)))",
        "Var(\\mathbf{q}\\mathbf{k}^\\top*beta)",
        "Var(\\mathbf{q}\\mathbf{k}^\\top/sqrt(d_k))",
    ]

    def same_text(text):
        return lambda e: None if str(e).replace(" ", "") == text.replace(" ", "") else pytest.fail(f"{e} is not {text}")

    want = Records(
        {"claim": c, "lhs": same_text(e), "value": sp.sympify(v) if not isinstance(v, sp.Basic) else v}
        for c, e, v in zip(claims, lhs, values)
    )
    return scaling.dot_product_variance_steps(concrete_dims=(2, 3)), want


def case_dot_product_variance_table():
    dims, n = [1, 8, 64], 20_000
    t = scaling.dot_product_variance_table(dims, n_samples=n, seed=0)

    def near(expected):
        # a sample variance of n draws of q.k has relative standard error about sqrt(2 / n) (1 % here)
        return lambda got: np.testing.assert_allclose(got, expected, rtol=5 * math.sqrt(2 / n) * 2)

    return t, {
        "d_k": np.array(dims),
        "unscaled": near(np.array(dims, dtype=float)),
        "scaled": lambda got: (np.testing.assert_allclose(got, t.unscaled / np.array(dims), rtol=1e-12), near(np.ones(3))(got)),
        "n_samples": n,
    }


def case_saturation_sweep():
    z, c = np.array([1.0, 0.0, 0.5]), np.array([0.0, 1.0, 4.0, 100.0])
    P = softmax_rows(c[:, None] * z[None, :])
    J = np.stack([np.diag(p) - np.outer(p, p) for p in P])
    want = {
        "factors": c,
        "max_weight": P.max(axis=1),
        "jacobian_norm": np.sqrt((J**2).sum(axis=(1, 2))),
        "jacobian_max": np.abs(J).max(axis=(1, 2)),
    }
    return scaling.saturation_sweep(z, c), want


def case_sharpness_vs_dk():
    dims, nq, nk = [1, 16, 128], 50, 10
    cols = {k: [] for k in ("mu", "ms", "eu", "es", "ju", "js", "jw")}
    for dk in dims:
        rng = np.random.default_rng([0, dk])  # the documented stream: one per d_k, Q drawn before K
        Q, K = rng.standard_normal((nq, dk)), rng.standard_normal((nk, dk))
        for tag, div in (("u", 1.0), ("s", math.sqrt(dk))):
            P = softmax_rows(Q @ K.T / div)
            J = np.stack([np.diag(p) - np.outer(p, p) for p in P])
            norms = np.sqrt((J**2).sum(axis=(1, 2)))
            cols["m" + tag].append(P.max(axis=1).mean())
            cols["e" + tag].append((-(P * np.log(P)).sum(axis=1)).mean())
            cols["j" + tag].append(norms.mean())
            if tag == "s":
                cols["jw"].append(norms.mean() / div)
    want = {
        "d_k": np.array(dims),
        "n_keys": nk,
        "max_weight_unscaled": np.array(cols["mu"]),
        "max_weight_scaled": np.array(cols["ms"]),
        "entropy_unscaled": np.array(cols["eu"]),
        "entropy_scaled": np.array(cols["es"]),
        "jacobian_norm_unscaled": np.array(cols["ju"]),
        "jacobian_norm_scaled": np.array(cols["js"]),
        "jacobian_norm_scaled_wrt_scores": np.array(cols["jw"]),
    }
    return scaling.sharpness_vs_dk(dims, n_queries=nq, n_keys=nk, seed=0), want


def case_fit_power_law():
    n = np.array([256, 512, 1024, 2048])
    y = 3e-9 * n**2.1 * np.array([1.0, 1.1, 0.95, 1.02])
    slope, intercept = np.polyfit(np.log(n), np.log(y), 1)
    return measure.fit_power_law(n, y), {"exponent": slope, "prefactor": np.exp(intercept)}


def case_scaling_equivalence():
    return experiments.scaling_equivalence(64), {"qk_init_factor": 64**0.25, "qk_lr_factor": 8.0}


def encoder_np(Xin, p, h, allowed, norm_first, act, eps):
    """One encoder block written from the paper's equations (and PyTorch's biases), every intermediate."""
    n, d = Xin.shape
    dh = d // h

    def mha(Z):
        Q, K, V = Z @ p["W_Q"] + p["b_Q"], Z @ p["W_K"] + p["b_K"], Z @ p["W_V"] + p["b_V"]
        hs = [
            attention_np(Q[:, r * dh : (r + 1) * dh], K[:, r * dh : (r + 1) * dh], V[:, r * dh : (r + 1) * dh], allowed) for r in range(h)
        ]
        C = np.concatenate([x["output"] for x in hs], axis=1)
        return Q, K, V, hs, C, C @ p["W_O"] + p["b_O"]

    phi = (lambda z: np.maximum(z, 0.0)) if act == "relu" else (lambda z: z * 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2))))
    ln1 = lambda Z: layer_norm_np(Z, p["gamma_1"], p["beta_1"], eps)  # noqa: E731
    ln2 = lambda Z: layer_norm_np(Z, p["gamma_2"], p["beta_2"], eps)  # noqa: E731
    att_in = ln1(Xin) if norm_first else Xin
    Q, K, V, hs, C, att_out = mha(att_in)
    first = Xin + att_out
    middle = first if norm_first else ln1(first)
    mlp_in = ln2(middle) if norm_first else middle
    pre = mlp_in @ p["W_1"] + p["b_1"]
    hid = phi(pre)
    mlp_out = hid @ p["W_2"] + p["b_2"]
    second = middle + mlp_out
    return {
        "X": Xin,
        "attention_input": att_in,
        "Q": Q,
        "K": K,
        "V": V,
        "heads": Records(hs),
        "concat": C,
        "attention_output": att_out,
        "first_sum": first,
        "middle": middle,
        "mlp_input": mlp_in,
        "hidden_pre": pre,
        "hidden": hid,
        "mlp_output": mlp_out,
        "second_sum": second,
        "output": second if norm_first else ln2(second),
        "mask": allowed,
        "n_heads": h,
        "norm_first": norm_first,
        "activation": act,
        "eps": eps,
        "weights": np.stack([x["weights"] for x in hs]),
    }


def _encoder_params():
    p = transformer.init_encoder_params(8, 32, seed=16)
    rng = np.random.default_rng(RNG_SEED)
    return {k: v + 0.2 * rng.normal(size=v.shape) for k, v in p.items()}  # gains and biases away from 1 and 0


def case_encoder_layer_parts():
    Xin = np.random.default_rng(16).normal(size=(6, 8))
    p = _encoder_params()
    causal = np.tril(np.ones((6, 6), bool))
    return transformer.encoder_layer_parts(Xin, p, n_heads=2, mask="causal"), encoder_np(Xin, p, 2, causal, False, "relu", 1e-5)


def case_encoder_layer_parts_pre_norm_gelu():
    Xin = np.random.default_rng(17).normal(size=(5, 8))
    p = _encoder_params()
    got = transformer.encoder_layer_parts(Xin, p, n_heads=4, norm_first=True, activation="gelu", eps=1e-3)
    return got, encoder_np(Xin, p, 4, None, True, "gelu", 1e-3)


def case_layer_norm_backward():
    rng = np.random.default_rng(18)
    Z, gamma, G = rng.normal(size=(4, 5)), rng.normal(size=5), rng.normal(size=(4, 5))
    eps = 1e-5
    dX = []
    for z, g in zip(Z, G):  # the Jacobian of one normalised row, written out
        d = z.size
        mu, s = z.mean(), math.sqrt(((z - z.mean()) ** 2).mean() + eps)
        zhat = (z - mu) / s
        J = (np.eye(d) - 1.0 / d - np.outer(zhat, zhat) / d) / s  # d zhat_a / d z_b
        dX.append((gamma * g) @ J)
    zhat = (Z - Z.mean(axis=1, keepdims=True)) / np.sqrt(Z.var(axis=1, keepdims=True) + eps)
    return transformer.layer_norm_backward(Z, gamma, G, eps), {"dX": np.array(dX), "dgamma": (G * zhat).sum(axis=0), "dbeta": G.sum(axis=0)}


def case_head_outcome():
    run = experiments.head_count_runs([3], n_heads=2, n_steps=40)[0]
    probe = experiments.two_relation_probe()
    p, dh = run.final_params, run.final_params["W_Q"].shape[1] // 2
    W = []
    for h in range(2):
        c = slice(h * dh, (h + 1) * dh)
        W.append(attention_np(probe.X @ p["W_Q"][:, c], probe.X @ p["W_K"][:, c], probe.X @ p["W_V"][:, c], probe.mask)["weights"])
    masses = {}
    for name, keys in probe.relations.items():
        rows = np.flatnonzero(keys >= 0)
        masses[name] = tuple(float(w[rows, keys[rows]].mean()) for w in W)
    roles = tuple(max(masses, key=lambda r, h=h: masses[r][h]) if max(m[h] for m in masses.values()) > 0.5 else None for h in range(2))
    return experiments.head_outcome(run, 2), {
        "roles": roles,
        "previous": np.array(masses["previous"]),
        "matching": np.array(masses["matching"]),
        "loss": run.final_loss,
        "specialised": set(probe.relations) <= set(roles),
    }


def case_score_step_directions():
    n_cases, n, d = 30, 5, 3
    rng = np.random.default_rng(5)  # the documented draws: X, W_Q, W_K, W_V, G per case, in this order
    against, cosine = [], []
    for _ in range(n_cases):
        Xc = rng.normal(size=(n, d))
        WQ, WK, WV = (rng.normal(size=(d, d)) for _ in range(3))
        G = rng.normal(size=(n, d))
        fwd = attention_np(Xc @ WQ, Xc @ WK, Xc @ WV)
        A, c = fwd["weights"], math.sqrt(d)
        dA = G @ fwd["V"].T
        dZ = np.stack([(np.diag(a) - np.outer(a, a)) @ g for a, g in zip(A, dA)])
        g = attention_backward_np(fwd["Q"], fwd["K"], fwd["V"], G)
        dWQ, dWK = Xc.T @ g["dQ"], Xc.T @ g["dK"]
        moved = -(Xc @ dWQ @ fwd["K"].T + fwd["Q"] @ (Xc @ dWK).T) / c  # first-order change per unit step
        against.append(int(np.sum(np.sign(moved) == np.sign(dZ))))  # the push is -dZ
        cosine.append(float(np.sum(-dZ * moved) / (np.linalg.norm(dZ) * np.linalg.norm(moved))))
    return experiments.score_step_directions(n_cases, seed=5, n_tokens=n, d=d), {
        "n_tokens": n,
        "d": d,
        "against": np.array(against),
        "cosine": np.array(cosine),
        "fraction_against": sum(against) / (n_cases * n * n),
    }


def case_copying_score():
    """Chapter 17's copying measures of a head's OV circuit in tokens, on a matrix with a mixed diagonal."""
    rng = np.random.default_rng(17)
    C = rng.normal(size=(6, 6)) + np.diag([3.0, 2.5, -1.0, 4.0, 0.1, 2.0])
    lam = np.linalg.eigvals(C)
    others = np.where(np.eye(6, dtype=bool), -np.inf, C).max(axis=1)
    return induction.copying_score(C), {
        "eigenvalue": float(lam.sum().real / np.abs(lam).sum()),
        "diagonal": float(np.mean(np.diag(C) > others)),
    }


#: function -> cases; each case returns (what attnlib gives, every field computed here).
EXAMPLES: dict[str, list[Callable[[], tuple[Any, Any]]]] = {
    "core.attention": [case_attention, case_attention_masked, case_attention_unscaled],
    "core.self_attention": [case_self_attention],
    "core.cross_attention": [case_cross_attention],
    "compatibility.value_contributions": [case_value_contributions],
    "exact.exact_attention": [case_exact_attention, case_exact_attention_masked, case_exact_attention_unscaled],
    "exact.exact_attention_gradients": [case_exact_attention_gradients],
    "exact.softmax_backward_proof": [],  # filled below (its fields are expressions in n symbols)
    "backward.attention_backward": [case_attention_backward, case_attention_backward_masked],
    "backward.softmax_backward": [case_softmax_backward],
    "backward.cross_attention_backward": [case_cross_attention_backward],
    "backward.multi_head_attention_backward": [case_multi_head_attention_backward],
    "blocked.flash_attention_backward": [case_flash_attention_backward],
    "blocked.online_softmax_trace": [case_online_softmax_trace, case_online_softmax_trace_masked],
    "blocked.key_blocks": [case_key_blocks],
    "blocked.two_block_identity": [case_two_block_identity],
    "cost.attention_traffic": [case_attention_traffic],
    "cost.attention_traffic_terms": [case_attention_traffic_terms],
    "compatibility.pairwise_score_cost": [case_pairwise_score_cost],
    "compatibility.bilinear_parameter_counts": [case_bilinear_parameter_counts],
    "compatibility.symbolic_bilinear_regrouping": [case_symbolic_bilinear_regrouping],
    "heads.symbolic_parameter_count": [case_symbolic_parameter_count],
    "paths.layer_comparison": [case_layer_comparison],
    "positional.symbolic_offset_rotation": [case_symbolic_offset_rotation],
    "retrieval.retrieve": [case_retrieval],
    "retrieval.bahdanau_retrieval": [case_retrieval],
    "retrieval.transformer_retrieval": [case_retrieval],
    "scaling.dot_product_variance_steps": [case_dot_product_variance_steps],
    "scaling.dot_product_variance_table": [case_dot_product_variance_table],
    "scaling.saturation_sweep": [case_saturation_sweep],
    "scaling.sharpness_vs_dk": [case_sharpness_vs_dk],
    "measure.fit_power_law": [case_fit_power_law],
    "experiments.scaling_equivalence": [case_scaling_equivalence],
    "experiments.head_outcome": [case_head_outcome],
    "experiments.score_step_directions": [case_score_step_directions],
    "transformer.encoder_layer_parts": [case_encoder_layer_parts, case_encoder_layer_parts_pre_norm_gelu],
    "transformer.layer_norm_backward": [case_layer_norm_backward],
    "induction.copying_score": [case_copying_score],
}


def case_softmax_backward_proof():
    proof = exact.softmax_backward_proof(3)
    z = sp.symbols("z_1:4", real=True)
    g = sp.symbols("g_1:4", real=True)

    def derivative(k):
        def at(point):
            zs, gs = np.array([point[s] for s in z]), np.array([point[s] for s in g])
            a = softmax_rows(zs[None])[0]
            return float(gs @ (np.diag(a) - np.outer(a, a))[:, k])  # column k of the Jacobian: d a_j / d z_k

        return at

    def each(expressions):
        assert len(expressions) == 3
        for k, e in enumerate(expressions):
            at_random_points(e, z + g, derivative(k))

    return proof, {"logits": z, "upstream": g, "by_differentiation": each, "by_formula": each, "holds": True}


EXAMPLES["exact.softmax_backward_proof"] = [case_softmax_backward_proof]


#: Record-returning functions whose results are experiments, data or measurements, with the reason.
EXPERIMENTS: dict[str, str] = {
    "experiments.head_count_runs": "training runs (TrainingRun); printed numbers held by expected_outputs",
    "experiments.learn_previous_token": "a training run",
    "experiments.learning_rate_sweep": "training runs",
    "experiments.scaling_runs": "training runs",
    "experiments.previous_token_probe": "a data set (Task) the runs are measured on",
    "experiments.two_relation_probe": "a data set (Task)",
    "measure.measure_attention": "timings and tracemalloc peaks of this machine at this moment",
    "measure.cache_sizes": "the caches of the machine that runs the chapter, read at run time",
    "induction.book_model": "chapter 17's trained model",
    "induction.book_probe": "a data set (TokenBatch)",
    "induction.book_runs": "training runs (InductionRun)",
    "induction.repeated_tokens": "a data set (TokenBatch)",
}
# The exercises' numbers (attnlib.variants) are held by tests/exercises and the grading tests.
EXERCISE_MODULES = ("variants",)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_field_of_every_worked_example(name):
    cases = EXAMPLES[name]
    assert cases, f"{name} has no case"
    for case in cases:
        got, want = case()
        where = f"{name} ({case.__name__})"
        if isinstance(want, dict):
            assert_record(got, want, where)
        else:
            assert_field(got, want, where)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_wrong_field_is_caught(name):
    """The comparison is not vacuous: changing any one field of the first case's result fails it."""
    got, want = EXAMPLES[name][0]()
    if not isinstance(want, (dict, Records)):
        with pytest.raises(AssertionError):
            assert_field(np.asarray(got) + 1e-6, want, name)
        return
    record, expected = (got[0], want[0]) if isinstance(want, Records) else (got, want)
    while isinstance(record, dict):  # a dict of records (the parts of a sum): its last part
        key = list(record)[-1]
        record, expected = record[key], expected[key]
    for field in field_names(record):
        value = getattr(record, field)
        wrong = _perturbed(value) if field not in STATISTICAL.get(name, ()) else value * 1.5
        assert wrong is not _SKIP or value is None or isinstance(value, tuple), f"{name}.{field}: no way to perturb {type(value)}"
        if wrong is _SKIP:
            continue
        changed = dataclasses.replace(record, **{field: wrong}) if dataclasses.is_dataclass(record) else record._replace(**{field: wrong})
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            assert_record(changed, expected, f"{name}.{field}")


_SKIP = object()

#: Fields that are estimates from samples: checked within their standard error, so perturbed by half.
STATISTICAL = {"scaling.dot_product_variance_table": ("unscaled", "scaled")}


def _perturbed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, np.integer)):
        return int(value) + 1
    if isinstance(value, float):
        return value + 1e-6 if np.isfinite(value) else 0.0
    if isinstance(value, str):
        return value + "?"
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.where(np.isfinite(value), value + 1e-6, 0.0)
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value + 1
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return ~value
    if isinstance(value, tuple) and value and all(isinstance(x, float) for x in value):
        return tuple(x + 1e-6 if np.isfinite(x) else 0.0 for x in value)
    if isinstance(value, tuple) and value and all(isinstance(x, int) for x in value):
        return tuple(x + 1 for x in value)
    if isinstance(value, sp.MatrixBase):
        return value + sp.ones(*value.shape) / 10**6 if all(e.is_finite for e in value) else _SKIP
    if isinstance(value, sp.Basic):
        return value + sp.Rational(1, 10**6)
    if isinstance(value, tuple) and value and all(isinstance(x, sp.Basic) for x in value):
        return tuple(x + sp.Rational(1, 10**6) for x in value)
    return _SKIP  # None, or a tuple of records (asserted through its own fields)


# --- the guard: every record a chapter prints is in one of the two lists --------------------------

MODULES = {
    m.__name__.split(".")[-1]: m
    for m in (
        core,
        backward,
        blocked,
        compatibility,
        cost,
        exact,
        experiments,
        heads,
        induction,
        measure,
        paths,
        positional,
        retrieval,
        scaling,
        training,
        transformer,
        variants,
    )
}


def _is_record(t: Any) -> bool:
    return inspect.isclass(t) and (dataclasses.is_dataclass(t) or (issubclass(t, tuple) and hasattr(t, "_fields")))


def _returns_record(fn: Callable) -> bool:
    try:
        ret = typing.get_type_hints(fn).get("return")
    except Exception:  # noqa: BLE001 (an annotation that does not resolve: not a record)
        return False
    todo = [ret]
    while todo:
        t = todo.pop()
        if _is_record(t):
            return True
        todo.extend(typing.get_args(t))
    return False


def record_functions() -> dict[str, Callable]:
    out = {}
    for mod_name, mod in MODULES.items():
        for name in getattr(mod, "__all__", []):
            fn = getattr(mod, name)
            if inspect.isfunction(fn) and _returns_record(fn):
                out[f"{mod_name}.{name}"] = fn
    return out


def chapter_code() -> dict[str, str]:
    texts = {}
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts[path.stem] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return texts


def test_every_record_a_chapter_prints_is_listed():
    code = chapter_code()
    functions = record_functions()
    assert len(functions) > 30, sorted(functions)  # the scan finds attnlib's records
    unlisted = {}
    for qualified in functions:
        mod_name, name = qualified.split(".")
        if mod_name in EXERCISE_MODULES or qualified in EXAMPLES or qualified in EXPERIMENTS:
            continue
        used = [stem for stem, src in code.items() if re.search(rf"\b{name}\(", src)]
        if used:
            unlisted[qualified] = used
    assert not unlisted, f"chapters print records of these functions, which neither EXAMPLES nor EXPERIMENTS lists: {unlisted}"


def test_the_lists_name_real_functions():
    functions = record_functions()
    for qualified in [*EXAMPLES, *EXPERIMENTS]:
        mod_name, name = qualified.split(".")
        assert hasattr(MODULES[mod_name], name), qualified
    # array-returning worked examples are listed by hand; the rest must return records
    by_hand = {"compatibility.value_contributions", "backward.softmax_backward"}
    assert not [q for q in EXAMPLES if q not in functions and q not in by_hand]
