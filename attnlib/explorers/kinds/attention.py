"""The attention explorer (chapters 3, 6, 9 and the playground): sliders for W_Q, W_K, W_V, a d_k control and a mask.

Everything about this kind is here: its settings and their checks, the views
(computed by :mod:`attnlib.core`), its static snapshot, its class and its
constructors; its front end is ``static/attention.js``.

``attention_views`` computes what the panel shows and never raises for a
setting that passed the checks: a query row that may attend to no key gets a
message instead of numbers, and a value too large for float64 (overflow) gives
an ``error`` text and no result. ``reference_views`` is the same for a state
dictionary (the JSON the browser sees); the golden test compares the
JavaScript with it.

Examples
--------
>>> ex = attention_explorer()
>>> ex.W_Q = [[3, 0], [0, 3]]
>>> ex.result.weights.round(4)[0].tolist()
[0.6821, 0.0818, 0.2362]
>>> ex.W_Q = [[4, 0], [0, 3]]  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
attnlib.explorers.base.InvalidSetting: W_Q must be a (2, 2) matrix with entries in the sliders' range [-3, 3]; got ...
>>> ex.W_Q.tolist()
[[3.0, 0.0], [0.0, 3.0]]
>>> v = attention_views(running_example(), np.eye(2), np.eye(2), [[1, 0], [1, 1]], dk=2, mask=None, tokens=TOKENS)
>>> v.result.output.round(4)[2].tolist()
[1.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from traitlets import Dict, Int, List, Unicode

from ..._validate import CAUSAL, MASK_FORMS, NO_SCALING, SQRT_D_K, as_int, as_mask
from ...core import TOKENS, AttentionResult, attention, causal_mask, project, running_example, scale_divisor
from ...plots import OKABE_ITO
from ..base import Explorer, InvalidSetting, checked_trait, matrix_trait
from ..registry import factory
from ..settings import (
    MAX_D_MODEL,
    MAX_TOKENS,
    SettingError,
    check_choice,
    check_flag_matrix,
    check_names,
    check_seed,
    check_text,
    check_tokens,
    check_X,
    float_matrix,
    frozen,
    same_shape,
    shown,
)
from ..snapshot import esc, flex, matrix_text, table_html

__all__ = [
    "ALL_CONTROLS",
    "ALL_VIEWS",
    "DK_CHOICES",
    "MASK_MODES",
    "MAX_D_MODEL",
    "MAX_TOKENS",
    "SLIDER",
    "W_NAMES",
    "AttentionExplorer",
    "AttentionViews",
    "attention_explorer",
    "attention_views",
    "check_dk",
    "check_mask_cells",
    "check_mask_mode",
    "check_weight",
    "dk_choices_for",
    "effective_mask",
    "mask_explorer",
    "no_key_message",
    "overflow_message",
    "parse_mask",
    "presets",
    "random_draws",
    "reference_views",
    "value_projection_explorer",
]

_TOL = 1e-12

#: Range and step of every weight slider (exercise 6.3 multiplies W_Q by 3).
SLIDER = {"min": -3.0, "max": 3.0, "step": 0.05}
#: Choices of the d_k control of the attention explorer; 0 means "no scaling".
DK_CHOICES = (0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512)
MASK_MODES = ("none", "causal", "custom")
ALL_CONTROLS = ("W_Q", "W_K", "W_V", "presets", "d_k", "mask")
ALL_VIEWS = ("Q", "K", "V", "scores", "scaled", "weights", "output", "plane")
W_NAMES = ("W_Q", "W_K", "W_V")


def check_weight(name: str, value: Any, d: int, lo: float = SLIDER["min"], hi: float = SLIDER["max"]) -> np.ndarray:
    """A projection matrix ``(d, d)`` with finite entries in the sliders' range.

    Raises
    ------
    ValueError
        ``value`` is not a ``(d, d)`` matrix with entries from ``lo`` to ``hi``; the message (of a ``SettingError``, a
        ``ValueError``) starts with the setting's name.

    Examples
    --------
    >>> check_weight("W_V", [[1, 0], [1, 1]], 2).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    expected = f"a ({d}, {d}) matrix with entries in the sliders' range [{lo:g}, {hi:g}]"
    arr = float_matrix(name, value, expected)
    if arr.shape != (d, d) or (arr < lo - _TOL).any() or (arr > hi + _TOL).any():
        raise SettingError(name, expected, shown(arr))
    return frozen(np.clip(arr, lo, hi))


def dk_choices_for(d: int) -> list[int]:
    """The d_k choices for tokens of width ``d``: no scaling (0), ``DK_CHOICES`` and the true d_k.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> dk_choices_for(2)[:4], 5 in dk_choices_for(5)
    ([0, 1, 2, 3], True)
    """
    return sorted(set(DK_CHOICES) | {int(d)})


