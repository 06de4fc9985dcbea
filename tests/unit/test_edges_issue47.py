"""Every class of issue 47, one test each: the math and explorer modules, and the homework wing (checks, exercises,
variants: classes 11-13 and 16-19).

Each failed on ``d4104af``: a list mixing booleans and numbers taken as numbers, an ``inf`` or a NaN returned,
numpy's or Python's own error (``OverflowError``, ``TypeError``, ``TraitError``, ``AttributeError``) or a numpy
warning reaching the caller, an internal array named in an error, or a value stored unchecked.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from support.errors import raises

from attnlib import blocked, checks, exact, experiments, explorers, induction, measure, transformer, variants
from attnlib.core import attention
from attnlib.variants import Variant

X3 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])


def quiet_call(call):
    """``call()`` with every warning an error (numpy's warnings must not reach the caller)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


# --- 1: a list mixing booleans and numbers is not numbers ------------------------------------------------

BOOL_MIXED = [[True, 0.5], [0, 1], [1, 0.5]]
TF_PARAMS = transformer.init_encoder_params(2, 3, seed=0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: blocked.flash_attention(BOOL_MIXED, X3, X3), "Q"),
        (lambda: blocked.chunked_attention(X3, BOOL_MIXED, X3), "K"),
        (lambda: attention(X3, X3, BOOL_MIXED), "V"),
        (lambda: transformer.encoder_layer(BOOL_MIXED, TF_PARAMS, 2), "X"),
        (lambda: transformer.encoder_layer(X3, {**TF_PARAMS, "b_1": [True, 0.0, 1.0]}, 2), "b_1"),
        (lambda: transformer.gelu([[0.5, False]]), "x"),
        (lambda: measure.fit_power_law([True, 2, 4], [1.0, 2.0, 3.0]), "n"),
        (lambda: measure.fit_power_law([1, 2, 4], (1, np.True_, 3)), "y"),
        (lambda: measure.fit_power_law([1, 2, 4], [np.array(True), 2.0, 3.0]), "y"),
    ],
    ids=["flash-Q", "chunked-K", "attention-V", "encoder-X", "encoder-b_1", "gelu-x", "fit-n", "fit-y-numpy-bool", "fit-y-0d-bool"],
)
def test_class_1_lists_mixing_booleans_and_numbers_are_refused(call, name):
    raises(call, name, "booleans")


# --- 2: the encoder backward checks every gradient ---------------------------------------------------------


def _dead_mlp_params():
    p = transformer.init_encoder_params(4, 4, seed=0)
    for k in ("W_2", "W_V", "W_O"):
        p[k] = np.zeros_like(p[k])
    p["b_1"] = np.full_like(p["b_1"], -100.0)
    return p


@pytest.mark.parametrize("stack", [False, True], ids=["layer", "stack"])
def test_class_2_an_overflowing_bias_gradient_is_an_overflow_error(stack):
    p, dy = _dead_mlp_params(), np.full((3, 4), 1e308)
    if stack:
        call = lambda: transformer.encoder_stack_backward(np.eye(4)[:3], [p], 2, dy, norm_first=True)  # noqa: E731
    else:
        call = lambda: transformer.encoder_layer_backward(np.eye(4)[:3], p, 2, dy, norm_first=True)  # noqa: E731
    raises(call, "overflowed", "d_output")


# --- 3 and 4: cross_entropy's loss and its targets -----------------------------------------------------------


def test_class_3_an_overflowing_loss_is_an_overflow_error():
    raises(lambda: induction.cross_entropy([[1e308, -1e308]], [1]), "overflowed", "logits")


@pytest.mark.parametrize("dtype", [np.uint64, np.uint32, np.int64])
def test_class_4_unsigned_target_ids_do_not_wrap_to_no_target(dtype):
    big = np.array([np.iinfo(dtype).max], dtype)
    raises(lambda: induction.cross_entropy([[0.0, 1.0]], big), "targets")
    loss, _ = induction.cross_entropy([[0.0, 1.0]], np.array([1], dtype))
    assert loss.tolist() == pytest.approx([math.log1p(math.exp(-1.0))])


# --- 5: an overflow in the induction backward names the caller's inputs ---------------------------------------


def test_class_5_an_overflow_in_the_induction_backward_names_params_not_an_internal_array():
    m = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
    p = m.init(0)
    p["W_O2"], p["W_V2"], p["W_U"] = p["W_O2"] * 1e300, p["W_V2"] * 1e-300, p["W_U"] * 1e10
    text = raises(lambda: m.loss_and_gradients(p, induction.token_batch([[1, 2, 3]], 5)), "overflowed", "params")
    assert "d_output" not in text and "contains" not in text, text


