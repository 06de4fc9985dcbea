"""The explorers' state: validation and the numbers every view shows, in plain numpy.

Nothing here imports a widget library. Each ``check_*`` function takes a
value as a reader (or the browser) might give it and returns it in canonical
form, or raises ``SettingError``, a ``ValueError`` whose message
names the setting, says what was expected and shows what came.

``attention_views`` computes what the attention explorers show, with
:mod:`attnlib.core` doing all of the math, and never raises for a setting
that passed the checks: a query row that may attend to no key gets a
message instead of numbers, and a value too large for float64 (overflow)
gives an ``error`` text and no result. ``reference_views`` is the same
for a state dictionary (the JSON the browser sees); the front end's golden
test compares its JavaScript with it.

Examples
--------
>>> v = attention_views(running_example(), np.eye(2), np.eye(2), [[1, 0], [1, 1]], dk=2, mask=None, tokens=TOKENS)
>>> v.result.output.round(4)[2].tolist()
[1.0, 0.5]
>>> check_weight("W_Q", [[4, 0], [0, 1]], 2)
Traceback (most recent call last):
...
attnlib.explorers.state.SettingError: W_Q must be a (2, 2) matrix with entries in the sliders' range [-3, 3]; got [[4.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validate import as_flag, as_int, as_matrix, as_real, to_ndarray
from ..blocked import block_count
from ..core import (
    TOKENS,
    AttentionResult,
    attention,
    attention_parameter_count,
    causal_mask,
    multi_head_attention,
    project,
    running_example,
    scale_divisor,
    scaled_scores,
    softmax,
)
from ..cost import blocked_working_set_bytes, format_bytes, score_matrix_bytes
from ..experiments import learn_previous_token, previous_token_probe
from ..positional import positional_frequencies, sinusoidal_encoding
from ..training import explorer_steps

__all__ = [
    "block_memory_table",
    "check_dtype",
    "check_flag",
    "check_training_step",
    "SettingError",
    "MAX_TOKENS",
    "MAX_D_MODEL",
    "SLIDER",
    "DK_CHOICES",
    "MASK_MODES",
    "ALL_CONTROLS",
    "ALL_VIEWS",
    "W_NAMES",
    "check_X",
    "check_tokens",
    "check_weight",
    "check_dk",
    "dk_choices_for",
    "check_mask_mode",
    "check_mask_cells",
    "parse_mask",
    "effective_mask",
    "check_choice",
    "check_length",
    "check_position",
    "no_key_message",
    "overflow_message",
    "AttentionViews",
    "attention_views",
    "reference_views",
    "random_draws",
    "presets",
    "scaling_samples",
    "head_count_data",
    "positional_data",
    "TRAINING_RECORD_STEPS",
    "training_data",
    "check_block_step",
    "training_view",
]

#: Largest number of tokens the explorer takes (an 8 x 8 mask grid still fits a page).
MAX_TOKENS = 8
#: Largest token width; the explorer has ``3 * d_model**2`` sliders.
MAX_D_MODEL = 4
#: Range and step of every weight slider (exercise 6.3 multiplies W_Q by 3).
SLIDER = {"min": -3.0, "max": 3.0, "step": 0.05}
#: Choices of the d_k control of the attention explorer; 0 means "no scaling".
DK_CHOICES = (0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512)
MASK_MODES = ("none", "causal", "custom")
ALL_CONTROLS = ("W_Q", "W_K", "W_V", "presets", "d_k", "mask")
ALL_VIEWS = ("Q", "K", "V", "scores", "scaled", "weights", "output", "plane")
W_NAMES = ("W_Q", "W_K", "W_V")

#: The scaling explorer (chapter 5): its d_k choices, keys per query, and samples per side for the spread.
SCALING_DK_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SCALING_N_KEYS = 6
SCALING_N_SAMPLES = 200
#: The scale comparison explorer (chapter 7): range and step of the length factor.
LENGTH_RANGE = {"min": 0.25, "max": 6.0, "step": 0.25}
#: The head count explorer (chapter 8).
HEAD_CHOICES = (1, 2, 4, 8)
HEAD_D_MODEL = 8
HEAD_TOKENS = ("t1", "t2", "t3", "t4")
#: The positional explorer (chapter 11).
N_POSITIONS = 12
D_MODEL_CHOICES = (2, 4, 6, 8, 10, 12, 14, 16)

_TOL = 1e-12


class SettingError(ValueError):
    """A refused setting: ``setting`` names it, the message says what was expected and what came."""

    def __init__(self, setting: str, expected: str, got: Any) -> None:
        self.setting = setting
        super().__init__(f"{setting} must be {expected}; got {got}")


def _shown(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return repr(value.tolist())
    return repr(value)


def _float_matrix(setting: str, value: Any, expected: str) -> np.ndarray:
    """A finite real matrix by attnlib's one rule (:func:`attnlib._validate.as_matrix`): no strings,
    booleans, complex numbers, ``numpy.ma`` arrays, ragged lists, NaN or inf."""
    try:
        return as_matrix(setting, value)
    except ValueError as exc:
        raise SettingError(setting, expected, f"{_shown_safe(value)} ({exc})") from None


def _shown_safe(value: Any) -> str:
    text = _shown(value) if not isinstance(value, np.ma.MaskedArray) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr)
    arr.setflags(write=False)
    return arr


def check_X(X: Any) -> np.ndarray:
    """Token vectors as rows: a finite matrix of at most ``MAX_TOKENS`` rows and ``MAX_D_MODEL`` columns.

    Examples
    --------
    >>> check_X([[1, 0], [0, 1]]).shape
    (2, 2)
    """
    expected = f"a finite matrix of 1 to {MAX_TOKENS} token rows and 1 to {MAX_D_MODEL} columns"
    arr = _float_matrix("X", X, expected)
    n, d = arr.shape
    if n > MAX_TOKENS or d > MAX_D_MODEL:
        raise SettingError("X", expected, f"shape {arr.shape}")
    return _frozen(arr)


def check_tokens(tokens: Any, n: int) -> list[str]:
    """One text label per token row (any text; it is always escaped when shown).

    Examples
    --------
    >>> check_tokens(("a", "<b>"), 2)
    ['a', '<b>']
    """
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence | np.ndarray):
        raise SettingError("tokens", f"a list of {n} labels", _shown(tokens))
    labels = [str(t) for t in tokens]
    if len(labels) != n:
        raise SettingError("tokens", f"a list of {n} labels, one per row of X", f"{len(labels)} labels: {labels!r}")
    return labels


def check_weight(name: str, value: Any, d: int, lo: float = SLIDER["min"], hi: float = SLIDER["max"]) -> np.ndarray:
    """A projection matrix ``(d, d)`` with finite entries in the sliders' range.

    Examples
    --------
    >>> check_weight("W_V", [[1, 0], [1, 1]], 2).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    expected = f"a ({d}, {d}) matrix with entries in the sliders' range [{lo:g}, {hi:g}]"
    arr = _float_matrix(name, value, expected)
    if arr.shape != (d, d) or (arr < lo - _TOL).any() or (arr > hi + _TOL).any():
        raise SettingError(name, expected, _shown(arr))
    return _frozen(np.clip(arr, lo, hi))


