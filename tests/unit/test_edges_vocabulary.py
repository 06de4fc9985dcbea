"""One mask grammar and one scale vocabulary, for every public function that takes a ``mask`` or a ``scale``.

The functions are found from their signatures (:mod:`support.public_api`): a new function with a
``mask`` or ``scale`` parameter and no entry in ``MASK_CALLS`` / ``SCALE_CALLS`` fails
``test_every_mask_and_scale_parameter_has_an_entry``. For each one:

* every form of the grammar gives the same result as the boolean matrix it means: ``attnlib.CAUSAL``,
  a function ``allowed(i, j)``, a boolean and an additive matrix, and the old text ``"causal"``
  (an alias for one release, with no warning);
* the same odd masks are refused with a ``ValueError`` naming ``mask``, and a row that may attend to
  no key with the one message of ``attnlib._validate.refuse_empty_rows``;
* ``SQRT_D_K`` is the default and ``True`` its old spelling, ``NO_SCALING`` divides by 1 and
  ``False`` is its old spelling, a positive number divides by itself; odd scales are refused by name.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from support.errors import raises
from support.public_api import parameters, public_callables

import attnlib
from attnlib import CAUSAL, NO_SCALING, SQRT_D_K, backward, blocked, exact, experiments, explorers, retrieval, training, transformer
from attnlib.core import attention, cross_attention, multi_head_attention, multi_head_parts, scale_divisor, scaled_scores, self_attention
from attnlib.explorers.kinds.attention import attention_views

X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
I2 = np.eye(2)
D_OUT = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
TF = transformer.init_encoder_params(2, 3, seed=0)
LOWER = np.tril(np.ones((3, 3), bool))


def _fingerprint(result):
    """The numbers of a result, as nested lists (arrays, tuples, dataclasses, dicts, sympy matrices)."""
    import dataclasses

    import sympy as sp

    if isinstance(result, np.ndarray):
        return np.round(result.astype(float), 12).tolist() if result.dtype != bool else result.tolist()
    if isinstance(result, sp.MatrixBase):
        return [str(sp.simplify(e)) for e in result]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [_fingerprint(getattr(result, f.name)) for f in dataclasses.fields(result)]
    if isinstance(result, dict):
        return {k: _fingerprint(v) for k, v in result.items()}
    if isinstance(result, (tuple, list)):
        return [_fingerprint(r) for r in result]
    if isinstance(result, float):
        return round(result, 12)
    return result


def _explorer_mask(mask):
    ex = explorers.attention_explorer()
    ex.mask = mask
    return ex.mask, ex.mask_mode if mask is not None else "none"


#: label: a call of the function on the running example with the given mask (3 queries, 3 keys).
MASK_CALLS = {
    "core.attention": lambda m: attention(X, X, X, mask=m),
    "core.self_attention": lambda m: self_attention(X, I2, I2, I2, mask=m),
    "core.cross_attention": lambda m: cross_attention(X, X, I2, I2, I2, mask=m),
    "core.multi_head_attention": lambda m: multi_head_attention(X, X, I2, I2, I2, I2, 2, mask=m),
    "core.multi_head_parts": lambda m: multi_head_parts(X, X, I2, I2, I2, I2, 2, mask=m).output,
    "retrieval.retrieve": lambda m: retrieval.retrieve(X @ X.T, X, mask=m),
    "retrieval.bahdanau_retrieval": lambda m: retrieval.bahdanau_retrieval(X, X, I2, I2, [1.0, 1.0], mask=m),
    "retrieval.transformer_retrieval": lambda m: retrieval.transformer_retrieval(X, X, I2, I2, I2, mask=m),
    "exact.exact_attention": lambda m: exact.exact_attention([[1, 0], [0, 1]], mask=None if m is None else _two(m)).weights,
    "exact.exact_attention_gradients": lambda m: exact.exact_attention_gradients(
        [[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1], [2]], [[1], [1]], mask=None if m is None else _two(m)
    ).dV,
    "backward.attention_backward": lambda m: backward.attention_backward(X, X, X, D_OUT, mask=m),
    "backward.self_attention_backward": lambda m: backward.self_attention_backward(X, I2, I2, I2, D_OUT, mask=m),
    "backward.cross_attention_backward": lambda m: backward.cross_attention_backward(X, X, I2, I2, I2, D_OUT, mask=m),
    "backward.multi_head_attention_backward": lambda m: backward.multi_head_attention_backward(X, X, I2, I2, I2, I2, 2, D_OUT, mask=m),
    "blocked.chunked_attention": lambda m: blocked.chunked_attention(X, X, X, block_size=2, mask=m),
    "blocked.flash_attention": lambda m: blocked.flash_attention(X, X, X, mask=m, query_tile=2, key_tile=2),
    "blocked.flash_attention_backward": lambda m: blocked.flash_attention_backward(
        X, X, X, *blocked.flash_attention(X, X, X, mask=m, return_lse=True), D_OUT, mask=m, query_tile=2, key_tile=1
    ),
    "transformer.encoder_layer": lambda m: transformer.encoder_layer(X, TF, 2, mask=m),
    "transformer.encoder_layer_parts": lambda m: transformer.encoder_layer_parts(X, TF, 2, mask=m).weights,
    "transformer.encoder_layer_backward": lambda m: transformer.encoder_layer_backward(X, TF, 2, D_OUT, mask=m),
    "transformer.encoder_stack": lambda m: transformer.encoder_stack(X, [TF, TF], 2, mask=m),
    "transformer.encoder_stack_backward": lambda m: transformer.encoder_stack_backward(X, [TF, TF], 2, D_OUT, mask=m),
    "explorers.kinds.attention.AttentionExplorer": lambda m: explorers.AttentionExplorer(mask=m).shown.weights,
    "explorers.kinds.attention.AttentionExplorer.set": lambda m: explorers.attention_explorer().set(mask=m).shown.weights,
    "explorers.kinds.attention.attention_views": lambda m: attention_views(X, I2, I2, I2, dk=2, mask=m, tokens=("a", "b", "c")).weights,
}

#: Records whose ``mask`` field holds the checked boolean mask (or ``None``) that attnlib made: not an argument.
MASK_RECORDS = {"core.AttentionResult", "exact.ExactAttention", "induction.TokenBatch", "training.Task", "transformer.EncoderLayerResult"}


def _two(m):
    """The same mask form for the 2-token exact functions."""
    if isinstance(m, (np.ndarray, list)) and np.shape(m) == (3, 3):
        return (m if isinstance(m, np.ndarray) else np.asarray(m))[:2, :2]  # a numpy.ma array stays one
    return m


#: The forms of the causal mask: each must give what the boolean lower triangle gives.
CAUSAL_FORMS = {
    "CAUSAL": CAUSAL,
    "'causal' (old spelling)": "causal",
    "function": lambda i, j: j <= i,
    "additive": np.where(LOWER, 0.0, -np.inf),
    "list of bools": LOWER.tolist(),
}

#: Masks every function refuses, naming mask (and, for the empty row, saying which row).
ODD_MASKS = {
    "text": ("diagonal", "mask"),
    "0/1 numbers": (LOWER.astype(float), "mask"),
    "complex": (LOWER + 0j, "mask"),
    "numpy.ma": (np.ma.array(LOWER, mask=np.eye(3, dtype=bool)), "mask"),
    "wrong shape": (np.ones((4, 4), bool), "mask has shape (4, 4)"),
    "function returning floats": (lambda i, j: (j <= i) * 1.0, "mask(i, j) must return booleans"),
    "function that raises": (lambda i, j: 1 / 0, "mask(i, j) raised ZeroDivisionError"),
    "empty row": (np.array([[False] * 3, [True] * 3, [True] * 3]), "leaves query row 0"),
    "empty row, function": (lambda i, j: i > 0, "leaves query row 0"),
    "number": (3, "mask"),
    "dict": ({}, "mask"),
}
#: The explorers show a row that may attend to no key as a message (README): not refused there.
SHOWS_EMPTY_ROWS = {"explorers.kinds.attention.AttentionExplorer", "explorers.kinds.attention.AttentionExplorer.set",
                    "explorers.kinds.attention.attention_views"}  # fmt: skip


def _no_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


@pytest.mark.parametrize("label", sorted(MASK_CALLS))
def test_every_form_of_the_causal_mask_gives_the_boolean_masks_result(label):
    call = MASK_CALLS[label]
    want = _fingerprint(call(LOWER))
    for name, form in CAUSAL_FORMS.items():
        assert _fingerprint(_no_warning(lambda form=form: call(form))) == want, f"{label}: mask={name}"
    assert _fingerprint(_no_warning(lambda: call("none"))) == _fingerprint(call(None)), f"{label}: 'none' is not None"


@pytest.mark.parametrize("label", sorted(MASK_CALLS))
def test_every_function_refuses_the_same_odd_masks_by_name(label):
    call = MASK_CALLS[label]
    for name, (mask, words) in ODD_MASKS.items():
        if label in SHOWS_EMPTY_ROWS and name.startswith("empty row"):
            call(mask)  # shown as a message, not refused
            continue
        raises(lambda mask=mask: call(mask), words)


def test_the_explorer_keeps_causal_as_its_mode_and_a_function_as_cells():
    for form in ("causal", CAUSAL):
        assert _explorer_mask(form)[1] == "causal"
    mask, mode = _explorer_mask(lambda i, j: j != 0)
    assert mode == "custom" and mask.tolist() == [[False, True, True]] * 3
    assert _explorer_mask("none")[0] is None  # the old text of the explorer, an alias of None


def _training_scale(scale):
    return experiments.scaling_runs([0], scale=scale, d_k=2, n_steps=1)[0].losses


#: label: a call with the given scale (the default when the argument is left out: DEFAULT).
DEFAULT = object()
SCALE_CALLS = {
    "core.scale_divisor": lambda s: scale_divisor(4) if s is DEFAULT else scale_divisor(4, s),
    "core.scaled_scores": lambda s: scaled_scores(X, X) if s is DEFAULT else scaled_scores(X, X, scale=s),
    "core.attention": lambda s: attention(X, X, X) if s is DEFAULT else attention(X, X, X, scale=s),
    "core.self_attention": lambda s: self_attention(X, I2, I2, I2) if s is DEFAULT else self_attention(X, I2, I2, I2, scale=s),
    "core.cross_attention": lambda s: cross_attention(X, X, I2, I2, I2) if s is DEFAULT else cross_attention(X, X, I2, I2, I2, scale=s),
    "retrieval.transformer_retrieval": lambda s: (
        retrieval.transformer_retrieval(X, X, I2, I2, I2) if s is DEFAULT else retrieval.transformer_retrieval(X, X, I2, I2, I2, scale=s)
    ),
    "exact.exact_attention": lambda s: (
        exact.exact_attention([[1, 0], [0, 1]]) if s is DEFAULT else exact.exact_attention([[1, 0], [0, 1]], scale=s)
    ).weights,
    "exact.exact_attention_gradients": lambda s: (
        exact.exact_attention_gradients([[1, 0]], [[1, 0], [0, 1]], [[1], [2]], [[1]])
        if s is DEFAULT
        else exact.exact_attention_gradients([[1, 0]], [[1, 0], [0, 1]], [[1], [2]], [[1]], scale=s)
    ).dV,
    "backward.attention_backward": lambda s: (
        backward.attention_backward(X, X, X, D_OUT) if s is DEFAULT else backward.attention_backward(X, X, X, D_OUT, scale=s)
    ),
    "backward.self_attention_backward": lambda s: (
        backward.self_attention_backward(X, I2, I2, I2, D_OUT)
        if s is DEFAULT
        else backward.self_attention_backward(X, I2, I2, I2, D_OUT, scale=s)
    ),
    "backward.cross_attention_backward": lambda s: (
        backward.cross_attention_backward(X, X, I2, I2, I2, D_OUT)
        if s is DEFAULT
        else backward.cross_attention_backward(X, X, I2, I2, I2, D_OUT, scale=s)
    ),
    "backward.score_change": lambda s: (
        backward.score_change(X, X, I2, I2, I2, -I2 / 2)
        if s is DEFAULT
        else backward.score_change(X, X, I2, I2, I2, -I2 / 2, scale=s)
    ),
    "blocked.chunked_attention": lambda s: (
        blocked.chunked_attention(X, X, X) if s is DEFAULT else blocked.chunked_attention(X, X, X, scale=s)
    ),
    "blocked.flash_attention": lambda s: blocked.flash_attention(X, X, X) if s is DEFAULT else blocked.flash_attention(X, X, X, scale=s),
    "blocked.flash_attention_backward": lambda s: (
        blocked.flash_attention_backward(X, X, X, *blocked.flash_attention(X, X, X, return_lse=True), D_OUT)
        if s is DEFAULT
        else blocked.flash_attention_backward(X, X, X, *blocked.flash_attention(X, X, X, scale=s, return_lse=True), D_OUT, scale=s)
    ),
    "training.AttentionModel": lambda s: (training.AttentionModel() if s is DEFAULT else training.AttentionModel(scale=s)).scale,
    "experiments.scaling_runs": lambda s: _training_scale(SQRT_D_K if s is DEFAULT else s),
    "experiments.learning_rate_sweep": lambda s: experiments.learning_rate_sweep(
        [0], SQRT_D_K if s is DEFAULT else s, [0.5], d_k=2, n_steps=1
    )[0.5][0].losses,
}
#: The scale as a divisor for the explorer's d_k (its own word for the scale: the d_k whose root divides).
EXPLORER_SCALE = "explorers.kinds.attention.AttentionExplorer"

HUGE = 10**400
ODD_SCALES = [None, "none", "sqrt_d_k", "2", 0, -1, float("nan"), float("inf"), 1 + 0j, [2.0], np.array([2.0, 3.0]), HUGE]


@pytest.mark.parametrize("label", sorted(SCALE_CALLS))
def test_every_scale_parameter_takes_the_one_vocabulary(label):
    call = SCALE_CALLS[label]
    default = _fingerprint(call(DEFAULT))
    assert _fingerprint(_no_warning(lambda: call(SQRT_D_K))) == default == _fingerprint(_no_warning(lambda: call(True)))
    unscaled = _fingerprint(_no_warning(lambda: call(NO_SCALING)))
    assert unscaled == _fingerprint(_no_warning(lambda: call(False)))
    if label != "training.AttentionModel":  # it keeps the word itself (below)
        assert unscaled == _fingerprint(call(1)) != default  # no scaling divides by 1
    for odd in ODD_SCALES:
        if label.startswith("exact.") and odd is HUGE:
            continue  # an exact number: sympy divides by it exactly
        raises(lambda odd=odd: call(odd), "scale")


def test_the_words_are_kept_as_words():
    assert training.AttentionModel(scale=True).scale is SQRT_D_K and training.AttentionModel(scale=False).scale is NO_SCALING
    assert training.AttentionModel(scale=2).scale == 2.0
    for word in (SQRT_D_K, NO_SCALING, CAUSAL):
        assert copy.copy(word) is word and copy.deepcopy(word) is word and pickle.loads(pickle.dumps(word)) is word
    assert repr(NO_SCALING) == "attnlib.NO_SCALING" and attnlib.core.CAUSAL is CAUSAL


def test_the_attention_explorer_takes_the_scale_words_for_d_k():
    ex = explorers.AttentionExplorer(d_k=NO_SCALING)
    assert ex.dk == 0 and ex.d_k is NO_SCALING and ex.divisor == 1.0
    for old in (None, 0):  # the old spellings, kept for one release
        assert _no_warning(lambda old=old: explorers.AttentionExplorer(d_k=old)).dk == 0
    widths = [explorers.AttentionExplorer(**kw).d_k for kw in ({"d_k": SQRT_D_K}, {}, {"d_k": "width"})]
    assert widths == [2, 2, 2]
    ex.d_k = SQRT_D_K
    assert ex.dk == 2
    ex.dk = NO_SCALING  # the page's trait takes the word too, and keeps its encoding 0
    assert ex.dk == 0 and ex.error == ""
    for odd in ("none", True, -1, 5, 2.5):
        raises(lambda odd=odd: setattr(ex, "d_k", odd), "d_k must be")


def test_every_mask_and_scale_parameter_has_an_entry():
    missing = []
    for label, obj in public_callables():
        params = parameters(obj)
        if "mask" in params and label not in MASK_CALLS and label not in MASK_RECORDS:
            missing.append(f"{label}(mask)")
        if "scale" in params and label not in SCALE_CALLS:
            missing.append(f"{label}(scale)")
    assert not missing, f"add these to MASK_CALLS / SCALE_CALLS in tests/unit/test_edges_vocabulary.py: {missing}"
    assert EXPLORER_SCALE in MASK_CALLS
