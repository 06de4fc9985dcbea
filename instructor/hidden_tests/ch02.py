"""Hidden tests of chapter 2: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch02-ex1-test
_v = variants.bilinear_by_hand(seed)
_E = attnlib.compatibility.bilinear_scores(_v.X, attnlib.compatibility.bilinear_matrix(_v.W_Q, _v.W_K))
assert variants.agrees(e_13, _E[0, 2]) and variants.agrees(e_31, _E[2, 0])

# %% ch02-ex2-test
_v = variants.implement_inputs("2.2", seed)
_B = attnlib.compatibility.bilinear_matrix(_v.W_Q, _v.W_K)
assert np.allclose(bilinear_scores(_v.X, _v.W_Q, _v.W_K), attnlib.compatibility.bilinear_scores(_v.X, _B))