def dk_choices_for(d: int) -> list[int]:
    """The d_k choices for tokens of width ``d``: no scaling (0), ``DK_CHOICES`` and the true d_k.

    Examples
    --------
    >>> dk_choices_for(2)[:4], 5 in dk_choices_for(5)
    ([0, 1, 2, 3], True)
    """
    return sorted(set(DK_CHOICES) | {int(d)})


def check_choice(setting: str, value: Any, choices: Sequence[int]) -> int:
    """An integer out of ``choices`` (ints, integral floats and numpy integers are accepted).

    Examples
    --------
    >>> check_choice("n_heads", 4, (1, 2, 4, 8))
    4
    """
    expected = f"one of {list(choices)}"
    try:
        number = as_int(setting, value)  # attnlib's one rule of what an integer is
    except ValueError:
        raise SettingError(setting, expected, _shown_safe(value)) from None
    if number not in choices:
        raise SettingError(setting, expected, _shown_safe(value))
    return number


def check_dk(value: Any, choices: Sequence[int]) -> int:
    """The d_k the scores are divided by the root of; ``None`` or 0 means no scaling (returned as 0).

    Examples
    --------
    >>> check_dk(None, [0, 1, 2]), check_dk(2, [0, 1, 2])
    (0, 2)
    """
    if value is None:
        if 0 in choices:
            return 0
        raise SettingError("d_k", f"one of {list(choices)}", "None")
    try:
        return check_choice("d_k", value, choices)
    except SettingError:
        named = [c for c in choices if c]
        expected = f"None (no scaling) or one of {named}" if 0 in choices else f"one of {named}"
        raise SettingError("d_k", expected, _shown(value)) from None


