"""Why attention divides by ``sqrt(d_k)``: the variance argument and its consequences.

Three groups of functions:

* the derivation ``Var(q . k) = d_k`` done step by step by sympy
  (:func:`dot_product_variance_steps`), and the same fact measured by a
  seeded Monte Carlo experiment (:func:`dot_product_variance_table`);
* the softmax Jacobian ``diag(p) - p p^T`` (:func:`softmax_jacobian`) and how
  it collapses when the scores grow (:func:`saturation_sweep`);
* how peaked attention rows are, with and without scaling, as ``d_k`` grows
  (:func:`row_entropy`, :func:`sharpness_vs_dk`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._lazy import lazy_module
from ._memory import check_size
from ._validate import as_array, as_int_sequence, as_matrix, as_positive_int, as_seed, finite_result, quiet
from .core import scaled_scores, softmax

if TYPE_CHECKING:  # type checkers and editors see sympy itself
    import sympy as sp
    from sympy import stats
else:  # imported on first use (attnlib/_lazy.py), so that ``import attnlib`` stays light
    sp = lazy_module("sympy")
    stats = lazy_module("sympy.stats")

__all__ = [
    "DerivationStep",
    "SaturationSweep",
    "SharpnessTable",
    "VarianceTable",
    "dot_product_samples",
    "dot_product_variance_steps",
    "dot_product_variance_table",
    "row_entropy",
    "saturation_sweep",
    "sharpness_vs_dk",
    "softmax_jacobian",
]


@dataclass(frozen=True)
class DerivationStep:
    """One step of a symbolic derivation.

    Attributes
    ----------
    claim:
        What the step establishes, in words.
    lhs:
        The quantity, as an unevaluated sympy expression (for display).
    value:
        What sympy computed it to be.
    """

    claim: str
    lhs: sp.Expr
    value: sp.Expr

    def latex(self) -> str:
        """``lhs = value`` as LaTeX."""
        return f"{sp.latex(self.lhs)} = {sp.latex(self.value)}"


def dot_product_variance_steps(concrete_dims: Sequence[int] = (2, 3)) -> list[DerivationStep]:
    """Derive ``Var(q . k) = d_k`` and ``Var(q . k / sqrt(d_k)) = 1`` with sympy.

    The components ``q_r`` and ``k_r`` are independent standard normal
    random variables (:mod:`sympy.stats`). Every ``value`` below is computed
    by sympy, not typed in: expectations and variances by ``sympy.stats``, the
    sum over ``d_k`` terms by ``sympy.Sum``.

    Parameters
    ----------
    concrete_dims:
        Small dimensions for which the variance of the whole dot product is
        also computed directly with ``d_k`` separate random variables (a
        check on the additivity step; each takes about a second).

    Raises
    ------
    ValueError
        ``concrete_dims`` is not a list of positive integers. The message names the argument.

    Examples
    --------
    >>> steps = dot_product_variance_steps(concrete_dims=())
    >>> [str(s.value) for s in steps]
    ['0', '0', '1', '1', '1', '0', 'd_k', 'beta**2*d_k', '1']
    """
    q = stats.Normal("q_r", 0, 1)
    k = stats.Normal("k_r", 0, 1)
    q2 = stats.Normal("q_{r'}", 0, 1)  # a second coordinate r' != r, as in chapter 5
    k2 = stats.Normal("k_{r'}", 0, 1)
    r = sp.Symbol("r", integer=True, positive=True)
    d_k = sp.Symbol("d_k", integer=True, positive=True)
    beta = sp.Symbol("beta", positive=True)  # the constant factor, chapter 5's beta
    Ex, Var, Cov = sp.Function("E"), sp.Function("Var"), sp.Function("Cov")
    qs, ks = sp.Symbol("q_r"), sp.Symbol("k_r")

    var_term = stats.variance(q * k)
    steps = [
        DerivationStep("each component has mean zero", Ex(qs), stats.E(q)),
        DerivationStep("independence: the mean of a product is the product of the means", Ex(qs * ks), stats.E(q * k)),
        DerivationStep("each component has unit variance and mean zero, so its second moment is 1", Ex(qs**2), stats.E(q**2)),
        DerivationStep("second moment of one product term, E[q_r^2] E[k_r^2]", Ex((qs * ks) ** 2), stats.E((q * k) ** 2)),
        DerivationStep("variance of one product term: E[(q_r k_r)^2] - (E[q_r k_r])^2", Var(qs * ks), var_term),
        DerivationStep(
            "different terms are uncorrelated, so their variances add",
            Cov(qs * ks, sp.Symbol("q_{r'}") * sp.Symbol("k_{r'}")),
            stats.covariance(q * k, q2 * k2),
        ),
    ]
    dims = as_int_sequence("concrete_dims", concrete_dims, allow_empty=True)
    for n in dims:
        if n > 8:
            raise ValueError(f"concrete_dims entries must be at most 8 (each takes seconds with sympy.stats); got {n}")
        qv = [stats.Normal(f"q_{i}", 0, 1) for i in range(1, n + 1)]
        kv = [stats.Normal(f"k_{i}", 0, 1) for i in range(1, n + 1)]
        shown = sp.Add(*[sp.Symbol(f"q_{i}") * sp.Symbol(f"k_{i}") for i in range(1, n + 1)], evaluate=False)
        steps.append(
            DerivationStep(f"check with d_k = {n} separate variables", Var(shown), stats.variance(sp.Add(*[x * y for x, y in zip(qv, kv)])))
        )
    steps.append(
        DerivationStep(
            "sum of d_k independent terms, each of variance 1",
            Var(sp.Sum(sp.Indexed("q", r) * sp.Indexed("k", r), (r, 1, d_k))),
            sp.Sum(var_term, (r, 1, d_k)).doit(),
        )
    )
    # the scaling rule, applied to the whole sum: sympy.stats computes Var(beta Y) / Var(Y) for a
    # two-term dot product X, and that factor multiplies the variance d_k of the sum
    q_pair = [stats.Normal(f"q_{i}", 0, 1) for i in (1, 2)]
    k_pair = [stats.Normal(f"k_{i}", 0, 1) for i in (1, 2)]
    two_terms = sp.Add(*[x * y for x, y in zip(q_pair, k_pair)])
    factor = sp.simplify(stats.variance(beta * two_terms) / stats.variance(two_terms))
    dot = sp.Symbol(r"\mathbf{q}\mathbf{k}^\top")
    sum_variance = sp.Sum(var_term, (r, 1, d_k)).doit()
    steps.append(
        DerivationStep("scaling rule Var(β Y) = β^2 Var(Y), applied to the whole sum Y = q k^T", Var(beta * dot), factor * sum_variance)
    )
    scaled = factor.subs(beta, 1 / sp.sqrt(d_k)) * sum_variance
    steps.append(
        DerivationStep(
            "so dividing by sqrt(d_k) brings the variance back to 1",
            Var(dot / sp.sqrt(d_k)),
            sp.simplify(scaled),
        )
    )
    return steps


def dot_product_samples(d_k: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_samples`` dot products ``q . k`` of independent standard normal vectors of length ``d_k``.

    Raises
    ------
    ValueError
        ``d_k`` or ``n_samples`` is not a positive integer; ``rng`` is not a ``numpy.random.Generator``. The message
        names the argument.

    Examples
    --------
    >>> s = dot_product_samples(4, 3, np.random.default_rng(0))
    >>> s.shape
    (3,)
    """
    d_k = as_positive_int("d_k", d_k)
    n_samples = as_positive_int("n_samples", n_samples)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)); got {type(rng).__name__}")
    check_size(f"dot_product_samples(n_samples={n_samples})", n_samples)
    check_size(f"dot_product_samples(d_k={d_k}): two standard normal vectors", 2 * d_k)
    if n_samples * d_k > 10**10:
        raise ValueError(
            f"dot_product_samples(d_k={d_k}, n_samples={n_samples}) would draw {2 * n_samples * d_k:.3g} random numbers, "
            "which takes minutes; use n_samples * d_k <= 1e10"
        )
    out = np.empty(n_samples)
    chunk = max(1, 2_000_000 // d_k)
    for start in range(0, n_samples, chunk):
        m = min(chunk, n_samples - start)
        out[start : start + m] = np.einsum("ij,ij->i", rng.standard_normal((m, d_k)), rng.standard_normal((m, d_k)))
    return out


@dataclass(frozen=True)
class VarianceTable:
    """Empirical variance of dot products, unscaled and scaled, per ``d_k``."""

    d_k: np.ndarray
    unscaled: np.ndarray
    scaled: np.ndarray
    n_samples: int

    def rows(self) -> list[tuple[int, float, float]]:
        """``(d_k, unscaled variance, scaled variance)`` per dimension."""
        return [(int(d), float(u), float(s)) for d, u, s in zip(self.d_k, self.unscaled, self.scaled)]


def dot_product_variance_table(dims: Sequence[int], n_samples: int = 20_000, seed: int = 0) -> VarianceTable:
    """Monte Carlo estimate of ``Var(q . k)`` and ``Var(q . k / sqrt(d_k))`` for each ``d_k`` in ``dims``.

    The theory says ``d_k`` and 1. The relative standard error of each
    estimate is roughly ``sqrt(2 / n_samples)`` (1 % for the default).

    Raises
    ------
    ValueError
        ``dims`` is not a list of integers in their range; ``n_samples`` is not a positive integer; ``seed`` is not a
        seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The message names the argument.

    Examples
    --------
    >>> t = dot_product_variance_table([1, 64], n_samples=20_000, seed=1)
    >>> (t.unscaled / t.d_k).round(1).tolist()
    [1.0, 1.0]
    """
    d = as_int_sequence("dims", dims)
    n_samples = as_positive_int("n_samples", n_samples)
    seed = as_seed("seed", seed)
    unscaled, scaled = [], []
    for x in d:
        # one stream per d_k, so a dimension's estimate does not depend on which others are in the list
        samples = dot_product_samples(x, n_samples, np.random.default_rng([seed, x]))
        unscaled.append(samples.var())
        scaled.append((samples / np.sqrt(x)).var())
    return VarianceTable(np.asarray(d), np.asarray(unscaled), np.asarray(scaled), int(n_samples))


def softmax_jacobian(scores: Any) -> np.ndarray:
    """Jacobian of the softmax of one score vector: ``J = diag(p) - p p^T``.

    ``J[i, j]`` is ``d p_i / d z_j``. Every row and column sums to 0.

    Raises
    ------
    ValueError
        ``scores`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error names
        the inputs it came from). The message names the argument.

    Examples
    --------
    >>> softmax_jacobian([0.0, 0.0]).tolist()
    [[0.25, -0.25], [-0.25, 0.25]]
    """
    z = as_array("scores", scores, 1)
    return _jacobian_from_probs(softmax(z)[None, :])[0]


def _jacobian_from_probs(P: np.ndarray) -> np.ndarray:
    """Softmax Jacobians ``diag(p) - p p^T`` for every row ``p`` of ``P`` (shape ``(m, n)`` -> ``(m, n, n)``)."""
    eye = np.eye(P.shape[1])
    return P[:, :, None] * eye[None] - P[:, :, None] * P[:, None, :]


@dataclass(frozen=True)
class SaturationSweep:
    """Softmax statistics as a score vector is multiplied by growing factors.

    Attributes
    ----------
    factors:
        The multipliers ``c``.
    max_weight:
        Largest softmax weight of ``c * scores``.
    jacobian_norm:
        Frobenius norm of the softmax Jacobian at ``c * scores``.
    jacobian_max:
        Largest absolute entry of that Jacobian.
    """

    factors: np.ndarray
    max_weight: np.ndarray
    jacobian_norm: np.ndarray
    jacobian_max: np.ndarray


def saturation_sweep(scores: Any, factors: Any) -> SaturationSweep:
    """How softmax saturates and its gradient vanishes as the scores ``c * scores`` grow.

    Raises
    ------
    ValueError
        ``scores`` or ``factors`` is not finite real numbers of the expected shape; or a result would overflow float64
        (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> s = saturation_sweep([1.0, 0.0, 0.5], [0.0, 100.0])
    >>> s.max_weight.round(4).tolist(), s.jacobian_max.round(4).tolist()
    ([0.3333, 1.0], [0.2222, 0.0])
    """
    z = as_array("scores", scores, 1)
    c = as_array("factors", factors, 1)
    check_size(f"saturation_sweep of {z.size} scores and {c.size} factors (the Jacobians)", c.size * z.size * z.size)
    with quiet():
        scaled = finite_result(c[:, None] * z[None, :], "factors * scores", "scores and factors")
    weights = softmax(scaled, axis=-1)
    jac = _jacobian_from_probs(weights)
    return SaturationSweep(c, weights.max(axis=1), np.linalg.norm(jac, axis=(1, 2)), np.abs(jac).max(axis=(1, 2)))


def row_entropy(weights: Any) -> np.ndarray:
    """Shannon entropy (in nats) of each row of an attention matrix; ``0 log 0`` counts as 0.

    A uniform row over ``n`` keys has entropy ``log n``; a one-hot row has 0.

    Raises
    ------
    ValueError
        ``weights`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> row_entropy([[0.5, 0.5], [1.0, 0.0]]).round(4).tolist()
    [0.6931, 0.0]
    """
    w = as_matrix("weights", weights)
    if (w < 0).any():
        raise ValueError(f"weights (shape {w.shape}) has negative entries; rows must be probability distributions")
    with quiet():
        sums = w.sum(axis=1)
    if not np.allclose(sums, 1.0, atol=1e-9):
        raise ValueError(f"weights (shape {w.shape}): every row must sum to 1; row sums are {sums[:5].round(6).tolist()}")
    logs = np.log(np.where(w > 0, w, 1.0))
    return 0.0 - (w * logs).sum(axis=1)


@dataclass(frozen=True)
class SharpnessTable:
    """Mean largest weight and mean row entropy of random attention rows, per ``d_k``.

    Attributes
    ----------
    d_k:
        The key dimensions.
    n_keys:
        Keys per row (the entropy of a uniform row is ``log(n_keys)``).
    max_weight_unscaled, max_weight_scaled:
        Mean over query rows of the largest weight.
    entropy_unscaled, entropy_scaled:
        Mean over query rows of the row entropy (nats).
    jacobian_norm_unscaled, jacobian_norm_scaled:
        Mean over query rows of the Frobenius norm of the softmax Jacobian
        with respect to the softmax *input* (the raw scores for the unscaled
        rows, the scores divided by ``sqrt(d_k)`` for the scaled ones).
        :attr:`jacobian_norm_scaled_wrt_scores` gives the scaled rows'
        response to the raw scores instead.
    """

    d_k: np.ndarray
    n_keys: int
    max_weight_unscaled: np.ndarray
    max_weight_scaled: np.ndarray
    entropy_unscaled: np.ndarray
    entropy_scaled: np.ndarray
    jacobian_norm_unscaled: np.ndarray
    jacobian_norm_scaled: np.ndarray

    @property
    def jacobian_norm_scaled_wrt_scores(self) -> np.ndarray:
        """Mean Frobenius norm of the scaled rows' Jacobian with respect to the raw scores ``S``.

        The scaled rows are ``softmax(S / sqrt(d_k))``, so by the chain rule their
        derivative with respect to ``S`` is the softmax Jacobian divided by
        ``sqrt(d_k)``; the unscaled rows' input *is* ``S``, so
        ``jacobian_norm_unscaled`` already answers the same question for them.

        >>> t = sharpness_vs_dk([64], seed=0)
        >>> bool(t.jacobian_norm_scaled_wrt_scores[0] < t.jacobian_norm_unscaled[0] < t.jacobian_norm_scaled[0])
        True
        """
        return self.jacobian_norm_scaled / np.sqrt(self.d_k)


def sharpness_vs_dk(dims: Sequence[int], n_queries: int = 200, n_keys: int = 10, seed: int = 0) -> SharpnessTable:
    """Compare softmax(Q K^T) with softmax(Q K^T / sqrt(d_k)) for random standard normal Q and K.

    For each ``d_k`` draws ``n_queries`` queries and ``n_keys`` keys with
    independent standard normal components (seeded), computes both weight
    matrices with :func:`attnlib.softmax` and :func:`attnlib.scaled_scores`,
    and averages the largest weight, the entropy and the norm of the
    softmax Jacobian over the rows.

    Raises
    ------
    ValueError
        ``dims`` is not a list of integers in their range; ``n_queries`` or ``n_keys`` is not a positive integer;
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The message
        names the argument.

    Examples
    --------
    >>> t = sharpness_vs_dk([128], seed=0)
    >>> bool(t.max_weight_unscaled[0] > 0.9 > t.max_weight_scaled[0])
    True
    """
    d = as_int_sequence("dims", dims)
    n_queries = as_positive_int("n_queries", n_queries)
    n_keys = as_positive_int("n_keys", n_keys)
    seed = as_seed("seed", seed)
    for dk in d:
        check_size(f"sharpness_vs_dk with d_k={dk}, n_queries={n_queries}, n_keys={n_keys}", (n_queries + n_keys) * dk)
    cols: dict[str, list[float]] = {"mu": [], "ms": [], "eu": [], "es": [], "ju": [], "js": []}
    for dk in d:
        rng = np.random.default_rng([seed, dk])  # one stream per d_k, independent of the rest of the list
        Q = rng.standard_normal((n_queries, dk))
        K = rng.standard_normal((n_keys, dk))
        for tag, scale in (("u", False), ("s", True)):
            w = softmax(scaled_scores(Q, K, scale=scale), axis=-1)
            cols["m" + tag].append(float(w.max(axis=1).mean()))
            cols["e" + tag].append(float(row_entropy(w).mean()))
            cols["j" + tag].append(float(np.linalg.norm(_jacobian_from_probs(w), axis=(1, 2)).mean()))
    return SharpnessTable(np.asarray(d), n_keys, *(np.asarray(cols[c]) for c in ("mu", "ms", "eu", "es", "ju", "js")))