# --- 6: ablating a head twice is ablating it ------------------------------------------------------------------


def test_class_6_a_repeated_ablation_counts_once():
    m = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
    p, batch = m.init(0), induction.repeated_tokens(2, 5, 2, seed=1)
    once = m.forward(p, batch, ablate=[(2, 1)])
    twice = m.forward(p, batch, ablate=[(2, 1), (2, 1)])
    assert np.array_equal(once.logits, twice.logits) and twice.ablated == once.ablated == ((2, 1),)
    assert induction.half_losses(m, p, batch, [(2, 1), (2, 1)])[1] == induction.half_losses(m, p, batch, [(2, 1)])[1]


# --- 7: the tiled backward refuses a row that may attend to nothing, as the forward does ------------------------


@pytest.mark.parametrize("tiles", [(1, 1), (2, 2), (3, 3)])
def test_class_7_a_mask_function_with_an_empty_row_is_refused_by_the_backward(tiles):
    pat = np.array([[False, False, False], [True, True, False], [True, True, True]])
    forward = raises(lambda: blocked.flash_attention(X3, X3, X3, mask=lambda i, j: pat[i, j]), "mask", "query row 0")
    out, lse = blocked.flash_attention(X3, X3, X3, return_lse=True)
    qt, kt = tiles
    dO = np.ones((3, 2))
    backward = raises(
        lambda: blocked.flash_attention_backward(X3, X3, X3, out, lse, dO, mask=lambda i, j: pat[i, j], query_tile=qt, key_tile=kt),
        "mask",
        "query row 0",
    )
    assert backward == forward


# --- 8: the tiled forward does not overflow where attention does not ---------------------------------------


def test_class_8_a_tiny_scale_gives_what_attention_gives():
    Q, K, V = [[1e10]], [[1e-300]], [[1.0]]
    want = attention(Q, K, V, scale=1e-300).output
    assert want.tolist() == [[1.0]]
    assert blocked.chunked_attention(Q, K, V, scale=1e-300).tolist() == [[1.0]]
    assert quiet_call(lambda: blocked.flash_attention(Q, K, V, scale=1e-300)).tolist() == [[1.0]]
    out, lse = blocked.flash_attention(Q, K, V, scale=1e-300, return_lse=True)
    g = quiet_call(lambda: blocked.flash_attention_backward(Q, K, V, out, lse, [[1.0]], scale=1e-300))
    assert all(np.isfinite(a).all() for a in g)


# --- 9: no numpy warning escapes --------------------------------------------------------------------------


def test_class_9_an_lse_beyond_float32_is_refused_without_a_warning():
    out, lse = blocked.flash_attention(X3, X3, X3, return_lse=True)
    raises(lambda: blocked.flash_attention_backward(X3, X3, X3, out, np.full(3, 1e300), np.ones((3, 2)), dtype="float32"), "lse")


def test_class_9_a_power_law_whose_prefactor_overflows_is_refused_without_a_warning():
    raises(lambda: measure.fit_power_law([1e-10, 1e-5], [1e-300, 1e300]), "overflowed", "n and y")


# --- 10: pair_rotation_fit and feature_shares check their inputs ---------------------------------------------

ODD_BLOCKS = {
    "strings": [["1", "0"], ["0", "1"]],
    "booleans": [[True, False], [False, True]],
    "complex": np.eye(2) + 0j,
    "masked": np.ma.array(np.eye(2), mask=[[True, False], [False, False]]),
    "nan": [[np.nan, 0.0], [0.0, 1.0]],
    "None": None,
}


@pytest.mark.parametrize("kind", sorted(ODD_BLOCKS))
def test_class_10_pair_rotation_fit_refuses_what_is_not_a_real_matrix(kind):
    raises(lambda: experiments.pair_rotation_fit(ODD_BLOCKS[kind]), "block")


def test_class_10_pair_rotation_fit_of_huge_entries_is_finite():
    c, angle, residual = quiet_call(lambda: experiments.pair_rotation_fit([[1e308, 0.0], [0.0, 1e308]]))
    assert (c, angle, residual) == (1e308, 0.0, 0.0)
    c, angle, residual = quiet_call(lambda: experiments.pair_rotation_fit([[1e308, 1e308], [-1e308, 1e308]]))
    assert (c, angle, residual) == (math.hypot(1e308, 1e308), math.pi / 4, 0.0)
    raises(lambda: experiments.pair_rotation_fit([[1.7e308, 1.7e308], [-1.7e308, 1.7e308]]), "overflowed", "block")


@pytest.mark.parametrize(
    "W, features, name",
    [
        ([[np.nan], [1.0]], ["n0", "p0"], "W"),
        ([[True], [False]], ["n0", "p0"], "W"),
        ([["1"], ["0"]], ["n0", "p0"], "W"),
        (np.ma.array([[1.0], [0.0]], mask=[[True], [False]]), ["n0", "p0"], "W"),
        ([[1.0], [1.0]], "n0", "features"),
        ([[1.0], [1.0]], ["n0", 5], "features"),
        ([[1.0], [1.0]], None, "features"),
    ],
    ids=["nan", "bool", "str", "masked", "features-str", "features-int", "features-None"],
)
def test_class_10_feature_shares_checks_W_and_features(W, features, name):
    raises(lambda: experiments.feature_shares(W, features), name)


def test_class_10_feature_shares_checks_groups_and_stays_finite():
    raises(lambda: experiments.feature_shares([[1.0], [1.0]], ["n0", "p0"], {"a": 5}), "groups")
    raises(lambda: experiments.feature_shares([[1.0], [1.0]], ["n0", "p0"], [("a", ("n",))]), "groups")
    shares = quiet_call(lambda: experiments.feature_shares([[1e300], [1e300]], ["n0", "p0"]))
    assert shares["name"] == shares["payload"] == 0.5


# --- 11: huge ints and None are named errors, not OverflowError or TypeError ----------------------------------


def test_class_11_scaling_equivalence_of_a_huge_d_k():
    eq = quiet_call(lambda: experiments.scaling_equivalence(10**30))
    assert math.isclose(eq.qk_lr_factor, 1e15) and math.isclose(eq.qk_init_factor, 10**7.5)
    raises(lambda: experiments.scaling_equivalence(10**400), "d_k")


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: induction.token_batch([[0, 1, 0, 1]], 3, halves=[10**30]), "halves"),
        (lambda: induction.token_batch([[0, 1, 0, 1]], 3, halves=[2**64]), "halves"),
        (lambda: induction.cross_entropy(np.zeros((1, 3)), targets=[10**20]), "targets"),
        (lambda: induction.cross_entropy(np.zeros((1, 3)), targets=[-(10**20)]), "targets"),
        (lambda: experiments.head_count_runs(None, 1), "seeds"),
        (lambda: experiments.head_count_runs([0], None), "n_heads"),
        (lambda: experiments.head_count_runs([0], 1, std=None), "std"),
        (lambda: experiments.head_count_runs([0], 1, n_steps=10**30), "n_steps"),
        (lambda: experiments.head_count_runs([0], 1, lr="0.1"), "lr"),
        (lambda: experiments.head_count_runs([0], 1, record_steps=None), "record_steps"),
    ],
    ids=["halves-1e30", "halves-2**64", "targets-1e20", "targets-minus-1e20", "seeds-None", "n_heads-None", "std-None",
         "n_steps-huge", "lr-str", "record_steps-None"],  # fmt: skip
)
def test_class_11_huge_ints_and_none_are_named(call, name):
    raises(call, name)


@pytest.mark.parametrize(
    "exercise, inputs, name",
    [
        ("13.1", {"n": 10**400}, "v.inputs['n']"),
        ("15.1", {"n": 10**400, "heads": 32, "dtype": "bfloat16"}, "v.inputs['n']"),
        ("15.1", {"n": 2048, "heads": 10**400, "dtype": "bfloat16"}, "v.inputs['heads']"),
        ("5.1", {"d_k": 10**400}, "v.inputs['d_k']"),
        ("13.1", {"n": 2**53 + 1}, "v.inputs['n']"),
    ],
    ids=["13.1-n", "15.1-n", "15.1-heads", "5.1-d_k", "13.1-beyond-2**53"],
)
def test_class_11_answers_of_a_variant_holding_a_huge_int_name_the_input(exercise, inputs, name):
    raises(lambda: variants.answers(Variant(exercise, None, inputs)), name)
    raises(lambda: variants.check_well_posed(Variant(exercise, None, inputs)), name)


# --- 12: an out-of-range parameter is refused by name before anything is computed ------------------------------


@pytest.mark.parametrize("budget_log2", [10**20, 2**40, 1025, -4, 2.0**70], ids=repr)
def test_class_12_a_budget_out_of_range_is_refused_fast(budget_log2):
    import time

    start = time.perf_counter()
    raises(lambda: variants.answers(Variant("13.2", None, {"budget_log2": budget_log2})), "v.inputs['budget_log2']")
    assert time.perf_counter() - start < 1.0
    assert variants.answers(Variant("13.2", None, {"budget_log2": 1024})) == {"n_for_budget": 2**511}


# --- 13: a variant holding NaN or an infinity has no answer ----------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=repr)
@pytest.mark.parametrize(
    "exercise, name",
    [("1.1", "X"), ("2.1", "W_Q"), ("4.1", "weights"), ("4.1", "V"), ("12.1", "values")],
    ids=["1.1-X", "2.1-W_Q", "4.1-weights", "4.1-V", "12.1-values"],
)
def test_class_13_answers_of_a_variant_holding_nan_or_inf_name_the_input(exercise, name, bad):
    book = variants.variant(exercise).inputs
    odd = np.array(book[name], dtype=float)
    odd.flat[0] = bad
    words = ("v", "finite") if bad == -math.inf else (f"v.inputs[{name!r}]", "finite")  # -inf may be a masked score
    text = raises(lambda: variants.answers(Variant(exercise, None, {**book, name: odd})), *words)
    assert text.startswith(("v.", "v:", "v ")), text


def test_class_13_an_overflowing_answer_is_refused_naming_v():
    book = variants.variant("4.1").inputs
    raises(lambda: variants.answers(Variant("4.1", None, {**book, "V": np.full((3, 2), 1e308)})), "v:", "not finite")


# --- 14: the explorers' seed keywords follow the one seed rule ------------------------------------------------

SEEDED_EXPLORERS = {
    "attention": lambda seed: explorers.AttentionExplorer(seed=seed),
    "head_count": lambda seed: explorers.HeadCountExplorer(seed=seed),
    "scaling": lambda seed: explorers.ScalingExplorer(seed=seed),
    "training": lambda seed: explorers.TrainingExplorer(seed=seed),
}


@pytest.mark.parametrize("kind", sorted(SEEDED_EXPLORERS))
@pytest.mark.parametrize("seed", ["3", True, np.True_, None, -1, 2.5, math.nan, [1], 0j, {}], ids=repr)
def test_class_14_explorer_seeds_follow_the_seed_rule(kind, seed):
    raises(lambda: SEEDED_EXPLORERS[kind](seed), "seed")


@pytest.mark.parametrize("kind", sorted(SEEDED_EXPLORERS))
def test_class_14_a_whole_float_seed_is_the_seed(kind):
    make = SEEDED_EXPLORERS[kind]
    assert make(0.0).state_dict() == make(0).state_dict() == make(np.int64(0)).state_dict()
    raises(lambda: make(0j), "seed")  # after 0.0 was used (a cache keyed by equality would take 0j for 0.0)


# --- 15: the explorers' constructor keywords are checked --------------------------------------------------------


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: explorers.AttentionExplorer(title=None), "title"),
        (lambda: explorers.AttentionExplorer(title=b"x"), "title"),
        (lambda: explorers.AttentionExplorer(title=5), "title"),
        (lambda: explorers.AttentionExplorer(controls=None), "controls"),
        (lambda: explorers.AttentionExplorer(controls="W_Q"), "controls"),
        (lambda: explorers.AttentionExplorer(views=None), "views"),
        (lambda: explorers.AttentionExplorer(views=5), "views"),
        (lambda: explorers.AttentionExplorer(controls=[["W_Q"]]), "controls"),
        (lambda: explorers.InductionExplorer(None, "model"), "model"),
        (lambda: explorers.InductionExplorer("params"), "params"),
        (lambda: explorers.InductionExplorer(text=None), "text"),
        (lambda: explorers.InductionExplorer(mode=None), "mode"),
    ],
    ids=["title-None", "title-bytes", "title-int", "controls-None", "controls-str", "views-None", "views-int", "controls-nested",
         "model-str", "params-str", "text-None", "mode-None"],  # fmt: skip
)
def test_class_15_constructor_keywords_are_checked(call, name):
    text = raises(call, name)
    assert text.startswith(name), text


# --- 16: verbose is a flag --------------------------------------------------------------------------------------


@pytest.mark.parametrize("verbose", ["no", 1, 0, None, [True], np.float64(1.0)], ids=repr)
@pytest.mark.parametrize(
    "call",
    [
        lambda verbose: checks.check_by_hand("4.1", {"o_by_hand": [0.625, 0.375]}, verbose=verbose),
        lambda verbose: checks.check_softmax(lambda x: x, verbose=verbose),
        lambda verbose: checks.check_causal_mask(lambda n: n, verbose=verbose),
    ],
    ids=["check_by_hand", "check_softmax", "check_causal_mask"],
)
def test_class_16_verbose_must_be_a_flag(call, verbose, capsys):
    raises(lambda: call(verbose), "verbose")
    assert capsys.readouterr().out == ""
    assert call(np.False_).n_cases > 0 and capsys.readouterr().out == ""


def test_class_16_answers_that_are_not_a_mapping_are_a_value_error():
    raises(lambda: checks.check_by_hand("4.1", [0.625, 0.375], verbose=False), "answers")


# --- 17: booleans never agree with numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [[0.5875, False, 0.4125], (0.5875, np.False_, 0.4125), [[0.5875], [False], [0.4125]], [0.5875, np.array(False), 0.4125]],
    ids=["list", "tuple-numpy-bool", "nested", "0d-bool-array"],
)
def test_class_17_a_list_holding_a_boolean_does_not_agree(given):
    expected = [0.5875, 0.0, 0.4125] if not isinstance(given[1], list) else [[0.5875], [0.0], [0.4125]]
    assert variants.agrees(given, expected) is False
    assert variants.agrees(np.array(expected), expected) is True


# --- 18: text UTF-8 cannot encode is refused by name ---------------------------------------------------------------


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: variants.student_seed("s\ud800", "ch06", key="k"), "student_id"),
        (lambda: variants.student_seed("s001", "ch\udfff", key="k"), "assignment"),
        (lambda: variants.student_seed("s001", "ch06", key="\ud800"), "key"),
        (lambda: variants.route_key("\ud800", "ch06", "files"), "secret"),
        (lambda: variants.route_key("secret", "ch\ud800", "files"), "assignment"),
    ],
    ids=["student_id", "assignment", "key", "secret", "route-assignment"],
)
def test_class_18_a_lone_surrogate_is_refused_by_name(call, name):
    text = raises(call, name, "UTF-8")
    assert text.startswith(name), text


# --- 19: answers are rounded to four decimals, as documented --------------------------------------------------------


def test_class_19_answers_are_rounded_to_four_decimals():
    assert variants.answers(variants.variant("17.1")) == {"prefix_score": 0.7}
    v = Variant("15.1", None, {"n": 2048, "heads": 12, "dtype": "float16"})
    assert variants.answers(v) == {"layer_bytes": 12 * 2 * 2048**2, "layer_gib": 0.0938}  # 0.09375 GiB
    for number, entry in variants.EXERCISES.items():
        if entry.answer is None:
            continue
        for seed in (None, 1, 2):
            for value in variants.answers(variants.variant(number, seed)).values():
                flat = np.ravel(value).tolist()
                assert all(isinstance(x, int) or x == round(x, variants.DECIMALS) for x in flat), (number, seed, value)


# --- 19: exact_number of a numpy float is the decimal it shows ---------------------------------------------------


@pytest.mark.parametrize("value", [np.float32(0.1), np.float16(0.1), np.float64(0.1), 0.1])
def test_class_19_exact_number_of_a_numpy_float_is_the_decimal_it_shows(value):
    assert exact.exact_number("x", value) == sp.Rational(1, 10)


def test_class_19_exact_number_keeps_large_and_small_floats():
    assert exact.exact_number("x", np.float32(3e38)) == sp.Integer(3) * 10**38
    assert exact.exact_number("x", np.float32(1e-45)) == sp.Rational(1, 10**45)


# --- 20: the page cannot replace the explorer's module or any other trait that is not a setting -------------------


@pytest.mark.parametrize("name", ["_esm", "_css", "_anywidget_id", "layout", "tooltip", "_dom_classes", "not_a_trait"])
def test_class_20_set_state_refuses_every_key_that_is_not_a_setting(name):
    ex = explorers.attention_explorer()
    before = {k: getattr(ex, k, None) for k in ("_esm", "_css", "_anywidget_id", "tooltip", "_dom_classes")}
    ex.set_state({name: "export default {}"})
    assert ex.error.startswith(f"{name} cannot be changed from the page"), ex.error
    assert {k: getattr(ex, k, None) for k in before} == before