def check_dk(value: Any, choices: Sequence[int], width: int | None = None) -> int:
    """The d_k the scores are divided by the root of, as the trait ``dk`` keeps it (0 = no scaling).

    In attnlib's one scale vocabulary: ``attnlib.NO_SCALING`` (stored as 0), ``attnlib.SQRT_D_K``
    (the tokens' own width ``width``), or one of ``choices``. ``None``, ``0`` and ``"width"`` are the
    old spellings of ``NO_SCALING`` and ``SQRT_D_K`` (aliases for one release).

    Raises
    ------
    ValueError
        (a ``SettingError``) ``value`` is none of these; the message starts with ``d_k``.

    Examples
    --------
    >>> check_dk(NO_SCALING, [0, 1, 2]), check_dk(2, [0, 1, 2]), check_dk(SQRT_D_K, [0, 1, 2], 2)
    (0, 2, 2)
    """
    named = [c for c in choices if c]
    expected = f"attnlib.NO_SCALING, attnlib.SQRT_D_K or one of {named}" if 0 in choices else f"attnlib.SQRT_D_K or one of {named}"
    if value is NO_SCALING or value is None:
        if 0 in choices:
            return 0
        raise SettingError("d_k", expected, shown(value))
    if value is SQRT_D_K or (isinstance(value, str) and value == "width"):
        if width is not None and width in choices:
            return int(width)
        raise SettingError("d_k", expected, shown(value))
    try:
        return check_choice("d_k", value, choices)
    except SettingError:
        raise SettingError("d_k", expected, shown(value)) from None


def check_mask_mode(value: Any) -> str:
    """``"none"``, ``"causal"`` or ``"custom"``.

    Raises
    ------
    ValueError
        ``value`` is not ``"none"``, ``"causal"`` or ``"custom"``; the message (of a ``SettingError``, a ``ValueError``)
        starts with the setting's name.
    """
    if not isinstance(value, str) or value not in MASK_MODES:
        raise SettingError("mask", f"one of {list(MASK_MODES)} as the mask mode", shown(value))
    return value


def check_mask_cells(value: Any, n: int) -> np.ndarray:
    """A boolean ``(n, n)`` pattern, ``True`` = may attend. Rows with no allowed key are allowed here:
    the explorer shows a message for them.

    Raises
    ------
    ValueError
        ``value`` is not a boolean ``(n, n)`` matrix; the message (of a ``SettingError``, a ``ValueError``) starts with
        the setting's name.

    Examples
    --------
    >>> check_mask_cells([[True, False], [True, True]], 2).tolist()
    [[True, False], [True, True]]
    """
    return check_flag_matrix("mask", value, (n, n), f"a boolean ({n}, {n}) matrix (True = may attend)")


def effective_mask(mode: str, cells: np.ndarray, n: int) -> np.ndarray:
    """The pattern in force: all True for ``none``, lower-triangular for ``causal``, the cells for ``custom``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    if mode == "none":
        return frozen(np.ones((n, n), dtype=bool))
    if mode == "causal":
        return frozen(causal_mask(n))
    return frozen(np.asarray(cells, dtype=bool))


def parse_mask(value: Any, n: int) -> tuple[str, np.ndarray]:
    """``ex.mask = value`` in attnlib's one mask grammar (``attnlib._validate.as_mask``), as (mode, cells).

    ``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean ``(n, n)`` matrix or an additive
    one (0 / ``-inf``); the old texts ``"none"`` and ``"causal"`` are aliases for one release. A row that
    may attend to no key is kept: the explorer shows a message for it.

    Raises
    ------
    ValueError
        (a ``SettingError``) ``value`` is none of these; the message starts with ``mask``.

    Examples
    --------
    >>> mode, cells = parse_mask(CAUSAL, 2)
    >>> mode, cells.tolist()
    ('causal', [[True, False], [True, True]])
    """
    try:
        allowed = as_mask("mask", value, (n, n), lazy=True, allow_empty_rows=True)
        if allowed is None:
            return "none", effective_mask("none", None, n)
        if allowed is CAUSAL:
            return "causal", effective_mask("causal", None, n)
        if not isinstance(allowed, np.ndarray):  # a function: its pattern becomes the cells of a custom mask
            allowed = as_mask("mask", allowed, (n, n), allow_empty_rows=True)
    except ValueError as exc:
        expected = MASK_FORMS.replace("(n_q, n_k)", f"({n}, {n})")
        raise SettingError("mask", expected, f"{shown(value)} ({exc})") from None
    return "custom", check_mask_cells(allowed, n)


def no_key_message(token: str) -> str:
    """What a query row that may attend to no key shows (the front end prints the same text).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> no_key_message("x2")
    'x2 may attend to no key, so its softmax is undefined: no weights and no output for this row.'
    """
    return f"{token} may attend to no key, so its softmax is undefined: no weights and no output for this row."


_OVERFLOW_NAMES = {"Q": "queries Q", "K": "keys K", "V": "values V", "scores": "scores", "output": "outputs"}


def overflow_message(view: str) -> str:
    """What the panel says when ``view`` (``Q``, ``K``, ``V``, ``scores`` or ``output``) holds inf or NaN.

    The front end writes the same text.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> overflow_message("scores")
    'The scores overflow (a value is infinite or not a number), so nothing can be shown for this setting.'
    """
    return f"The {_OVERFLOW_NAMES[view]} overflow (a value is infinite or not a number), so nothing can be shown for this setting."


@dataclass(frozen=True)
class AttentionViews:
    """Everything the attention explorers show for one setting.

    Attributes
    ----------
    Q, K, V, scores:
        The projections and ``Q K^T`` (may hold ``inf`` when ``error`` says so).
    scaled:
        Scores divided by the divisor, ``-inf`` where the mask forbids.
    weights, output:
        Rows with a message hold zeros (they are shown as the message); ``None`` when ``error``.
    divisor:
        What the scores are divided by (1 without scaling).
    messages:
        One entry per query row: ``None`` or ``no_key_message``.
    result:
        The :class:`~attnlib.core.AttentionResult` when every row is defined and nothing overflows, else ``None``.
    message:
        ``None``, or a sentence naming the rows with no allowed key, or the overflow text.
    error:
        ``""`` or the overflow text.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    scores: np.ndarray | None
    scaled: np.ndarray | None
    weights: np.ndarray | None
    output: np.ndarray | None
    divisor: float
    messages: tuple[str | None, ...]
    result: AttentionResult | None
    message: str | None
    error: str


