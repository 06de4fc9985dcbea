"""Hidden tests of chapter 5: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch05-ex1-test
_v = variants.variance_by_hand(seed)
_d = attnlib.scale_divisor(_v.d_k)
assert abs(var_raw - _d**2) < 1e-9 and abs(std_raw - _d) < 1e-9
assert abs(var_scaled - var_raw / _d**2) < 1e-9

# %% ch05-ex2-test
_v = variants.implement_inputs("5.2", seed)
assert np.allclose(my_scaled_scores(_v.Q, _v.K), attnlib.scaled_scores(_v.Q, _v.K))
