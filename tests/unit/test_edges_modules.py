"""Edge suite of the later modules (backward, blocked, training, measure, transformer, induction, the explorers'
helpers, and the homework modules variants, exercises.registry and exercises.grading): odd input by argument kind.

Every public function (and the constructors and methods of the public classes) has an entry in
``SPECS``: a call with good arguments and the *kind* of each argument. ``ODD`` (the one table of odd
values, ``support/odd_values.py``, shared with the other edge suites) holds, for every kind, the odd
values an argument of that kind is given, one at a time, deterministically (no hypothesis: the same
cases run every time, in a few seconds):

* ``refuse``: values that must raise ``ValueError`` naming that argument (None, bools, numbers as
  text, complex numbers, ``numpy.ma`` arrays, ragged lists, NaN and inf, negative and non-integral
  numbers where an integer is wanted, sizes that cannot fit in memory, ...);
* ``allow``: values that may be accepted (1e300 magnitudes, wrong shapes, huge ints, ...): the call
  returns a finite result or raises ``ValueError`` naming an argument, and an overflow is never
  blamed on an argument that was finite ("d_output contains inf" when d_output is finite);
* for the kinds in ``ACCEPT`` (values that come from a student's kernel: typed answers, hand-in payloads,
  test-cell outputs, the notebook's namespace), ``allow`` values must *not* be refused, and the result must be
  the documented verdict (False, a sentence, a non-empty list of messages, hand_in's AssertionError).

Seeds and integers also get *equivalent* values (``3.0``, ``np.int64(3)``), which must give the
same result as ``3``. On every call: no other exception, no warning, no input changed.

Adding a parameter without a kind fails ``test_every_argument_of_an_entry_has_a_kind``; a public function,
class or method of attnlib without an entry in an edge suite fails ``tests/unit/test_edges_guard.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import re
import tempfile
import warnings
from collections import Counter
from copy import deepcopy
from pathlib import Path

import numpy as np
import pytest
from support.hand_ins import right_namespace, right_payload
from support.odd_values import EQUIVALENT, ODD
from support.paths import ARTIFACTS
from support.public_api import resolve

import attnlib
from attnlib import _memory, backward, blocked, checks, experiments, explorers, induction, measure, training, transformer, variants
from attnlib.core import attention, multi_head_parts
from attnlib.exercises import DRAWS, cases, from_source, grading, registry, runner
from attnlib.explorers import frontend, reference_views, snapshot
from attnlib.explorers.kinds import live_training
from attnlib.explorers.kinds.training import recorded_steps

RUNS: Counter[str] = Counter()

I2 = np.eye(2)
X3 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
A23 = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
FLASH_OUT, FLASH_LSE = blocked.flash_attention(X3, X3, X3, mask="causal", return_lse=True)

#: Words of numpy's or Python's own errors that must never reach a reader.
INTERNAL_WORDS = ("inhomogeneous", "truth value", "unhashable", "unpack", "could not convert", "object of type", "NoneType' object")


PROBE = training.previous_token_task(2, length=3, n_symbols=2, d_pos=2, seed=0)
SHAPES = {"W_Q": (4, 2), "W_K": (4, 2), "W_V": (4, 2)}
PARAMS = training.init_params(SHAPES, 0.5, seed=0)
GRADS = {"d" + k: np.full_like(v, 0.1) for k, v in PARAMS.items()}
RUN = training.train(
    training.AttentionModel(), PARAMS, training.Adam(0.05), lambda r: training.previous_token_task(2, 3, 2, 2, r), 2, PROBE, (0, 2)
)
W_PROBE = training.AttentionModel().forward(PARAMS, PROBE)[1]
FORWARD = attention(X3, X3, X3)
MH_FORWARD = multi_head_parts(X3, X3, I2, I2, I2, I2, 2)
STATE = {
    "X": X3.tolist(),
    "tokens": ["a", "b", "c"],
    "W_Q": I2.tolist(),
    "W_K": I2.tolist(),
    "W_V": I2.tolist(),
    "dk": 2,
    "mask_mode": "none",
    "mask_cells": np.ones((3, 3), bool).tolist(),
}


# --- issue 26: attnlib.transformer -----------------------------------------------------------
TF_PARAMS = transformer.init_encoder_params(2, 3, seed=0)
TF_X = X3
TF_LN = {"X": X3, "gamma": [1.0, 2.0], "beta": [0.0, 0.5], "eps": 1e-5}
TF_TORCH = {
    "self_attn.in_proj_weight": np.arange(12.0).reshape(6, 2) / 10,
    "self_attn.in_proj_bias": np.arange(6.0) / 10,
    "self_attn.out_proj.weight": I2,
    "self_attn.out_proj.bias": np.zeros(2),
    "linear1.weight": np.ones((3, 2)),
    "linear1.bias": np.zeros(3),
    "linear2.weight": np.ones((2, 3)),
    "linear2.bias": np.zeros(2),
    "norm1.weight": np.ones(2),
    "norm1.bias": np.zeros(2),
    "norm2.weight": np.ones(2),
    "norm2.bias": np.zeros(2),
}
TF_OPTIONS = {"mask": "tf_mask", "norm_first": "flag", "activation": "text", "eps": "real"}
TF_GOOD_OPTIONS = {"mask": "causal", "norm_first": False, "activation": "gelu", "eps": 1e-5}
# --- end of issue 26 -------------------------------------------------------------------------


def _batches(rng):
    return training.previous_token_task(2, 3, 2, 2, rng)


def _square(x):
    return float(np.sum(np.asarray(x) ** 2))


#: label: (callable, good keyword arguments, {argument: kind}). Methods are called on a fresh instance.
# ---- attnlib.induction (chapter 17) and its explorer: tiny models, a few steps ----------------------------------
IND_MODEL = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
IND_PARAMS = IND_MODEL.init(0)
IND_BATCH = induction.repeated_tokens(2, 5, (2, 3), seed=1)
IND_EQUAL = induction.repeated_tokens(2, 5, 3, seed=1)
IND_WEIGHTS = IND_MODEL.forward(IND_PARAMS, IND_BATCH).weights
IND_EXPLORER_MODEL = induction.InductionModel(vocab_size=26, n_positions=48, d_model=4, n_heads=1)


def _train_induction(model, params, optimizer, n_steps, n_sequences, half_lengths, probe, seed, chunk, final_lr):
    """train_induction with a fresh copy of the optimizer on every call (Adam keeps its moments between calls)."""
    fresh = deepcopy(optimizer) if isinstance(optimizer, training.Adam) else optimizer
    return induction.train_induction(model, params, fresh, n_steps, n_sequences, half_lengths, probe, seed, chunk, final_lr)


def _trained_explorer():
    """A live training explorer to which the page has sent weights (the default setting's starting ones)."""
    ex = explorers.live_training_explorer()
    start = induction.InductionModel(32, 48, 32, 1, 2).init(induction.PortableRandom(0))
    ex.set_state({"trained": {"step": 0, "params": {k: v.tolist() for k, v in start.items()}}})
    return ex


INDUCTION_SPECS = {
    "induction.token_batch": (
        induction.token_batch,
        {"sequences": [[0, 1, 0, 1]], "vocab_size": 3, "halves": [2]},
        {"sequences": "int_list", "vocab_size": "size", "halves": "any"},
    ),
    "induction.repeated_tokens": (
        induction.repeated_tokens,
        {"n_sequences": 2, "vocab_size": 5, "half_lengths": (2, 3), "seed": 0, "n_positions": None},
        {"n_sequences": "size", "vocab_size": "size", "half_lengths": "any", "seed": "seed", "n_positions": "optional_size"},
    ),
    "induction.InductionModel": (
        induction.InductionModel,
        {"vocab_size": 5, "n_positions": 6, "d_model": 4, "n_heads": 2, "n_layers": 2},
        {"vocab_size": "size", "n_positions": "size", "d_model": "size", "n_heads": "size", "n_layers": "size"},
    ),
    "induction.InductionModel.init": (
        lambda seed, std: IND_MODEL.init(seed, std),
        {"seed": 0, "std": None},
        {"seed": "seed", "std": "optional_real"},
    ),
    "induction.InductionModel.shapes": (lambda: IND_MODEL.shapes(), {}, {}),
    "induction.PortableRandom": (induction.PortableRandom, {"seed": 0}, {"seed": "seed"}),
    "induction.PortableRandom.uint32": (lambda: induction.PortableRandom(0).uint32(), {}, {}),
    "induction.PortableRandom.random": (lambda: induction.PortableRandom(0).random(), {}, {}),
    "induction.InductionModel.forward": (
        lambda params, batch, ablate: IND_MODEL.forward(params, batch, ablate),
        {"params": IND_PARAMS, "batch": IND_BATCH, "ablate": [(1, 0)]},
        {"params": "params", "batch": "instance", "ablate": "any"},
    ),
    "induction.InductionModel.loss_and_gradients": (
        lambda params, batch: IND_MODEL.loss_and_gradients(params, batch),
        {"params": IND_PARAMS, "batch": IND_BATCH},
        {"params": "params", "batch": "instance"},
    ),
    "induction.cross_entropy": (
        induction.cross_entropy,
        {"logits": np.zeros((3, 4)), "targets": [0, 1, -1]},
        {"logits": "matrix", "targets": "any"},
    ),
    "induction.half_losses": (
        induction.half_losses,
        {"model": IND_MODEL, "params": IND_PARAMS, "batch": IND_BATCH, "ablate": ()},
        {"model": "instance", "params": "params", "batch": "instance", "ablate": "any"},
    ),
    "induction.loss_by_position": (
        induction.loss_by_position,
        {"model": IND_MODEL, "params": IND_PARAMS, "batch": IND_EQUAL, "ablate": [(2, 1)]},
        {"model": "instance", "params": "params", "batch": "instance", "ablate": "any"},
    ),
    "induction.train_induction": (
        _train_induction,
        {
            "model": IND_MODEL,
            "params": IND_PARAMS,
            "optimizer": training.Adam(lr=0.01),
            "n_steps": 2,
            "n_sequences": 2,
            "half_lengths": (2, 3),
            "probe": IND_BATCH,
            "seed": 0,
            "chunk": 8,
            "final_lr": None,
        },
        {
            "model": "instance",
            "params": "params",
            "optimizer": "instance",
            "n_steps": "size",
            "n_sequences": "size",
            "half_lengths": "any",
            "probe": "instance",
            "seed": "seed",
            "chunk": "size",
            "final_lr": "optional_real",
        },
    ),
    "induction.drop_step": (
        induction.drop_step,
        {"second_half": np.linspace(3.0, 0.0, 30), "reference": 3.0, "ratio": 0.5, "window": 5},
        {"second_half": "matrix", "reference": "real", "ratio": "real", "window": "size"},
    ),
    "induction.half_length_chances": (induction.half_length_chances, {"half_lengths": (2, 4)}, {"half_lengths": "half_lengths"}),
    "induction.repeat_start_chance": (induction.repeat_start_chance, {"half_lengths": (2, 4)}, {"half_lengths": "half_lengths"}),
    "induction.best_loss_by_position": (
        induction.best_loss_by_position,
        {"vocab_size": 5, "half_lengths": (2, 4), "half_length": 3},
        {"vocab_size": "size", "half_lengths": "half_lengths", "half_length": "size"},
    ),
    "induction.best_first_half_loss": (
        induction.best_first_half_loss,
        {"vocab_size": 5, "half_lengths": (2, 4)},
        {"vocab_size": "size", "half_lengths": "half_lengths"},
    ),
    "induction.token_ov_circuit": (
        induction.token_ov_circuit,
        {"model": IND_MODEL, "params": IND_PARAMS, "layer": 2, "head": 1},
        {"model": "instance", "params": "params", "layer": "size", "head": "index"},
    ),
    "induction.copying_score": (
        induction.copying_score,
        {"circuit": np.array([[2.0, 0.5, 0.0], [0.0, 1.0, 0.3], [-0.4, 0.0, 1.5]])},
        {"circuit": "matrix"},
    ),
    "induction.previous_token_score": (
        induction.previous_token_score,
        {"weights": IND_WEIGHTS[0], "batch": IND_BATCH},
        {"weights": "matrix", "batch": "instance"},
    ),
    "induction.prefix_matching_score": (
        induction.prefix_matching_score,
        {"weights": IND_WEIGHTS[1], "batch": IND_BATCH},
        {"weights": "matrix", "batch": "instance"},
    ),
    "induction.composition_score": (induction.composition_score, {"A": np.eye(3), "B": np.eye(3)}, {"A": "matrix", "B": "matrix"}),
    "induction.composition_scores": (
        induction.composition_scores,
        {"model": IND_MODEL, "params": IND_PARAMS},
        {"model": "instance", "params": "params"},
    ),
    "induction.token_key_composition": (
        induction.token_key_composition,
        {"model": IND_MODEL, "params": IND_PARAMS, "head1": 0, "head2": 1},
        {"model": "instance", "params": "params", "head1": "index", "head2": "index"},
    ),
    "induction.letters_to_tokens": (
        induction.letters_to_tokens,
        {"text": "Ab ca", "vocab_size": 26},
        {"text": "text", "vocab_size": "size"},
    ),
    "induction.words_to_tokens": (induction.words_to_tokens, {"text": "a b a", "vocab_size": 26}, {"text": "text", "vocab_size": "size"}),
    "induction.token_letters": (induction.token_letters, {"ids": [0, 1, 30]}, {"ids": "int_list"}),
    "induction.book_model": (induction.book_model, {}, {}),
    "induction.book_probe": (induction.book_probe, {"half_lengths": 3, "n_sequences": 2}, {"half_lengths": "any", "n_sequences": "size"}),
    # a few steps: the chapter's full runs take seconds each
    # (None, the chapter's 1200 steps, becomes 2 here; every other value is passed on)
    "induction.book_run": (
        lambda seed, n_steps: induction.book_run(seed, 2 if n_steps is None else n_steps),
        {"seed": 0, "n_steps": 2},
        {"seed": "seed", "n_steps": "optional_size"},
    ),
    "induction.book_runs": (
        lambda seeds, processes, n_steps: induction.book_runs(seeds, processes, 2 if n_steps is None else n_steps),
        {"seeds": [0], "processes": 2, "n_steps": 2},
        {"seeds": "int_list", "processes": "size", "n_steps": "optional_size"},
    ),
    "explorers.induction_explorer": (
        explorers.induction_explorer,
        {"params": IND_EXPLORER_MODEL.init(0), "model": IND_EXPLORER_MODEL},
        {"params": "params", "model": "instance"},
    ),
    # the explorer files a web page fetches (called by the book's extension with the kinds it found on a page)
    "explorers.frontend.page_files": (frontend.page_files, {"kinds": ["scaling"]}, {"kinds": "kind_names"}),
    "explorers.kinds.live_training.head_formed": (
        live_training.head_formed,
        {"second": 0.2635, "previous": 0.9288, "prefix": 0.9178},
        {"second": "real", "previous": "real", "prefix": "real"},
    ),
}


# ---- issue 23: the homework modules (attnlib.variants, attnlib.exercises.registry and attnlib.exercises.grading) ----
# Two kinds of argument. The grader's own (an exercise number, a seed, a Variant, names and keys, an Exercise entry)
# are refused with a ValueError naming them. The student's (a typed value, a hand-in's payload, a test cell's
# outputs, the values in the notebook's namespace) are never refused: odd ones give the documented verdict
# (``ACCEPT`` below: False, a non-empty list of messages, a sentence, an AssertionError of hand_in).
PREDICT = next(n for n, e in variants.EXERCISES.items() if e.kind == "predict")
EXERCISE_REFUSE = [None, 1, 9.1, "99.9", "", b"9.1", ["9.1"], True, {}, " 9.1", "9.10"]
OPTIONAL_SEED_REFUSE = [True, False, np.True_, "3", 2.5, -1, math.nan, math.inf, 1 + 0j, [1], {}]
V61 = variants.variant("6.1", 3)


class _NoArray:
    """A student's object whose conversion to an array raises."""

    def __array__(self, *args, **kwargs):
        raise TypeError("no array for you")


#: Typed values that are not a right answer: text (even "0.5"), booleans, complex numbers, None, ints beyond float64, ...
ODD_TYPED = [
    None,
    5,
    "x",
    "0.5",
    b"0.5",
    [],
    {},
    10**400,
    [10**400, 0.5],
    [0.5 + 0j, 0.5],
    np.array([0.5, 0.5]) + 0j,
    [True, True],
    [math.nan, math.nan],
    [math.inf, 0.5],
    [[0.5], [0.5, 1.0]],
    np.ma.array([0.5, 0.5], mask=[True, False]),
    object(),
    _NoArray(),
]
#: What a student's kernel could hand in instead of grading.encode's dict.
ODD_ENCODED = [
    None,
    5,
    "x",
    [],
    {},
    {"text": None},
    {"text": 5},
    {"hex": 5, "shape": [1]},
    {"hex": ["zz"], "shape": [1]},
    {"hex": [5], "shape": [1]},
    {"hex": "0x1p0", "shape": [1]},
    {"hex": ["0x1p0"], "shape": 5},
    {"hex": ["0x1p0"], "shape": "ab"},
    {"hex": ["0x1p0"], "shape": [10**400]},
    {"hex": ["0x1p0"], "shape": [0, 10**400]},
    {"hex": ["0x1p0"], "shape": [2]},
    {"hex": ["0x1p0"], "shape": [-1]},
    {"hex": ["0x1p0"], "shape": [True]},
    {"hex": [["0x1p0"]], "shape": [1]},
    grading.encode(10**400),
    {"hex": ["0x1p0"], "shape": [1], "dtype": "complex128"},  # a complex result without its imaginary parts
    grading.encode("0.5"),
]
#: Payloads that are not what hand_in writes (each exercise's own variations are added by _payload_odd).
ODD_PAYLOADS = [
    None,
    5,
    "x",
    [],
    {},
    {"answers": 5},
    {"answers": "ab"},
    {"answers": []},
    {"answers": None},
    {"answers": {}},
    {"answers": {"name": 5}},
    {"own": 5},
    {"own": None},
    {"own": []},
    {"own": [5, None]},
    {"own": ["x" * 10_000]},
    {"error": None},
    {"error": ""},
    {"error": 5},
    {"outputs": 5},
    {"outputs": None},
    {"outputs": []},
    {"outputs": [5]},
    {"outputs": "x"},
]


def _payload_odd(good):
    """The payload ``good`` (a right answer's) spoilt in every place a student's kernel could spoil it."""
    odd = list(ODD_PAYLOADS)
    for name in good.get("answers", {}):
        odd += [{"answers": {**good["answers"], name: bad}} for bad in ODD_ENCODED]
        odd += [{"answers": {**good["answers"], name: grading.encode(typed)}} for typed in ODD_TYPED[:14]]
        odd.append({"answers": {k: v for k, v in good["answers"].items() if k != name}})
    if "outputs" in good:
        outs = good["outputs"]
        odd += [{"outputs": [bad] + outs[1:]} for bad in ODD_ENCODED]
        odd += [{"outputs": [{"error": bad}] + outs[1:]} for bad in (None, 5, "")]
        odd += [{"outputs": outs[:-1]}, {"outputs": [*outs, outs[0]]}, {"outputs": outs[::-1]}]
    return [], odd


def _record(exercise, payload):
    return {"output_type": "display_data", "data": {grading.HAND_IN_MIME: {"exercise": exercise, "payload": payload}}}


def _outputs_odd(good):
    record = good[0]
    return [], [
        None,
        5,
        "x",
        {},
        [],
        [5],
        [None],
        [{"output_type": "stream", "text": "hi"}],
        [{"output_type": "display_data", "data": 5}],
        [{"output_type": "display_data", "data": grading.HAND_IN_MIME}],
        [{"output_type": "display_data", "data": {grading.HAND_IN_MIME: 5}}],
        [{"output_type": "display_data", "data": {grading.HAND_IN_MIME: {"exercise": "6.1"}}}],
        [_record("6.1", {})],
        [_record(["9.1"], {})],
        [_record("9.1", 5)],
        [record, record],
        [{**record, "output_type": "execute_result"}],
    ]


def _namespace_odd(good):
    """Namespaces that are not mappings (refused) and answers of every odd kind in a good namespace (a failed cell)."""
    refuse = [None, 5, "x", [], list(good.items())]
    allow = [{}]
    for name, value in good.items():
        allow.append({k: v for k, v in good.items() if k != name})
        if callable(value):  # an implement exercise: functions that misbehave
            bad = [
                5,
                None,
                "f",
                lambda *a: 1 / 0,
                lambda *a: 10**400,
                lambda *a: np.ones((2, 2)) * 1j,
                lambda *a: "x",
                lambda: 1,
                lambda *a: _NoArray(),
                lambda *a: (_ for _ in ()).throw(SystemExit(3)),
                attnlib.causal_mask,
            ]
        else:
            bad = ODD_TYPED
        allow += [{**good, name: b} for b in bad]
    return refuse, allow


def _entry_odd(good):
    """Exercise entries that register must refuse, each naming ``exercise``."""
    replace = dataclasses.replace
    refuse = [None, "6.1", {}, 1, variants.EXERCISES["6.1"]]
    refuse += [replace(good, number=n) for n in (99.1, "99", "99.x", "", "0.1", "99.0", " 99.1", "99.1.1", None, "6.1")]
    refuse += [replace(good, kind=k) for k in ("essay", None, "By-hand")]
    refuse += [replace(good, draw=d) for d in (5, None, "f")]
    refuse += [replace(good, well_posed=5), replace(good, answer=None), replace(good, answer=5), replace(good, judge="f")]
    refuse += [replace(good, own=o) for o in (5, None, [5], "f")]
    refuse += [replace(good, function=f) for f in (5, "", "my mask")] + [replace(good, exact_zero=1)]
    refuse += [replace(good, kind="implement"), replace(good, kind="implement", function="f", calls=lambda v: [])]
    return refuse, [replace(good, kind="measured")]


ODD.update(
    {
        "exercise": lambda good: (EXERCISE_REFUSE, []),
        "graded_exercise": lambda good: (EXERCISE_REFUSE + [PREDICT], []),
        "implement_exercise": lambda good: (EXERCISE_REFUSE + ["9.1", PREDICT], []),
        "optional_seed": lambda good: (OPTIONAL_SEED_REFUSE, [None, 10**400, 2**64, np.uint64(2**63)]),
        "name": lambda good: ([None, "", 1, b"x", ["a"], True, {}], ["nonsense", "ü" * 1000]),
        "route": lambda good: ([None, "", "email", "Files", "files ", 1, ["files"], True], []),
        "label": lambda good: ([], ["", "nonsense", None]),
        "variant": lambda good: (
            [
                None,
                "6.1",
                {},
                1,
                {"exercise": good.exercise, "seed": good.seed, "inputs": good.inputs},
                variants.Variant("99.9", None, {}),
                variants.Variant(None, None, good.inputs),
                variants.Variant(good.exercise, good.seed, {}),
                variants.Variant(good.exercise, good.seed, 5),
                variants.Variant(good.exercise, good.seed, dict(list(good.inputs.items())[1:])),
                variants.Variant(good.exercise, good.seed, {k: "abc" for k in good.inputs}),
                variants.Variant(good.exercise, good.seed, {k: None for k in good.inputs}),
            ],
            [variants.variant("9.1", 5), variants.variant(PREDICT, 5)],
        ),
        "answered_variant": lambda good: (ODD["variant"](good)[0] + [variants.variant(PREDICT, 5)], [variants.variant("9.1", 5)]),
        "typed": lambda good: ([], ODD_TYPED),
        "encoded": lambda good: ([], ODD_ENCODED),
        "encoded_result": lambda good: ([], ODD_ENCODED),
        "prediction": lambda good: ([], [*ODD_TYPED, 13_000_000, [12_528_000]]),
        "typed_value": lambda good: ([], [*ODD_TYPED, [[[[[[0.5]]]]]], np.array([0.5, 1j], dtype=object), 10**400]),
        "typed_record": lambda good: ([], [*ODD_ENCODED, {"list": 5}, {"int": "1" * 5000}, {"real": "zz"}, {"other": 5}]),
        "value": lambda good: ([], [*ODD_TYPED, np.datetime64("2020-01-01"), np.ones((2, 2), dtype=np.float16), 1e308, -0.0]),
        "payload": _payload_odd,
        "outputs": _outputs_odd,
        "grade_id": lambda good: (
            [],
            [
                None,
                1,
                "",
                b"ch09-ex2-test",
                ["ch09-ex2-test"],
                {},
                np.array(["ch09-ex2-test"]),
                np.array(["ch09-ex2-test", "x"]),
                "ch09-ex4-written",
                "CH09-EX2-TEST",
                "ch09-ex2-test ",
                variants.EXERCISES["9.2"],
            ],
        ),
        "namespace": _namespace_odd,
        "sink": lambda good: ([5, "x", {}, (), set(), True], [None, []]),
        "own": lambda good: (
            [None, 5, "f", [5], [len, None], {}, attnlib.causal_mask, {attnlib.causal_mask}],
            [(), [len], (abs, attnlib.softmax)],
        ),
        "exercise_entry": _entry_odd,
    }
)
EQUIVALENT["optional_seed"] = EQUIVALENT["seed"]


def _is_messages(result):
    return isinstance(result, list) and len(result) > 0 and all(isinstance(m, str) and m for m in result)


#: Kinds whose odd values come from a student: never refused, and the result is the documented verdict.
ACCEPT = {
    "typed": ("False", lambda r: r is False),
    "encoded": ("a sentence", lambda r: isinstance(r, str) and r),
    "value": (
        "an encode dict",
        lambda r: isinstance(r, dict) and ("text" in r or r == {"none": True} or {"shape", "bool", "hex", "dtype"} <= set(r)),
    ),
    "prediction": ("a FAIL result", lambda r: isinstance(r, checks.CheckResult) and not r.passed),
    "typed_value": ("a JSON record", lambda r: isinstance(r, dict) and len(r) == 1),
    "typed_record": ("a stand-in value, never the record", lambda r: not isinstance(r, dict)),
    "encoded_result": (
        "(None, a sentence), or (the text or odd array the kernel returned, None)",
        lambda r: (r[0] is None and isinstance(r[1], str) and r[1]) or (r[1] is None and not isinstance(r[0], dict)),
    ),
    "payload": ("a non-empty list of messages", _is_messages),
    "outputs": ("a non-empty list of messages", _is_messages),
    "grade_id": ("None", lambda r: r is None),
    "namespace": ("a failed cell (AssertionError)", lambda r: isinstance(r, tuple) and r[0] == "failed" and r[1]),
    "typed_answers": ("a NOT YET result", lambda r: isinstance(r, checks.ByHandResult) and not r.passed),
    "student_function": (
        "a StudentCall holding its value or what went wrong",
        lambda r: isinstance(r, checks.StudentCall) and (r.value is not None) != bool(r.error),
    ),
}


@functools.wraps(grading.hand_in)
def _hand_in(exercise, seed, namespace, sink=None):
    """hand_in, whose AssertionError (a wrong answer: the cell fails, as documented) is its verdict; else what it handed in."""
    with grading.collected() as collected:
        try:
            grading.hand_in(exercise, seed, namespace, sink)
        except AssertionError as exc:
            return ("failed", str(exc))
    return list(collected if sink is None else sink)


@functools.wraps(variants.check_well_posed)
def _well_posed(v):
    variants.check_well_posed(v)
    return True


@functools.wraps(grading.own_functions_called)
def _own_called(own):
    with grading.own_functions_called(own) as hit:
        attnlib.softmax([0.0, 1.0])
    return hit


@functools.wraps(grading.collected)
def _collected():
    with grading.collected() as handed:
        grading.hand_in("9.1", None, right_namespace("9.1", None))
    return handed


@functools.wraps(registry.register)
def _register(exercise):
    """register, leaving EXERCISES as it was (no test exercise stays registered)."""
    before = dict(registry.EXERCISES)
    try:
        return registry.register(exercise)
    finally:
        registry.EXERCISES.clear()
        registry.EXERCISES.update(before)


NEW_EXERCISE = registry.Exercise("99.1", "by-hand", variants.uniform_row_by_hand, answer=lambda v: {"x": 1.0})
PAYLOAD_61, PAYLOAD_92, PAYLOAD_153 = (right_payload(n, 3) for n in ("6.1", "9.2", "15.3"))

HOMEWORK_SPECS = {
    "variants.student_seed": (
        variants.student_seed,
        {"student_id": "s001", "assignment": "ch06", "key": "course key"},
        {"student_id": "name", "assignment": "name", "key": "name"},
    ),
    "variants.route_key": (
        variants.route_key,
        {"secret": "secret", "assignment": "ch09", "route": "files"},
        {"secret": "name", "assignment": "name", "route": "route"},
    ),
    "variants.current_user": (variants.current_user, {}, {}),
    "variants.variant": (variants.variant, {"exercise": "6.1", "seed": 3}, {"exercise": "exercise", "seed": "optional_seed"}),
    "variants.implement_inputs": (
        variants.implement_inputs,
        {"exercise": "9.2", "seed": 3},
        {"exercise": "implement_exercise", "seed": "optional_seed"},
    ),
    "variants.answers": (variants.answers, {"v": V61}, {"v": "answered_variant"}),
    "variants.check_well_posed": (_well_posed, {"v": variants.variant("9.1", 3)}, {"v": "variant"}),
    "variants.agrees": (variants.agrees, {"given": [0.5, 0.5], "expected": [0.5, 0.5]}, {"given": "typed", "expected": "typed"}),
    "variants.as_seed": (variants.as_seed, {"name": "value", "value": 3}, {"name": "label", "value": "seed"}),
    **{f"variants.{name}": (draw, {"seed": 3}, {"seed": "optional_seed"}) for name, draw in DRAWS.items()},
    "registry.register": (_register, {"exercise": NEW_EXERCISE}, {"exercise": "exercise_entry"}),
    "grading.exercise_of_test": (grading.exercise_of_test, {"grade_id": "ch09-ex2-test"}, {"grade_id": "grade_id"}),
    "grading.encode": (grading.encode, {"value": [0.5, -0.25]}, {"value": "value"}),
    "grading.decode": (grading.decode, {"obj": grading.encode([0.5, -0.25])}, {"obj": "encoded"}),
    "exercises.ch15.check_memory_prediction": (
        checks.check_memory_prediction,
        {"predicted_bytes": variants.answers(variants.variant("15.3", 3))["predicted_bytes"], "seed": 3, "verbose": False},
        {"predicted_bytes": "prediction", "seed": "optional_seed", "verbose": "flag"},
    ),
    "grading.handed_value": (grading.handed_value, {"obj": grading.encode([0.5, -0.25])}, {"obj": "encoded_result"}),
    "grading.encode_typed": (grading.encode_typed, {"value": [0.5, -0.25]}, {"value": "typed_value"}),
    "grading.decode_typed": (grading.decode_typed, {"obj": grading.encode_typed([0.5, -0.25])}, {"obj": "typed_record"}),
    "grading.graded_cases": (
        grading.graded_cases,
        {"exercise": "9.2", "seed": 3},
        {"exercise": "implement_exercise", "seed": "optional_seed"},
    ),
    "grading.own_functions_called": (_own_called, {"own": (attnlib.softmax,)}, {"own": "own"}),
    "grading.collected": (_collected, {}, {}),
    **{
        f"grading.hand_in ({variants.EXERCISES[number].kind})": (
            _hand_in,
            {"exercise": number, "seed": 3, "namespace": right_namespace(number, 3), "sink": None},
            {"exercise": "graded_exercise", "seed": "optional_seed", "namespace": "namespace", "sink": "sink"},
        )
        for number in ("6.1", "9.2")
    },
    **{
        f"grading.judge ({variants.EXERCISES[number].kind})": (
            grading.judge,
            {"exercise": number, "seed": 3, "payload": payload},
            {"exercise": "graded_exercise", "seed": "optional_seed", "payload": "payload"},
        )
        for number, payload in (("6.1", PAYLOAD_61), ("9.2", PAYLOAD_92), ("15.3", PAYLOAD_153))
    },
    "grading.judge_outputs": (
        grading.judge_outputs,
        {"exercise": "9.2", "seed": 3, "outputs": [_record("9.2", PAYLOAD_92)]},
        {"exercise": "graded_exercise", "seed": "optional_seed", "outputs": "outputs"},
    ),
}
# ---- end of issue 23 ----

# ---- issue 47, the homework wing: the self-checks' helpers (attnlib.checks) ----
#: 4.1's right answer for seed 3, typed as a student would (the self-check's good call).
BY_HAND_41 = {"o_by_hand": variants.answers(variants.variant("4.1", 3))["o_by_hand"]}
CHECK_PASSED = checks.CheckResult("softmax", 2, 2)
CHECK_FAILED = checks.CheckResult("softmax", 2, 1, ("case: wrong",), ("your function printed 1 line(s)",))
BY_HAND_PASSED = checks.check_by_hand("4.1", BY_HAND_41, seed=3, verbose=False)
BY_HAND_FAILED = checks.check_by_hand("4.1", {"o_by_hand": [0.0, 0.0]}, seed=3, verbose=False)
assert BY_HAND_PASSED.passed and not BY_HAND_FAILED.passed and not CHECK_FAILED.passed


def _required(result):
    """``result.require()`` of a passed result returns nothing; the entry's result says it returned."""
    result.require()
    return "required"


def _typed_answers_odd(good):
    """Answers that are not a mapping (refused, naming ``answers``), and a mapping with each typed value spoilt (NOT YET)."""
    refuse = [None, 5, "x", [], list(good.items()), [0.625, 0.375]]
    allow = [{}] + [{k: v for k, v in good.items() if k != name} for name in good]
    allow += [{**good, name: typed} for name in good for typed in ODD_TYPED]
    return refuse, allow


#: Functions a student could hand a self-check: each ends in a StudentCall, with what went wrong when it raised (the value
#: itself, complex or not, is judged by the checks: tests/exercises/test_checks_misbehaving.py).
ODD_STUDENT_FUNCTIONS = [
    5,
    None,
    "f",
    lambda *a: 1 / 0,
    lambda *a: 10**400,
    lambda: 1,
    lambda *a: _NoArray(),
    lambda *a: (_ for _ in ()).throw(SystemExit(3)),
    lambda *a: (_ for _ in ()).throw(NotImplementedError()),
    lambda x: x.__setitem__(0, 5.0),
]

ODD.update(
    {
        "by_hand_exercise": lambda good: (EXERCISE_REFUSE + ["9.2", "15.3", PREDICT], []),
        "typed_answers": _typed_answers_odd,
        "student_function": lambda good: ([], ODD_STUDENT_FUNCTIONS),
        "call_args": lambda good: ([None, 5, "x", {}, np.zeros(2), {0: 1.0}], [[np.zeros(2)], (np.zeros(2), 5)]),
        "time_limit": lambda good: (
            ["1", -1, 0, math.nan, math.inf, True, [1], 1j, 86400, 1e300, 10**400],
            [None, 1e-3, np.float32(2.5), 3],
        ),
    }
)

HOMEWORK_CHECKS_SPECS = {
    "exercises.by_hand.check_by_hand": (
        checks.check_by_hand,
        {"exercise": "4.1", "answers": BY_HAND_41, "seed": 3, "verbose": False},
        {"exercise": "by_hand_exercise", "answers": "typed_answers", "seed": "optional_seed", "verbose": "flag"},
    ),
    "exercises.sandbox.call_student": (
        checks.call_student,
        {"fn": lambda x: x + 1, "args": (np.zeros(2),), "time_limit": None},
        {"fn": "student_function", "args": "call_args", "time_limit": "time_limit"},
    ),
    "exercises.results.CheckResult.require": (lambda: _required(CHECK_PASSED), {}, {}),
    "exercises.results.CheckResult.report": (lambda: CHECK_FAILED.report(), {}, {}),
    "exercises.results.ByHandResult.report": (lambda: BY_HAND_FAILED.report(), {}, {}),
}

# ---- issue 47: attnlib.experiments, and the explorers' classes and their methods ----
def _set(values):
    """``ex.set(**values)``; a refusal must name the setting it refused (one of the keywords), then counts as naming ``values``."""
    try:
        return explorers.attention_explorer().set(**values).state_dict()
    except explorers.InvalidSetting as exc:
        assert any(str(exc).startswith(k) for k in values) or str(exc).startswith("set"), exc
        raise ValueError(f"values: {exc}") from None


def _after(ex, method):
    """Call a method that returns nothing (reset, randomise); the explorer's state is the result."""
    getattr(ex, method)()
    return ex.state_dict()


EXP_RUN = experiments.head_count_runs([0], n_heads=2, n_steps=2, record_steps=(1,))[0]
EXP_OUTCOME = experiments.head_outcome(EXP_RUN, 2)
EXP_SCALE = attnlib.SQRT_D_K
EXP_SWEEP = experiments.learning_rate_sweep([0], EXP_SCALE, [0.5, 2.0], d_k=2, n_steps=2)
TWO_PROBE = experiments.two_relation_probe(4)
ISSUE47_SPECS = {
    "experiments.previous_token_probe": (experiments.previous_token_probe, {"n_sequences": 4}, {"n_sequences": "size"}),
    "experiments.two_relation_probe": (experiments.two_relation_probe, {"n_sequences": 4}, {"n_sequences": "size"}),
    "experiments.learn_previous_token": (
        experiments.learn_previous_token,
        {"seed": 0, "d_k": 2, "n_steps": 2, "record_steps": (0, 2), "lr": 0.05},
        {"seed": "seed", "d_k": "size", "n_steps": "size", "record_steps": "int_list", "lr": "real"},
    ),
    "experiments.scaling_runs": (
        experiments.scaling_runs,
        {"seeds": [0], "scale": EXP_SCALE, "d_k": 2, "n_steps": 2, "lr": 0.5, "qk_init_factor": 1.0, "qk_lr_factor": 1.0,
         "stop_above": None},
        {"seeds": "int_list", "scale": "scale", "d_k": "size", "n_steps": "size", "lr": "real", "qk_init_factor": "real",
         "qk_lr_factor": "real", "stop_above": "optional_real"},
    ),  # fmt: skip
    "experiments.scaling_equivalence": (experiments.scaling_equivalence, {"d_k": 64}, {"d_k": "size"}),
    "experiments.learning_rate_sweep": (
        experiments.learning_rate_sweep,
        {"seeds": [0], "scale": EXP_SCALE, "lrs": [0.5], "d_k": 2, "n_steps": 2, "stop_above": 10.0},
        {"seeds": "int_list", "scale": "scale", "lrs": "real_list", "d_k": "size", "n_steps": "size", "stop_above": "optional_real"},
    ),
    "experiments.best_learning_rate": (experiments.best_learning_rate, {"sweep": EXP_SWEEP}, {"sweep": "dict"}),
    "experiments.head_count_runs": (
        experiments.head_count_runs,
        {"seeds": [0], "n_heads": 2, "std": 0.3, "n_steps": 2, "lr": 0.03, "record_steps": (1,)},
        {"seeds": "int_list", "n_heads": "size", "std": "real", "n_steps": "size", "lr": "real", "record_steps": "int_list"},
    ),
    "experiments.head_outcome": (
        experiments.head_outcome,
        {"run": EXP_RUN, "n_heads": 2, "probe": TWO_PROBE},
        {"run": "instance", "n_heads": "size", "probe": "optional_instance"},
    ),
    "experiments.specialisation_table": (experiments.specialisation_table, {"outcomes": [EXP_OUTCOME]}, {"outcomes": "instance_list"}),
    "experiments.split_margin": (experiments.split_margin, {"outcome": EXP_OUTCOME}, {"outcome": "instance"}),
    "experiments.split_counts": (
        experiments.split_counts,
        {"outcomes": [EXP_OUTCOME], "thresholds": [0.5, 0.6]},
        {"outcomes": "instance_list", "thresholds": "real_list"},
    ),
    "experiments.score_step_directions": (
        experiments.score_step_directions,
        {"n_cases": 2, "seed": 0, "n_tokens": 3, "d": 2},
        {"n_cases": "size", "seed": "seed", "n_tokens": "size", "d": "size"},
    ),
    "experiments.pair_rotation_fit": (experiments.pair_rotation_fit, {"block": [[3.0, 1.0], [-1.0, 3.0]]}, {"block": "matrix"}),
    "experiments.feature_shares": (
        experiments.feature_shares,
        {"W": [[3.0], [4.0]], "features": ["n0", "p0"], "groups": None},
        {"W": "matrix", "features": "labels", "groups": "optional_dict"},
    ),
    # the explorers' constructors (class 15) and the methods a reader calls; their traits are tried by
    # tests/explorers/test_explorer_settings.py
    "explorers.AttentionExplorer": (
        explorers.AttentionExplorer,
        {"X": X3, "tokens": None, "controls": ("W_Q", "d_k", "mask"), "views": ("Q", "weights"), "W_Q": I2, "W_K": I2,
         "W_V": I2, "d_k": attnlib.SQRT_D_K, "mask": None, "title": "t", "seed": 0},
        {"X": "optional_matrix", "tokens": "optional_labels", "controls": "labels", "views": "labels", "W_Q": "optional_matrix",
         "W_K": "optional_matrix", "W_V": "optional_matrix", "d_k": "dk", "mask": "mask", "title": "text", "seed": "seed"},
    ),  # fmt: skip
    "explorers.AttentionExplorer.set": (_set, {"values": {"W_Q": I2}}, {"values": "settings"}),
    "explorers.AttentionExplorer.reset": (lambda: _after(explorers.attention_explorer(), "reset"), {}, {}),
    "explorers.AttentionExplorer.randomise": (lambda: _after(explorers.attention_explorer(), "randomise"), {}, {}),
    "explorers.BlockMemoryExplorer": (explorers.BlockMemoryExplorer, {}, {}),
    "explorers.BlockMemoryExplorer.block_at": (
        lambda step: explorers.block_memory_explorer().block_at(step),
        {"step": 2},
        {"step": "optional_index"},
    ),
    "explorers.HeadCountExplorer": (explorers.HeadCountExplorer, {"seed": 0}, {"seed": "seed"}),
    "explorers.HeadCountExplorer.results": (lambda: explorers.head_count_explorer().results(), {}, {}),
    "explorers.InductionExplorer": (
        explorers.InductionExplorer,
        {"params": IND_EXPLORER_MODEL.init(0), "model": IND_EXPLORER_MODEL, "text": "a b a", "mode": "letters"},
        {"params": "optional_params", "model": "optional_instance", "text": "text", "mode": "text"},
    ),
    "explorers.LiveTrainingExplorer": (explorers.LiveTrainingExplorer, {}, {}),
    "explorers.LiveTrainingExplorer.settings": (lambda: explorers.live_training_explorer().settings(), {}, {}),
    "explorers.LiveTrainingExplorer.trained_model": (lambda: _trained_explorer().trained_model(), {}, {}),
    "explorers.PositionalExplorer": (explorers.PositionalExplorer, {}, {}),
    "explorers.PositionalExplorer.table": (lambda: explorers.positional_explorer().table(), {}, {}),
    "explorers.ScaleComparisonExplorer": (explorers.ScaleComparisonExplorer, {}, {}),
    "explorers.ScaleComparisonExplorer.results": (lambda: explorers.scale_comparison_explorer().results(), {}, {}),
    "explorers.ScalingExplorer": (explorers.ScalingExplorer, {"seed": 0}, {"seed": "seed"}),
    "explorers.ScalingExplorer.sample": (lambda: explorers.scaling_explorer().sample(), {}, {}),
    "explorers.ScalingExplorer.spread": (lambda: explorers.scaling_explorer().spread(), {}, {}),
    "explorers.TrainingExplorer": (explorers.TrainingExplorer, {"seed": 0}, {"seed": "seed"}),
    "explorers.Explorer.state_dict": (lambda: explorers.attention_explorer().state_dict(), {}, {}),
    "explorers.Explorer.snapshot_html": (lambda: explorers.attention_explorer().snapshot_html(), {}, {}),
    "explorers.Explorer.summary_text": (lambda: explorers.attention_explorer().summary_text(), {}, {}),
}
# ---- end of issue 47 ----

# ---- issue 46: judging what the student wrote (attnlib.exercises.from_source, .runner, grading's source judges) ----
#: A folder holding a request the grader's runner takes (9.2's model answer), for runner.run_folder.
RUNNER_FOLDER = Path(tempfile.mkdtemp(prefix="edges-runner-"))
MASK_92 = "def my_causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))"
_REQUEST, _ARRAYS = grading.runner_request("9.2", 3, [("ch09-ex2-answer", MASK_92)])
(RUNNER_FOLDER / "request.json").write_text(json.dumps(_REQUEST))
np.savez(RUNNER_FOLDER / "inputs.npz", **_ARRAYS)
EMPTY_FOLDER = Path(tempfile.mkdtemp(prefix="edges-empty-"))
BAD_REQUEST_FOLDER = Path(tempfile.mkdtemp(prefix="edges-bad-request-"))
(BAD_REQUEST_FOLDER / "request.json").write_text("[1, 2")
ANSWER_CELL = {"cell_type": "code", "source": "x = 1", "metadata": {"nbgrader": {"grade_id": "ch09-ex2-answer", "solution": True}}}
#: Answer cells' sources a student could type: every one is read (or is unreadable, with a reason), never an exception.
ODD_SOURCES = ["", "x = (", "\x00", "x = " + "(" * 500 + "1" + ")" * 500, "x = " + "-" * 5000 + "1", "x = 9**9**9", "x = [0.0] * 10**9",
               "x = 10**4001", "x = 1e400 * 1e400", "x = 'a' * 10", "x = [1, [2, 3]]", "x = {}", "x = lambda: 1", "del x",
               "x = y = 2", "x, = 1", "x: int", "x = math.exp(10**6)", "x = int('9' * 5000)", "x = round(1.5, 10**6)",
               "x = max()", "x = np.exp(1, 2)", "x = __import__('os').getcwd()", "x = 2 ** -1", "x = -(2**0.5)**0.5"]

class _UsesAttnlib:
    """A callable object whose ``__code__`` reads attnlib (a student's object may look like a function)."""

    __code__ = (lambda n: attnlib.causal_mask(n)).__code__

    def __call__(self, n):
        return attnlib.causal_mask(n)


ODD_READ_FUNCTIONS = [*ODD_STUDENT_FUNCTIONS, attnlib.causal_mask, functools.partial(attnlib.softmax, axis=0), _UsesAttnlib()]

ODD.update(
    {
        "answer_source": lambda good: ([None, 5, b"x = 1", ["x = 1"]], ODD_SOURCES),
        "answer_names": lambda good: ([None, "x", 5, [5], ["x", None], {"x": 1}], [[], ["y"], ("x", "x"), {"x"}]),
        "test_grade_id": lambda good: ([None, 5, "", "ch09-ex2-answer", ["ch09-ex2-test"]], ["x-test"]),
        "notebook_cells": lambda good: (
            [None, 5, "cells", {"cells": []}, [5], [None]],
            [[], [{"cell_type": "code"}], [{"metadata": 5}], [{**ANSWER_CELL, "source": 5}]]
            + [[{**ANSWER_CELL, "metadata": {"nbgrader": 5}}]],
        ),
        "answer_grade_id": lambda good: ([None, 5, ["x"]], ["", "nonsense"]),
        "answer_cells": lambda good: ([None, "x", [("a",)], [("a", 5)], [["a", "b"]], [5]], [[], [("a", "")], [("a", "def f(): (")]]),
        "typed_exercise": lambda good: (EXERCISE_REFUSE + ["9.2", PREDICT], []),
        "runner_results": lambda good: ([], [None, 5, "why", {}, {"cells": 5}, {"outputs": 5}, {"outputs": [5] * 20, "cells": {"x": 5}},
                                            {"missing": 5}, {"outputs": [{"error": 5}]}, {"outputs": [grading.encode([[1.0]])] * 200}]),
        "runner_folder": lambda good: ([None, 5, "", "/nonexistent/folder", EMPTY_FOLDER, str(BAD_REQUEST_FOLDER)], []),
        "softmax_input": lambda good: (
            [[-np.inf, -np.inf], [np.nan, 1.0], [np.inf, 0.0], [1j, 0.0], ["a", 1], [True, 1.0], [[1, 2], [3]], 5.0, [], None],
            [[0.0], [[1e308, -1e308]], [-np.inf, 0.0], [[0.0, 1.0], [2.0, 3.0]], np.zeros((1, 1, 1, 2))],
        ),
        "softmax_axis": lambda good: ([5, -3, "x", None, 1.5, True], [0, np.int64(-1)]),
        "read_function": lambda good: ([], ODD_READ_FUNCTIONS),
        "function_name": lambda good: ([None, 5, b"x", ["a"]], ["x", "ü" * 300]),
        "runner_namespace": lambda good: ([None, 5, "x", [("np", np)]], [{}, {"np": 5}, {"attnlib": attnlib}]),
        "given_names": lambda good: ([None, 5, "attnlib.softmax", [5]], [[], ["attnlib.softmax"], ("x",)]),
    }
)
ACCEPT["read_function"] = ("[] or one sentence", lambda r: isinstance(r, list) and len(r) <= 1 and all(isinstance(m, str) and m for m in r))

ISSUE46_SPECS = {
    "from_source.typed_answers": (
        from_source.typed_answers,
        {"source": "o_by_hand = [5/8, 3/8]", "names": ["o_by_hand"]},
        {"source": "answer_source", "names": "answer_names"},
    ),
    "from_source.answer_cell_id": (from_source.answer_cell_id, {"test_id": "ch09-ex2-test"}, {"test_id": "test_grade_id"}),
    "from_source.answer_sources": (
        from_source.answer_sources,
        {"cells": [ANSWER_CELL], "answer_id": "ch09-ex2-answer"},
        {"cells": "notebook_cells", "answer_id": "answer_grade_id"},
    ),
    "grading.judge_source": (
        grading.judge_source,
        {"exercise": "9.1", "seed": 3, "source": "masked_row = [0.5, 0.0, 0.5]"},
        {"exercise": "typed_exercise", "seed": "optional_seed", "source": "answer_source"},
    ),
    "grading.runner_request": (
        grading.runner_request,
        {"exercise": "9.2", "seed": 3, "cells": [("ch09-ex2-answer", "x = 1")]},
        {"exercise": "implement_exercise", "seed": "optional_seed", "cells": "answer_cells"},
    ),
    "grading.judge_results": (
        grading.judge_results,
        {"exercise": "9.2", "seed": 3, "results": {"cells": {}, "outputs": []}, "answer_id": "ch09-ex2-answer"},
        {"exercise": "implement_exercise", "seed": "optional_seed", "results": "runner_results", "answer_id": "answer_grade_id"},
    ),
    "runner.run_folder": (runner.run_folder, {"folder": RUNNER_FOLDER}, {"folder": "runner_folder"}),
    "runner.unavailable": (
        runner.unavailable,
        {"fn": lambda n: np.tril(np.ones((n, n), dtype=bool)), "function": "my_causal_mask", "namespace": {"np": np}, "given": ()},
        {"fn": "read_function", "function": "function_name", "namespace": "runner_namespace", "given": "given_names"},
    ),
    "cases.not_in_grader": (
        cases.not_in_grader,
        {"fn": lambda n: np.tril(np.ones((n, n), dtype=bool)), "function": "my_causal_mask", "given": ()},
        {"fn": "read_function", "function": "function_name", "given": "given_names"},
    ),
    "runner.softmax": (runner.softmax, {"x": [[0.0, 1.0]], "axis": -1}, {"x": "softmax_input", "axis": "softmax_axis"}),
}
# ---- end of issue 46 ----

SPECS = {
    "backward.softmax_backward": (
        backward.softmax_backward,
        {"weights": A23, "d_weights": A23 - 0.3},
        {"weights": "matrix", "d_weights": "matrix"},
    ),
    "backward.attention_backward": (
        backward.attention_backward,
        {"Q": X3, "K": X3, "V": X3, "d_output": np.ones((3, 2)), "mask": None, "scale": True},
        {"Q": "matrix", "K": "matrix", "V": "matrix", "d_output": "matrix", "mask": "mask", "scale": "scale"},
    ),
    "backward.attention_backward_from": (
        backward.attention_backward_from,
        {"forward": FORWARD, "d_output": np.ones((3, 2))},
        {"forward": "instance", "d_output": "matrix"},
    ),
    "backward.projection_gradients": (
        backward.projection_gradients,
        {"X_query": X3, "X_memory": X3, "grads": backward.AttentionGradients(np.eye(3, 2), np.eye(3, 2), np.eye(3, 2))},
        {"X_query": "matrix", "X_memory": "matrix", "grads": "grads"},
    ),
    "backward.multi_head_backward_from": (
        backward.multi_head_backward_from,
        {"forward": MH_FORWARD, "X_query": X3, "X_memory": X3, "d_output": np.ones((3, 2))},
        {"forward": "instance", "X_query": "matrix", "X_memory": "matrix", "d_output": "matrix"},
    ),
    "backward.cross_attention_backward": (
        backward.cross_attention_backward,
        {"X_query": X3, "X_memory": X3, "W_Q": I2, "W_K": I2, "W_V": I2, "d_output": np.ones((3, 2)), "mask": None, "scale": True},
        {
            "X_query": "matrix",
            "X_memory": "matrix",
            "W_Q": "matrix",
            "W_K": "matrix",
            "W_V": "matrix",
            "d_output": "matrix",
            "mask": "mask",
            "scale": "scale",
        },
    ),
    "backward.self_attention_backward": (
        backward.self_attention_backward,
        {"X": X3, "W_Q": I2, "W_K": I2, "W_V": I2, "d_output": np.ones((3, 2)), "mask": None, "scale": True},
        {"X": "matrix", "W_Q": "matrix", "W_K": "matrix", "W_V": "matrix", "d_output": "matrix", "mask": "mask", "scale": "scale"},
    ),
    "backward.multi_head_attention_backward": (
        backward.multi_head_attention_backward,
        {
            "X_query": X3,
            "X_memory": X3,
            "W_Q": I2,
            "W_K": I2,
            "W_V": I2,
            "W_O": I2,
            "n_heads": 2,
            "d_output": np.ones((3, 2)),
            "mask": None,
        },
        {
            "X_query": "matrix",
            "X_memory": "matrix",
            "W_Q": "matrix",
            "W_K": "matrix",
            "W_V": "matrix",
            "W_O": "matrix",
            "n_heads": "size",
            "d_output": "matrix",
            "mask": "mask",
        },
    ),
    "backward.score_change": (
        backward.score_change,
        {"X_query": X3, "X_memory": X3, "W_Q": I2, "W_K": I2, "delta_W_Q": I2 / 2, "delta_W_K": -I2, "scale": attnlib.SQRT_D_K},
        {
            "X_query": "matrix",
            "X_memory": "matrix",
            "W_Q": "matrix",
            "W_K": "matrix",
            "delta_W_Q": "matrix",
            "delta_W_K": "matrix",
            "scale": "scale",
        },
    ),
    "backward.central_difference": (
        backward.central_difference,
        {"fn": _square, "x": [[1.0, 2.0]], "eps": 1e-5},
        {"fn": "function", "x": "matrix", "eps": "real"},
    ),
    "backward.relative_error": (
        backward.relative_error,
        {"computed": [1.0, 2.0], "reference": [1.0, 2.5]},
        {"computed": "matrix", "reference": "matrix"},
    ),
    "blocked.online_softmax_step": (
        blocked.online_softmax_step,
        {"m": -np.inf, "l": 0.0, "scores": [0.0, 1.0]},
        {"m": "neg_inf_array", "l": "real", "scores": "neg_inf_array"},
    ),
    "blocked.online_softmax_trace": (
        blocked.online_softmax_trace,
        {"scores": [0.0, 2.0, 1.0], "block_sizes": [1, 2], "values": np.eye(3, 2)},
        {"scores": "neg_inf_array", "block_sizes": "block_sizes", "values": "optional_matrix"},
    ),
    "blocked.block_count": (blocked.block_count, {"n_keys": 5, "block_size": 2}, {"n_keys": "size", "block_size": "size"}),
    "blocked.key_block": (
        blocked.key_block,
        {"n_queries": 5, "n_keys": 5, "block_size": 2, "index": 1, "causal": False},
        {"n_queries": "size", "n_keys": "size", "block_size": "size", "index": "index", "causal": "flag"},
    ),
    "blocked.key_blocks": (
        blocked.key_blocks,
        {"n_queries": 5, "n_keys": 5, "block_size": 2, "causal": True},
        {"n_queries": "size", "n_keys": "size", "block_size": "size", "causal": "flag"},
    ),
    "blocked.chunked_attention": (
        blocked.chunked_attention,
        {"Q": X3, "K": X3, "V": X3, "block_size": 2, "mask": None, "scale": True, "return_lse": False},
        {"Q": "matrix", "K": "matrix", "V": "matrix", "block_size": "size", "mask": "mask", "scale": "scale", "return_lse": "flag"},
    ),
    "blocked.two_block_identity": (blocked.two_block_identity, {"first": 1, "second": 1}, {"first": "size", "second": "size"}),
    # issue 25: the tiled forward and backward (FlashAttention)
    "blocked.flash_attention": (
        blocked.flash_attention,
        {
            "Q": X3,
            "K": X3,
            "V": X3,
            "mask": None,
            "scale": True,
            "return_lse": False,
            "query_tile": 2,
            "key_tile": 2,
            "dtype": "float64",
            "workers": 1,
        },
        {
            "Q": "matrix",
            "K": "matrix",
            "V": "matrix",
            "mask": "mask",
            "scale": "scale",
            "return_lse": "flag",
            "query_tile": "size",
            "key_tile": "size",
            "dtype": "text",
            "workers": "size",
        },
    ),
    "blocked.flash_attention_backward": (
        blocked.flash_attention_backward,
        {
            "Q": X3,
            "K": X3,
            "V": X3,
            "output": FLASH_OUT,
            "lse": FLASH_LSE,
            "d_output": A23.T.copy(),
            "mask": "causal",
            "scale": True,
            "query_tile": 2,
            "key_tile": 1,
            "dtype": "float64",
            "workers": 2,
        },
        {
            "Q": "matrix",
            "K": "matrix",
            "V": "matrix",
            "output": "matrix",
            "lse": "matrix",
            "d_output": "matrix",
            "mask": "mask",
            "scale": "scale",
            "query_tile": "size",
            "key_tile": "size",
            "dtype": "text",
            "workers": "size",
        },
    ),
    "training.previous_token_task": (
        training.previous_token_task,
        {"n_sequences": 2, "length": 3, "n_symbols": 2, "d_pos": 2, "seed": 3},
        {"n_sequences": "size", "length": "size", "n_symbols": "size", "d_pos": "size", "seed": "seed"},
    ),
    "training.two_relation_task": (
        training.two_relation_task,
        {"n_sequences": 2, "length": 3, "n_symbols": 2, "d_pos": 2, "seed": 3},
        {"n_sequences": "size", "length": "size", "n_symbols": "size", "d_pos": "size", "seed": "seed"},
    ),
    "training.mse_loss": (
        training.mse_loss,
        {"output": X3, "target": X3 - 0.5, "weight": np.ones((3, 2))},
        {"output": "matrix", "target": "matrix", "weight": "optional_matrix"},
    ),
    "training.init_params": (
        training.init_params,
        {"shapes": SHAPES, "std": 0.5, "seed": 3},
        {"shapes": "shapes", "std": "real", "seed": "seed"},
    ),
    "training.train": (
        training.train,
        {
            "model": training.AttentionModel(),
            "params": PARAMS,
            "optimizer": training.GradientDescent(0.1),
            "make_batch": _batches,
            "n_steps": 2,
            "probe": PROBE,
            "record_steps": (0, 2),
            "seed": 3,
        },
        {
            "model": "instance",
            "params": "params",
            "optimizer": "instance",
            "make_batch": "function",
            "n_steps": "size",
            "probe": "instance",
            "record_steps": "int_list",
            "seed": "seed",
            "stop_above": "optional_real",
        },
    ),
    "training.relation_mass": (
        training.relation_mass,
        {"weights": W_PROBE, "task": PROBE, "relation": "previous"},
        {"weights": "matrix", "task": "instance", "relation": "text"},
    ),
    "training.head_roles": (
        training.head_roles,
        {"weights": W_PROBE, "task": PROBE, "threshold": 0.5},
        {"weights": "matrix", "task": "instance", "threshold": "real"},
    ),
    "training.saturation": (training.saturation, {"weights": W_PROBE}, {"weights": "matrix"}),
    "explorers.kinds.training.recorded_steps": (  # the training explorer's data
        recorded_steps,
        {"run": RUN, "probe": PROBE, "sequence": 1, "head": 0},
        {"run": "instance", "probe": "instance", "sequence": "index", "head": "index"},
    ),
    "training.AttentionModel": (training.AttentionModel, {"n_heads": 2, "scale": True}, {"n_heads": "optional_size", "scale": "scale"}),
    "training.AttentionModel.forward": (
        lambda params, task: training.AttentionModel().forward(params, task),
        {"params": PARAMS, "task": PROBE},
        {"params": "params", "task": "instance"},
    ),
    "training.AttentionModel.loss_and_gradients": (
        lambda params, task: training.AttentionModel().loss_and_gradients(params, task),
        {"params": PARAMS, "task": PROBE},
        {"params": "params", "task": "instance"},
    ),
    "training.GradientDescent": (training.GradientDescent, {"lr": 0.1}, {"lr": "real", "lr_factors": "factors"}),
    "training.GradientDescent.step": (
        lambda params, grads: training.GradientDescent(0.1).step(params, grads),
        {"params": PARAMS, "grads": GRADS},
        {"params": "params", "grads": "params"},
    ),
    "training.Adam": (
        training.Adam,
        {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "t": 0, "m": {}, "v": {}},
        {"lr": "real", "beta1": "real", "beta2": "real", "eps": "real", "t": "index", "m": "dict", "v": "dict"},
    ),
    "training.Adam.step": (
        lambda params, grads: training.Adam(0.1).step(params, grads),
        {"params": PARAMS, "grads": GRADS},
        {"params": "params", "grads": "params"},
    ),
    "measure.PowerLawFit": (measure.PowerLawFit, {"exponent": 2.5, "prefactor": 1.0}, {"exponent": "real", "prefactor": "real"}),
    "measure.PowerLawFit.predict": (lambda n: measure.PowerLawFit(2.5, 1.0).predict(n), {"n": [1.0, 10.0]}, {"n": "matrix"}),
    "measure.fit_power_law": (measure.fit_power_law, {"n": [1.0, 2.0, 4.0], "y": [1.0, 4.0, 16.0]}, {"n": "matrix", "y": "matrix"}),
    "measure.cache_sizes": (measure.cache_sizes, {"root": measure.CPU_CACHE_DIR}, {"root": "text"}),
    "measure.peak_memory_bytes": (
        measure.peak_memory_bytes,
        {"fn": len, "args": ([1, 2],), "kwargs": {}},
        {"fn": "function", "args": "any", "kwargs": "any"},
    ),
    "measure.median_seconds": (
        measure.median_seconds,
        {"fn": len, "args": ([1, 2],), "repeats": 2, "clock": "cpu", "kwargs": {}},
        {"fn": "function", "args": "any", "repeats": "size", "clock": "text", "kwargs": "any"},
    ),
    "measure.measure_attention": (
        measure.measure_attention,
        {"lengths": [8], "d_k": 2, "block_size": 4, "repeats": 1, "seed": 3, "clock": "cpu", "blas_threads": None},
        {
            "lengths": "int_list",
            "d_k": "size",
            "block_size": "size",
            "repeats": "size",
            "seed": "seed",
            "clock": "text",
            "blas_threads": "optional_size",
        },
    ),
    "explorers.matrix_html": (
        snapshot.matrix_html,
        {"matrix": [[0.5, -np.inf]], "row_labels": ["a"], "col_labels": ["b", "c"], "title": "t", "name": "m", "row_sums": False},
        {"matrix": "matrix", "row_labels": "labels", "col_labels": "labels", "title": "text", "name": "text", "row_sums": "flag"},
    ),
    "explorers.reference_views": (reference_views, {"state": STATE}, {"state": "state"}),
    "explorers.attention_explorer": (
        explorers.attention_explorer,
        {"X": X3, "tokens": ["a", "b", "c"]},
        {"X": "optional_matrix", "tokens": "optional_labels"},
    ),
    **{
        f"explorers.{name}": (getattr(explorers, name), {}, {})
        # every factory but attention_explorer takes no argument (a new parameter fails the entry test below)
        for name in explorers.__all__
        if name.endswith("_explorer") and name not in ("attention_explorer", "induction_explorer")
    },
    # --- issue 26: attnlib.transformer ---
    "transformer.layer_norm": (
        transformer.layer_norm,
        TF_LN,
        {"X": "matrix", "gamma": "matrix", "beta": "matrix", "eps": "real"},
    ),
    "transformer.layer_norm_backward": (
        transformer.layer_norm_backward,
        {"X": X3, "gamma": [1.0, 2.0], "d_output": np.ones((3, 2)) - X3, "eps": 1e-5},
        {"X": "matrix", "gamma": "matrix", "d_output": "matrix", "eps": "real"},
    ),
    "transformer.abs_attention_weights": (transformer.abs_attention_weights, {"kappa": 10.0}, {"kappa": "real"}),
    "transformer.abs_by_attention": (
        transformer.abs_by_attention,
        {"x": np.array([-1.0, 0.0, 0.5]), "kappa": 10.0},
        {"x": "matrix", "kappa": "real"},
    ),
    "transformer.gelu": (transformer.gelu, {"x": X3 - 0.5}, {"x": "matrix"}),
    "transformer.mlp": (
        transformer.mlp,
        {"X": X3, "W_1": np.ones((2, 3)), "b_1": np.zeros(3), "W_2": np.ones((3, 2)), "b_2": np.zeros(2), "activation": "relu"},
        {"X": "matrix", "W_1": "matrix", "b_1": "matrix", "W_2": "matrix", "b_2": "matrix", "activation": "text"},
    ),
    "transformer.init_encoder_params": (
        transformer.init_encoder_params,
        {"d_model": 2, "d_ff": 3, "seed": 3},
        {"d_model": "size", "d_ff": "size", "seed": "seed"},
    ),
    "transformer.params_from_torch": (transformer.params_from_torch, {"state_dict": TF_TORCH}, {"state_dict": "tf_state"}),
    "transformer.head_blocks": (
        transformer.head_blocks,
        {"params": TF_PARAMS, "n_heads": 2},
        {"params": "tf_params", "n_heads": "size"},
    ),
    **{
        f"transformer.{name}": (
            getattr(transformer, name),
            {"X": TF_X, "params": TF_PARAMS, "n_heads": 2, **TF_GOOD_OPTIONS},
            {"X": "matrix", "params": "tf_params", "n_heads": "size", **TF_OPTIONS},
        )
        for name in ("encoder_layer", "encoder_layer_parts")
    },
    "transformer.encoder_layer_backward": (
        transformer.encoder_layer_backward,
        {"X": TF_X, "params": TF_PARAMS, "n_heads": 2, "d_output": np.ones((3, 2)) - X3, **TF_GOOD_OPTIONS},
        {"X": "matrix", "params": "tf_params", "n_heads": "size", "d_output": "matrix", **TF_OPTIONS},
    ),
    "transformer.encoder_stack": (
        transformer.encoder_stack,
        {"X": TF_X, "layers": [TF_PARAMS, TF_PARAMS], "n_heads": 2, **TF_GOOD_OPTIONS},
        {"X": "matrix", "layers": "tf_layers", "n_heads": "size", **TF_OPTIONS},
    ),
    "transformer.encoder_stack_backward": (
        transformer.encoder_stack_backward,
        {"X": TF_X, "layers": [TF_PARAMS, TF_PARAMS], "n_heads": 2, "d_output": np.ones((3, 2)) - X3, **TF_GOOD_OPTIONS},
        {"X": "matrix", "layers": "tf_layers", "n_heads": "size", "d_output": "matrix", **TF_OPTIONS},
    ),
    "transformer.encoder_layer_cost": (
        transformer.encoder_layer_cost,
        {"n": 3, "d_model": 4, "n_heads": 2, "d_ff": 8},
        {"n": "size", "d_model": "size", "n_heads": "size", "d_ff": "size"},
    ),
    # --- end of issue 26 ---
    **INDUCTION_SPECS,
    **ISSUE47_SPECS,
    **HOMEWORK_SPECS,
    **HOMEWORK_CHECKS_SPECS,
    **ISSUE46_SPECS,
}

#: Positional-only helpers of the measuring functions: the call's own arguments, passed on unchanged.
VARIADIC = {"args", "kwargs"}
#: Kinds where a text of "nonsense" is a valid value (labels and titles are any text).
TEXT_ANY = {
    ("explorers.matrix_html", "title"),
    ("explorers.matrix_html", "name"),
    ("induction.letters_to_tokens", "text"),
    ("induction.words_to_tokens", "text"),
    ("measure.cache_sizes", "root"),  # any text is a path; one that names no cache directory gives []
    ("explorers.AttentionExplorer", "title"),
    ("explorers.InductionExplorer", "text"),
}


def _takes_star_args(fn) -> bool:
    try:
        return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False


def _call(fn, kwargs):
    if "args" not in kwargs or not _takes_star_args(fn):  # (call_student's args is a tuple it is given, not *args)
        return fn(**kwargs)
    # fn(first, *args, **kwargs): the measured function first, then its own arguments
    rest = {k: v for k, v in kwargs.items() if k not in VARIADIC and k != "fn"}
    rest.update(kwargs.get("kwargs", {}))
    return fn(kwargs["fn"], *kwargs["args"], **rest)


def _floats(result, depth=0):
    """Every float array or number inside a result (arrays, numbers, tuples, lists, dicts, dataclasses)."""
    if depth > 6:
        return
    if isinstance(result, (np.ndarray, float, np.floating, complex, np.complexfloating)):
        arr = np.asarray(result)
        if arr.dtype.kind in "fc":
            yield arr
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        for f in dataclasses.fields(result):
            if f.name == "final_loss" and getattr(result, "diverged", False):
                continue  # the README's one stated exception: a stopped run's final loss is inf
            yield from _floats(getattr(result, f.name), depth + 1)
    elif isinstance(result, dict):
        for v in result.values():
            yield from _floats(v, depth + 1)
    elif isinstance(result, (tuple, list)):
        for v in result:
            yield from _floats(v, depth + 1)


def _fingerprint(result):
    return [a.tolist() for a in _floats(result)] + ([result] if isinstance(result, (int, str)) else [])


def _finite_arg(value) -> bool:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(np.isfinite(arr).all())


def _copies(kwargs):
    return {
        k: (v.copy(), np.ma.getmaskarray(v).copy() if isinstance(v, np.ma.MaskedArray) else None)
        for k, v in kwargs.items()
        if isinstance(v, np.ndarray)
    }


def _named(text: str, names) -> list[str]:
    return [k for k in names if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", text)]


def judge(label, fn, kwargs, replaced=None, must_refuse=False, neg_inf_ok=False, accept=None):
    """Call once and check the README's promises; return the result (None when refused).

    ``accept`` (an entry of ``ACCEPT``): the value came from a student, so it must not be refused and the
    result must be the documented verdict.
    """
    RUNS[label] += 1
    before = _copies(kwargs)
    where = f"{label}({replaced}={kwargs.get(replaced)!r:.80})" if replaced else label
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            result = _call(fn, kwargs)
        except ValueError as exc:
            text = str(exc)
            assert accept is None, f"{where}: a student's value must give {accept[0]}, not a ValueError: {text}"
            assert text and not any(w in text for w in INTERNAL_WORDS), f"{where}: internal error text: {text}"
            if must_refuse:
                assert _named(text, [replaced]), f"{where}: refused without naming {replaced}: {text}"
            else:
                assert _named(text, list(kwargs) + ["step"]), f"{where}: refused without naming an argument: {text}"
            blamed = re.match(r"^([A-Za-z_][\w.]*) \(shape [^)]*\) contains (NaN|inf|-inf)", text)
            if blamed and blamed.group(1) in kwargs:
                assert not _finite_arg(kwargs[blamed.group(1)]), f"{where}: blames the finite argument {blamed.group(1)}: {text}"
            result = None
        except Exception as exc:  # noqa: BLE001 - any other exception breaks the promise
            pytest.fail(f"{where} raised {type(exc).__name__}: {exc}")
    if must_refuse:
        assert result is None, f"{where}: accepted an odd value, returned {result!r:.200}"
    if accept is not None:
        assert accept[1](result), f"{where}: gave {result!r:.200}, not {accept[0]}"
    for arr in _floats(result):
        assert not np.iscomplexobj(arr), f"{where}: complex result"
        ok = np.isfinite(arr) | (np.isneginf(arr) if neg_inf_ok else False)
        assert ok.all(), f"{where}: non-finite result {arr}"
    for k, (copy, mask) in before.items():
        now = np.asarray(kwargs[k])
        assert np.array_equal(now, np.asarray(copy), equal_nan=now.dtype.kind in "fc"), f"{where}: changed its input {k}"
        if mask is not None:
            assert np.array_equal(np.ma.getmaskarray(kwargs[k]), mask), f"{where}: changed the mask of {k}"
    return result


@pytest.fixture(autouse=True)
def small_memory(monkeypatch):
    """The suite must not allocate gigabytes on a shared machine: pretend it has 128 MiB."""
    monkeypatch.setattr(_memory, "MAX_ARRAY_BYTES", 2**27)


@pytest.mark.parametrize("label", sorted(SPECS))
def test_every_argument_gets_the_odd_values_of_its_kind(label):
    fn, good, kinds = SPECS[label]
    neg_inf_ok = label in (
        "explorers.reference_views",
        "blocked.online_softmax_step",
        "blocked.online_softmax_trace",
        "explorers.matrix_html",
        "transformer.encoder_layer_parts",  # its heads' AttentionResult holds -inf at masked scores, as core's does
        "induction.InductionModel.forward",  # the masked scores of its layers are -inf (AttentionResult.scaled)
        "induction.InductionModel.loss_and_gradients",
    )
    reference = judge(label, fn, dict(good), neg_inf_ok=neg_inf_ok)
    assert reference is not None, f"{label}: the good call was refused"
    for arg, kind in kinds.items():
        refuse, allow = ODD[kind](good.get(arg))
        if (label, arg) in TEXT_ANY:
            refuse, allow = [v for v in refuse if not isinstance(v, str)], allow + ["nonsense"]
        for value in refuse:
            judge(label, fn, {**good, arg: value}, arg, must_refuse=True, neg_inf_ok=neg_inf_ok)
        for value in allow:
            judge(label, fn, {**good, arg: value}, arg, neg_inf_ok=neg_inf_ok, accept=ACCEPT.get(kind))
        for value in EQUIVALENT.get(kind, lambda v: [])(good.get(arg)):
            got = judge(label, fn, {**good, arg: value}, arg, neg_inf_ok=neg_inf_ok)
            assert _fingerprint(got) == _fingerprint(reference) or label.startswith("measure."), (
                f"{label}: {arg}={value!r} is not the same as {good[arg]!r}"
            )


def test_every_argument_of_an_entry_has_a_kind():
    """Every parameter of every entry's callable gets odd values (a new parameter without a kind fails here);
    that every public callable has an entry somewhere is tests/unit/test_edges_guard.py's test."""
    unlisted = []
    for label, (fn, _good, kinds) in SPECS.items():
        target = resolve(label.split(" (")[0]) if label.count(".") >= 2 else fn
        target = fn if target is None or not callable(target) else target
        params = [p for p in inspect.signature(target).parameters if p != "self"]
        unlisted += [f"{label}({p})" for p in params if p not in kinds]
    assert not unlisted, f"give these arguments a kind in SPECS: {unlisted}"


def test_the_register_entry_leaves_the_registry_as_it_was():
    """Every odd entry (and the good one) passes through register and is taken out again."""
    before, runs = list(registry.EXERCISES.items()), RUNS["registry.register"]
    test_every_argument_gets_the_odd_values_of_its_kind("registry.register")
    RUNS["registry.register"] = runs  # counted once, by the parametrized test
    assert list(registry.EXERCISES.items()) == before and "99.1" not in registry.EXERCISES


def test_write_the_case_counts():
    """Runs last in this file: the number of calls per function, next to the main edge suite's record."""
    out = ARTIFACTS
    out.mkdir(exist_ok=True)
    (out / "edge-cases-modules.json").write_text(json.dumps(dict(sorted(RUNS.items())), indent=1))
    assert sum(RUNS.values()) > 0
