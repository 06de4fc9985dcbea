"""Beginner mistakes, exercise by exercise, and the feedback each one gets (issue 24).

``MISTAKES`` is the review of every self-check against what first-year
students typically write: one row per mistake, with the words its message
must contain and the words it must not (numpy's internals, a line inside
attnlib, a wrong diagnosis, the answer's formula). ``BY_HAND`` does the
same for typed answers. Everything runs in-process, without notebooks,
except one IPython shell that shows how a failure looks in a cell.
"""

from __future__ import annotations

import re
from fractions import Fraction

import nbformat
import numpy as np
import pytest
from support import numpy_answers
from support.paths import ROOT

import attnlib
from attnlib import checks, variants


def _stable(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- the students' functions ----------------------------------------------------------------


def softmax_global_max(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max())
    return e / e.sum(axis=-1, keepdims=True)


def softmax_no_keepdims(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=-1))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_naive(x):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_columns(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def softmax_in_place(x):
    x -= x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_no_return(x):
    _stable(x)


def attention_q_at_k(Q, K, V):
    return attnlib.softmax(Q @ K / np.sqrt(K.shape[1])) @ V


def attention_weights_only(Q, K, V):
    return attnlib.softmax(Q @ K.T / np.sqrt(K.shape[1]))


def attention_by_d_k(Q, K, V):
    return attnlib.softmax(Q @ K.T / K.shape[1]) @ V


def attention_columns(Q, K, V):
    return softmax_columns(Q @ K.T / np.sqrt(K.shape[1])) @ V


def weights_of_head(X, W_Q, W_K, W_V):
    return numpy_answers.softmax((X @ W_Q) @ (X @ W_K).T / np.sqrt(W_Q.shape[1]))


def head_mixes_x(X, W_Q, W_K, W_V):
    Q, K = X @ W_Q, X @ W_K
    return attnlib.softmax(Q @ K.T / np.sqrt(K.shape[1])) @ X


def head_on_x(X, W_Q, W_K, W_V):
    return attnlib.softmax(X @ X.T / np.sqrt(X.shape[1])) @ X


def head_w_q_twice(X, W_Q, W_K, W_V):
    Q, V = X @ W_Q, X @ W_V
    return attnlib.softmax(Q @ Q.T / np.sqrt(Q.shape[1])) @ V


def masked_loop_if(scores, allowed):
    out = np.array(scores, dtype=float)
    for i in range(len(out)):
        if not allowed[i]:
            out[i] = -np.inf
    return attnlib.softmax(out)


def masked_inverted(scores, allowed):
    return attnlib.softmax(np.where(allowed, -np.inf, scores))


def masked_columns(scores, allowed):
    return softmax_columns(np.where(allowed, scores, -np.inf))


def masked_no_keepdims(scores, allowed):
    s = np.where(allowed, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1))
    return e / e.sum(axis=-1, keepdims=True)


def masked_after(scores, allowed):
    return attnlib.softmax(scores) * allowed


def masked_zero_scores(scores, allowed):
    return attnlib.softmax(scores * allowed)


def backward_unknown(A, dA):
    return A * dA - A


def backward_first_term(A, dA):
    return A * dA


def dots_np_dot(X):
    return np.dot(X, X)


def bilinear_left(X, W_Q, W_K):
    return (W_Q @ X) @ (X @ W_K).T


def scores_no_transpose(Q, K):
    return Q @ K / np.sqrt(Q.shape[1])


def layer_norm_eps_outside(X, gamma, beta, eps):
    X = np.asarray(X, dtype=float)
    return gamma * (X - X.mean(axis=-1, keepdims=True)) / (X.std(axis=-1, keepdims=True) + eps) + beta


def layer_norm_no_eps(X, gamma, beta, eps):
    X = np.asarray(X, dtype=float)
    return gamma * (X - X.mean(axis=-1, keepdims=True)) / X.std(axis=-1, keepdims=True) + beta


def layer_norm_by_variance(X, gamma, beta, eps):
    X = np.asarray(X, dtype=float)
    return gamma * (X - X.mean(axis=-1, keepdims=True)) / (X.var(axis=-1, keepdims=True) + eps) + beta


def two_block_constant(s1, s2):
    return max(s1.max(), s2.max()), 1.0