def _first_overflow(**views: np.ndarray) -> str:
    for name, arr in views.items():
        if not np.isfinite(arr).all():
            return overflow_message(name)
    return ""


def attention_views(
    X: np.ndarray, W_Q: Any, W_K: Any, W_V: Any, *, dk: Any, mask: Any, tokens: Sequence[str]
) -> AttentionViews:
    """The views of one setting, computed by :mod:`attnlib.core`; never raises for checked inputs.

    ``dk`` is the d_k the scores are divided by the root of, ``attnlib.NO_SCALING`` (or 0, the
    trait's encoding) for no scaling and ``attnlib.SQRT_D_K`` for the width of ``X``; ``mask`` is
    any form of attnlib's one mask grammar (a row that may attend to no key gets a message).

    Raises
    ------
    ValueError
        ``dk`` or ``mask`` is not of these forms (only reachable by calling it directly: the explorer checks its
        settings first).

    Examples
    --------
    >>> X = running_example()
    >>> v = attention_views(X, np.eye(2), np.eye(2), np.eye(2), dk=2, mask=np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1]], bool), tokens=TOKENS)
    >>> v.result is None, v.messages[0] == no_key_message("x1"), v.weights.round(4)[1].tolist()
    (True, True, [0.3302, 0.6698, 0.0])
    """
    n = X.shape[0]
    dk = X.shape[1] if dk is SQRT_D_K else 0 if dk is NO_SCALING else as_int("dk", dk, minimum=0, what="NO_SCALING, SQRT_D_K or a d_k")
    scale: Any = NO_SCALING if dk == 0 else scale_divisor(dk)
    divisor = scale_divisor(1, NO_SCALING) if dk == 0 else scale_divisor(dk)
    none: tuple[str | None, ...] = (None,) * n
    with np.errstate(over="ignore", invalid="ignore"):
        # the inputs are already checked, so the only way the products can fail is overflow
        # (attnlib.core refuses an overflowing product with a ValueError; here it is shown as a message)
        Q, K, V = X @ np.asarray(W_Q, dtype=float), X @ np.asarray(W_K, dtype=float), X @ np.asarray(W_V, dtype=float)
        error = _first_overflow(Q=Q, K=K, V=V)
        if error:
            return AttentionViews(Q, K, V, None, None, None, None, divisor, none, None, error, error)
        Q, K, V = project(X, W_Q, "X", "W_Q"), project(X, W_K, "X", "W_K"), project(X, W_V, "X", "W_V")
        scores = Q @ K.T
        error = _first_overflow(scores=scores)
        if error:
            return AttentionViews(Q, K, V, scores, None, None, None, divisor, none, None, error, error)
    mask = as_mask("mask", mask, (n, n), allow_empty_rows=True)  # the one mask grammar; an empty row gets a message
    allowed = np.ones((n, n), dtype=bool) if mask is None else mask
    ok = np.flatnonzero(allowed.any(axis=1))
    messages = tuple(None if allowed[i].any() else no_key_message(str(tokens[i])) for i in range(n))
    if ok.size == n:
        try:
            result = attention(Q, K, V, mask=mask, scale=scale)
        except ValueError:  # only the output A V can overflow here: Q, K, V and the scores are finite
            error = overflow_message("output")
            return AttentionViews(Q, K, V, scores, None, None, None, divisor, none, None, error, error)
        return AttentionViews(Q, K, V, result.scores, result.scaled, result.weights, result.output, divisor, messages, result, None, "")
    scaled = np.where(allowed, scores / divisor, -np.inf)
    weights, output = np.zeros((n, n)), np.zeros((n, V.shape[1]))
    if ok.size:
        try:
            partial = attention(Q[ok], K, V, mask=allowed[ok], scale=scale)
        except ValueError:  # only the output A V can overflow here
            error = overflow_message("output")
            return AttentionViews(Q, K, V, scores, scaled, None, None, divisor, none, None, error, error)
        weights[ok], output[ok] = partial.weights, partial.output
    empty = [str(tokens[i]) for i in range(n) if messages[i]]
    rows = "query row" if len(empty) == 1 else "query rows"
    message = f"{rows} {', '.join(empty)} may attend to no key; their weights and outputs are undefined"
    return AttentionViews(Q, K, V, scores, scaled, weights, output, divisor, messages, None, message, "")


def reference_views(state: dict) -> dict:
    """The attention views for a state dictionary (the JSON of ``ex.state_dict()``), as plain lists.

    This is the reference of the front end's golden te ``weights`` and
    ``output`` hold ``None`` for a row with a message; ``scaled`` holds
    ``-inf`` (a Python float) where the mask forbids; a view that overflowed is ``None`` (``error`` says so).

    Raises
    ------
    ValueError
        ``state`` is not a state of the attention explorer (its traits, each of its kind). The message names the
        argument.

    Examples
    --------
    >>> s = {"X": [[1, 0], [0, 1], [0.5, 0.5]], "tokens": ["x1", "x2", "x3"], "W_Q": [[1, 0], [0, 1]],
    ...      "W_K": [[1, 0], [0, 1]], "W_V": [[1, 0], [0, 1]], "dk": 0, "mask_mode": "none",
    ...      "mask_cells": [[True] * 3] * 3}
    >>> [round(w, 4) for w in reference_views(s)["weights"][0]]
    [0.5065, 0.1863, 0.3072]
    """
    keys = ("X", "tokens", "W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells")
    if not isinstance(state, dict) or any(k not in state for k in keys):
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"state must be a dict with the keys {list(keys)} (ex.state_dict()); got {got}")
    try:
        X = check_X(state["X"])
        n, d = X.shape
        tokens = check_tokens(state["tokens"], n)
        W = {name: check_weight(name, state[name], d) for name in W_NAMES}
        dk = check_dk(state["dk"], dk_choices_for(d))
        mode = check_mask_mode(state["mask_mode"])
        cells = check_mask_cells(state["mask_cells"], n)
        mask = None if mode == "none" else effective_mask(mode, cells, n)
    except SettingError as err:
        raise ValueError(f"state: {err}") from None
    v = attention_views(X, W["W_Q"], W["W_K"], W["W_V"], dk=dk, mask=mask, tokens=tokens)

    def rows(M: np.ndarray | None, gaps: bool) -> list | None:
        # an overflowed view has no numbers to compare (the error says what overflowed); -inf is a masked score
        if M is None or np.isnan(M).any() or np.isposinf(M).any() or (np.isneginf(M).any() and M is not v.scaled):
            return None
        return [None if gaps and v.messages[i] else [float(x) for x in M[i]] for i in range(M.shape[0])]

    return {
        "Q": rows(v.Q, False),
        "K": rows(v.K, False),
        "V": rows(v.V, False),
        "scores": rows(v.scores, False),
        "scaled": rows(v.scaled, False),
        "weights": rows(v.weights, True),
        "output": rows(v.output, True),
        "divisor": v.divisor,
        "messages": list(v.messages),
        "error": v.error,
    }


def random_draws(d: int, names: Sequence[str] = W_NAMES, count: int = 12, seed: int = 0) -> list[dict[str, list[list[float]]]]:
    """``count`` seeded draws of the matrices ``names``: entries uniform in [-1.5, 1.5], on the slider's step grid.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> draws = random_draws(2)
    >>> len(draws), sorted(draws[0]), all(abs(x * 20 - round(x * 20)) < 1e-9 for x in sum(draws[0]["W_Q"], []))
    (12, ['W_K', 'W_Q', 'W_V'], True)
    """
    step = SLIDER["step"]
    out = []
    for k in range(count):
        rng = np.random.default_rng([seed, k])
        draw = {}
        for name in W_NAMES:
            values = np.round(np.round(rng.uniform(-1.5, 1.5, size=(d, d)) / step) * step, 2)
            if name in names:
                draw[name] = values.tolist()
        out.append(draw)
    return out


def presets(d: int, names: Sequence[str] = W_NAMES) -> list[dict[str, Any]]:
    """The preset buttons: identity for every matrix in ``names``, and (for d = 2 with W_V) the post's W_V.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> [p["id"] for p in presets(2)], presets(2)[1]["values"]
    (['identity', 'post'], {'W_V': [[1.0, 0.0], [1.0, 1.0]]})
    """
    eye = np.eye(d).tolist()
    out = [{"id": "identity", "label": "identity", "tooltip": " = ".join(names) + " = I", "values": {n: eye for n in names}}]
    if d == 2 and "W_V" in names:
        out.append(
            {
                "id": "post",
                "label": "post's W_V",
                "tooltip": "W_V = [[1, 0], [1, 1]], the example of chapter 3",
                "values": {"W_V": [[1.0, 0.0], [1.0, 1.0]]},
            }
        )
    return out


