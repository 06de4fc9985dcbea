"""Per-student variants, in process: every variant is well-posed and its model answer passes its hidden tests.

For each chapter with exercises, the cells an nbgrader source notebook runs
(seed cell, setup, the "your numbers" cells, answers, test cells with the
hidden tests injected from ``instructor/hidden_tests``) are executed in one
namespace, for ``seed = None`` with the chapter's own solution cells and for
seeds drawn by hypothesis with the model answers that ``attnlib.variants``
computes for that seed (implement exercises keep the chapter's solution code).
"""

from __future__ import annotations

import warnings

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import numpy_answers
from support.grading import (
    ASSIGNMENT_CHAPTERS,
    BY_HAND,
    NAMES,
    TYPED,
    make_assignments,
    model_answer,
    nbg,
    run_assignment,
    source_notebook,
)
from support.hand_ins import right_payload
from support.paths import CHAPTERS as CHAPTERS_DIR

from attnlib import checks, variants
from attnlib.exercises import grading, registry
from attnlib.exercises.registry import KINDS, register

CHAPTERS = ASSIGNMENT_CHAPTERS
SEEDS = st.integers(min_value=0, max_value=2**31 - 1)
EXERCISES_BY_CHAPTER = {str(e.chapter): None for e in registry.EXERCISES.values()}


def test_no_chapter_holds_hidden_tests():
    for chapter in sorted(CHAPTERS_DIR.glob("*.ipynb")):
        assert "HIDDEN TESTS" not in chapter.read_text(), f"{chapter.name} still holds hidden tests"


def test_every_autograded_test_cell_has_hidden_tests_and_a_seed_cell():
    for chapter, name in zip(CHAPTERS, NAMES, strict=True):
        nb = nbformat.read(chapter, as_version=4)
        tests = {nbg(c)["grade_id"] for c in nb.cells if c.cell_type == "code" and nbg(c).get("grade") and not nbg(c).get("solution")}
        assert tests == set(make_assignments.hidden_tests(name)), f"{name}: test cells and hidden test blocks differ"
        seeds = [c for c in nb.cells if nbg(c).get("grade_id") == f"{name}-seed"]
        assert len(seeds) == 1 and nbg(seeds[0])["locked"] and "seed = None" in seeds[0].source


def test_every_variant_function_has_its_exercise_in_the_chapters():
    gids = {nbg(c).get("grade_id") for chapter in CHAPTERS for c in nbformat.read(chapter, as_version=4).cells}
    for exercise in variants.EXERCISES.values():
        assert exercise.test_id in gids, f"exercise {exercise.number}: no cell {exercise.test_id}"


@pytest.mark.parametrize("name", NAMES)
def test_book_numbers_pass_with_the_chapter_solutions(name):
    results = run_assignment(source_notebook(name), None)
    assert results and all(r == "" for r in results.values()), results


def test_book_numbers_are_the_chapter_solutions():
    """seed=None: attnlib's answers are the numbers the chapters' folded solution cells hold."""
    for chapter in CHAPTERS:
        for cell in nbformat.read(chapter, as_version=4).cells:
            if nbg(cell).get("grade_id") in BY_HAND:
                ns: dict = {}
                exec(model_answer(cell, None), ns)
                for key, want in variants.answers(BY_HAND[nbg(cell)["grade_id"]].draw(None)).items():
                    assert variants.agrees(ns[key], want), f"{chapter.name}: {key} = {ns[key]} but attnlib gives {want}"


#: Chapters whose graded cells measure something (15.3 runs chunked attention under tracemalloc, about 1 s)
MEASURING = {"ch15"}


@pytest.mark.parametrize("name", [n for n in NAMES if n not in MEASURING])
@settings(max_examples=12, deadline=None)
@given(seed=SEEDS)
def test_every_variant_passes_its_own_hidden_tests(name, seed):
    results = run_assignment(source_notebook(name), seed)
    assert results and all(r == "" for r in results.values()), f"seed {seed}: {results}"


@pytest.mark.parametrize("name", sorted(MEASURING))
@settings(max_examples=3, deadline=None)
@given(seed=SEEDS)
def test_every_measuring_variant_passes_its_own_hidden_tests(name, seed):
    """As above, with fewer seeds: each run measures (their well-posedness is checked for 200 seeds below)."""
    results = run_assignment(source_notebook(name), seed)
    assert results and all(r == "" for r in results.values()), f"seed {seed}: {results}"