#: (exercise, check, the student's function, words the message must contain, words it must not contain)
MISTAKES = [
    ("1.2", "check_pairwise_dots", lambda X: X.T @ X, ["features", "n x n"], []),
    ("1.2", "check_pairwise_dots", lambda X: X * X, ["entry by entry"], []),
    ("1.2", "check_pairwise_dots", dots_np_dot, ["n x d", "transposed"], ["gufunc", "not aligned"]),
    ("1.2", "check_pairwise_dots", lambda X: X @ X.T / np.sqrt(X.shape[1]), ["no scaling"], []),
    ("2.2", "check_bilinear_scores", lambda X, WQ, WK: (X @ WK) @ (X @ WQ).T, ["transpose"], []),
    ("2.2", "check_bilinear_scores", lambda X, WQ, WK: (X @ WQ) @ (X @ WQ).T, ["W_Q on both sides"], []),
    ("2.2", "check_bilinear_scores", bilinear_left, ["d_model x d_k", "rows"], ["gufunc"]),
    ("4.2", "check_softmax", softmax_global_max, ["whole array", "each row needs its own"], []),
    ("4.2", "check_softmax", softmax_no_keepdims, ["keepdims=True", "COLUMNS"], ["Subtract the largest entry"]),
    ("4.2", "check_softmax", softmax_naive, ["huge logits", "Subtract the largest entry of each row"], []),
    ("4.2", "check_softmax", softmax_columns, ["each column sums to 1"], []),
    ("4.2", "check_softmax", lambda x: np.exp(x) / np.exp(x).sum(), ["whole matrix sums to 1"], []),
    ("4.2", "check_softmax", softmax_in_place, ["in place"], []),
    ("4.2", "check_softmax", softmax_no_return, ["forget the `return`"], []),
    ("4.2", "check_softmax", lambda x: 0.5 * (1 + np.tanh(np.asarray(x) / 2)), ["sigmoid"], []),
    ("4.3", "check_attention", attention_q_at_k, ["Q is n_q x d_k", "K is n_k x d_k", "K enters that product transposed", "at line"],
     ["gufunc", "core dimension"]),
    ("4.3", "check_attention", attention_weights_only, ["attention weights", "multiplies them by V"], []),
    ("4.3", "check_attention", attention_by_d_k, ["divided by d_k"], []),
    ("4.3", "check_attention", attention_columns, ["down the columns"], []),
    ("4.3", "check_attention", lambda Q, K, V: attnlib.softmax(Q @ K.T) @ V, ["without the 1/sqrt(d_k)"], []),
    ("5.2", "check_scaled_scores", lambda Q, K: Q @ K.T, ["raw scores"], []),
    ("5.2", "check_scaled_scores", lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]), ["number of keys"], []),
    ("5.2", "check_scaled_scores", scores_no_transpose, ["Q is n_q x d_k", "transposed"], ["gufunc"]),
    ("6.2", "check_attention_head", head_mixes_x, ["mixed rows of X"], ["attention on X itself"]),
    ("6.2", "check_attention_head", head_on_x, ["attention on X itself"], []),
    ("6.2", "check_attention_head", head_w_q_twice, ["W_Q for the keys"], []),
    ("6.2", "check_attention_head", weights_of_head, ["attention weights"], []),
    ("8.2", "check_split_heads", lambda M, h: np.stack([M[:, r::h] for r in range(h)]), ["CONSECUTIVE"], []),
    ("8.2", "check_split_heads", lambda M, h: M.reshape(M.shape[0], h, -1), ["heads axis comes first"], []),
    ("8.2", "check_split_heads", lambda M, h: np.stack(np.split(M, h)), ["split the rows"], []),
    ("9.2", "check_causal_mask", lambda n: np.triu(np.ones((n, n), dtype=bool)), ["transpose"], []),
    ("9.2", "check_causal_mask", lambda n: np.tril(np.ones((n, n))), ["boolean array"], []),
    ("9.2", "check_causal_mask", lambda n: np.tril(np.ones((n, n), dtype=bool), -1), ["diagonal"], []),
    ("9.3", "check_masked_weights", masked_loop_if, ["a whole array where it needs a single True or False", "np.where", "at line"],
     ["ambiguous"]),
    ("9.3", "check_masked_weights", masked_inverted, ["your line", "allowed is True where", "softmax()"], ["line 89", "raise ValueError("]),
    ("9.3", "check_masked_weights", masked_columns, ["COLUMN sums to 1"], ["overflowing"]),
    ("9.3", "check_masked_weights", masked_after, ["after the softmax"], []),
    ("9.3", "check_masked_weights", masked_no_keepdims, ["entry-by-entry operation", "keepdims=True", "scores is n_q x n_k = 2 x 4"],
     ["could not be broadcast"]),
    ("9.3", "check_masked_weights", masked_zero_scores, ["score of 0 still gets weight"], []),
    ("9.3", "check_masked_weights", lambda S, a: attnlib.softmax(np.where(a, S, -100.0)), ["exactly 0", "-inf"], []),
    ("11.2", "check_sinusoidal_encoding", lambda n, d: np.cos(np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d)), ["shape"], []),
    ("14.2", "check_softmax_backward", backward_unknown, ["A small case", "expected", "yours"], ["rowsum", "dA - ", "A * ("]),
    ("14.2", "check_softmax_backward", backward_first_term, ["second term"], ["rowsum"]),
    ("15.2", "check_two_block_normaliser", two_block_constant, ["Return the pair"], ["exp(m1 - m) +", "l1 * exp"]),
    # issue 26: chapter 16's layer norm
    ("16.2", "check_layer_norm", layer_norm_eps_outside, ["inside the square root"], ["sqrt(var + eps) +"]),
    ("16.2", "check_layer_norm", layer_norm_no_eps, ["eps is missing", "constant row"], ["RuntimeWarning"]),
    ("16.2", "check_layer_norm", layer_norm_by_variance, ["standard deviation"], []),
    ("17.2", "check_previous_token_score", lambda W: float(np.diag(np.asarray(W), k=-1).sum()) / len(W), ["divide by n - 1"], ["np.diag"]),
]


