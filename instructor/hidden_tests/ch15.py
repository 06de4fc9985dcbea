"""Hidden tests of chapter 15: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check. Chapter
15's exercises have no per-student variants yet: ``seed`` is not used.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch15-ex1-test
_want = attnlib.cost.score_matrix_bytes(16384, dtype="bfloat16", heads=32)
assert layer_bytes == _want
assert abs(layer_gib - _want / 2**30) < 1e-9

# %% ch15-ex2-test
_rng = np.random.default_rng(152)
for _ in range(20):
    _s = 50 * _rng.normal(size=9)
    _m, _l = two_block_normaliser(_s[:4], _s[4:])
    assert abs(_m - _s.max()) < 1e-12
    assert abs(_l - np.exp(_s - _s.max()).sum()) < 1e-9

# %% ch15-ex3-test
assert abs(predicted_bytes - measured) < 0.1 * measured
_model = attnlib.cost.blocked_working_set_bytes(3000, 64, 100, "float64", input_copies=True)
assert abs(predicted_bytes - _model) <= 0.02 * _model
