"""The Transformer encoder block around attention: residuals, layer normalisation and the MLP (chapter 16).

One block, as ``torch.nn.TransformerEncoderLayer`` computes it in eval mode
(``batch_first=True``, dropout 0), written with the book's conventions:
tokens are rows, ``X`` has shape ``(n, d_model)`` and every projection is
``X W + b`` with ``W`` of shape ``(inputs, outputs)``.

Post-norm (``norm_first=False``, the paper's order and PyTorch's default)::

    X' = LN_1(X + MHA(X)),     Y = LN_2(X' + MLP(X'))

Pre-norm (``norm_first=True``)::

    X' = X + MHA(LN_1(X)),     Y = X' + MLP(LN_2(X'))

with ``MHA(Z) = concat_r(attention(Z W_Q^r + b_Q^r, Z W_K^r + b_K^r, Z W_V^r + b_V^r)) W_O + b_O``,
``MLP(Z) = act(Z W_1 + b_1) W_2 + b_2`` and
``LN(z) = gamma * (z - mean(z)) / sqrt(var(z) + eps) + beta`` over each row
(``var`` divides by ``d_model``).

The attention of each head is :func:`attnlib.core.attention` and its
gradient :func:`attnlib.backward.attention_backward_from`; this module adds
only what surrounds them.

Parameters are a dict named in the book's notation (:data:`PARAM_NAMES`).
``W_Q``, ``W_K`` and ``W_V`` are ``(d_model, d_model)`` in the packed layout
of chapter 8 and :func:`attnlib.core.multi_head_attention`: head ``r`` owns
columns ``r*d_head:(r+1)*d_head`` (:func:`head_blocks` cuts them out).
Gradients are a dict with the same names and a ``d`` in front (``dW_Q``),
the form :mod:`attnlib.training`'s optimisers take, plus ``dX``.

Where PyTorch's layer differs from the paper, this module follows PyTorch
(:data:`DIFFERENCES_FROM_THE_PAPER` lists the places).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ._memory import check_size
from ._validate import as_array, as_flag, as_mask, as_positive_int, as_positive_real, as_rng, finite_result, quiet
from .backward import attention_backward_from
from .core import AttentionResult, attention, attention_parameter_count, head_width, multi_head_attention
from .cost import attention_flops

__all__ = [
    "ACTIVATIONS",
    "DIFFERENCES_FROM_THE_PAPER",
    "LAYER_NORM_CODE",
    "PARAM_NAMES",
    "TORCH_NAMES",
    "EncoderLayerResult",
    "LayerNormGradients",
    "abs_attention_weights",
    "abs_by_attention",
    "encoder_layer",
    "encoder_layer_backward",
    "encoder_layer_cost",
    "encoder_layer_parts",
    "encoder_stack",
    "encoder_stack_backward",
    "gelu",
    "head_blocks",
    "init_encoder_params",
    "layer_norm",
    "layer_norm_backward",
    "mlp",
    "params_from_torch",
]

#: The parameters of one block, in the book's notation, in the order of PyTorch's state_dict.
PARAM_NAMES: tuple[str, ...] = (
    "W_Q",
    "W_K",
    "W_V",
    "b_Q",
    "b_K",
    "b_V",
    "W_O",
    "b_O",
    "W_1",
    "b_1",
    "W_2",
    "b_2",
    "gamma_1",
    "beta_1",
    "gamma_2",
    "beta_2",
)

#: The two position-wise activations, ReLU and GELU (the exact erf form, PyTorch's default ``approximate="none"``).
ACTIVATIONS: tuple[str, ...] = ("relu", "gelu")

#: PyTorch's state_dict key, its shape, the book's symbols and how they are obtained (``d`` is d_model, ``f`` is d_ff).
TORCH_NAMES: tuple[tuple[str, str, str, str, str], ...] = (
    ("self_attn.in_proj_weight", "(3d, d)", "W_Q, W_K, W_V", "(d, d) each", "rows [0:d], [d:2d], [2d:3d], each transposed"),
    ("self_attn.in_proj_bias", "(3d,)", "b_Q, b_K, b_V", "(d,) each", "entries [0:d], [d:2d], [2d:3d]"),
    ("self_attn.out_proj.weight", "(d, d)", "W_O", "(d, d)", "transposed"),
    ("self_attn.out_proj.bias", "(d,)", "b_O", "(d,)", "as it is"),
    ("linear1.weight", "(f, d)", "W_1", "(d, f)", "transposed"),
    ("linear1.bias", "(f,)", "b_1", "(f,)", "as it is"),
    ("linear2.weight", "(d, f)", "W_2", "(f, d)", "transposed"),
    ("linear2.bias", "(d,)", "b_2", "(d,)", "as it is"),
    ("norm1.weight", "(d,)", "gamma_1", "(d,)", "as it is"),
    ("norm1.bias", "(d,)", "beta_1", "(d,)", "as it is"),
    ("norm2.weight", "(d,)", "gamma_2", "(d,)", "as it is"),
    ("norm2.bias", "(d,)", "beta_2", "(d,)", "as it is"),
)

#: Where torch.nn.TransformerEncoderLayer differs from the paper (Vaswani et al. 2017), and what this module does.
DIFFERENCES_FROM_THE_PAPER: tuple[tuple[str, str, str], ...] = (
    ("projection biases", "Q, K, V and the output are X W, no bias", "X W + b (bias=True); followed"),
    ("weight layout", "X W with W of shape (inputs, outputs)", "x W^T + b with W stored (outputs, inputs); transposed"),
    (
        "packed Q, K, V",
        "separate W_i^Q, W_i^K, W_i^V per head",
        "one in_proj_weight stacking Q; K; V, head u (from 1) = rows (u-1)*d_head:u*d_head of each block; split",
    ),
    ("boolean mask", "M is 0 or -inf, added to the scores", "True = may NOT attend; attnlib's True = may attend (flip it)"),
    ("norm order", "post-norm: LayerNorm(x + Sublayer(x))", "post-norm by default, pre-norm with norm_first=True; both"),
    ("layer norm", "not specified beyond Ba et al. 2016", "biased variance over d_model, eps=1e-5 inside the root; followed"),
    ("activation", "ReLU", "relu by default, or gelu (exact erf form); both"),
    ("dropout", "on each sub-layer output and the embeddings", "also on the attention weights and inside the MLP; 0 here"),
    (
        "a row that may attend to nothing",
        "not discussed",
        "depends on the path (torch 2.14: NaN on the no_grad fast path, finite with gradients on); here a ValueError naming mask",
    ),
)


class LayerNormGradients(NamedTuple):
    """Gradients of a loss through :func:`layer_norm`: with respect to its input, its gain and its bias."""

    dX: np.ndarray
    dgamma: np.ndarray
    dbeta: np.ndarray


@dataclass(frozen=True)
class EncoderLayerResult:
    """Every intermediate of one encoder block (see the module docstring for the two orders).

    Attributes
    ----------
    X:
        The input rows, ``(n, d_model)``.
    attention_input:
        What the attention sub-layer reads: ``X`` (post-norm) or ``LN_1(X)`` (pre-norm).
    Q, K, V:
        The projections with their biases, ``(n, d_model)``, packed by head.
    heads:
        One :class:`attnlib.core.AttentionResult` per head.
    concat:
        The head outputs side by side, ``(n, d_model)``.
    attention_output:
        ``concat W_O + b_O``.
    first_sum:
        ``X + attention_output``: the residual stream after the first sub-layer, before any norm.
    middle:
        The stream between the sub-layers: ``LN_1(first_sum)`` (post-norm) or ``first_sum`` (pre-norm).
    mlp_input:
        What the MLP reads: ``middle`` (post-norm) or ``LN_2(middle)`` (pre-norm).
    hidden_pre, hidden:
        ``mlp_input W_1 + b_1`` and the activation of it, ``(n, d_ff)``.
    mlp_output:
        ``hidden W_2 + b_2``.
    second_sum:
        ``middle + mlp_output``.
    output:
        ``LN_2(second_sum)`` (post-norm) or ``second_sum`` (pre-norm).
    mask:
        The boolean mask used (True = may attend), or ``None``.
    n_heads, norm_first, activation, eps:
        The options of the call.
    """

    X: np.ndarray
    attention_input: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    heads: tuple[AttentionResult, ...]
    concat: np.ndarray
    attention_output: np.ndarray
    first_sum: np.ndarray
    middle: np.ndarray
    mlp_input: np.ndarray
    hidden_pre: np.ndarray
    hidden: np.ndarray
    mlp_output: np.ndarray
    second_sum: np.ndarray
    output: np.ndarray
    mask: np.ndarray | None
    n_heads: int
    norm_first: bool
    activation: str
    eps: float

    @property
    def weights(self) -> np.ndarray:
        """The attention weights of every head, ``(n_heads, n, n)``."""
        return np.stack([h.weights for h in self.heads])


# --- small checked pieces -------------------------------------------------------------------------


def _matmul(a: np.ndarray, b: np.ndarray, what: str, inputs: str) -> np.ndarray:
    with quiet():
        return finite_result(a @ b, what, inputs)


def _vector(name: str, value: Any, size: int | None = None) -> np.ndarray:
    v = as_array(name, value, 1)
    if size is not None and v.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},); got {v.shape}")
    return v


def _eps(eps: Any) -> float:
    return as_positive_real("eps", eps)


def _activation(activation: Any) -> str:
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {list(ACTIVATIONS)}; got {activation!r}")
    return activation


def _normalised(x: np.ndarray, eps: float, inputs: str) -> tuple[np.ndarray, np.ndarray]:
    """``(x - mean) / sqrt(var + eps)`` per row, and ``1 / sqrt(var + eps)`` per row."""
    with quiet():
        centred = finite_result(x - x.mean(axis=-1, keepdims=True), "the centred rows x - mean(x)", inputs)
        var = finite_result(np.mean(centred * centred, axis=-1, keepdims=True), "the variance of each row", inputs)
        inv = 1.0 / np.sqrt(var + eps)
        return finite_result(centred * inv, "the normalised rows", inputs), inv


def layer_norm(X: Any, gamma: Any, beta: Any, eps: float = 1e-5) -> np.ndarray:
    """Layer normalisation of each row: ``gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta``.

    The mean and the (biased) variance are taken over the row's ``d_model``
    features, as ``torch.nn.LayerNorm(d_model)`` does; ``eps`` sits inside the
    square root and must be positive (a constant row then maps to ``beta``).

    Raises
    ------
    ValueError
        ``X``, ``gamma`` or ``beta`` is not finite real numbers of the expected shape; ``eps`` is not a finite real
        number in its range; or a result would overflow float64 (the error names the inputs it came from). The message
        names the argument.

    Examples
    --------
    >>> layer_norm([[1.0, 3.0]], [1.0, 1.0], [0.0, 0.0], eps=1e-12).round(6).tolist()
    [[-1.0, 1.0]]
    >>> layer_norm([[2.0, 2.0]], [1.0, 1.0], [0.5, -0.5]).tolist()
    [[0.5, -0.5]]
    """
    x = as_array("X", X, 2)
    g = _vector("gamma", gamma, x.shape[1])
    b = _vector("beta", beta, x.shape[1])
    xhat, _ = _normalised(x, _eps(eps), "X")
    with quiet():
        return finite_result(xhat * g + b, "gamma * normalised + beta", "X, gamma and beta")


#: The functions whose code is the layer norm (the checked face and its unchecked body); exercise 16.2 refuses a
#: student's function that is, or calls, any of them.
LAYER_NORM_CODE = (layer_norm, _normalised)


def layer_norm_backward(X: Any, gamma: Any, d_output: Any, eps: float = 1e-5) -> LayerNormGradients:
    """Gradients through :func:`layer_norm` for an upstream gradient ``d_output``.

    With ``xhat`` the normalised row, ``s = sqrt(var + eps)`` and
    ``g = d_output * gamma``: ``dX = (g - mean(g) - xhat * mean(g * xhat)) / s``
    (means over the row), ``dgamma = sum over rows of d_output * xhat`` and
    ``dbeta = sum over rows of d_output``. The bias does not enter the
    gradients, so it is not an argument.

    Raises
    ------
    ValueError
        ``X``, ``gamma`` or ``d_output`` is not finite real numbers of the expected shape; ``eps`` is not a finite real
        number in its range; or a result would overflow float64 (the error names the inputs it came from). The message
        names the argument.

    Examples
    --------
    >>> g = layer_norm_backward([[1.0, 3.0]], [1.0, 1.0], [[1.0, 1.0]])
    >>> g.dX.round(6).tolist(), g.dbeta.tolist()
    ([[0.0, 0.0]], [1.0, 1.0])
    """
    x = as_array("X", X, 2)
    gam = _vector("gamma", gamma, x.shape[1])
    dy = as_array("d_output", d_output, 2)
    if dy.shape != x.shape:
        raise ValueError(f"d_output has shape {dy.shape} but X has shape {x.shape}; they must match")
    return _layer_norm_backward(x, gam, dy, _eps(eps), "d_output")


def _layer_norm_backward(x: np.ndarray, gam: np.ndarray, dy: np.ndarray, eps: float, inputs: str) -> LayerNormGradients:
    xhat, inv = _normalised(x, eps, "X")
    with quiet():
        g = finite_result(dy * gam, "the gradient times gamma", f"{inputs} and gamma")
        inner = g - g.mean(axis=-1, keepdims=True) - xhat * np.mean(g * xhat, axis=-1, keepdims=True)
        dx = finite_result(inner * inv, "the layer-norm input gradient", f"{inputs}, gamma and X")
        dgamma = finite_result(np.sum(dy * xhat, axis=0), "dgamma = sum(d_output * normalised)", inputs)
        dbeta = finite_result(np.sum(dy, axis=0), "dbeta = sum(d_output)", inputs)
    return LayerNormGradients(dx, dgamma, dbeta)


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x: Any) -> np.ndarray:
    """GELU in its exact form, ``x * Phi(x) = x (1 + erf(x / sqrt(2))) / 2``.

    This is PyTorch's default (``torch.nn.functional.gelu(x)``, ``approximate="none"``),
    not the tanh approximation; ``Phi`` is the standard normal distribution function.

    Raises
    ------
    ValueError
        ``x`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error names the
        inputs it came from). The message names the argument.

    Examples
    --------
    >>> gelu([-1.0, 0.0, 1.0]).round(6).tolist()
    [-0.158655, 0.0, 0.841345]
    """
    arr = as_array("x", x, (1, 2))
    return _gelu(arr)


def _gelu(arr: np.ndarray) -> np.ndarray:
    phi = 0.5 * (1.0 + _erf(arr / math.sqrt(2.0)).astype(np.float64))
    return arr * phi


def _gelu_grad(arr: np.ndarray) -> np.ndarray:
    """``d gelu / dx = Phi(x) + x phi(x)``."""
    cdf = 0.5 * (1.0 + _erf(arr / math.sqrt(2.0)).astype(np.float64))
    with quiet():
        pdf = np.exp(-0.5 * arr * arr) / math.sqrt(2.0 * math.pi)
    return cdf + arr * pdf


def _act(z: np.ndarray, activation: str) -> np.ndarray:
    return np.maximum(z, 0.0) if activation == "relu" else _gelu(z)


def _act_grad(z: np.ndarray, activation: str) -> np.ndarray:
    # ReLU's derivative at exactly 0 is taken as 0, as PyTorch does
    return (z > 0).astype(np.float64) if activation == "relu" else _gelu_grad(z)


def abs_attention_weights(kappa: float) -> dict[str, np.ndarray]:
    """The four matrices of two attention heads that approximate ``|x|`` (see :func:`abs_by_attention`).

    Tokens have two features, ``(x, 1)``; ``d_model = 2`` and two heads of width 1. Both heads
    ask with ``kappa`` times the second feature; head 1's key and value are ``+x``, head 2's are
    ``-x``; ``W_O`` adds the two heads into the first output feature.

    Raises
    ------
    ValueError
        ``kappa`` is not a finite positive real number. The message names the argument.

    Examples
    --------
    >>> {name: m.tolist() for name, m in abs_attention_weights(10.0).items()}
    {'W_Q': [[0.0, 0.0], [10.0, 10.0]], 'W_K': [[1.0, -1.0], [0.0, 0.0]], 'W_V': [[1.0, -1.0], [0.0, 0.0]], 'W_O': [[1.0, 0.0], [1.0, 0.0]]}
    """
    k = as_positive_real("kappa", kappa)
    key = np.array([[1.0, -1.0], [0.0, 0.0]])
    return {"W_Q": np.array([[0.0, 0.0], [k, k]]), "W_K": key, "W_V": key.copy(), "W_O": np.array([[1.0, 0.0], [1.0, 0.0]])}


def abs_by_attention(x: Any, kappa: float) -> np.ndarray:
    """``|x|`` of a one-feature token, approximated by two attention heads and a constant token before it.

    Each ``x`` becomes a sequence of two tokens, a constant token ``(0, 1)`` (a beginning-of-sequence
    token) and the token ``(x, 1)``, which goes through :func:`attnlib.core.multi_head_attention`
    with :func:`abs_attention_weights`. The token ``(x, 1)`` scores ``kappa x`` (head 1) and
    ``-kappa x`` (head 2) against itself and 0 against the constant token, whose value is 0, so
    the heads return ``x sigma(kappa x)`` and ``-x sigma(-kappa x)`` (``sigma`` the logistic
    function) and their sum is ``x tanh(kappa x / 2)``: ``|x|`` up to an error that shrinks like
    ``1 / kappa``. Attention on one token alone is affine in it (chapter 16); with a second token
    the softmax weights depend on ``x``, and this is what makes the bend possible.

    Returns
    -------
    The first output feature of the token ``(x, 1)``, one per entry of ``x``.

    Raises
    ------
    ValueError
        ``x`` is not a list of finite real numbers; ``kappa`` is not a finite positive real number; or ``kappa * x``
        overflows float64 (the message names ``kappa`` and ``x``). The message names the argument.

    Examples
    --------
    >>> abs_by_attention([-1.0, 0.0, 0.5], kappa=50.0).round(4).tolist()
    [1.0, 0.0, 0.5]
    """
    values = as_array("x", x, 1)
    W = abs_attention_weights(kappa)
    out = np.empty(values.size)
    chunk = 256  # sequences side by side, each token seeing only its own pair (a block-diagonal mask)
    for start in range(0, values.size, chunk):
        v = values[start : start + chunk]
        tokens = np.ones((2 * v.size, 2))
        tokens[0::2, 0], tokens[1::2, 0] = 0.0, v
        pair = np.arange(2 * v.size) // 2
        try:
            result, _ = multi_head_attention(
                tokens, tokens, W["W_Q"], W["W_K"], W["W_V"], W["W_O"], n_heads=2, mask=pair[:, None] == pair[None, :]
            )
        except ValueError as exc:  # an overflow of kappa * x, reported by core in its own names
            raise ValueError(f"kappa * x overflowed (kappa = {float(kappa):g}, largest |x| = {np.abs(v).max():g}): {exc}") from None
        out[start : start + v.size] = result[1::2, 0]
    return out


def mlp(X: Any, W_1: Any, b_1: Any, W_2: Any, b_2: Any, activation: str = "relu") -> np.ndarray:
    """The position-wise MLP ``act(X W_1 + b_1) W_2 + b_2``, the same for every row.

    ``activation`` is ``"relu"`` or ``"gelu"`` (:func:`gelu`, the exact form).
    Each output row depends on its own input row only: no token sees another.

    Raises
    ------
    ValueError
        ``X``, ``W_1``, ``b_1``, ``W_2`` or ``b_2`` is not finite real numbers of the expected shape; ``activation`` is
        not one of the values it may take; or a result would overflow float64 (the error names the inputs it came from).
        The message names the argument.

    Examples
    --------
    >>> mlp([[1.0, -2.0]], np.eye(2), [0.0, 0.0], np.ones((2, 1)), [0.5]).tolist()
    [[1.5]]
    """
    x = as_array("X", X, 2)
    w1 = as_array("W_1", W_1, 2)
    w2 = as_array("W_2", W_2, 2)
    if w1.shape[0] != x.shape[1]:
        raise ValueError(f"W_1 has {w1.shape[0]} rows but X has d_model={x.shape[1]} (W_1 is {w1.shape}, X is {x.shape})")
    if w2.shape[0] != w1.shape[1]:
        raise ValueError(f"W_2 has {w2.shape[0]} rows but W_1 has d_ff={w1.shape[1]} columns (W_1 is {w1.shape}, W_2 is {w2.shape})")
    b1 = _vector("b_1", b_1, w1.shape[1])
    b2 = _vector("b_2", b_2, w2.shape[1])
    act = _activation(activation)
    with quiet():
        pre = finite_result(_matmul(x, w1, "X W_1", "X and W_1") + b1, "X W_1 + b_1", "X, W_1 and b_1")
        return finite_result(
            _matmul(_act(pre, act), w2, "act(X W_1 + b_1) W_2", "X, W_1, b_1 and W_2") + b2, "the MLP output", "X, W_1, W_2 and b_2"
        )


# --- parameters -----------------------------------------------------------------------------------


def _check_params(params: Any) -> dict[str, np.ndarray]:
    """The sixteen parameters as float arrays with consistent shapes; errors name the key."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict with the keys {list(PARAM_NAMES)}; got {type(params).__name__}")
    missing = [k for k in PARAM_NAMES if k not in params]
    unknown = [k for k in params if k not in PARAM_NAMES]
    if missing or unknown:
        raise ValueError(f"params must have exactly the keys {list(PARAM_NAMES)}; missing {missing}, unknown {[str(k) for k in unknown]}")
    p = {k: as_array(f"params[{k!r}]", params[k], 2 if k.startswith("W") else 1) for k in PARAM_NAMES}
    d = p["W_Q"].shape[0]
    d_ff = p["W_1"].shape[1]
    want = {"W_1": (d, d_ff), "b_1": (d_ff,), "W_2": (d_ff, d)}
    for k in PARAM_NAMES:
        shape = want.get(k, (d, d) if k.startswith("W") else (d,))
        if p[k].shape != shape:
            raise ValueError(
                f"params[{k!r}] has shape {p[k].shape} but must be {shape} (d_model={d} from params['W_Q'], d_ff={d_ff} from params['W_1'])"
            )
    return p


def init_encoder_params(d_model: int, d_ff: int, seed: int | np.random.Generator) -> dict[str, np.ndarray]:
    """Random parameters of one block, drawn as ``torch.nn.TransformerEncoderLayer`` draws its own.

    The distributions are PyTorch's (the numbers are not): ``W_Q``, ``W_K``,
    ``W_V`` uniform in ``+-sqrt(6 / (4 d_model))`` (Xavier-uniform over the
    stacked ``(3 d_model, d_model)`` matrix), their biases and ``b_O`` zero,
    ``W_O`` uniform in ``+-1/sqrt(d_model)``, ``W_1``, ``b_1`` uniform in
    ``+-1/sqrt(d_model)``, ``W_2``, ``b_2`` uniform in ``+-1/sqrt(d_ff)``, gains
    1 and norm biases 0.

    Raises
    ------
    ValueError
        ``d_model`` or ``d_ff`` is not a positive integer; ``seed`` is not a seed by the seed rule (a non-negative
        integer or a ``numpy.random.Generator``). The message names the argument.

    Examples
    --------
    >>> p = init_encoder_params(4, 8, seed=0)
    >>> p["W_Q"].shape, p["W_1"].shape, p["gamma_1"].tolist()
    ((4, 4), (4, 8), [1.0, 1.0, 1.0, 1.0])
    """
    d = as_positive_int("d_model", d_model)
    f = as_positive_int("d_ff", d_ff)
    check_size(f"init_encoder_params(d_model={d}, d_ff={f})", 4 * d * d + 2 * d * f + 9 * d + f)
    rng = as_rng("seed", seed)
    xavier = math.sqrt(6.0 / (4 * d))
    p: dict[str, np.ndarray] = {}
    stacked = rng.uniform(-xavier, xavier, size=(3 * d, d))  # PyTorch's in_proj_weight, (outputs, inputs)
    p["W_Q"], p["W_K"], p["W_V"] = (stacked[i * d : (i + 1) * d].T.copy() for i in range(3))
    p["b_Q"], p["b_K"], p["b_V"] = (np.zeros(d) for _ in range(3))
    p["W_O"] = rng.uniform(-1 / math.sqrt(d), 1 / math.sqrt(d), size=(d, d))
    p["b_O"] = np.zeros(d)
    p["W_1"] = rng.uniform(-1 / math.sqrt(d), 1 / math.sqrt(d), size=(d, f))
    p["b_1"] = rng.uniform(-1 / math.sqrt(d), 1 / math.sqrt(d), size=f)
    p["W_2"] = rng.uniform(-1 / math.sqrt(f), 1 / math.sqrt(f), size=(f, d))
    p["b_2"] = rng.uniform(-1 / math.sqrt(f), 1 / math.sqrt(f), size=d)
    p["gamma_1"], p["beta_1"], p["gamma_2"], p["beta_2"] = np.ones(d), np.zeros(d), np.ones(d), np.zeros(d)
    return {k: p[k] for k in PARAM_NAMES}


def params_from_torch(state_dict: Any) -> dict[str, np.ndarray]:
    """attnlib's parameters from the ``state_dict()`` of a ``torch.nn.TransformerEncoderLayer``.

    ``state_dict`` maps the twelve keys of :data:`TORCH_NAMES` to arrays (numpy
    arrays, or anything ``numpy.asarray`` reads, such as CPU tensors). PyTorch
    stores a linear layer's weight as ``(outputs, inputs)`` and computes
    ``x W^T + b``; the book writes ``X W + b``, so every weight is transposed.
    ``in_proj_weight`` stacks the query, key and value weights (rows
    ``0:d``, ``d:2d``, ``2d:3d``); inside each block, head ``r`` owns rows
    ``r*d_head:(r+1)*d_head``, which become columns of the book's packed
    ``W_Q`` (:func:`head_blocks`). The layer must have been built with
    biases (PyTorch's default ``bias=True``); torch is never imported here.

    Raises
    ------
    ValueError
        ``state_dict`` is not a state dict of ``torch.nn.TransformerEncoderLayer`` (a missing, extra or wrongly shaped
        key is refused naming it). The message names the argument.

    Examples
    --------
    >>> d, f = 2, 3
    >>> sd = {"self_attn.in_proj_weight": np.arange(12.0).reshape(6, 2), "self_attn.in_proj_bias": np.arange(6.0),
    ...       "self_attn.out_proj.weight": np.eye(2), "self_attn.out_proj.bias": np.zeros(2),
    ...       "linear1.weight": np.ones((f, d)), "linear1.bias": np.zeros(f), "linear2.weight": np.ones((d, f)),
    ...       "linear2.bias": np.zeros(d), "norm1.weight": np.ones(d), "norm1.bias": np.zeros(d),
    ...       "norm2.weight": np.ones(d), "norm2.bias": np.zeros(d)}
    >>> p = params_from_torch(sd)
    >>> p["W_K"].tolist(), p["b_V"].tolist(), p["W_1"].shape
    ([[4.0, 6.0], [5.0, 7.0]], [4.0, 5.0], (2, 3))
    """
    if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
        raise ValueError(f"state_dict must be a dict of arrays (a TransformerEncoderLayer's state_dict()); got {type(state_dict).__name__}")
    keys = [row[0] for row in TORCH_NAMES]
    missing = [k for k in keys if k not in state_dict]
    if missing:
        hint = " (a layer built with bias=False has no biases; attnlib's block needs them)" if any("bias" in k for k in missing) else ""
        raise ValueError(f"state_dict has no key {missing[0]!r}{hint}; missing {missing}")
    unknown = [str(k) for k in state_dict.keys() if k not in keys]
    if unknown:
        raise ValueError(f"state_dict has keys a TransformerEncoderLayer does not have: {unknown}")
    a = {k: as_array(f"state_dict[{k!r}]", state_dict[k], 2 if k.endswith("weight") and "norm" not in k else 1) for k in keys}
    w_in = a["self_attn.in_proj_weight"]
    if w_in.shape[0] != 3 * w_in.shape[1]:
        raise ValueError(f"state_dict['self_attn.in_proj_weight'] must be (3 d_model, d_model); got {w_in.shape}")
    d = w_in.shape[1]
    f = a["linear1.weight"].shape[0]
    shapes = {
        "self_attn.in_proj_bias": (3 * d,),
        "self_attn.out_proj.weight": (d, d),
        "self_attn.out_proj.bias": (d,),
        "linear1.weight": (f, d),
        "linear1.bias": (f,),
        "linear2.weight": (d, f),
        "linear2.bias": (d,),
        "norm1.weight": (d,),
        "norm1.bias": (d,),
        "norm2.weight": (d,),
        "norm2.bias": (d,),
    }
    for k, shape in shapes.items():
        if a[k].shape != shape:
            raise ValueError(
                f"state_dict[{k!r}] has shape {a[k].shape} but must be {shape} "
                f"(d_model={d} from self_attn.in_proj_weight, d_ff={f} from linear1.weight)"
            )
    b_in = a["self_attn.in_proj_bias"]
    p = {
        "W_Q": w_in[:d].T.copy(),
        "W_K": w_in[d : 2 * d].T.copy(),
        "W_V": w_in[2 * d :].T.copy(),
        "b_Q": b_in[:d].copy(),
        "b_K": b_in[d : 2 * d].copy(),
        "b_V": b_in[2 * d :].copy(),
        "W_O": a["self_attn.out_proj.weight"].T.copy(),
        "b_O": a["self_attn.out_proj.bias"],
        "W_1": a["linear1.weight"].T.copy(),
        "b_1": a["linear1.bias"],
        "W_2": a["linear2.weight"].T.copy(),
        "b_2": a["linear2.bias"],
        "gamma_1": a["norm1.weight"],
        "beta_1": a["norm1.bias"],
        "gamma_2": a["norm2.weight"],
        "beta_2": a["norm2.bias"],
    }
    return p


def _d_head(d_model: int, n_heads: Any) -> tuple[int, int]:
    h = as_positive_int("n_heads", n_heads)
    return h, head_width(d_model, h)


def head_blocks(params: Any, n_heads: int) -> dict[str, list[np.ndarray]]:
    """Each head's own matrices: ``W_Q^r``, ``W_K^r``, ``W_V^r`` (``(d_model, d_head)``), their biases, and ``W_O``'s row blocks.

    Head ``r`` owns columns ``r*d_head:(r+1)*d_head`` of the packed ``W_Q``,
    ``W_K``, ``W_V`` and rows ``r*d_head:(r+1)*d_head`` of ``W_O`` (its output
    is that block of the concatenation).

    Raises
    ------
    ValueError
        ``params`` is not a dict with exactly the names of ``PARAM_NAMES``, each of its shape (refused naming the key);
        ``n_heads`` is not a positive integer (or does not divide the width); or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> b = head_blocks(init_encoder_params(4, 8, seed=0), n_heads=2)
    >>> len(b["W_Q"]), b["W_Q"][0].shape, b["b_V"][1].shape, b["W_O"][0].shape
    (2, (4, 2), (2,), (2, 4))
    """
    p = _check_params(params)
    h, dh = _d_head(p["W_Q"].shape[0], n_heads)
    out: dict[str, list[np.ndarray]] = {}
    for k in ("W_Q", "W_K", "W_V"):
        out[k] = [p[k][:, r * dh : (r + 1) * dh].copy() for r in range(h)]
        out["b" + k[1:]] = [p["b" + k[1:]][r * dh : (r + 1) * dh].copy() for r in range(h)]
    out["W_O"] = [p["W_O"][r * dh : (r + 1) * dh].copy() for r in range(h)]
    return out


# --- the block ------------------------------------------------------------------------------------


def _mask(mask: Any, n: int) -> np.ndarray | None:
    return as_mask("mask", mask, (n, n))


def _options(norm_first: Any, activation: Any, eps: Any) -> tuple[bool, str, float]:
    return as_flag("norm_first", norm_first), _activation(activation), _eps(eps)


def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float, which: str) -> np.ndarray:
    xhat, _ = _normalised(x, eps, f"X and params (norm{which})")
    with quiet():
        return finite_result(xhat * g + b, f"layer norm {which}", f"X and params['gamma_{which}']")


def _forward(x: np.ndarray, p: dict[str, np.ndarray], h: int, dh: int, allowed, norm_first: bool, act: str, eps: float):
    inputs = "X and params"
    a_in = _ln(x, p["gamma_1"], p["beta_1"], eps, "1") if norm_first else x
    with quiet():
        q = finite_result(_matmul(a_in, p["W_Q"], "X W_Q", inputs) + p["b_Q"], "the queries X W_Q + b_Q", inputs)
        k = finite_result(_matmul(a_in, p["W_K"], "X W_K", inputs) + p["b_K"], "the keys X W_K + b_K", inputs)
        v = finite_result(_matmul(a_in, p["W_V"], "X W_V", inputs) + p["b_V"], "the values X W_V + b_V", inputs)
    heads = []
    for r in range(h):
        cols = slice(r * dh, (r + 1) * dh)
        try:
            heads.append(attention(q[:, cols], k[:, cols], v[:, cols], mask=allowed))
        except ValueError as exc:  # core names its own Q, K, V: say where they came from
            raise ValueError(f"head {r} of X and params (Q = X W_Q + b_Q, ...): {exc}") from None
    with quiet():
        concat = np.concatenate([hd.output for hd in heads], axis=1)
        attn = finite_result(_matmul(concat, p["W_O"], "concat W_O", inputs) + p["b_O"], "concat W_O + b_O", inputs)
        first = finite_result(x + attn, "the residual sum X + attention", inputs)
        middle = _ln(first, p["gamma_1"], p["beta_1"], eps, "1") if not norm_first else first
        m_in = _ln(middle, p["gamma_2"], p["beta_2"], eps, "2") if norm_first else middle
        pre = finite_result(_matmul(m_in, p["W_1"], "H W_1", inputs) + p["b_1"], "H W_1 + b_1", inputs)
        hid = _act(pre, act)
        m_out = finite_result(_matmul(hid, p["W_2"], "act(.) W_2", inputs) + p["b_2"], "the MLP output", inputs)
        second = finite_result(middle + m_out, "the residual sum H + MLP", inputs)
        out = _ln(second, p["gamma_2"], p["beta_2"], eps, "2") if not norm_first else second
    return EncoderLayerResult(
        x, a_in, q, k, v, tuple(heads), concat, attn, first, middle, m_in, pre, hid, m_out, second, out, allowed, h, norm_first, act, eps
    )


def encoder_layer_parts(
    X: Any,
    params: Any,
    n_heads: int,
    *,
    mask: Any = None,
    norm_first: bool = False,
    activation: str = "relu",
    eps: float = 1e-5,
) -> EncoderLayerResult:
    """One encoder block, keeping every intermediate (see :func:`encoder_layer`).

    Raises
    ------
    ValueError
        ``X`` is not finite real numbers of the expected shape; ``params`` is not a dict with exactly the names of
        ``PARAM_NAMES``, each of its shape (refused naming the key); ``n_heads`` is not a positive integer (or does not
        divide the width); ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean
        or an additive ``(n, n)`` matrix) or leaves a query row with no key; ``norm_first`` is not ``True`` or
        ``False``; ``activation`` is not one of the values it may take; ``eps`` is not a finite real number in its
        range; or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> from attnlib import CAUSAL
    >>> r = encoder_layer_parts(np.eye(4)[:3], init_encoder_params(4, 8, seed=0), 2, mask=CAUSAL)
    >>> r.weights.shape, r.hidden.shape, float(r.weights[0, 0, 1])
    ((2, 3, 3), (3, 8), 0.0)
    """
    x = as_array("X", X, 2)
    p = _check_params(params)
    if x.shape[1] != p["W_Q"].shape[0]:
        raise ValueError(f"X has d_model={x.shape[1]} but params['W_Q'] has {p['W_Q'].shape[0]} rows (X is {x.shape})")
    h, dh = _d_head(x.shape[1], n_heads)
    nf, act, e = _options(norm_first, activation, eps)
    return _forward(x, p, h, dh, _mask(mask, x.shape[0]), nf, act, e)


def encoder_layer(
    X: Any,
    params: Any,
    n_heads: int,
    *,
    mask: Any = None,
    norm_first: bool = False,
    activation: str = "relu",
    eps: float = 1e-5,
) -> np.ndarray:
    """One Transformer encoder block, equal to ``torch.nn.TransformerEncoderLayer`` in eval mode.

    Parameters
    ----------
    X:
        The input rows, ``(n, d_model)``.
    params:
        The sixteen parameters of :data:`PARAM_NAMES` (from :func:`params_from_torch`
        or :func:`init_encoder_params`).
    n_heads:
        The number of heads; it must divide ``d_model``.
    mask:
        Any form of attnlib's one mask grammar: ``None``, :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>`
        (``"causal"`` is its old spelling, kept for one release), a function
        ``allowed(i, j)``, a boolean ``(n, n)`` array with ``True`` = *may attend*
        (attnlib's convention; PyTorch's boolean ``src_mask`` is the opposite,
        ``True`` = blocked), or an additive 0 / ``-inf`` mask (the same as
        PyTorch's float mask).
    norm_first:
        ``False`` for post-norm (the paper's order, PyTorch's default),
        ``True`` for pre-norm.
    activation:
        ``"relu"`` (the default) or ``"gelu"`` (the exact erf form).
    eps:
        The layer norms' epsilon, inside the square root (PyTorch's ``layer_norm_eps``).

    Returns
    -------
    ``(n, d_model)``, the block's output rows.

    Raises
    ------
    ValueError
        ``X`` is not finite real numbers of the expected shape; ``params`` is not a dict with exactly the names of
        ``PARAM_NAMES``, each of its shape (refused naming the key); ``n_heads`` is not a positive integer (or does not
        divide the width); ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean
        or an additive ``(n, n)`` matrix) or leaves a query row with no key; ``norm_first`` is not ``True`` or
        ``False``; ``activation`` is not one of the values it may take; ``eps`` is not a finite real number in its
        range; or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> p = init_encoder_params(4, 8, seed=0)
    >>> Y = encoder_layer(np.eye(4)[:3], p, n_heads=2)
    >>> Y.shape, Y.mean(axis=1).round(12).tolist()  # post-norm: every row leaves through a layer norm
    ((3, 4), [0.0, 0.0, 0.0])
    """
    return encoder_layer_parts(X, params, n_heads, mask=mask, norm_first=norm_first, activation=activation, eps=eps).output


def _mha_backward(r: EncoderLayerResult, p: dict[str, np.ndarray], d_attn: np.ndarray, grads: dict[str, np.ndarray]) -> np.ndarray:
    """Gradient at the attention sub-layer's input; fills dW_Q ... db_O."""
    inputs = "d_output and params"
    grads["dW_O"] = _matmul(r.concat.T, d_attn, "dW_O = concat^T d", inputs)
    grads["db_O"] = d_attn.sum(axis=0)
    d_concat = _matmul(d_attn, p["W_O"].T, "d concat = d W_O^T", inputs)
    dh = r.Q.shape[1] // r.n_heads
    parts = [attention_backward_from(hd, d_concat[:, i * dh : (i + 1) * dh]) for i, hd in enumerate(r.heads)]
    d_in = np.zeros_like(r.attention_input)
    for name, idx in (("Q", 0), ("K", 1), ("V", 2)):
        d = np.concatenate([g[idx] for g in parts], axis=1)
        grads[f"dW_{name}"] = _matmul(r.attention_input.T, d, f"dW_{name} = X^T d{name}", inputs)
        grads[f"db_{name}"] = d.sum(axis=0)
        with quiet():
            d_in = finite_result(d_in + _matmul(d, p[f"W_{name}"].T, f"d{name} W_{name}^T", inputs), "the attention input gradient", inputs)
    return d_in