def check_mask_mode(value: Any) -> str:
    """``"none"``, ``"causal"`` or ``"custom"``."""
    if not isinstance(value, str) or value not in MASK_MODES:
        raise SettingError("mask", f"one of {list(MASK_MODES)} as the mask mode", _shown(value))
    return value


def check_mask_cells(value: Any, n: int) -> np.ndarray:
    """A boolean ``(n, n)`` pattern, ``True`` = may attend. Rows with no allowed key are allowed here:
    the explorer shows a message for them.

    Examples
    --------
    >>> check_mask_cells([[True, False], [True, True]], 2).tolist()
    [[True, False], [True, True]]
    """
    expected = f"a boolean ({n}, {n}) matrix (True = may attend)"
    if isinstance(value, (np.ma.MaskedArray, str, bytes)):
        raise SettingError("mask", expected, _shown_safe(value))
    arr = np.asarray(value) if isinstance(value, np.ndarray) else None
    if arr is None:
        try:
            arr = np.array(value, dtype=object)
        except (TypeError, ValueError):
            raise SettingError("mask", expected, _shown_safe(value)) from None
    if arr.shape != (n, n) or not all(isinstance(v, (bool, np.bool_)) for v in arr.ravel().tolist()):
        raise SettingError("mask", expected, f"shape {arr.shape}, values {_shown(arr)}")
    return _frozen(arr.astype(bool))


def effective_mask(mode: str, cells: np.ndarray, n: int) -> np.ndarray:
    """The pattern in force: all True for ``none``, lower-triangular for ``causal``, the cells for ``custom``."""
    if mode == "none":
        return _frozen(np.ones((n, n), dtype=bool))
    if mode == "causal":
        return _frozen(causal_mask(n))
    return _frozen(np.asarray(cells, dtype=bool))


def parse_mask(value: Any, n: int) -> tuple[str, np.ndarray]:
    """``ex.mask = value``: ``None``/``"none"``, ``"causal"`` or a boolean matrix, as (mode, cells).

    Examples
    --------
    >>> mode, cells = parse_mask("causal", 2)
    >>> mode, cells.tolist()
    ('causal', [[True, False], [True, True]])
    """
    if value is None:
        return "none", effective_mask("none", None, n)
    if isinstance(value, str):
        if value not in ("none", "causal"):
            raise SettingError("mask", f"None, 'none', 'causal' or a boolean ({n}, {n}) matrix", _shown(value))
        return value, effective_mask(value, None, n)
    try:
        arr = to_ndarray("mask", value)  # refuses numpy.ma arrays (their mask would be ignored) and ragged lists
    except ValueError as exc:
        raise SettingError("mask", f"None, 'none', 'causal' or a boolean ({n}, {n}) matrix", str(exc)) from None
    if arr.dtype != bool:
        expected = f"None, 'none', 'causal' or a boolean ({n}, {n}) matrix (True = may attend)"
        raise SettingError("mask", expected, f"dtype {arr.dtype}: {_shown(arr)}")
    return "custom", check_mask_cells(arr, n)