@pytest.mark.parametrize("name", ["ch06", "ch09", "ch12"])
def test_copied_answers_fail_the_by_hand_tests(name):
    results = run_assignment(source_notebook(name), 1, answers_of=2)
    by_hand = {e.test_id for e in BY_HAND.values()} & set(results)
    assert by_hand and all(results[t] for t in by_hand), results
    assert all(r == "" for t, r in results.items() if t not in by_hand), results


@settings(max_examples=200, deadline=None)
@given(seed=SEEDS)
def test_every_variant_is_well_posed(seed):
    for number, exercise in variants.EXERCISES.items():
        v = exercise.draw(seed)
        variants.check_well_posed(v)
        assert v.seed == seed and v.exercise == number
        if exercise.kind == "by-hand":
            assert variants.answers(v)


def test_seeds_differ_between_students_and_assignments():
    seeds = {variants.student_seed(f"s{k:03d}", "ch06", "key") for k in range(200)}
    assert len(seeds) == 200
    assert variants.student_seed("s001", "ch06", "key") != variants.student_seed("s001", "ch09", "key")
    assert variants.student_seed("s001", "ch06", "key") != variants.student_seed("s001", "ch06", "other key")


def test_variants_give_students_different_numbers():
    """Two seeds rarely share a variant; the rich by-hand exercises almost never do."""
    for number in ("1.1", "2.1", "3.1", "6.1", "7.1", "9.1", "12.1"):
        drawn = {str(variants.variant(number, s).inputs) for s in range(50)}
        assert len(drawn) >= 40, f"exercise {number}: only {len(drawn)} different variants in 50 seeds"


def test_equivalent_seeds_give_the_same_variant():
    for seed in (3.0, np.int64(3), np.uint16(3)):
        for number in ("6.1", "9.2"):
            v, w = variants.variant(number, seed), variants.variant(number, 3)
            assert type(v.seed) is int and v.seed == 3 and str(v.inputs) == str(w.inputs)


def test_bad_seeds_are_refused():
    for bad in (-1, 1.5, "3", True, np.nan):
        with pytest.raises(ValueError, match="seed"):
            variants.uniform_row_by_hand(bad)


def test_self_checks_try_the_students_own_inputs_without_revealing_them():
    head = numpy_answers.attention_head  # numpy alone: the self-check says "not yet" to attnlib's own self_attention

    plain = checks.check_attention_head(head, verbose=False)
    mine = checks.check_attention_head(head, verbose=False, seed=12345)
    assert plain and mine and mine.n_cases == plain.n_cases + 1
    wrong = checks.check_attention_head(lambda X, a, b, c: X @ c, verbose=False, seed=12345)
    own = [m for m in wrong.messages if "your own inputs (seed 12345)" in m]
    v = variants.implement_inputs("6.2", 12345)
    assert own and not any(f"{x:.4f}" in own[0] for x in np.ravel(head(v.X, v.W_Q, v.W_K, v.W_V)))


def test_every_autograded_test_cell_is_a_registered_exercise():
    """Each chapter's test cells chNN-exK-test are the registry's exercises, and each hidden block only hands in."""
    registered = {e.test_id: e for e in variants.EXERCISES.values() if e.graded_outside}
    for chapter, name in zip(CHAPTERS, NAMES, strict=True):
        nb = nbformat.read(chapter, as_version=4)
        tests = {nbg(c)["grade_id"] for c in nb.cells if c.cell_type == "code" and nbg(c).get("grade") and not nbg(c).get("solution")}
        assert tests == {t for t, e in registered.items() if e.assignment == name}, name
        for gid, code in make_assignments.hidden_tests(name).items():
            last = code.strip().splitlines()[-1]
            assert last == f'hand_in("{registered[gid].number}", seed, globals())', f"{gid}: a hidden test ends by handing in"
            assert "allclose" not in code and "agrees" not in code, f"{gid}: a hidden test compares nothing in the kernel"


def test_exercises_register_once_with_what_their_kind_needs():
    assert list(EXERCISES_BY_CHAPTER) == sorted(EXERCISES_BY_CHAPTER, key=int)
    for number, e in variants.EXERCISES.items():
        assert e.number == number and e.kind in KINDS
        if e.kind == "implement":
            assert e.function and e.calls and e.reference and e.own, number
            assert e.check is not None and e.check.__name__ in dir(checks), number
        with pytest.raises(ValueError, match="registered twice"):
            register(e)