def _mlp_backward(r: EncoderLayerResult, p: dict[str, np.ndarray], d_out: np.ndarray, grads: dict[str, np.ndarray]) -> np.ndarray:
    inputs = "d_output and params"
    grads["dW_2"] = _matmul(r.hidden.T, d_out, "dW_2 = hidden^T d", inputs)
    grads["db_2"] = d_out.sum(axis=0)
    with quiet():
        d_pre = finite_result(
            _matmul(d_out, p["W_2"].T, "d hidden = d W_2^T", inputs) * _act_grad(r.hidden_pre, r.activation), "d (X W_1 + b_1)", inputs
        )
    grads["dW_1"] = _matmul(r.mlp_input.T, d_pre, "dW_1 = H^T d", inputs)
    grads["db_1"] = d_pre.sum(axis=0)
    return _matmul(d_pre, p["W_1"].T, "d H = d W_1^T", inputs)


def _backward(r: EncoderLayerResult, p: dict[str, np.ndarray], dy: np.ndarray) -> dict[str, np.ndarray]:
    grads: dict[str, np.ndarray] = {}
    with quiet():
        if r.norm_first:
            d_mid = dy.copy()
            ln2 = _layer_norm_backward(r.middle, p["gamma_2"], _mlp_backward(r, p, dy, grads), r.eps, "d_output")
            d_mid = finite_result(d_mid + ln2.dX, "the gradient of the stream between the sub-layers", "d_output and params")
            ln1 = _layer_norm_backward(r.X, p["gamma_1"], _mha_backward(r, p, d_mid, grads), r.eps, "d_output")
            dx = finite_result(d_mid + ln1.dX, "the input gradient dX", "d_output and params")
        else:
            ln2 = _layer_norm_backward(r.second_sum, p["gamma_2"], dy, r.eps, "d_output")
            d_mid = finite_result(
                ln2.dX + _mlp_backward(r, p, ln2.dX, grads), "the gradient of the stream between the sub-layers", "d_output and params"
            )
            ln1 = _layer_norm_backward(r.first_sum, p["gamma_1"], d_mid, r.eps, "d_output")
            dx = finite_result(ln1.dX + _mha_backward(r, p, ln1.dX, grads), "the input gradient dX", "d_output and params")
    grads["dgamma_1"], grads["dbeta_1"] = ln1.dgamma, ln1.dbeta
    grads["dgamma_2"], grads["dbeta_2"] = ln2.dgamma, ln2.dbeta
    out = {"dX": dx, **{"d" + k: grads["d" + k] for k in PARAM_NAMES}}
    with quiet():  # every gradient, the bias sums too (db_O = the column sums of d_attn can overflow alone)
        for name, g in out.items():
            finite_result(g, f"the gradient {name}", "d_output and params")
    return out


