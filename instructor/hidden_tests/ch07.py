"""Hidden tests of chapter 7: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch07-ex1-test
_v = variants.unscaled_row_by_hand(seed)
assert variants.agrees(unscaled_row, attnlib.attention(_v.X, _v.X, _v.X, scale=False).weights[0])