def check_length(value: Any) -> float:
    """The stretch factor of the scale comparison explorer: a finite number in [0.25, 6].

    Examples
    --------
    >>> check_length(2)
    2.0
    """
    lo, hi = LENGTH_RANGE["min"], LENGTH_RANGE["max"]
    expected = f"a finite number in [{lo:g}, {hi:g}]"
    try:
        v = as_real("length", value)  # attnlib's one rule of what a real number is
    except ValueError:
        raise SettingError("length", expected, _shown_safe(value)) from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise SettingError("length", expected, _shown(value))
    return v


def check_position(value: Any) -> int:
    """A position ``0 ... N_POSITIONS - 1`` of the positional explorer."""
    return check_choice("position", value, tuple(range(N_POSITIONS)))


def no_key_message(token: str) -> str:
    """What a query row that may attend to no key shows (the front end prints the same text).

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
    X: np.ndarray, W_Q: Any, W_K: Any, W_V: Any, *, dk: int, mask: np.ndarray | None, tokens: Sequence[str]
) -> AttentionViews:
    """The views of one setting, computed by :mod:`attnlib.core`; never raises for checked inputs.

    ``dk = 0`` means no scaling; ``mask`` is ``None`` or the boolean pattern in force.

    Examples
    --------
    >>> X = running_example()
    >>> v = attention_views(X, np.eye(2), np.eye(2), np.eye(2), dk=2, mask=np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1]], bool), tokens=TOKENS)
    >>> v.result is None, v.messages[0] == no_key_message("x1"), v.weights.round(4)[1].tolist()
    (True, True, [0.3302, 0.6698, 0.0])
    """
    n = X.shape[0]
    scale: bool | float = False if dk == 0 else scale_divisor(dk)
    divisor = scale_divisor(1, False) if dk == 0 else scale_divisor(dk)
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
    allowed = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
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
    names = ", ".join(str(tokens[i]) for i in range(n) if messages[i])
    message = f"query row(s) {names} may attend to no key; their weights and outputs are undefined"
    return AttentionViews(Q, K, V, scores, scaled, weights, output, divisor, messages, None, message, "")


def reference_views(state: dict) -> dict:
    """The attention views for a state dictionary (the JSON of ``ex.state_dict()``), as plain lists.

    This is the reference of the front end's golden test. ``weights`` and
    ``output`` hold ``None`` for a row with a message; ``scaled`` holds
    ``-inf`` (a Python float) where the mask forbids; a view that overflowed is ``None`` (``error`` says so).

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


def scaling_query_keys(seed: int, d_k: int) -> tuple[np.ndarray, np.ndarray]:
    """One query ``(1, d_k)`` and ``SCALING_N_KEYS`` keys with standard-normal entries, seeded by ``(seed, d_k)``."""
    rng = np.random.default_rng([seed, d_k])
    return rng.standard_normal((1, d_k)), rng.standard_normal((SCALING_N_KEYS, d_k))


