"""Hidden tests of chapter 11: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch11-ex1-test
_v = variants.position_pair_by_hand(seed)
assert variants.agrees(pe3_first_pair, attnlib.sinusoidal_encoding(_v.t + 1, 2)[_v.t])

# %% ch11-ex2-test
_v = variants.implement_inputs("11.2", seed)
_want = attnlib.sinusoidal_encoding(_v.n_positions, _v.d_model)
assert np.allclose(my_sinusoidal_encoding(_v.n_positions, _v.d_model), _want)
assert np.allclose(my_sinusoidal_encoding(128, 64), attnlib.sinusoidal_encoding(128, 64))