def encoder_layer_backward(
    X: Any,
    params: Any,
    n_heads: int,
    d_output: Any,
    *,
    mask: Any = None,
    norm_first: bool = False,
    activation: str = "relu",
    eps: float = 1e-5,
) -> dict[str, np.ndarray]:
    """Gradients of a loss through :func:`encoder_layer`, given ``d_output = dL/dY``.

    Returns a dict with ``"dX"`` and one entry per parameter with a ``d`` in
    front (``"dW_Q"``, ..., ``"dbeta_2"``), the form :mod:`attnlib.training`'s
    optimisers take. Each residual connection adds the gradient that arrives
    to the one that went through its sub-layer; each layer norm applies
    :func:`layer_norm_backward`; the MLP's ReLU passes the gradient where its
    input was positive (0 at exactly 0, as PyTorch), GELU multiplies by
    ``Phi(x) + x phi(x)``; each head's attention goes through
    :func:`attnlib.backward.attention_backward_from`.

    Raises
    ------
    ValueError
        ``X`` or ``d_output`` is not finite real numbers of the expected shape; ``params`` is not a dict with exactly
        the names of ``PARAM_NAMES``, each of its shape (refused naming the key); ``n_heads`` is not a positive integer
        (or does not divide the width); ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i,
        j)``, a boolean or an additive ``(n, n)`` matrix) or leaves a query row with no key; ``norm_first`` is not
        ``True`` or ``False``; ``activation`` is not one of the values it may take; ``eps`` is not a finite real number
        in its range; or a result would overflow float64 (the error names the inputs it came from). The message names
        the argument.

    Examples
    --------
    >>> p = init_encoder_params(4, 8, seed=0)
    >>> g = encoder_layer_backward(np.eye(4)[:3], p, 2, np.ones((3, 4)))
    >>> float(np.abs(g["dX"]).max()) < 1e-12  # post-norm: the output rows have mean beta_2, so sum(Y) does not move
    True
    >>> sorted(g)[:4]
    ['dW_1', 'dW_2', 'dW_K', 'dW_O']
    """
    r = encoder_layer_parts(X, params, n_heads, mask=mask, norm_first=norm_first, activation=activation, eps=eps)
    dy = as_array("d_output", d_output, 2)
    if dy.shape != r.output.shape:
        raise ValueError(f"d_output has shape {dy.shape} but the output has shape {r.output.shape} (n, d_model)")
    return _backward(r, _check_params(params), dy)