def scaling_samples(seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per d_k of the scaling explorer: the scores of one seeded query with six seeded keys, and the spreads.

    ``spread_raw`` and ``spread_scaled`` are the standard deviations of
    ``SCALING_N_SAMPLES**2`` scores of seeded standard-normal vectors,
    unscaled and divided by sqrt(d_k).

    Examples
    --------
    >>> s = scaling_samples()["512"]
    >>> len(s["raw_scores"]), 18 < s["spread_raw"] < 27, 0.8 < s["spread_scaled"] < 1.2
    (6, True, True)
    """
    return copy.deepcopy(_scaling_samples(seed))


@functools.cache
def _scaling_samples(seed: int) -> dict[str, dict[str, Any]]:
    # drawn once per seed (about a second for all eleven d_k); callers get a copy
    out = {}
    for d_k in SCALING_DK_CHOICES:
        q, k = scaling_query_keys(seed, d_k)
        rng = np.random.default_rng([seed, d_k, 1])
        qs = rng.standard_normal((SCALING_N_SAMPLES, d_k))
        ks = rng.standard_normal((SCALING_N_SAMPLES, d_k))
        out[str(d_k)] = {
            "raw_scores": [float(x) for x in scaled_scores(q, k, scale=False)[0]],
            "spread_raw": float(scaled_scores(qs, ks, scale=False).std()),
            "spread_scaled": float(scaled_scores(qs, ks, scale=True).std()),
        }
    return out


def scaling_view(raw_scores: Sequence[float], d_k: int) -> dict[str, np.ndarray]:
    """Raw and scaled scores ``(1, n_keys)`` of one query and their softmax weights."""
    raw = np.asarray([raw_scores], dtype=float)
    scaled = raw / scale_divisor(d_k)
    return {"raw": raw, "scaled": scaled, "raw_weights": softmax(raw), "scaled_weights": softmax(scaled)}


def head_count_data(seed: int = 0) -> dict[str, Any]:
    """The seeded example of the head count explorer: X (4 x 8), W_Q, W_K, W_V (scaled by 1/sqrt(8)), W_O = I."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((len(HEAD_TOKENS), HEAD_D_MODEL))
    W_Q, W_K, W_V = (rng.standard_normal((HEAD_D_MODEL, HEAD_D_MODEL)) / math.sqrt(HEAD_D_MODEL) for _ in range(3))
    return {
        "X": X,
        "W_Q": W_Q,
        "W_K": W_K,
        "W_V": W_V,
        "W_O": np.eye(HEAD_D_MODEL),
        "param_counts": {str(h): attention_parameter_count(HEAD_D_MODEL, h) for h in HEAD_CHOICES},
    }


def head_count_result(data: dict[str, Any], n_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """``attnlib.multi_head_attention`` of the example with ``n_heads`` heads: output and per-head weights."""
    return multi_head_attention(data["X"], data["X"], data["W_Q"], data["W_K"], data["W_V"], data["W_O"], n_heads=n_heads)


def positional_data() -> dict[str, Any]:
    """PE tables ``(N_POSITIONS, d_model)`` and frequencies for every d_model choice, keyed by ``str(d_model)``."""
    return {
        "tables": {str(d): sinusoidal_encoding(N_POSITIONS, d).tolist() for d in D_MODEL_CHOICES},
        "frequencies": {str(d): positional_frequencies(d).tolist() for d in D_MODEL_CHOICES},
    }


def positional_similarity(table: np.ndarray, position: int) -> np.ndarray:
    """Dot products of ``PE(position)`` with every row of the table, shape ``(N_POSITIONS,)``."""
    return scaled_scores(table[position : position + 1], table, scale=False)[0]


def default_example() -> tuple[np.ndarray, tuple[str, ...]]:
    """The running example and its token labels (the explorers' default)."""
    return running_example(), TOKENS


#: The steps recorded for the training explorer of chapter 14 (from the chapter's previous-token run).
TRAINING_RECORD_STEPS = tuple(range(0, 301, 10))


def training_data(seed: int = 0) -> dict[str, Any]:
    """The recorded steps of the chapter's previous-token run as plain lists.

    :func:`attnlib.experiments.learn_previous_token` trained with ``seed``,
    recorded every 10 steps (the trajectory is the chapter's: recording does
    not change training), and :func:`attnlib.training.explorer_steps` turns it
    into lists: ``steps``, ``losses``, ``previous``, ``weights`` (one held-out
    sequence), ``bilinear`` (``W_Q W_K^T``), ``tokens``, ``features``.

    Examples
    --------
    >>> d = training_data()
    >>> d["steps"][:3], len(d["weights"][0]), len(d["bilinear"][0])
    ([0, 10, 20], 6, 8)
    """
    return copy.deepcopy(_training_data(seed))


@functools.cache
def _training_data(seed: int) -> dict[str, Any]:
    # one training run (well under a second); callers get a copy
    run = learn_previous_token(seed=seed, record_steps=TRAINING_RECORD_STEPS)
    return explorer_steps(run, previous_token_probe())


def check_training_step(value: Any, steps: Sequence[int]) -> int:
    """A recorded training step.

    Examples
    --------
    >>> check_training_step(20, [0, 10, 20])
    20
    """
    return check_choice("step", value, steps)


def training_view(data: dict[str, Any], step: int) -> dict[str, Any]:
    """What the training explorer shows at ``step``: its loss, weight on the previous token, attention map and ``W_Q W_K^T``."""
    k = list(data["steps"]).index(check_training_step(step, data["steps"]))
    return {
        "step": int(step),
        "loss": float(data["losses"][k]),
        "previous": float(data["previous"][k]),
        "weights": np.array(data["weights"][k], dtype=float),
        "bilinear": np.array(data["bilinear"][k], dtype=float),
    }

# ---------------------------------------------------------------------------
# The long-sequence explorer (chapter 15): memory of dense against blocked attention
# ---------------------------------------------------------------------------

#: Sequence lengths, block sizes and number formats the long-sequence explorer offers.
BLOCK_N_CHOICES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
BLOCK_SIZE_CHOICES = (1, 16, 32, 64, 128, 256, 512, 1024)
BLOCK_DTYPES = ("float32", "bfloat16")
#: Width of queries, keys and values in the explorer's memory figures.
BLOCK_D_K = 64


def block_memory_table(d_k: int = BLOCK_D_K) -> dict[str, dict[str, Any]]:
    """Memory of one head for every setting of the long-sequence explorer, from :mod:`attnlib.cost`.

    Keys are ``"n/block_size/dtype"``; each entry holds the bytes of the
    ``n x n`` score matrix and of the blocked working set, the same as text
    (``format_bytes``), their ratio as text and the number of steps.

    Examples
    --------
    >>> row = block_memory_table()["4096/128/float32"]
    >>> row["dense"], row["blocked"], row["ratio"], row["steps"]
    ('64.0 MiB', '6.0 MiB', '10.6', 32)
    """
    table = {}
    for n in BLOCK_N_CHOICES:
        for b in BLOCK_SIZE_CHOICES:
            for dtype in BLOCK_DTYPES:
                dense = score_matrix_bytes(n, dtype=dtype)
                blocked = blocked_working_set_bytes(n, d_k, b, dtype=dtype)
                table[f"{n}/{b}/{dtype}"] = {
                    "dense_bytes": dense,
                    "blocked_bytes": blocked,
                    "dense": format_bytes(dense),
                    "blocked": format_bytes(blocked),
                    "ratio": f"{dense / blocked:.1f}",
                    "steps": block_count(n, b),
                }
    return table


def check_dtype(value: Any) -> str:
    """One of ``BLOCK_DTYPES``.

    Examples
    --------
    >>> check_dtype("bfloat16")
    'bfloat16'
    """
    if not isinstance(value, str) or value not in BLOCK_DTYPES:
        raise SettingError("dtype", f"one of {list(BLOCK_DTYPES)}", _shown(value))
    return value


def check_flag(setting: str, value: Any) -> bool:
    """A true/false setting (a Python or numpy bool only).

    Examples
    --------
    >>> check_flag("causal", True)
    True
    """
    try:
        return as_flag(setting, value)
    except ValueError:
        raise SettingError(setting, "True or False", _shown_safe(value)) from None


def check_block_step(value: Any, n: int, block_size: int) -> int:
    """A step of the blocked loop: an integer from 1 to the number of blocks of ``block_size`` keys in ``n``.

    Examples
    --------
    >>> check_block_step(32, 4096, 128)
    32
    """
    count = block_count(n, block_size)
    expected = f"a step from 1 to {count} (n = {n} in blocks of {block_size})"
    try:
        number = as_int("step", value)  # attnlib's one rule of what an integer is
    except ValueError:
        raise SettingError("step", expected, _shown_safe(value)) from None
    if not 1 <= number <= count:
        raise SettingError("step", expected, _shown_safe(value))
    return number
