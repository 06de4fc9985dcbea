"""Per-student variants, in process: every variant is well-posed and its model answer passes its hidden tests.

For each chapter with exercises, the cells an nbgrader source notebook runs
(seed cell, setup, the "your numbers" cells, answers, test cells with the
hidden tests injected from ``instructor/hidden_tests``) are executed in one
namespace, for ``seed = None`` with the chapter's own solution cells and for
seeds drawn by hypothesis with the model answers that ``attnlib.variants``
computes for that seed (implement exercises keep the chapter's solution code).
"""

from __future__ import annotations

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.grading import (
    ASSIGNMENT_CHAPTERS,
    BY_HAND,
    NAMES,
    make_assignments,
    model_answer,
    nbg,
    run_assignment,
    source_notebook,
)
from support.paths import CHAPTERS as CHAPTERS_DIR

import attnlib
from attnlib import checks, variants

CHAPTERS = ASSIGNMENT_CHAPTERS
SEEDS = st.integers(min_value=0, max_value=2**31 - 1)


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


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=12, deadline=None)
@given(seed=SEEDS)
def test_every_variant_passes_its_own_hidden_tests(name, seed):
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


def test_bad_seeds_are_refused():
    for bad in (-1, 1.5, "3", True, np.nan):
        with pytest.raises(ValueError, match="seed"):
            variants.uniform_row_by_hand(bad)


def test_self_checks_try_the_students_own_inputs_without_revealing_them():
    def head(X, W_Q, W_K, W_V):
        return attnlib.self_attention(X, W_Q, W_K, W_V).output

    plain = checks.check_attention_head(head, verbose=False)
    mine = checks.check_attention_head(head, verbose=False, seed=12345)
    assert plain and mine and mine.n_cases == plain.n_cases + 1
    wrong = checks.check_attention_head(lambda X, a, b, c: X @ c, verbose=False, seed=12345)
    own = [m for m in wrong.messages if "your own inputs (seed 12345)" in m]
    v = variants.implement_inputs("6.2", 12345)
    assert own and not any(f"{x:.4f}" in own[0] for x in np.ravel(head(v.X, v.W_Q, v.W_K, v.W_V)))