ATTACKS = [
    # (assignment, answer cell, code in it, test cell that must fail, words of the grader's message)
    ("ch09", "ch09-ex2-answer", "my_causal_mask = attnlib.causal_mask", "ch09-ex2-test", "attnlib's own causal_mask"),
    (
        "ch09",
        "ch09-ex2-answer",
        "def my_causal_mask(n):\n    return attnlib.core.causal_mask(n) | False",
        "ch09-ex2-test",
        "my_causal_mask uses attnlib.core, which the grader does not have",
    ),
    (
        "ch09",
        "ch09-ex2-answer",
        "import types\nmy_causal_mask = types.FunctionType(attnlib.causal_mask.__code__, vars(attnlib.core))",
        "ch09-ex2-test",
        "own causal_mask",
    ),
    ("ch14", "ch14-ex2-answer", "softmax_backward = backward.softmax_backward", "ch14-ex2-test", "own softmax_backward"),
    (
        "ch14",
        "ch14-ex2-answer",
        "def softmax_backward(A, dA):\n    return backward.attention_backward(A, A, A, dA).dQ * 0 + backward.softmax_backward(A, dA)",
        "ch14-ex2-test",
        "softmax_backward uses backward, which the grader does not have",
    ),
    (
        "ch15",
        "ch15-ex2-answer",
        "def two_block_normaliser(s1, s2):\n    import attnlib.blocked as b\n"
        "    m, l, _, _ = b.online_softmax_step(-np.inf, 0.0, np.concatenate([s1, s2]))\n    return m, l",
        "ch15-ex2-test",
        "two_block_normaliser uses attnlib.blocked, which the grader does not have",
    ),
    ("ch15", "ch15-ex1-answer", "layer_bytes = 1\nlayer_gib = 1", "ch15-ex1-test", "layer_bytes = 1: not yet."),
]


@pytest.mark.parametrize(("name", "answer", "code", "test", "words"), ATTACKS, ids=[f"{a[0]}-{k}" for k, a in enumerate(ATTACKS)])
def test_an_answer_cell_cannot_fool_the_grader(name, answer, code, test, words):
    """attnlib's own function (aliased, wrapped, its code copied) or a wrong typed answer: the test fails.

    Answer cells that replace numpy or attnlib functions would replace them in this process too, where
    the grader's judge runs in nbgrader's own process: tests/grading/test_per_student.py grades those.
    """
    results = run_assignment(source_notebook(name), 12345, answers={answer: code})
    assert words in results[test], results
    assert all(r == "" for t, r in results.items() if t != test), results  # the rest is graded as usual


@pytest.mark.parametrize("name", ["ch14", "ch15"])
def test_copied_answers_fail_on_chapters_14_and_15(name):
    results = run_assignment(source_notebook(name), 1, answers_of=2)
    seeded = {e.test_id for e in TYPED.values()} & set(results)
    assert seeded and all(results[t] for t in seeded), results


def test_nothing_handed_in_scores_zero():
    assert grading.judge_outputs("9.1", None, []) == [
        "exercise 9.1: nothing was handed in for grading (the test cell did not run to its end)"
    ]
    two = [{"output_type": "display_data", "data": {grading.HAND_IN_MIME: {"exercise": "9.1", "payload": {}}}}] * 2
    assert grading.judge_outputs("9.1", None, two) == ["exercise 9.1: more than one hand-in in one test cell"]


def test_hand_ins_keep_every_number_exactly():
    for value in ([0.1, -0.0, np.inf, -np.inf], np.array([[1, 2], [3, 4]]), np.array([True, False]), 7):
        back = grading.decode(grading.encode(value))
        assert np.array_equal(back, np.asarray(value)) and back.shape == np.shape(value)
    assert np.isnan(grading.decode(grading.encode([np.nan]))[0])
    assert grading.decode(grading.encode("0.5")) == "it is '0.5', not a number"
    # what the comparator looks at is kept: the dtype (an int64 mask, a float32 softmax), complex parts, a masked array, None
    assert grading.decode(grading.encode(np.tril(np.ones((2, 2), int)))).dtype == np.int64
    assert grading.decode(grading.encode(np.float32([0.25]))).dtype == np.float32
    assert grading.decode(grading.encode(1j)) == 1j
    assert isinstance(grading.decode(grading.encode(np.ma.masked_array([0.5, 0.5]))), np.ma.MaskedArray)
    assert grading.handed_value(grading.encode(None)) == (None, None)


