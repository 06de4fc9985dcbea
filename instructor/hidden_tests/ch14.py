"""Hidden tests of chapter 14: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch14-ex1-test
_a = np.array([[1.0, 0.0, 0.0]])
_want = backward.softmax_backward(_a, [[3.0, -1.0, 2.0]])[0]
assert np.allclose(ds_one_hot, _want)

# %% ch14-ex2-test
_rng = np.random.default_rng(142)
_A = attnlib.softmax(_rng.normal(size=(4, 6)))
_dA = _rng.normal(size=(4, 6))
_want = backward.softmax_backward(_A, _dA)
assert np.allclose(softmax_backward(_A, _dA), _want)