@pytest.mark.parametrize(
    ("exercise", "check", "fn", "said", "unsaid"), MISTAKES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MISTAKES)]
)
def test_a_beginners_mistake_gets_a_message_that_teaches(exercise, check, fn, said, unsaid):
    result = getattr(checks, check)(fn, verbose=False)
    text = result.report()
    assert not result.passed, f"exercise {exercise}: a wrong function passed: {text}"
    for words in said:
        assert words in text, f"exercise {exercise}: {words!r} missing from\n{text}"
    for words in unsaid:
        assert words not in text, f"exercise {exercise}: {words!r} should not be in\n{text}"
    assert "Traceback" not in text


def test_every_implement_exercise_has_mistakes_in_the_table():
    implement = {n for n, e in variants.EXERCISES.items() if e.kind == "implement"} | {"14.2", "15.2", "17.2"}
    assert implement <= {m[0] for m in MISTAKES}


def test_global_max_passed_before_and_is_caught_on_rows_of_different_scales():
    result = checks.check_softmax(softmax_global_max, verbose=False)
    assert result.n_passed == result.n_cases - 1
    assert result.messages[0].startswith("rows at very different scales [[1000, 0], [0, 1]]")


def test_an_unrecognised_mistake_shows_a_small_case_in_the_chapters_notation():
    result = checks.check_softmax_backward(backward_unknown, verbose=False)
    small = [m for m in result.messages if m.startswith("A small case")]
    assert len(small) == 1
    assert "A = [[" in small[0] and "dA = [[" in small[0] and "expected [[" in small[0] and "yours [[" in small[0]


def test_the_small_case_is_never_a_students_own_case_or_a_by_hand_question():
    def off(x):  # wrong on every case, matching no known mistake
        return _stable(x) * 0.5 + 0.1

    for seed in (None, 12345):
        text = checks.check_softmax(off, verbose=False, seed=seed).report()
        assert "A small case" in text
        assert "[1.0, 0.0, 0.5]" not in text  # exercise 7.1's book question
        assert "your own inputs" not in text.split("A small case")[1]
    # the 7.1 book answer (the vector case's expected weights) never appears
    assert "0.5065" not in checks.check_softmax(off, verbose=False).report()


def test_the_same_diagnosis_is_said_once_with_a_count():
    result = checks.check_attention(attention_q_at_k, verbose=False)
    assert len(result.messages) <= 2 and "other case" in result.report()