def _layers(layers: Any) -> list[dict[str, np.ndarray]]:
    if isinstance(layers, dict) or not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError(f"layers must be a non-empty list of parameter dicts; got {type(layers).__name__}")
    out = []
    for i, layer in enumerate(layers):
        try:
            out.append(_check_params(layer))
        except ValueError as exc:
            raise ValueError(f"layers[{i}]: {exc}") from None
    return out


def encoder_stack(
    X: Any,
    layers: Any,
    n_heads: int,
    *,
    mask: Any = None,
    norm_first: bool = False,
    activation: str = "relu",
    eps: float = 1e-5,
) -> list[np.ndarray]:
    """The rows entering and leaving each block of a stack: ``[X, Y_1, ..., Y_L]``.

    Each block is :func:`encoder_layer` with its own parameters (``layers`` is
    a list of dicts) and the same options. No final layer norm is added (a
    pre-norm model usually has one; apply :func:`layer_norm` to the last entry).

    Raises
    ------
    ValueError
        ``X`` is not finite real numbers of the expected shape; ``layers`` is not a non-empty list of such dicts;
        ``n_heads`` is not a positive integer (or does not divide the width); ``mask`` is not a mask (``None``,
        ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive ``(n, n)`` matrix) or leaves a query
        row with no key; ``norm_first`` is not ``True`` or ``False``; ``activation`` is not one of the values it may
        take; ``eps`` is not a finite real number in its range; or a result would overflow float64 (the error names the
        inputs it came from). The message names the argument.

    Examples
    --------
    >>> ps = [init_encoder_params(4, 8, seed=s) for s in range(3)]
    >>> [y.shape for y in encoder_stack(np.eye(4)[:2], ps, 2, norm_first=True)]
    [(2, 4), (2, 4), (2, 4), (2, 4)]
    """
    x = as_array("X", X, 2)
    return [x] + [r.output for r in _stack_forward(x, _layers(layers), n_heads, mask, norm_first, activation, eps)]