def test_route_keys_separate_assignments_and_routes():
    keys = {variants.route_key("secret", a, r) for a in ("ch06", "ch09") for r in variants.ROUTES}
    assert len(keys) == 4 and all(len(k) == 64 for k in keys)
    assert variants.route_key("secret", "ch06", "files") != variants.route_key("other", "ch06", "files")


#: The exercises the grader judges, and the names a payload's parts use (so random payloads reach every branch).
GRADED = sorted((n for n, e in variants.EXERCISES.items() if e.graded_outside), key=lambda n: tuple(map(int, n.split("."))))
PAYLOAD_WORDS = ["answers", "outputs", "own", "error", "hex", "shape", "bool", "text", "exercise", "payload"]
ANSWER_NAMES = sorted({k for e in variants.EXERCISES.values() if e.answer for k in variants.answers(e.draw(None))})
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.just(10**400)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["0x1.0000000000000p-1", "inf", "-inf", "nan", "0x1p+1024", "zz", ""])
)
_KEYS = st.sampled_from(PAYLOAD_WORDS + ANSWER_NAMES) | st.text(max_size=6)
#: JSON-like values: what a display output of a student's kernel could carry
JSONISH = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=16)
RIGHT = {n: right_payload(n, None) for n in GRADED}


def _spoil(payload, path, value):
    """``payload`` with the part at ``path`` (keys and list indices, as far as they reach) replaced by ``value``."""
    if not path or not isinstance(payload, (dict, list)) or not payload:
        return value
    key = list(payload)[path[0] % len(payload)] if isinstance(payload, dict) else path[0] % len(payload)
    out = dict(payload) if isinstance(payload, dict) else list(payload)
    out[key] = _spoil(payload[key], path[1:], value)
    return out


def _messages(got):
    return isinstance(got, list) and all(isinstance(m, str) and m for m in got)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(number=st.sampled_from(GRADED), payload=JSONISH, path=st.lists(st.integers(0, 7), max_size=5))
def test_judge_gives_messages_for_any_payload(number, payload, path):
    """A student's kernel can hand in anything: the grader answers with messages (0 marks), never an exception."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = grading.judge(number, None, payload)
        assert _messages(got) and got, f"exercise {number}: {payload!r:.200} gave {got!r}"
        # the right answer's payload scores, and with one part replaced by random JSON it still gives messages
        assert grading.judge(number, None, RIGHT[number]) == []
        spoilt = _spoil(RIGHT[number], path, payload)
        assert _messages(grading.judge(number, None, spoilt)), f"exercise {number}: {spoilt!r:.200}"
        outputs = [{"output_type": "display_data", "data": {grading.HAND_IN_MIME: {"exercise": number, "payload": spoilt}}}]
        assert _messages(grading.judge_outputs(number, None, outputs))


def test_hidden_tests_are_generated_from_the_registry_and_a_written_one_says_why(tmp_path, monkeypatch):
    """Issue 49: 33 of 34 hidden blocks were one mechanical hand_in line kept by hand in 17 files; now generated."""
    graded = [e for e in variants.EXERCISES.values() if e.graded_outside]
    blocks = {gid: code for name in NAMES for gid, code in make_assignments.hidden_tests(name).items()}
    assert set(blocks) == {e.test_id for e in graded}
    assert not sorted(make_assignments.HIDDEN_TESTS.glob("ch*.py")), "a hand-written block where the generated one does"
    monkeypatch.setattr(make_assignments, "HIDDEN_TESTS", tmp_path)
    (tmp_path / "ch09.py").write_text('# %% ch09-ex2-test\nhand_in("9.2", seed, globals())\n')
    with pytest.raises(ValueError, match=r"ch09-ex2-test.*do not say why"):
        make_assignments.hidden_tests("ch09")
    (tmp_path / "ch09.py").write_text('# %% ch09-ex2-test\n# Hand-written because a test needs it\nhand_in("9.2", seed, globals())\n')
    assert make_assignments.hidden_tests("ch09")["ch09-ex2-test"].startswith("# Hand-written because")