def test_chapter_14_and_15_hints_never_write_out_the_answer():
    for fn in (backward_unknown, lambda A, dA: A, lambda A, dA: dA):
        text = checks.check_softmax_backward(fn, verbose=False).report()
        assert "rowsum(dA * A)" not in text and "diag(a) - a a^T" not in text
    text = checks.check_two_block_normaliser(lambda s1, s2: (0.0, 1.0), verbose=False).report()
    assert "l1 * exp(m1 - m)" not in text and "max(m1, max(s2))" not in text


# --- by-hand answers ------------------------------------------------------------------------

#: (exercise, what the student typed, per-entry verdicts the report must contain in order)
BY_HAND = [
    ("4.1", {"o_by_hand": [0.5, 0.5]}, ["o_by_hand[0] = 0.5: not yet.", "o_by_hand[1] = 0.5: not yet."]),
    ("4.1", {"o_by_hand": ["5/8", "3/8"]}, ["it is the text '5/8'", "without quotes"]),
    ("4.1", {"o_by_hand": [0.63, 0.38]}, ["o_by_hand[0] = 0.63: not yet, but close", "four decimals"]),
    ("4.1", {"o_by_hand": [5 / 8, 3 / 8]}, ["RIGHT 4.1 (o_by_hand): all 2 entries are right."]),
    ("4.1", {"o_by_hand": [0.625]}, ["should be a list of 2 numbers"]),
    ("4.1", {}, ["o_by_hand is not defined yet"]),
    ("9.1", {"masked_row": [0.59, 0.0, 0.41]}, ["masked_row[0] = 0.59: not yet, but close", "masked_row[1] = 0.0: right."]),
    ("9.1", {"masked_row": [0.5875, 0.0, 0.4125]}, ["RIGHT 9.1"]),
    ("1.1", {"x1_dot_x3": 0.5, "x2_dot_x3": 0.5, "x3_dot_x3": 0.5, "length_x3": 0.71}, ["3 of 4", "length_x3 = 0.71: not yet, but close"]),
    ("3.1", {"V_by_hand": [[2, 0], [1, -1], [1.5, -0.5]]}, ["RIGHT"]),
    ("3.1", {"V_by_hand": [[2, 0], [1, 1], [1.5, -0.5]]}, ["V_by_hand[1][1] = 1: not yet; check the sign."]),
    ("8.1", {"d_head": 64, "n_params": 768**2 * 3}, ["d_head = 64: right.", "n_params = 1769472: not yet."]),
    ("14.1", {"dz_row": [3, -1, 2]}, ["0 of 3", "dz_row[0] = 3: not yet."]),  # the upstream g typed as the answer
    ("14.1", {"dz_row": [0.625, -0.6875, 0.0625]}, ["RIGHT 14.1 (dz_row): all 3 entries are right."]),
    ("15.1", {"layer_bytes": 32 * 2 * 16384**2, "layer_gib": 16.0}, ["RIGHT"]),
    ("4.1", {"o_by_hand": [Fraction(5, 8), np.float32(0.375)]}, ["RIGHT"]),
    ("4.1", {"o_by_hand": [True, 1j]}, ["it is bool, not a number", "it is complex, not a number"]),
]


@pytest.mark.parametrize(("exercise", "typed", "said"), BY_HAND, ids=[f"{b[0]}-{i}" for i, b in enumerate(BY_HAND)])
def test_a_typed_answer_is_judged_per_entry_without_the_answer(exercise, typed, said):
    result = checks.check_by_hand(exercise, typed, verbose=False)
    text = result.report()
    for words in said:
        assert words in text, f"{words!r} missing from\n{text}"
    assert result.passed == text.startswith("RIGHT")
    if result.passed:  # the web book shows this output: no number in it
        assert not re.search(r"\d\.\d|= ", text.split(":", 1)[1]), text
    expected = variants.answers(variants.variant(exercise, None))
    typed_numbers = {str(x) for v in typed.values() for x in np.ravel(np.array(v, dtype=object)).tolist()}
    for want in expected.values():
        for w in np.ravel(want):
            if not result.passed and str(w) not in typed_numbers and len(str(w)) > 3:
                assert str(w) not in text, f"the expected {w} is shown in\n{text}"


def test_every_by_hand_exercise_of_the_book_is_checked():
    tool = _tool()
    for number in tool.BY_HAND:
        names = variants.answers(variants.variant(number, None))
        assert checks.check_by_hand(number, names, verbose=False).passed


