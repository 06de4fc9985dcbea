"""Hidden tests of chapter 13: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch13-ex1-test
_v = variants.score_memory_by_hand(seed)
assert score_bytes == attnlib.cost.score_matrix_bytes(_v.n)
assert abs(score_mib - attnlib.cost.score_matrix_bytes(_v.n) / 2**20) < 1e-9

# %% ch13-ex2-test
_v = variants.memory_budget_by_hand(seed)
assert attnlib.cost.score_matrix_bytes(int(n_for_budget)) == 2**_v.budget_log2