def _stack_forward(
    x: np.ndarray, ps: list[dict[str, np.ndarray]], n_heads: Any, mask: Any, norm_first: Any, activation: Any, eps: Any
) -> list[EncoderLayerResult]:
    """Every block's forward pass, first block first (the stack's checks: options, mask and each block's width)."""
    opts = _options(norm_first, activation, eps)
    allowed = _mask(mask, x.shape[0])
    results: list[EncoderLayerResult] = []
    rows = x
    for p in ps:
        if rows.shape[1] != p["W_Q"].shape[0]:
            raise ValueError(f"X has d_model={x.shape[1]} but a layer's params['W_Q'] has {p['W_Q'].shape[0]} rows")
        h, dh = _d_head(x.shape[1], n_heads)
        results.append(_forward(rows, p, h, dh, allowed, *opts))
        rows = results[-1].output
    return results


def encoder_stack_backward(
    X: Any,
    layers: Any,
    n_heads: int,
    d_output: Any,
    *,
    mask: Any = None,
    norm_first: bool = False,
    activation: str = "relu",
    eps: float = 1e-5,
) -> list[dict[str, np.ndarray]]:
    """Gradients of every block of :func:`encoder_stack` for ``d_output = dL/dY_L``, first block first.

    Entry ``l`` is :func:`encoder_layer_backward`'s dict for block ``l``: its
    ``"dX"`` is the gradient at that block's input (the residual stream at
    depth ``l``), its ``"dW_2"`` etc. the gradients of its parameters.

    Raises
    ------
    ValueError
        ``X`` or ``d_output`` is not finite real numbers of the expected shape; ``layers`` is not a non-empty list of
        such dicts; ``n_heads`` is not a positive integer (or does not divide the width); ``mask`` is not a mask
        (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive ``(n, n)`` matrix) or
        leaves a query row with no key; ``norm_first`` is not ``True`` or ``False``; ``activation`` is not one of the
        values it may take; ``eps`` is not a finite real number in its range; or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> ps = [init_encoder_params(4, 8, seed=s) for s in range(2)]
    >>> g = encoder_stack_backward(np.eye(4)[:2], ps, 2, np.eye(2, 4), norm_first=True)
    >>> len(g), g[0]["dX"].shape
    (2, (2, 4))
    """
    x = as_array("X", X, 2)
    ps = _layers(layers)
    results = _stack_forward(x, ps, n_heads, mask, norm_first, activation, eps)
    rows = results[-1].output  # _layers refuses an empty stack
    dy = as_array("d_output", d_output, 2)
    if dy.shape != rows.shape:
        raise ValueError(f"d_output has shape {dy.shape} but the stack's output has shape {rows.shape} (n, d_model)")
    grads: list[dict[str, np.ndarray]] = []
    for r, p in zip(reversed(results), reversed(ps)):
        grads.append(_backward(r, p, dy))
        dy = grads[-1]["dX"]
    return grads[::-1]


