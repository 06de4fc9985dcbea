"""hypothesis strategies for attention's inputs, shared by the property tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

#: entries of Q, K and V: finite and of moderate size, so that every property holds to 1e-12
finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def qkv(draw, max_n: int = 6, max_d_k: int = 5, max_d_v: int = 4):
    """Q (n_q x d_k), K (n_k x d_k) and V (n_k x d_v) of random shapes with ``finite`` entries."""
    n_q = draw(st.integers(1, max_n))
    n_k = draw(st.integers(1, max_n))
    d_k = draw(st.integers(1, max_d_k))
    d_v = draw(st.integers(1, max_d_v))
    Q = draw(arrays(np.float64, (n_q, d_k), elements=finite))
    K = draw(arrays(np.float64, (n_k, d_k), elements=finite))
    V = draw(arrays(np.float64, (n_k, d_v), elements=finite))
    return Q, K, V


@st.composite
def masks(draw, n_q: int, n_k: int):
    """A boolean mask (True = may attend) in which every query keeps at least one key."""
    m = draw(arrays(np.bool_, (n_q, n_k)))
    cols = draw(arrays(np.int64, (n_q,), elements=st.integers(0, n_k - 1)))
    m[np.arange(n_q), cols] = True
    return m