def plane_svg(X: np.ndarray, output: np.ndarray | None, tokens: Sequence[str], messages: Sequence[str | None]) -> str:
    """Tokens (solid) and outputs (dashed) as arrows in the noun/verb plane, as an inline SVG."""
    n = len(tokens)
    rows = [i for i in range(n) if output is not None and not messages[i]]
    pts = np.vstack([X] + ([output[rows]] if rows else []))
    lim = max(1.2, float(np.abs(pts).max()) * 1.15)
    size, pad = 230, 18

    def xy(p: np.ndarray) -> tuple[float, float]:
        return pad + (p[0] + lim) / (2 * lim) * (size - 2 * pad), size - pad - (p[1] + lim) / (2 * lim) * (size - 2 * pad)

    ox, oy = xy(np.zeros(2))
    items = [
        f'<line x1="{pad}" y1="{oy:.1f}" x2="{size - pad}" y2="{oy:.1f}" stroke="#999" stroke-width="1"/>',
        f'<line x1="{ox:.1f}" y1="{pad}" x2="{ox:.1f}" y2="{size - pad}" stroke="#999" stroke-width="1"/>',
        f'<text x="{size - pad}" y="{oy + 12:.1f}" font-size="10" text-anchor="end" fill="#555">noun &#8594;</text>',
        f'<text x="{ox - 4:.1f}" y="{pad + 8}" font-size="10" text-anchor="end" fill="#555">verb &#8593;</text>',
    ]
    desc = []
    for i, t in enumerate(tokens):
        colour = OKABE_ITO[i % len(OKABE_ITO)]
        out_vec = output[i] if i in rows else None
        for vec, label, dash in ((X[i], t, ""), (out_vec, f"o{i + 1}", ' stroke-dasharray="5,3"')):
            if vec is None:
                continue
            x, y = xy(vec)
            items.append(f'<line x1="{ox:.1f}" y1="{oy:.1f}" x2="{x:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="2.5"{dash}/>')
            items.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>')
            # token labels above-right of the tip, output labels below-right: an output on top of a token stays readable
            dy = 12 if dash else -4
            items.append(f'<text x="{x + 4:.1f}" y="{y + dy:.1f}" font-size="11">{esc(label)}</text>')
            desc.append(f"{label} at ({vec[0]:.2f}, {vec[1]:.2f})")
    label = "Noun/verb plane: tokens as solid arrows, outputs as dashed arrows; " + "; ".join(desc)
    return (
        f'<figure style="margin:0 14px 10px 0"><svg role="img" aria-label="{esc(label)}" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" style="background:#fff;border:1px solid #ccc">{"".join(items)}</svg>'
        f'<figcaption style="font-family:sans-serif;font-size:12px">tokens (solid) and outputs (dashed)</figcaption></figure>'
    )


def divisor_text(dk: int, divisor: float) -> str:
    """``no scaling: scores divided by 1`` or ``scores divided by √d_k = ...``."""
    return "no scaling: scores divided by 1" if dk == 0 else f"scores divided by \u221a{dk} = {divisor:.4f}"


def attention_snapshot(
    *,
    tokens: Sequence[str],
    X: np.ndarray,
    views: AttentionViews,
    view_names: Sequence[str],
    settings: Sequence[str],
    dk: int,
) -> str:
    """The attention explorer's tables for one setting (the views it shows, in its order)."""
    n, d = X.shape
    toks = list(tokens)
    dims = [f"d{j + 1}" for j in range(d)]
    msgs = {i: m for i, m in enumerate(views.messages) if m}
    tables: dict[str, str] = {}
    head = f'<p style="font-family:monospace;font-size:12px">{esc("; ".join(settings))}</p>' if settings else ""
    if views.error:
        return head + f'<p class="attnlib-message" role="note">{esc(views.error)}</p>'
    for key, M, labels, cols, title in (
        ("Q", views.Q, [f"q{i + 1}" for i in range(n)], dims, "Q = X W_Q"),
        ("K", views.K, [f"k{i + 1}" for i in range(n)], dims, "K = X W_K"),
        ("V", views.V, [f"v{i + 1}" for i in range(n)], dims, "V = X W_V"),
        ("scores", views.scores, toks, toks, "scores Q K\u1d40 (rows: queries, columns: keys)"),
        ("scaled", views.scaled, toks, toks, f"scaled and masked scores ({divisor_text(dk, views.divisor)}; \u2212\u221e = masked)"),
    ):
        if key in view_names and M is not None:
            tables[key] = table_html(M, labels, cols, name=key, title=title)
    if "weights" in view_names:
        tables["weights"] = table_html(
            views.weights, toks, toks, name="weights", title="softmax weights (each row sums to 1)",
            vmin=0.0, vmax=1.0, row_sums=True, row_messages=msgs,
        )  # fmt: skip
    if "output" in view_names:
        tables["output"] = table_html(
            views.output, [f"o{i + 1}" for i in range(n)], dims, name="output", title="outputs O = weights \u00b7 V", row_messages=msgs
        )
    if "plane" in view_names and d == 2:
        tables["plane"] = plane_svg(X, views.output, toks, views.messages)
    if views.message:
        head += f'<p class="attnlib-message" role="note">{esc(views.message)}</p>'
    layout = [["Q", "K", "V"], ["scores", "scaled"], ["weights", "output", "plane"]]
    return head + "".join(flex(*[tables[k] for k in row if k in tables]) for row in layout if any(k in tables for k in row))


def attention_summary(*, title: str, tokens: Sequence[str], views: AttentionViews, settings: Sequence[str], show_values: bool) -> str:
    """The text/plain face of the attention explorer: setting, values, weights and outputs."""
    n = len(tokens)
    lines = [f"{title} ({', '.join(tokens)})", *settings]
    if show_values and np.isfinite(views.V).all():  # overflowed values are not numbers to show: the error says so
        lines += ["values V:", matrix_text(views.V, [f"v{i + 1}" for i in range(n)])]
    if views.error:
        lines.append(views.error)
        return "\n".join(lines)
    lines += ["weights (each row sums to 1):", matrix_text(views.weights, tokens, messages=views.messages)]
    lines += ["outputs:", matrix_text(views.output, [f"o{i + 1}" for i in range(n)], messages=views.messages)]
    return "\n".join(lines)


class AttentionExplorer(Explorer, kind="attention", module="attention.js"):
    """Self-attention on ``X`` with a slider for every entry of ``W_Q``, ``W_K`` and ``W_V``.

    Build it with ``attnlib.explorers.attention_explorer()`` (everything) or one
    of the focused constructors. The state is readable and settable from code:

    * ``W_Q``, ``W_K``, ``W_V``: the matrices (read-only numpy arrays; assign a matrix);
    * ``d_k``: the d_k the scores are scaled for, ``attnlib.NO_SCALING`` for no scaling (the trait ``dk``,
      the page's encoding, holds 0 then); assign ``attnlib.NO_SCALING``, ``attnlib.SQRT_D_K`` (the
      tokens' width) or one of ``dk_choices`` (``None`` and 0 are old spellings of ``NO_SCALING``);
    * ``mask``: the boolean mask in force (``None`` = no mask); assign any form of attnlib's one mask
      grammar: ``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive
      matrix (``"causal"`` and ``"none"`` are old spellings);
    * ``result``: the :class:`~attnlib.core.AttentionResult` of the setting, or ``None`` when some query
      row may attend to no key or a value overflows (``message`` says which);
    * ``set(...)`` changes several at once (all or nothing), ``reset()``, ``randomise()``.

    Parameters
    ----------
    X:
        Token vectors as rows, at most 8 tokens of width at most 4 (default: the running example).
    tokens:
        One label per row of ``X``.
    controls, views:
        Which controls and views the panel shows: lists of names out of ``ALL_CONTROLS`` and ``ALL_VIEWS``.
    W_Q, W_K, W_V:
        Starting matrices, ``(d_model, d_model)`` with entries in ``[-3, 3]`` (default: identity).
    d_k:
        Starting scaling: ``attnlib.SQRT_D_K`` (the default: the width of ``X``), ``attnlib.NO_SCALING``
        or one of the d_k choices.
    mask:
        Starting mask, in attnlib's one mask grammar (see ``mask`` above).
    title:
        The panel's title, a text.
    seed:
        Seed of the seeded random presets, by attnlib's one seed rule.

    Raises
    ------
    ValueError
        (an ``InvalidSetting``, whose message starts with the argument's name) ``X`` is not a finite real matrix of 1 to
        8 rows and 1 to 4 columns; ``tokens`` is not one label per row; ``controls`` or ``views`` is not a list of names
        out of ``ALL_CONTROLS`` or ``ALL_VIEWS``; ``W_Q``, ``W_K`` or ``W_V`` is not a ``(d, d)`` matrix in the sliders'
        range; ``d_k`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a d_k choice; ``mask`` is not a mask of
        attnlib's grammar; ``title`` is not a text; ``seed`` is not a seed.
    """

    STATE = ("W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells")
    SETTABLE = ("title", "X", "tokens", "W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells")

    tokens = checked_trait([])
    X = matrix_trait()
    controls = List(Unicode()).tag(sync=True)
    views = List(Unicode()).tag(sync=True)
    slider = Dict().tag(sync=True)
    dk_choices = List(Int()).tag(sync=True)
    true_dk = Int(1).tag(sync=True)
    presets = List(Dict()).tag(sync=True)
    random_draws = List(Dict()).tag(sync=True)
    initial = Dict().tag(sync=True)
    W_Q = matrix_trait()
    W_K = matrix_trait()
    W_V = matrix_trait()
    dk = checked_trait(0)
    mask_mode = checked_trait("none")
    mask_cells = matrix_trait()

    def __init__(
        self,
        X: Any = None,
        tokens: Sequence[str] | None = None,
        *,
        controls: Sequence[str] = ALL_CONTROLS,
        views: Sequence[str] = ALL_VIEWS,
        W_Q: Any = None,
        W_K: Any = None,
        W_V: Any = None,
        d_k: Any = SQRT_D_K,
        mask: Any = None,
        title: str = "Attention explorer",
        seed: int = 0,
    ) -> None:
        x = running_example() if X is None else self._checked(check_X, X)
        n, d = x.shape
        labels = (TOKENS if X is None else [f"x{i + 1}" for i in range(n)]) if tokens is None else tokens
        labels = self._checked(check_tokens, labels, n)
        controls = self._checked(check_names, "controls", controls, ALL_CONTROLS)
        views = self._checked(check_names, "views", views, ALL_VIEWS)
        title = self._checked(check_text, "title", title)
        seed = self._checked(check_seed, "seed", seed)
        choices = dk_choices_for(d)
        start = {
            name: self._checked(check_weight, name, np.eye(d) if given is None else given, d)
            for name, given in zip(W_NAMES, (W_Q, W_K, W_V))
        }
        dk = self._checked(check_dk, d_k, choices, d)
        mode, cells = self._checked(parse_mask, mask, n)
        moved = tuple(name for name in W_NAMES if name in controls)
        self._draw = 0
        super().__init__(
            title=title,
            tokens=labels,
            X=x,
            controls=list(controls),
            views=[v for v in views if not (v == "plane" and d != 2)],
            slider=dict(SLIDER),
            dk_choices=choices,
            true_dk=d,
            presets=presets(d, moved) if moved else [],
            random_draws=random_draws(d, moved, seed=seed) if moved and tuple(controls) != ("W_V", "presets") else [],
            initial={
                **{name: start[name].tolist() for name in W_NAMES},
                "dk": dk,
                "mask_mode": mode,
                "mask_cells": cells.tolist(),
            },
            W_Q=start["W_Q"],
            W_K=start["W_K"],
            W_V=start["W_V"],
            dk=dk,
            mask_mode=mode,
            mask_cells=cells,
        )

    # -- validation ------------------------------------------------------------
    def _check_X(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return same_shape("X", check_X(value), self.X, "the explorer's tokens and sliders")

    def _check_tokens(self, value: Any, now: Callable[[str], Any]) -> list[str]:
        return check_tokens(value, self.X.shape[0])

    def _check_W_Q(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return check_weight("W_Q", value, self.X.shape[1])

    def _check_W_K(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return check_weight("W_K", value, self.X.shape[1])

    def _check_W_V(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return check_weight("W_V", value, self.X.shape[1])

    def _check_dk(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_dk(value, self.dk_choices, self.true_dk)

    def _check_mask_mode(self, value: Any, now: Callable[[str], Any]) -> str:
        return check_mask_mode(value)

    def _check_mask_cells(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return check_mask_cells(value, self.X.shape[0])

    def _derived(self, values: dict[str, Any], now: Callable[[str], Any]) -> dict[str, Any]:
        # without a custom mask, the cells show the pattern of the mode in force
        mode = now("mask_mode")
        if mode == "custom":
            return {}
        pattern = effective_mask(mode, now("mask_cells"), self.X.shape[0])
        return {} if np.array_equal(pattern, now("mask_cells")) else {"mask_cells": pattern}

    # -- the Python API ------------------------------------------------------------
    @property
    def d_k(self) -> Any:
        """The d_k of the scaling, ``attnlib.NO_SCALING`` for no scaling."""
        return NO_SCALING if self.dk == 0 else int(self.dk)

    @d_k.setter
    def d_k(self, value: Any) -> None:
        self._apply({"dk": value})

    @property
    def divisor(self) -> float:
        """What the scores are divided by: ``sqrt(d_k)``, or 1 without scaling."""
        return self._views.divisor

    @property
    def mask(self) -> np.ndarray | None:
        """The boolean mask in force (``True`` = may attend), ``None`` without a mask."""
        if self.mask_mode == "none":
            return None
        return effective_mask(self.mask_mode, self.mask_cells, self.X.shape[0])

    @mask.setter
    def mask(self, value: Any) -> None:
        self.set(mask=value)

    @property
    def result(self) -> AttentionResult | None:
        """attnlib's result of the current setting, or ``None`` (see ``message``)."""
        return self._views.result

    @property
    def message(self) -> str | None:
        """``None``, the rows that may attend to no key, or what overflowed."""
        return self._views.message

    @property
    def shown(self) -> AttentionViews:
        """Everything the panel shows for the current setting (``AttentionViews``)."""
        return self._views

    def set(self, **values: Any) -> AttentionExplorer:
        """Change ``W_Q``, ``W_K``, ``W_V``, ``d_k`` and ``mask`` at once: all are checked first, then one recomputation.

        Raises
        ------
        ValueError
            ``InvalidSetting`` (a ``ValueError`` whose message starts with the setting's name) when a keyword is not one
            of ``W_Q``, ``W_K``, ``W_V``, ``d_k`` and ``mask`` or its value is refused; nothing is changed then.
        """
        allowed = ("W_Q", "W_K", "W_V", "d_k", "mask")
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise InvalidSetting(SettingError("set", f"called with settings among {list(allowed)}", unknown))
        new: dict[str, Any] = {}
        for key, value in values.items():
            if key == "d_k":
                new["dk"] = value
            elif key == "mask":
                new["mask_mode"], new["mask_cells"] = self._checked(parse_mask, value, self.X.shape[0])
            else:
                new[key] = value
        self._apply(new)
        return self

    def reset(self) -> None:
        """Back to the starting matrices, d_k and mask."""
        start = self.initial
        mode = start["mask_mode"]
        mask = None if mode == "none" else CAUSAL if mode == "causal" else np.array(start["mask_cells"], dtype=bool)
        d_k = NO_SCALING if start["dk"] == 0 else start["dk"]
        self.set(W_Q=start["W_Q"], W_K=start["W_K"], W_V=start["W_V"], d_k=d_k, mask=mask)

    def randomise(self) -> None:
        """The next of the seeded random draws (``random_draws``, multiples of the slider step)."""
        if not self.random_draws:
            raise InvalidSetting(SettingError("randomise", "called on an explorer with a seeded random preset", "an explorer without one"))
        draw = self.random_draws[self._draw % len(self.random_draws)]
        self._draw += 1
        self.set(**draw)

    # -- recomputation -------------------------------------------------------
    def _update(self) -> str:
        # attention_views shows overflow as a message; anything else it raised would refuse the change
        self._views = attention_views(self.X, self.W_Q, self.W_K, self.W_V, dk=self.dk, mask=self.mask, tokens=self.tokens)
        return self._views.error

    # -- display -----------------------------------------------------------------
    def _settings(self, decimals: int) -> list[str]:
        out = [f"{name} = {np.round(getattr(self, name), decimals).tolist()}" for name in W_NAMES if name in self.controls]
        if "d_k" in self.controls or decimals == 4:
            out.append("d_k: no scaling (divide by 1)" if self.dk == 0 else f"d_k = {self.dk}: divide the scores by {self.divisor:.4f}")
        if "mask" in self.controls or decimals == 4:
            out.append(f"mask: {self.mask_mode}")
        return out

    def _snapshot(self) -> tuple[str, str]:
        html = attention_snapshot(
            tokens=self.tokens, X=self.X, views=self._views, view_names=self.views, settings=self._settings(2), dk=self.dk
        )
        text = attention_summary(
            title=self.title, tokens=self.tokens, views=self._views, settings=self._settings(4), show_values="V" in self.views
        )
        return html, text

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``attentionViews`` on the running example: identity, the post's W_V, no scaling, causal, a row with no key."""
        X = running_example()
        eye, post = np.eye(2), np.array([[1.0, 0.0], [1.0, 1.0]])
        no_first = np.array([[False, False, False], [True, True, False], [True, True, True]])
        settings = [
            (eye, eye, eye, 2, "none", np.ones((3, 3), bool)),
            (eye, eye, post, 2, "none", np.ones((3, 3), bool)),
            (3 * eye, eye, post, 0, "none", np.ones((3, 3), bool)),
            (eye, -eye, eye, 4, "causal", causal_mask(3)),
            (eye, eye, post, 2, "custom", no_first),
        ]
        cases = []
        for W_Q, W_K, W_V, dk, mode, cells in settings:
            state = {"X": X.tolist(), "tokens": list(TOKENS), "W_Q": W_Q.tolist(), "W_K": W_K.tolist(), "W_V": W_V.tolist(),
                     "dk": dk, "mask_mode": mode, "mask_cells": cells.tolist()}  # fmt: skip
            ref = reference_views(state)
            expected = {k: ref[k] for k in ("Q", "K", "V", "scores", "scaled", "weights", "output", "divisor", "error")}
            expected["messages"] = {str(i): m for i, m in enumerate(ref["messages"]) if m}
            cases.append({"fn": "attentionViews", "args": [{**state, "cells": state["mask_cells"]}], "expected": expected})
        return cases


@factory
def attention_explorer(X: Any = None, tokens: Sequence[str] | None = None) -> AttentionExplorer:
    """The full explorer: sliders for ``W_Q``, ``W_K``, ``W_V``, presets, a d_k control and a mask.

    Parameters
    ----------
    X:
        Up to 8 token vectors of width up to 4 as rows (default: the running example).
    tokens:
        Their labels (default ``x1, x2, ...``).

    Raises
    ------
    ValueError
        ``X`` is neither ``None`` nor real, finite numbers of the expected shape; ``tokens`` is neither ``None`` nor a
        list of one label per row. The error is an ``InvalidSetting`` (a ``ValueError``) whose message starts with the
        argument's name.

    Examples
    --------
    >>> ex = attention_explorer()
    >>> from attnlib import NO_SCALING
    >>> ex.set(d_k=NO_SCALING).result.weights.round(4)[0].tolist()
    [0.5065, 0.1863, 0.3072]
    """
    return AttentionExplorer(X, tokens)


@factory
def value_projection_explorer() -> AttentionExplorer:
    """Chapter 3: only ``W_V`` moves. The values and outputs change; the weights never do.

    Examples
    --------
    >>> ex = value_projection_explorer()
    >>> before = ex.result.weights.copy()
    >>> ex.W_V = [[1, 0], [1, 1]]
    >>> ex.result.V.tolist(), bool((ex.result.weights == before).all())
    ([[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]], True)
    """
    return AttentionExplorer(controls=("W_V", "presets"), views=("V", "weights", "output", "plane"), title="Values move, weights stay")


@factory
def mask_explorer() -> AttentionExplorer:
    """Chapter 9: the mask is the only control. Tick which key each query may attend to.

    Examples
    --------
    >>> ex = mask_explorer()
    >>> from attnlib import CAUSAL
    >>> ex.mask = CAUSAL
    >>> ex.result.weights.round(4)[0].tolist()
    [1.0, 0.0, 0.0]
    """
    return AttentionExplorer(controls=("mask",), views=("scaled", "weights", "output"), title="Masking")
