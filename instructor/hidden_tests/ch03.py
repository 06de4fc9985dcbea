"""Hidden tests of chapter 3: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch03-ex1-test
_v = variants.values_by_hand(seed)
_I = np.eye(2)
assert variants.agrees(V_by_hand, attnlib.self_attention(_v.X, _I, _I, _v.W_V).V)