def encoder_layer_cost(n: int, d_model: int, n_heads: int, d_ff: int) -> dict[str, dict[str, int]]:
    """Parameters and floating-point operations of one block over ``n`` tokens, piece by piece.

    Pieces: ``"Q, K, V projections"`` (``3 d^2 + 3 d`` parameters,
    ``2 n d * 3d`` operations), ``"scores and weighted sum"`` (no parameters;
    :func:`attnlib.cost.attention_flops` for ``n_heads`` heads of width
    ``d/n_heads``), ``"output projection"`` (``d^2 + d``, ``2 n d^2``), ``"MLP"``
    (``2 d d_ff + d_ff + d``, ``4 n d d_ff``) and ``"layer norms"``
    (``4 d``; their few operations per entry are left out, like the softmax's,
    so ``0``). A multiply and an add count as 2 operations. The attention
    pieces add up to :func:`attnlib.core.attention_parameter_count` with bias.

    Raises
    ------
    ValueError
        ``n``, ``d_model``, ``n_heads`` or ``d_ff`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> c = encoder_layer_cost(3, 2, 1, 4)
    >>> c["MLP"], c["scores and weighted sum"]["flops"]
    ({'params': 22, 'flops': 96}, 72)
    """
    n = as_positive_int("n", n)
    d = as_positive_int("d_model", d_model)
    h, dh = _d_head(d, n_heads)
    f = as_positive_int("d_ff", d_ff)
    total = attention_parameter_count(d, h, bias=True)  # 4 d^2 + 4 d: four (d, d) matrices and their biases
    out = total // 4
    qkv = total - out
    return {
        "Q, K, V projections": {"params": qkv, "flops": 2 * n * d * 3 * d},
        "scores and weighted sum": {"params": 0, "flops": attention_flops(n, dh, heads=h)},
        "output projection": {"params": out, "flops": 2 * n * d * d},
        "MLP": {"params": 2 * d * f + f + d, "flops": 4 * n * d * f},
        "layer norms": {"params": 4 * d, "flops": 0},
    }
