"""Hidden tests of chapter 1: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch01-ex1-test
_want = variants.answers(variants.dot_products_by_hand(seed))
for _name, _value in _want.items():
    assert variants.agrees(globals()[_name], _value), f"{_name} is not right"

# %% ch01-ex2-test
_v = variants.implement_inputs("1.2", seed)
assert np.allclose(pairwise_dots(_v.X), attnlib.scaled_scores(_v.X, _v.X, scale=False))
assert np.allclose(pairwise_dots(X), attnlib.scaled_scores(X, X, scale=False))
