"""How attnlib writes numbers: values in cells, byte counts, and ``−∞`` for a masked score.

One module for every place a number becomes text: the figures (:mod:`attnlib.plots`),
the memory figures (:mod:`attnlib.cost`), the messages of ``attnlib._validate`` and
the explorers' snapshots; the explorers' browser module ``static/format.js`` writes
values the same way (the golden test compares them). Arguments are checked by
``attnlib._validate``'s rules; this module imports nothing else of attnlib.

Examples
--------
>>> format_value(1 / 3), format_value(-np.inf), format_bytes(67108864)
('0.3333', '−∞', '64.0 MiB')
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import Any

import numpy as np

from ._validate import as_array, as_int, as_real, real_scalar

__all__ = ["MASKED_TEXT", "NEG_INF_TEXT", "format_bytes", "format_row", "format_value", "is_displayable", "is_masked"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")

#: How a masked cell (a ``-inf`` score) is written: a minus sign and the infinity symbol.
MASKED_TEXT = "\u2212\u221e"

#: The same text as :data:`MASKED_TEXT`, under the name the explorers use.
NEG_INF_TEXT = MASKED_TEXT

#: Beyond this magnitude a value is written in scientific notation (``1.0000e+308``), so a cell stays short.
_SCIENTIFIC_FROM = 1e15


def is_masked(value: Any) -> bool:
    """Whether ``value`` is a masked cell: exactly ``-inf`` (a forbidden score).

    Raises
    ------
    ValueError
        Never: any value gives ``True`` or ``False``.

    Examples
    --------
    >>> is_masked(-np.inf), is_masked(-1e308), is_masked(float("nan"))
    (True, False, False)
    """
    number = real_scalar(value)
    return number is not None and number == -np.inf


def is_displayable(value: Any) -> bool:
    """Whether :func:`format_value` will show ``value``: a finite real number or ``-inf`` (masked).

    NaN, ``+inf``, complex numbers, strings, bools and ints beyond float64
    are not displayable; the explorers show a message instead of a number.

    Raises
    ------
    ValueError
        Never: any value gives ``True`` or ``False``.

    Examples
    --------
    >>> is_displayable(0.5), is_displayable(-np.inf), is_displayable(1e308)
    (True, True, True)
    >>> is_displayable(float("nan")), is_displayable(np.inf), is_displayable(1j), is_displayable("1")
    (False, False, False, False)
    """
    number = real_scalar(value)
    return number is not None and (math.isfinite(number) or number == -math.inf)


def format_value(value: float, decimals: int = 4) -> str:
    """Format one cell: ``-inf`` as ``−∞``, otherwise ``decimals`` places.

    Magnitudes from 1e15 on are written in scientific notation with
    ``decimals`` places. NaN, ``+inf`` and anything else that is not
    :func:`is_displayable` raise :class:`ValueError`: they never reach a
    reader as numbers.

    Raises
    ------
    ValueError
        ``decimals`` is not a non-negative integer. Any ``value`` is shown: a non-finite one or one that is not a number
        as a word (never as ``nan`` or ``inf``).

    Examples
    --------
    >>> format_value(1 / 3), format_value(-np.inf), format_value(-0.0)
    ('0.3333', '−∞', '0.0000')
    >>> format_value(-1e308, decimals=2)
    '-1.00e+308'
    """
    decimals = as_int("decimals", decimals, minimum=0, what="a non-negative integer")
    if decimals > 20:
        raise ValueError(f"decimals must be at most 20; got {decimals}")
    if not is_displayable(value):
        raise ValueError(
            f"value must be a finite real number or -inf (a masked cell); got {value!r}"[:200]
            + " (NaN and +inf are never shown as numbers)"
        )
    number = real_scalar(value)
    if number == -np.inf:
        return MASKED_TEXT
    text = f"{number:.{decimals}e}" if abs(number) >= _SCIENTIFIC_FROM else f"{number:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_row(values: Any, decimals: int = 4) -> str:
    """Format a vector as ``[a, b, c]`` with :func:`format_value` for each entry.

    Raises
    ------
    ValueError
        ``values`` is not finite real numbers of the expected shape; ``decimals`` is not a non-negative integer. The
        message names the argument.

    Examples
    --------
    >>> format_row([1 / 3, 0.0, -np.inf])
    '[0.3333, 0.0000, −∞]'
    >>> format_row([0.5, 0.25], decimals=2)
    '[0.50, 0.25]'
    """
    arr = as_array("values", values, 1, allow_neg_inf=True, allow_empty=True)
    return "[" + ", ".join(format_value(v, decimals) for v in arr) + "]"


def format_bytes(num_bytes: Any, decimals: int = 1) -> str:
    """A byte count in the largest binary unit that keeps the number at least 1.

    Units are powers of 1024: KiB, MiB, GiB, TiB, PiB, EiB, ZiB, YiB.
    ``num_bytes`` is a non-negative int of any size (counted exactly) or a
    finite real number (Python or numpy); beyond a million YiB the number is
    written in scientific notation.

    Raises
    ------
    ValueError
        ``num_bytes`` is not a non-negative real number; ``decimals`` is not a non-negative integer. The message names
        the argument.

    Examples
    --------
    >>> format_bytes(67108864), format_bytes(68719476736), format_bytes(512)
    ('64.0 MiB', '64.0 GiB', '512.0 B')
    >>> format_bytes(1536, decimals=2)
    '1.50 KiB'
    """
    # attnlib's rules of what a number is: an int of any size is counted exactly, a float must be finite
    if isinstance(num_bytes, (float, np.floating)):
        number = as_real("num_bytes", num_bytes)
        if not math.isfinite(number):
            raise ValueError(f"num_bytes must be a finite non-negative number; got {num_bytes!r}")
        exact = Decimal(number)
    else:
        exact = Decimal(as_int("num_bytes", num_bytes, what="a non-negative number"))
    decimals = as_int("decimals", decimals, minimum=0, what="a non-negative integer")
    if decimals > 50:
        raise ValueError(f"decimals must be at most 50; got {decimals}")
    if exact < 0:
        raise ValueError(f"num_bytes must be a finite non-negative number; got {num_bytes!r}")
    return bytes_text(exact, decimals)


def bytes_text(exact: Decimal | int, decimals: int = 1) -> str:
    """The text of :func:`format_bytes` for a count already checked (a non-negative int or Decimal).

    Examples
    --------
    >>> bytes_text(1536)
    '1.5 KiB'
    """
    exact = Decimal(exact)
    with localcontext() as ctx:
        ctx.prec = 60
        unit = 0
        value = exact
        while value >= 1024 and unit < len(_UNITS) - 1:
            value /= 1024
            unit += 1
        text = f"{value:.{decimals}e}" if value >= 10**6 else f"{value:.{decimals}f}"
    return f"{text} {_UNITS[unit]}"
