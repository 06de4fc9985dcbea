"""Hidden tests of chapter 9: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch09-ex1-test
_v = variants.masked_row_by_hand(seed)
_w = attnlib.attention(_v.X, _v.X, _v.X, mask=_v.allowed).weights[_v.query]
assert variants.agrees(masked_row, _w)
assert masked_row[_v.padded] == 0

# %% ch09-ex2-test
for _n in variants.implement_inputs("9.2", seed).sizes + (2, 9):
    assert np.array_equal(my_causal_mask(_n), attnlib.causal_mask(_n))

# %% ch09-ex3-test
_v = variants.implement_inputs("9.3", seed)
_n = len(_v.scores)
_w = masked_weights(_v.scores, _v.allowed)
_I = np.eye(_n)
assert np.allclose(_w, attnlib.attention(_I, _v.scores.T, _I, mask=_v.allowed, scale=False).weights)
assert np.all(_w[~_v.allowed] == 0)
