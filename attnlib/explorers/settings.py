"""The checks every explorer kind shares: each one calls ``attnlib._validate`` and names the setting.

There is one rule in attnlib for what an integer, a real number, a flag or a
matrix is (``attnlib._validate``). The explorers do not define it again:
each check here calls the helper and turns its ``ValueError`` into a
``SettingError`` that names the setting, says what the explorer expects and
shows what came. The kinds (:mod:`attnlib.explorers.kinds`) build their
settings' checks from these.

Examples
--------
>>> check_choice("n_heads", 4, (1, 2, 4, 8))
4
>>> check_flag("causal", 1)
Traceback (most recent call last):
...
attnlib.explorers.settings.SettingError: causal must be True or False; got 1
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validate import as_flag, as_int, as_matrix, as_real, as_seed, to_ndarray

__all__ = [
    "MAX_D_MODEL",
    "MAX_TOKENS",
    "SettingError",
    "check_X",
    "check_choice",
    "check_flag",
    "check_flag_matrix",
    "check_int_range",
    "check_names",
    "check_real_range",
    "check_seed",
    "check_text",
    "check_tokens",
    "float_matrix",
    "frozen",
    "same_shape",
    "shown",
]

#: Largest number of tokens an explorer takes (an 8 x 8 mask grid still fits a page).
MAX_TOKENS = 8
#: Largest token width; the attention explorer has ``3 * d_model**2`` sliders.
MAX_D_MODEL = 4


class SettingError(ValueError):
    """A refused setting: ``setting`` names it, the message says what was expected and what came."""

    def __init__(self, setting: str, expected: str, got: Any) -> None:
        self.setting = setting
        super().__init__(f"{setting} must be {expected}; got {got}")


def shown(value: Any, limit: int = 80) -> str:
    """A value as the error message shows it (arrays as lists, cut at ``limit`` characters).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> shown(np.eye(2))
    '[[1.0, 0.0], [0.0, 1.0]]'
    """
    if isinstance(value, np.ma.MaskedArray):
        text = repr(value)
    elif isinstance(value, np.ndarray):
        text = repr(value.tolist())
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _translated(setting: str, expected: str, check: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a ``attnlib._validate`` helper; its refusal becomes a ``SettingError`` naming ``setting``."""
    try:
        return check(setting, *args, **kwargs)
    except ValueError:
        raise SettingError(setting, expected, shown(args[0] if args else None)) from None


