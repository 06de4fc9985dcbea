"""The one table of odd values that the edge suites give to attnlib's public functions and explorers.

Two views of the same values:

* ``ODD``: for each *kind* of argument (a matrix, a size, a seed, a mask, a scale, ...), the values an
  argument of that kind must refuse with a ``ValueError`` naming it, and the values it may take
  (returning a finite result or a named ``ValueError``): ``ODD[kind](good) -> (refuse, allow)``.
  ``EQUIVALENT[kind](good)`` gives values that must act exactly as ``good`` (``3.0`` for ``3``).
  A suite adds the kinds of its own domain to this table (``ODD.update``), never a table of its own.
* ``EVERY``: every value of the table once, for the suites that give *any* odd value to *any* argument
  (the hypothesis suite of the first modules, and every trait of every explorer).

Used by ``tests/unit/test_edges.py``, ``tests/unit/test_edges_modules.py`` and
``tests/explorers/test_explorer_settings.py``.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from attnlib import NO_SCALING, SQRT_D_K, backward


def _matrix_odd(good):
    g = np.asarray(good, dtype=float)
    with_nan, with_inf = g.copy(), g.copy()
    with_nan.flat[0], with_inf.flat[-1] = np.nan, np.inf
    refuse = [
        None,
        "abc",
        b"1",
        True,
        1 + 2j,
        g.astype(str).tolist(),
        g > 0,
        g + 1e-3j,
        np.ma.array(g, mask=np.ones(g.shape, dtype=bool)),
        with_nan,
        with_inf,
        np.datetime64("2020-01-01"),
        {},
        object(),
    ]
    if g.ndim == 2 and g.shape[0] > 1 and g.shape[1] > 1:
        refuse.append([row[:1] if i == 0 else row for i, row in enumerate(g.tolist())])  # ragged
    if g.size:
        mixed = g.tolist()
        if g.ndim == 2:
            mixed[0][0] = True
        else:
            mixed[0] = True
        refuse.append(mixed)  # a boolean among numbers (issue 47, class 1): numpy would read it as 1.0
    allow = [
        g * 1e300,
        g * 1e155 + 1e155,
        np.full_like(g, 1.7e308),
        np.full_like(g, -1.7e308),
        np.full_like(g, 1e-320),
        np.zeros_like(g),
        g.astype(np.float32),
        g.astype(np.float16),
        g[None],
        np.hstack([g, g[:, :1]]) if g.ndim == 2 else g[:-1],
        np.vstack([g, g[:1]]) if g.ndim == 2 else np.append(g, g[:1]),
        np.empty((0,) + g.shape[1:]),
    ]
    return refuse, allow


SIZE_REFUSE = [None, True, np.True_, "3", 2.5, -1, 0, math.nan, math.inf, 1 + 0j, [3], {}]
SIZE_ALLOW = [10**400, 10**12, 2**64, np.uint64(2**63)]

#: The odd values per argument kind: (refuse, allow); matrices derive theirs from the good value.
ODD = {
    "matrix": _matrix_odd,
    "size": lambda good: (SIZE_REFUSE, SIZE_ALLOW),
    "index": lambda good: ([v for v in SIZE_REFUSE if not (isinstance(v, int) and v == 0)], SIZE_ALLOW),
    "seed": lambda good: ([None, True, False, np.True_, "3", 2.5, -1, math.nan, math.inf, 1 + 0j, [1], {}], [10**400, 2**64]),
    "real": lambda good: (
        [None, True, "0.1", 1 + 0j, [0.1], math.nan, math.inf, -math.inf, np.array([0.1, 0.2])],
        [0, -1, 1e308, -1e308, 1e-320, 10**400, np.float32(0.5)],
    ),
    "flag": lambda good: ([None, "False", "yes", 1, 0, 1.0, [True], np.float64(1.0)], [np.True_, np.False_]),
    "optional_real": lambda good: (
        [True, "0.1", 1 + 0j, [0.1], math.nan, math.inf, -math.inf, np.array([0.1, 0.2])],
        [None, 0, -1, 1e308, 1e-320, 10**400, np.float32(0.5)],
    ),
    "factors": lambda good: (
        [None, 1, "x", [1], {"W_Q": "2"}, {"W_Q": math.nan}, {"W_Q": math.inf}, {"W_Q": True}, {"W_Q": 1 + 0j}],
        [{}, {"W_Q": 8.0}, {"W_Q": -1.0}, {"W_V": 1e-320}],
    ),
    "scale": lambda good: ([None, "2", 1 + 0j, math.nan, math.inf, [2], np.array([2.0, 3.0])], [0, -1, 1e-300, 1e308, 3, False]),
    "mask": lambda good: (
        [1 + 0j, "diagonal", 3, np.ma.array([[True]], mask=[[True]]), [[1.0, 2.0]], {}],
        [None, [[False]], np.ones((5, 5), bool)],
    ),
    "int_list": lambda good: ([8, None, "8", [2.5], [-1], [True], {}, [None]], [[10**12], [], [10**400]]),
    "text": lambda good: ([None, 1, b"x", "nonsense", ["wall"], True], []),
    "function": lambda good: ([None, 1, "f", [len]], []),
    "instance": lambda good: ([None, 1, "x", {}, [1]], []),
    "grads": lambda good: (
        [
            None,
            "x",
            (1, 2),
            backward.AttentionGradients(np.full((3, 2), np.nan), np.eye(3, 2), np.eye(3, 2)),
            backward.AttentionGradients(np.eye(3, 2) + 1j, np.eye(3, 2), np.eye(3, 2)),
        ],
        [
            backward.AttentionGradients(np.ones((4, 2)), np.eye(3, 2), np.eye(3, 2)),
            backward.AttentionGradients(np.full((3, 2), 1e300), np.full((3, 2), 1e300), np.eye(3, 2)),
        ],
    ),
    "params": lambda good: (
        [
            None,
            "x",
            [1],
            {"W_Q": "abc"},
            {k: np.full(np.shape(v), np.nan) for k, v in good.items()},
            {k: np.asarray(v) + 1j for k, v in good.items()},
        ],
        [{k: np.asarray(v) * 1e300 for k, v in good.items()}, {}],
    ),
    "shapes": lambda good: ([None, "x", {"W": "ab"}, {"W": (2.5, 2)}, {"W": (2,)}, {"W": (True, 2)}, {"W": (10**12, 10**12)}], [{}]),
    "block_sizes": lambda good: ([None, "2", 2.5, True, [1.5], [0], [True, 1, 1], {}], [[1, 1, 1, 1], [3], 10**12]),
    "neg_inf_array": lambda good: (
        [None, "abc", True, 1 + 2j, math.nan, math.inf, np.ma.array([1.0], mask=[True]), [np.nan]],
        [-math.inf, 1e308, -1e308, [[0.0]], np.zeros(3)],
    ),
    "labels": lambda good: ([5, "ab", True], [["x"] * 5, [], [1, 2, 3]]),
    "state": lambda good: (
        [
            None,
            {},
            "x",
            {**good, "X": "abc"},
            {**good, "W_Q": [[9, 0], [0, 1]]},
            {**good, "mask_mode": 1},
            {**good, "mask_cells": [[1]]},
            {**good, "dk": True},
        ],
        [{**good, "dk": 2.0}, {**good, "dk": None}, {**good, "X": [[1e308, 0], [0, 1], [0.5, 0.5]]}],
    ),
    "any": lambda good: ([], []),
    # what repeated_tokens takes: one length >= 2 or (shortest, longest); huge lengths are refused by size or by vocab_size
    "half_lengths": lambda good: (
        [None, True, "3", 2.5, 1, -2, math.nan, (3, 2), (1, 3), (2,), (2, 3, 4), [2, "3"], (2, 2.5), {}, np.array([2, 3])],
        [3, (2, 2), [2, 3], (2.0, 3.0), (np.int64(2), np.uint8(3)), 10**12, (2, 10**400), (2, 2**40)],
    ),
    "optional_matrix": lambda good: (_matrix_odd(good)[0][1:], [None] + _matrix_odd(good)[1]),
    "optional_size": lambda good: (SIZE_REFUSE[1:], [None] + SIZE_ALLOW),
    "dict": lambda good: ([None, 1, "x", [1]], [{}]),
    "optional_labels": lambda good: ([5, "ab", True, ["a"], {}], [None, [1, 2, 3], ["<b>", "", "c"]]),
    # issue 26 (attnlib.transformer): a block's mask ("causal" or True = may attend), its parameter dicts
    "tf_mask": lambda good: (
        [1 + 0j, "diagonal", "Causal", 3, True, np.ma.array([[True]], mask=[[True]]), [[1.0, 2.0]], {}, np.zeros((3, 3), bool)],
        [None, [[False]], np.ones((5, 5), bool), np.eye(3, dtype=bool), [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0] * 3]],
    ),
    "tf_params": lambda good: (
        [
            None,
            "x",
            [1],
            {},
            {**good, "W_Q": "abc"},
            {**good, "w_q": good["W_Q"]},
            {k: v for k, v in good.items() if k != "b_O"},
            {**good, "W_1": np.ones((2, 5))},
            {**good, "gamma_1": np.ones(3)},
            {k: np.full(np.shape(v), np.nan) for k, v in good.items()},
            {k: np.asarray(v) + 1j for k, v in good.items()},
        ],
        [{k: np.asarray(v) * 1e300 for k, v in good.items()}, {k: np.asarray(v) * 1e-300 for k, v in good.items()}],
    ),
    "tf_layers": lambda good: ([None, [], {}, "x", [None], [{}], good[0]], [[{k: np.asarray(v) * 1e300 for k, v in good[0].items()}]]),
    "tf_state": lambda good: (
        [
            None,
            [],
            "x",
            {k: v for k, v in good.items() if k != "norm2.bias"},
            {**good, "extra": np.ones(2)},
            {**good, "self_attn.in_proj_weight": np.ones((5, 2))},
            {**good, "linear2.weight": np.ones((3, 3))},
            {**good, "norm1.weight": np.full(2, np.nan)},
            {**good, "linear1.bias": "abc"},
        ],
        [{k: np.asarray(v) * 1e300 for k, v in good.items()}],
    ),
}

ODD.update(
    {
        # issue 47: the attention explorer's d_k (the scale vocabulary; None, 0 and "width" are old spellings)
        "dk": lambda good: (["2", "none", 2.5, -1, True, 1 + 0j, [2], {}, math.nan, 5], [None, 0, "width", 1, 512, SQRT_D_K, NO_SCALING]),
        # a list of records (outcomes of experiments.head_outcome) and of numbers (thresholds)
        "instance_list": lambda good: ([None, 1, "x", {}, [None], [1], [good[0], "x"]], [[]]),
        "real_list": lambda good: ([None, 0.5, "0.5", [None], ["0.5"], [True], [math.nan], [1 + 0j], {}], [[], [0.0], [1.0], [1e-320]]),
        "optional_params": lambda good: (ODD["params"](good)[0][1:], [None, *ODD["params"](good)[1]]),
        "optional_instance": lambda good: (ODD["instance"](good)[0][1:], [None]),
        "optional_index": lambda good: (ODD["index"](good)[0][1:], [None, *ODD["index"](good)[1]]),
        # the keyword arguments of an explorer's set(...): unknown settings and odd values of known ones
        "settings": lambda good: (
            [{"bogus": 1}, {"W_Q": None}, {"W_Q": [[9, 0], [0, 1]]}, {"d_k": "x"}, {"mask": "diagonal"}, {"mask": [[1.0, 2.0]]}],
            [{}, {"mask": None}, {"d_k": NO_SCALING}],
        ),
        # explorer kinds by name (frontend.page_files): a list or tuple of registered kinds, repeats and none allowed
        "kind_names": lambda good: (
            [None, "scaling", 1, {}, {"scaling"}, ["nope"], [1], [None], [["scaling"]], ["../dom"], ["SCALING"]],
            [[], ("scaling",), ["scaling", "scaling", "induction"]],
        ),
        "optional_dict": lambda good: ([1, "x", [1], {"a": 5}, {"a": ()}, {5: ("n",)}, {"a": ["n"]}], [None, {}, {"a": ("zzz",)}]),
    }
)

#: Kinds whose equivalent values must give the same result as the good value.
EQUIVALENT = {
    "size": lambda v: [float(v), np.int64(v), np.uint8(v)],
    "index": lambda v: [float(v), np.int64(v)],
    "seed": lambda v: [float(v), np.int64(v), np.uint16(v)],
}



def _key(value):
    """What makes two odd values the same value (type and repr; arrays by dtype, shape and entries)."""
    if isinstance(value, np.ma.MaskedArray):
        return ("ma", value.dtype.str, value.shape, repr(value.tolist()), repr(np.ma.getmaskarray(value).tolist()))
    if isinstance(value, np.ndarray):
        return ("nd", value.dtype.str, value.shape, repr(value.tolist()))
    if type(value) is object:
        return ("object",)
    return (type(value).__name__, repr(value))


def _unique(values):
    seen, out = set(), []
    for v in values:
        k = _key(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


#: Values that come from no kind in particular: text that looks like code, sympy's own objects, matrices of
#: other sizes and kinds (a value is odd for some argument whatever its kind).
_LOOSE = [
    "2",
    "__import__('os').getcwd()",
    [],
    [[]],
    [[1.0, [2.0]]],
    np.True_,
    np.array([[1 + 1e-12j, 2.0]]),
    np.ma.array([[1.0, 2.0]]),
    -(10**400),
    np.int8(2),
    np.float32(2.0),
    1e-320,
    1e308,
    -1.0,
    0,
    1,
    2.0,
    False,
    -math.inf,
    np.array([[1e308, -1e308]]),
    np.array([[np.nan, 1.0]]),
    np.array([["a", "b"]]),
    np.array([[np.datetime64("2020-01-01")]]),
    np.array([[True, False]]),
    np.empty((0, 2)),
    np.zeros((2, 2, 2)),
    [[1]],
    [["1", "0"], ["0", "1"]],
    [[True, False], [False, True]],
    [[True, 0.5], [0, 1]],
    np.array([[1 + 1j, 0], [0, 1]]),
    np.ma.array([[1.0, 0.0], [0.0, 1.0]], mask=[[True, False], [False, False]]),
    [[math.nan, 0.0], [0.0, 1.0]],
    [[1e308, 0.0], [0.0, 1e308]],
    [[1.0, 0.0], [1.0]],
    sp.Symbol("x"),
    sp.nan,
]

_GENERIC = ("matrix", "size", "index", "seed", "real", "flag", "optional_real", "scale", "mask", "int_list", "text", "dk", "real_list")

#: Every value of the table once (the generic kinds for a 2 x 2 matrix and a size of 2, and the loose values).
EVERY = _unique([v for kind in _GENERIC for part in ODD[kind](np.eye(2) if kind == "matrix" else 2) for v in part] + _LOOSE)