def test_by_hand_checks_use_the_students_own_numbers():
    seed = 2024
    v = variants.variant("4.1", seed)
    mine = {"o_by_hand": (v.weights @ v.V).tolist()}
    assert checks.check_by_hand("4.1", mine, seed=seed, verbose=False).passed
    book = {"o_by_hand": [0.625, 0.375]}
    assert mine != book and not checks.check_by_hand("4.1", book, seed=seed, verbose=False).passed
    assert checks.check_by_hand("4.1", book, verbose=False).passed


def test_by_hand_check_refuses_odd_arguments():
    with pytest.raises(ValueError, match="by-hand exercise"):
        checks.check_by_hand("4.2", {}, verbose=False)
    with pytest.raises(ValueError, match="answers must be a mapping"):
        checks.check_by_hand("4.1", [0.625, 0.375], verbose=False)
    with pytest.raises(ValueError, match="seed"):
        checks.check_by_hand("4.1", {}, seed=-1, verbose=False)


# --- how a failure looks in a notebook cell -------------------------------------------------


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_cell("import numpy as np\nfrom attnlib import checks\nimport attnlib")
    return sh


def _run_cell(shell, capfd, code):
    capfd.readouterr()
    result = shell.run_cell(code)
    out, err = capfd.readouterr()
    return result, out + err


def test_a_failed_check_is_one_line_after_its_report_and_still_an_error(shell, capfd):
    code = (
        "def my_softmax(x):\n"
        "    e = np.exp(x - np.max(x))\n"
        "    return e / e.sum(axis=-1, keepdims=True)\n"
        "checks.check_softmax(my_softmax).require()"
    )
    result, text = _run_cell(shell, capfd, code)
    assert isinstance(result.error_in_exec, checks.CheckFailed) and isinstance(result.error_in_exec, AssertionError)
    assert text.startswith("FAIL softmax")
    after = text.split("FAIL softmax", 1)[1].strip().splitlines()
    assert after[-1].startswith("Not passed yet. softmax: 6 of 7 checks passed")
    assert "Traceback" not in text and "---->" not in text and "AssertionError" not in text


def test_a_passing_check_prints_its_report_and_no_value(shell, capfd):
    result, text = _run_cell(shell, capfd, "checks.check_by_hand('4.1', {'o_by_hand': [0.625, 0.375]}).require()")
    assert result.success and text.startswith("RIGHT 4.1") and "CheckResult" not in text


def test_an_explorer_setting_typed_wrong_is_one_line(shell, capfd):
    shell.run_cell("explorer = attnlib.explorers.attention_explorer()")
    cases = (("explorer.set(W_Q=3)", "W_Q must be"), ("explorer.set(mask='casual')", "mask must be"), ("explorer.d_k = 5", "d_k must be"))
    for code, words in cases:
        result, text = _run_cell(shell, capfd, code)
        assert not result.success
        lines = [line for line in text.strip().splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("Setting not changed: ") and words in lines[0], text


# --- the chapters' cells --------------------------------------------------------------------


def _tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("exercise_checks", ROOT / "tools" / "exercise_checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_chapters_check_cells_are_rewritten(capsys):
    assert _tool().main(["--check"]) == 0, capsys.readouterr().out


def test_no_visible_check_ends_in_a_bare_assert_and_by_hand_checks_name_their_exercise():
    tool = _tool()
    seen = set()
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]-*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            number = tool.exercise_of(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
            if number is None:
                continue
            assert not re.search(r"^assert checks\.", cell.source, re.M), f"{path.name} {number}"
            if number in tool.BY_HAND:
                assert f'checks.check_by_hand("{number}", globals(), seed=seed).require()' in cell.source
                seen.add(number)
    assert seen == set(tool.BY_HAND)


def test_nan_is_blamed_on_what_the_case_holds():
    def nan_where_forbidden(scores, allowed):
        return np.where(allowed, 1.0 / allowed.sum(axis=-1, keepdims=True), np.nan)

    messages = checks.check_masked_weights(nan_where_forbidden, verbose=False).messages
    causal = next(m for m in messages if m.startswith("the running example with a causal mask"))
    assert "every entry along that axis is -inf" in causal and "overflowing" not in causal
    huge = checks.check_softmax(lambda x: np.full(np.shape(x), np.nan), verbose=False).report()
    assert "exp() of a huge number overflowing" in huge