def frozen(arr: Any) -> np.ndarray:
    """A read-only copy (what an explorer keeps as its state).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    out = np.array(arr)
    out.setflags(write=False)
    return out


def float_matrix(setting: str, value: Any, expected: str) -> np.ndarray:
    """A finite real matrix by attnlib's one rule (``attnlib._validate.as_matrix``): no strings,
    booleans, complex numbers, ``numpy.ma`` arrays, ragged lists, NaN or inf.

    Raises
    ------
    ValueError
        ``value`` is not a finite real matrix; the message (of a ``SettingError``, a ``ValueError``) starts with the
        setting's name.
    """
    try:
        return as_matrix(setting, value)
    except ValueError as exc:
        raise SettingError(setting, expected, f"{shown(value)} ({exc})") from None


def same_shape(setting: str, new: np.ndarray, old: np.ndarray, what: str = "the explorer's tokens and layout") -> np.ndarray:
    """``new`` if it has the shape of ``old`` (a data matrix keeps its shape).

    Raises
    ------
    ValueError
        ``new`` does not have the shape of ``old``; the message (of a ``SettingError``, a ``ValueError``) starts with
        the setting's name.
    """
    if new.shape != old.shape:
        raise SettingError(setting, f"a matrix of shape {old.shape} ({what})", f"shape {new.shape}")
    return new


def check_X(X: Any) -> np.ndarray:
    """Token vectors as rows: a finite matrix of at most ``MAX_TOKENS`` rows and ``MAX_D_MODEL`` columns.

    Raises
    ------
    ValueError
        ``X`` is not a finite real matrix of 1 to 8 rows and 1 to 4 columns; the message (of a ``SettingError``, a
        ``ValueError``) starts with the setting's name.

    Examples
    --------
    >>> check_X([[1, 0], [0, 1]]).shape
    (2, 2)
    """
    expected = f"a finite matrix of 1 to {MAX_TOKENS} token rows and 1 to {MAX_D_MODEL} columns"
    arr = float_matrix("X", X, expected)
    n, d = arr.shape
    if n > MAX_TOKENS or d > MAX_D_MODEL:
        raise SettingError("X", expected, f"shape {arr.shape}")
    return frozen(arr)


def check_tokens(tokens: Any, n: int) -> list[str]:
    """One text label per token row (any text; it is always escaped when shown).

    Raises
    ------
    ValueError
        ``tokens`` is not a list of ``n`` labels; the message (of a ``SettingError``, a ``ValueError``) starts with the
        setting's name.

    Examples
    --------
    >>> check_tokens(("a", "<b>"), 2)
    ['a', '<b>']
    """
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence | np.ndarray):
        raise SettingError("tokens", f"a list of {n} labels", shown(tokens))
    labels = [str(t) for t in tokens]
    if len(labels) != n:
        raise SettingError("tokens", f"a list of {n} labels, one per row of X", f"{len(labels)} labels: {labels!r}")
    return labels


def check_text(setting: str, value: Any) -> str:
    """A text (a title): a ``str``, never bytes, ``None`` or a number.

    Raises
    ------
    ValueError
        (a ``SettingError``) ``value`` is not a ``str``; the message starts with ``setting``.
    """
    if not isinstance(value, str):
        raise SettingError(setting, "a text", shown(value))
    return value


def check_seed(setting: str, value: Any) -> int:
    """A seed by attnlib's one seed rule (``attnlib._validate.as_seed``): ``3``, ``3.0`` or ``numpy.int64(3)``, as an ``int``.

    Raises
    ------
    ValueError
        (a ``SettingError``) ``value`` is ``True``, ``None``, text, a negative or non-integral number or a container;
        the message starts with ``setting``.

    Examples
    --------
    >>> check_seed("seed", 3.0)
    3
    """
    return _translated(setting, "a non-negative integer seed (3, 3.0 or numpy.int64(3); not True, None or text)", as_seed, value)


def check_names(setting: str, value: Any, allowed: Sequence[str]) -> list[str]:
    """A list (or tuple) of names, each one of ``allowed`` (the controls or views an explorer shows).

    Raises
    ------
    ValueError
        (a ``SettingError``) ``value`` is not a list or tuple, or holds something that is not one of ``allowed``.

    Examples
    --------
    >>> check_names("views", ("Q", "K"), ("Q", "K", "V"))
    ['Q', 'K']
    """
    expected = f"a list of names out of {list(allowed)}"
    if not isinstance(value, (list, tuple)):
        raise SettingError(setting, expected, shown(value))
    for name in value:
        if not isinstance(name, str) or name not in allowed:
            raise SettingError(setting, expected, f"{shown(name)} in {shown(value)}")
    return list(value)


def check_choice(setting: str, value: Any, choices: Sequence[int]) -> int:
    """An integer out of ``choices`` (ints, integral floats and numpy integers are accepted).

    Raises
    ------
    ValueError
        ``value`` is not an integer out of ``choices``; the message (of a ``SettingError``, a ``ValueError``) starts
        with the setting's name.

    Examples
    --------
    >>> check_choice("n_heads", 4, (1, 2, 4, 8))
    4
    """
    expected = f"one of {list(choices)}"
    number = _translated(setting, expected, as_int, value)
    if number not in choices:
        raise SettingError(setting, expected, shown(value))
    return number


def check_int_range(setting: str, value: Any, lo: int, hi: int, expected: str | None = None) -> int:
    """An integer from ``lo`` to ``hi`` (both included), by attnlib's rule of what an integer is.

    Raises
    ------
    ValueError
        ``value`` is not an integer from ``lo`` to ``hi``; the message (of a ``SettingError``, a ``ValueError``) starts
        with the setting's name.

    Examples
    --------
    >>> check_int_range("step", 3.0, 1, 4)
    3
    """
    expected = expected or f"an integer from {lo} to {hi}"
    number = _translated(setting, expected, as_int, value)
    if not lo <= number <= hi:
        raise SettingError(setting, expected, shown(value))
    return number


def check_real_range(setting: str, value: Any, lo: float, hi: float) -> float:
    """A finite real number in ``[lo, hi]``, by attnlib's rule of what a real number is.

    Raises
    ------
    ValueError
        ``value`` is not a finite real number from ``lo`` to ``hi``; the message (of a ``SettingError``, a
        ``ValueError``) starts with the setting's name.

    Examples
    --------
    >>> check_real_range("length", 2, 0.25, 6)
    2.0
    """
    expected = f"a finite number in [{lo:g}, {hi:g}]"
    number = _translated(setting, expected, as_real, value)
    if not math.isfinite(number) or not lo <= number <= hi:
        raise SettingError(setting, expected, shown(value))
    return number


def check_flag(setting: str, value: Any) -> bool:
    """A true/false setting (a Python or numpy bool only).

    Raises
    ------
    ValueError
        ``value`` is not ``True`` or ``False``; the message (of a ``SettingError``, a ``ValueError``) starts with the
        setting's name.

    Examples
    --------
    >>> check_flag("causal", True)
    True
    """
    return _translated(setting, "True or False", as_flag, value)


def check_flag_matrix(setting: str, value: Any, shape: tuple[int, int], expected: str) -> np.ndarray:
    """A matrix of ``shape`` whose every entry is a flag by attnlib's rule (``as_flag``: a Python or numpy bool).

    Raises
    ------
    ValueError
        ``value`` is not a matrix of ``shape`` holding only booleans; the message (of a ``SettingError``, a
        ``ValueError``) starts with the setting's name.

    Examples
    --------
    >>> check_flag_matrix("mask", [[True, False]], (1, 2), "a boolean (1, 2) matrix").tolist()
    [[True, False]]
    >>> check_flag_matrix("mask", [[1, 0]], (1, 2), "a boolean (1, 2) matrix")
    Traceback (most recent call last):
    ...
    attnlib.explorers.settings.SettingError: mask must be a boolean (1, 2) matrix; got shape (1, 2), values [[1, 0]]
    """
    try:
        arr = to_ndarray(setting, value)
    except ValueError:
        raise SettingError(setting, expected, shown(value)) from None
    try:
        flags = [as_flag(setting, v) for v in arr.ravel().tolist()]
    except ValueError:
        flags = None
    if arr.shape != tuple(shape) or flags is None:
        raise SettingError(setting, expected, f"shape {arr.shape}, values {shown(arr)}")
    return frozen(np.array(flags, dtype=bool).reshape(shape))
