"""Sinusoidal positional encodings (Vaswani et al., 2017)."""

from __future__ import annotations

import numpy as np

from ._validate import as_positive_int

__all__ = ["positional_frequencies", "sinusoidal_encoding"]


def positional_frequencies(d_model: int) -> np.ndarray:
    """Angular frequency ``1 / 10000^(2i/d_model)`` of each sine/cosine pair ``i``.

    There are ``ceil(d_model / 2)`` pairs; with an odd ``d_model`` the last
    pair has only its sine column.

    Examples
    --------
    >>> positional_frequencies(4).tolist()
    [1.0, 0.01]
    """
    d_model = as_positive_int("d_model", d_model)
    i = np.arange((d_model + 1) // 2)
    return 1.0 / 10000.0 ** (2 * i / d_model)


def sinusoidal_encoding(n_positions: int, d_model: int) -> np.ndarray:
    """The ``(n_positions, d_model)`` table ``PE``.

    ``PE[t, 2i] = sin(t / 10000^(2i/d_model))`` and
    ``PE[t, 2i+1] = cos(t / 10000^(2i/d_model))``, for positions
    ``t = 0 .. n_positions-1``. An odd ``d_model`` works: its last column
    is a sine.

    Examples
    --------
    >>> sinusoidal_encoding(3, 2).round(4).tolist()
    [[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]
    >>> sinusoidal_encoding(1, 3).shape
    (1, 3)
    """
    n_positions = as_positive_int("n_positions", n_positions)
    d_model = as_positive_int("d_model", d_model)
    angles = np.arange(n_positions)[:, None] * positional_frequencies(d_model)[None, :]
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe
