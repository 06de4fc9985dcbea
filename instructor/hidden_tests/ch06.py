"""Hidden tests of chapter 6: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch06-ex1-test
_v = variants.uniform_row_by_hand(seed)
_I = np.eye(2)
assert variants.agrees(o3_by_hand, attnlib.self_attention(_v.X, _I, _I, _v.W_V).output[2])

# %% ch06-ex2-test
_v = variants.implement_inputs("6.2", seed)
_want = attnlib.self_attention(_v.X, _v.W_Q, _v.W_K, _v.W_V).output
assert np.allclose(attention_head(_v.X, _v.W_Q, _v.W_K, _v.W_V), _want)
