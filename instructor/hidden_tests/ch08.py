"""Hidden tests of chapter 8: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch08-ex1-test
_v = variants.head_count_by_hand(seed)
assert d_head == attnlib.heads.head_dim(_v.d_model, _v.n_heads)
assert n_params == attnlib.attention_parameter_count(_v.d_model, _v.n_heads)

# %% ch08-ex2-test
_v = variants.implement_inputs("8.2", seed)
assert np.allclose(my_split_heads(_v.M, _v.n_heads), attnlib.heads.split_heads(_v.M, _v.n_heads))
for _h in (1, 2, 3, 4, 6, 12):
    _M = np.arange(60.0).reshape(5, 12)
    assert np.allclose(my_split_heads(_M, _h), attnlib.heads.split_heads(_M, _h))
